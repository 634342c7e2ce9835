//! Uniformly random permutations from the OS CSPRNG.

use obscura_math::sample::{OsSampler, RngError};

/// A uniformly random permutation of `0..len` (Fisher-Yates with unbiased index draws).
pub(crate) fn random_permutation(len: usize, rng: &mut OsSampler) -> Result<Vec<usize>, RngError> {
    let mut order: Vec<usize> = (0..len).collect();
    for i in (1..len).rev() {
        let j = uniform_below(i as u64 + 1, rng)? as usize;
        order.swap(i, j);
    }
    Ok(order)
}

/// A uniform integer in `0..bound` (`bound` ≥ 1): the high word of a 64 x 64-bit product,
/// with the few low words that would bias it rejected (Lemire's method).
pub(crate) fn uniform_below(bound: u64, rng: &mut OsSampler) -> Result<u64, RngError> {
    let threshold = bound.wrapping_neg() % bound;
    loop {
        let product = u128::from(rng.next_u64()?) * u128::from(bound);
        if (product as u64) >= threshold {
            return Ok((product >> 64) as u64);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn permutations_hold_every_index_once() {
        let mut rng = OsSampler::new();
        for len in [0, 1, 2, 10, 1000] {
            let mut order = random_permutation(len, &mut rng).unwrap();
            order.sort_unstable();
            assert_eq!(order, (0..len).collect::<Vec<_>>());
        }
    }

    /// Each of the 6 orders of 3 items comes up about equally often.
    #[test]
    fn small_permutations_are_uniform() {
        let mut rng = OsSampler::new();
        let mut counts = std::collections::HashMap::new();
        let draws = 60_000;
        for _ in 0..draws {
            *counts
                .entry(random_permutation(3, &mut rng).unwrap())
                .or_insert(0u32) += 1;
        }
        assert_eq!(counts.len(), 6);
        for count in counts.values() {
            assert!((9_000..11_000).contains(count), "{counts:?}");
        }
    }
}
