//! The machine's streaming read bandwidth, the yardstick for answer throughput.

use std::hint::black_box;
use std::time::Instant;

use rayon::prelude::*;
use rayon::ThreadPool;

use obscura_math::memory::LargeBuffer;

use super::report::Pair;
use super::Pools;

/// Bytes read per pass: far larger than any cache.
pub const BUFFER_BYTES: usize = 2 << 30;

/// A buffer to stream, allocated as database matrices are (on huge pages where the system has
/// them) and filled so that every page is really backed by memory.
fn buffer() -> LargeBuffer {
    let mut buffer = LargeBuffer::zeroed(BUFFER_BYTES);
    buffer
        .par_chunks_mut(1 << 20)
        .enumerate()
        .for_each(|(i, chunk)| chunk.fill(i as u8));
    buffer
}

/// The streaming read bandwidth with one thread and with all threads, measured now: the best
/// of [`PASSES`] reads each.
pub fn measure(pools: &Pools) -> Pair {
    let stream = Stream::new();
    let best = |pool| {
        (0..PASSES)
            .map(|_| stream.read_gbs(pool))
            .fold(0.0, f64::max)
    };
    Pair {
        one_thread: best(&pools.one),
        all_threads: best(&pools.all),
    }
}

/// Reads per bandwidth figure: the figure is the best of them.
pub const PASSES: usize = 3;

/// A buffer kept for single streaming reads, so that a preset can interleave them with the
/// answers it compares them with (the bandwidth of a virtual machine drifts within seconds,
/// so figures taken in turns share its slow and fast moments).
pub struct Stream {
    buffer: LargeBuffer,
}

impl Stream {
    /// Allocates and fills the buffer.
    pub fn new() -> Self {
        Self { buffer: buffer() }
    }

    /// One streaming read of the whole buffer on `pool`, in 10^9 bytes per second.
    pub fn read_gbs(&self, pool: &ThreadPool) -> f64 {
        let started = Instant::now();
        let sum = pool.install(|| {
            self.buffer
                .par_chunks(1 << 20)
                .map(sum_lanes)
                .reduce(|| 0, u64::wrapping_add)
        });
        black_box(sum);
        self.buffer.len() as f64 / started.elapsed().as_secs_f64() / 1e9
    }
}

/// Wrapping sum in eight lanes, so the loop vectorizes and is bound by memory, not by adds.
fn sum_lanes(chunk: &[u8]) -> u64 {
    let mut lanes = [0u64; 8];
    for block in chunk.chunks_exact(64) {
        for (k, word) in block.chunks_exact(8).enumerate() {
            let word = u64::from_ne_bytes(word.try_into().expect("8 bytes"));
            lanes[k] = lanes[k].wrapping_add(word);
        }
    }
    lanes.iter().fold(0, |a, &b| a.wrapping_add(b))
}
