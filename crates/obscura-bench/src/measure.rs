//! What every workload measures with: deterministic data, a clock, medians.

use std::time::Instant;

use anyhow::{Context, Result};
use rayon::prelude::*;

/// Deterministic pseudo-random records (SplitMix64 of the word index).
pub fn generate(records: u64, record_bytes: u64) -> Result<Vec<u8>> {
    let bytes = records
        .checked_mul(record_bytes)
        .and_then(|b| usize::try_from(b).ok())
        .context("the database size overflows")?;
    let mut data = Vec::new();
    data.try_reserve_exact(bytes)
        .with_context(|| format!("cannot allocate a {bytes}-byte database"))?;
    data.resize(bytes, 0);
    data.par_chunks_mut(8).enumerate().for_each(|(i, chunk)| {
        let z = splitmix64(i as u64);
        chunk.copy_from_slice(&z.to_le_bytes()[..chunk.len()]);
    });
    Ok(data)
}

/// The SplitMix64 output for counter `i`.
pub fn splitmix64(i: u64) -> u64 {
    let mut z = i.wrapping_add(1).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The value of `f` and the seconds it took.
pub fn timed<T>(f: impl FnOnce() -> T) -> (T, f64) {
    let started = Instant::now();
    let value = f();
    (value, started.elapsed().as_secs_f64())
}

/// The median of `values`, 0 for none.
pub fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values.get(values.len() / 2).copied().unwrap_or(0.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_records_are_the_splitmix_stream() {
        let data = generate(3, 5).unwrap();
        let words: Vec<u8> = (0..2).flat_map(|i| splitmix64(i).to_le_bytes()).collect();
        assert_eq!(data, words[..15]);
        assert!(generate(u64::MAX, 2).is_err());
    }

    #[test]
    fn median_takes_the_middle_and_zero_for_none() {
        assert_eq!(median(vec![3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(Vec::new()), 0.0);
    }
}
