//! The machine's streaming read bandwidth, the yardstick for answer throughput.

use std::hint::black_box;
use std::time::Instant;

use rayon::prelude::*;
use rayon::ThreadPool;

use super::report::Pair;
use super::Pools;

/// Bytes read per pass: far larger than any cache.
pub const BUFFER_BYTES: usize = 2 << 30;

/// A buffer to stream, filled so that every page is really backed by memory.
fn buffer() -> Vec<u64> {
    (0..BUFFER_BYTES / 8)
        .into_par_iter()
        .map(|i| i as u64)
        .collect()
}

/// The streaming read bandwidth with one thread and with all threads, measured now (the
/// bandwidth of a virtual machine drifts over minutes, so presets measure it next to the
/// answers they compare with it).
pub fn measure(pools: &Pools) -> Pair {
    let buffer = buffer();
    Pair {
        one_thread: read_gbs(&buffer, &pools.one),
        all_threads: read_gbs(&buffer, &pools.all),
    }
}

/// Best of three streaming reads of `buffer` on `pool`, in 10^9 bytes per second.
fn read_gbs(buffer: &[u64], pool: &ThreadPool) -> f64 {
    let bytes = std::mem::size_of_val(buffer) as f64;
    (0..3)
        .map(|_| {
            let started = Instant::now();
            let sum = pool.install(|| {
                buffer
                    .par_chunks(1 << 20)
                    .map(sum_lanes)
                    .reduce(|| 0, u64::wrapping_add)
            });
            black_box(sum);
            bytes / started.elapsed().as_secs_f64() / 1e9
        })
        .fold(0.0, f64::max)
}

/// Wrapping sum in eight lanes, so the loop vectorizes and is bound by memory, not by adds.
fn sum_lanes(chunk: &[u64]) -> u64 {
    let mut lanes = [0u64; 8];
    for block in chunk.chunks_exact(8) {
        for k in 0..8 {
            lanes[k] = lanes[k].wrapping_add(block[k]);
        }
    }
    lanes.iter().fold(0, |a, &b| a.wrapping_add(b))
}
