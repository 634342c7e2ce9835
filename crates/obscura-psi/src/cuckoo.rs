//! Cuckoo hashing: the client places each of its items in one of three candidate bins, at most
//! one item per bin, with no stash.
//!
//! # Parameters
//!
//! Three hash functions and `m = ⌈1.27 · max(n, 2^12)⌉` bins (rounded up to a whole number of
//! OT-extension blocks). Pinkas, Schneider, Tkachenko and Yanai ("Efficient circuit-based PSI
//! with linear communication", Eurocrypt 2019, §5) derive from extrapolated experiments that
//! three hash functions without a stash and `1.27 n` bins fail with probability at most 2^-40
//! at the set sizes they study (2^12 items and up). For fewer items the table keeps the bins
//! of 2^12 items: a set that fits still fits after removing items, so a smaller set fails no
//! more often than 2^12 items in the same bins. The extra bins cost 64 bytes each of OT
//! extension, nothing for large sets.
//!
//! # Hash functions
//!
//! The bins of an item come from its 128-bit hash `h` (see [`crate::kkrt`]) and a public
//! per-session seed: `AES_seed(h)` and `AES_seed(h ⊕ 1)` give three 64-bit words, and each word
//! picks a bin by a multiply-high (bias below `m / 2^64`). The three bins are always distinct
//! (the second skips the first, the third skips both), so one item never offers the same bin
//! twice: the server, which evaluates the OPRF at each of an item's three bins, never produces
//! two equal values for one item, and a placement is a matching of items to bins.
//!
//! The client draws the seed from the OS CSPRNG and, in the (≤ 2^-40) case that its items do
//! not fit, draws another, up to [`ATTEMPTS`] times; only the seed that works is sent.

use aes::Aes128;
use obscura_math::sample::OsSampler;
use rayon::prelude::*;

use crate::block::{cipher, encrypt_each, random_word};
use crate::PsiError;

/// Hash functions, hence candidate bins, per item.
pub(crate) const HASHES: usize = 3;
/// Bytes of the public seed of the hash functions.
pub(crate) const SEED_BYTES: usize = 16;
/// The seed of the hash functions of one session.
pub(crate) type CuckooSeed = [u8; SEED_BYTES];
/// The content of an empty bin in [`CuckooTable::slots`].
pub(crate) const EMPTY: u32 = u32::MAX;

/// Bins per 100 items.
const BINS_PER_100_ITEMS: u64 = 127;
/// The table has the bins of at least this many items.
const MIN_ITEMS: u64 = 1 << 12;
/// Evictions tried for one insertion before the seed is given up (a random walk needs a few on
/// average at this load; a set that fits is placed long before this bound).
const MAX_EVICTIONS: usize = 1 << 12;
/// Seeds tried before the client gives up.
pub(crate) const ATTEMPTS: u32 = 4;
/// Items per parallel task when computing bins.
const TASK_ITEMS: usize = 4096;

/// The number of bins for `items` items: `⌈1.27 · max(items, 2^12)⌉` rounded up to a multiple of
/// `multiple`, or `None` if it does not fit in a `u32` (bin numbers and item numbers are `u32`).
pub(crate) fn bin_count(items: u64, multiple: u64) -> Option<u32> {
    let bins = (items.max(MIN_ITEMS) as u128 * BINS_PER_100_ITEMS as u128).div_ceil(100);
    let bins = bins.div_ceil(multiple as u128) * multiple as u128;
    u32::try_from(bins).ok().filter(|&bins| bins != EMPTY)
}

/// The three hash functions of one session, for a table of a given number of bins.
pub(crate) struct BinHasher {
    cipher: Aes128,
    bins: u32,
}

impl BinHasher {
    /// The hash functions of `seed` onto `bins` bins (at least 3).
    pub(crate) fn new(seed: &CuckooSeed, bins: u32) -> Self {
        Self {
            cipher: cipher(*seed),
            bins,
        }
    }

    /// Writes the three distinct candidate bins of each of `hashes` into `out` (same length),
    /// in parallel on the current rayon pool.
    pub(crate) fn bins_of(&self, hashes: &[u128], out: &mut [[u32; HASHES]]) {
        hashes
            .par_chunks(TASK_ITEMS)
            .zip(out.par_chunks_mut(TASK_ITEMS))
            .for_each(|(hashes, out)| {
                let mut first = 0u128;
                let inputs = hashes.iter().flat_map(|&h| [h, h ^ 1]);
                encrypt_each(&self.cipher, inputs, |k, word| {
                    if k % 2 == 0 {
                        first = word;
                    } else {
                        let words = [first as u64, (first >> 64) as u64, word as u64];
                        out[k / 2] = distinct_bins(words, self.bins);
                    }
                });
            });
    }
}

/// `⌊word · bound / 2^64⌋`: a value below `bound` from a uniform word.
pub(crate) fn below(word: u64, bound: u32) -> u32 {
    ((u128::from(word) * u128::from(bound)) >> 64) as u32
}

/// Three distinct bins below `bins` (at least 3) from three uniform words: the first is uniform,
/// the second uniform among the others, the third uniform among the remaining ones.
pub(crate) fn distinct_bins(words: [u64; 3], bins: u32) -> [u32; HASHES] {
    let first = below(words[0], bins);
    let mut second = below(words[1], bins - 1);
    second += u32::from(second >= first);
    let (low, high) = (first.min(second), first.max(second));
    let mut third = below(words[2], bins - 2);
    third += u32::from(third >= low);
    third += u32::from(third >= high);
    [first, second, third]
}

/// A placement of items into bins: each item in one of its candidate bins, one item per bin.
pub(crate) struct CuckooTable {
    slots: Vec<u32>,
}

impl CuckooTable {
    /// Places items `0..candidates.len()` (fewer than `u32::MAX`) with the given candidate bins
    /// into `bins` bins by random-walk insertion (the walk's choices come from `walk_seed`);
    /// `None` if some insertion needs more than [`MAX_EVICTIONS`] evictions.
    pub(crate) fn build(candidates: &[[u32; HASHES]], bins: u32, walk_seed: u64) -> Option<Self> {
        let mut slots = vec![EMPTY; bins as usize];
        let mut walk = walk_seed | 1;
        'items: for item in 0..candidates.len() as u32 {
            let mut homeless = item;
            let mut vacated = EMPTY;
            for _ in 0..MAX_EVICTIONS {
                let choices = candidates[homeless as usize];
                if let Some(&free) = choices.iter().find(|&&bin| slots[bin as usize] == EMPTY) {
                    slots[free as usize] = homeless;
                    continue 'items;
                }
                // xorshift64: the walk only needs to avoid cycles, not to be secret.
                walk ^= walk << 13;
                walk ^= walk >> 7;
                walk ^= walk << 17;
                let mut choice = (walk % HASHES as u64) as usize;
                if choices[choice] == vacated {
                    choice = (choice + 1) % HASHES;
                }
                vacated = choices[choice];
                homeless = std::mem::replace(&mut slots[vacated as usize], homeless);
            }
            return None;
        }
        Some(Self { slots })
    }

    /// For each bin, the item it holds or [`EMPTY`].
    pub(crate) fn slots(&self) -> &[u32] {
        &self.slots
    }

    /// The table's slots, taken.
    pub(crate) fn into_slots(self) -> Vec<u32> {
        self.slots
    }
}

/// Places the items with 128-bit hashes `hashes` into `bins` bins under a fresh seed from `rng`,
/// trying up to [`ATTEMPTS`] seeds; returns the seed that worked and the table.
pub(crate) fn place(
    hashes: &[u128],
    bins: u32,
    rng: &mut OsSampler,
) -> Result<(CuckooSeed, CuckooTable), PsiError> {
    let mut candidates = vec![[0u32; HASHES]; hashes.len()];
    for _ in 0..ATTEMPTS {
        let seed = random_word(rng)?.to_le_bytes();
        BinHasher::new(&seed, bins).bins_of(hashes, &mut candidates);
        if let Some(table) = CuckooTable::build(&candidates, bins, rng.next_u64()?) {
            return Ok((seed, table));
        }
    }
    Err(PsiError::CuckooFailed {
        items: hashes.len(),
        bins,
        attempts: ATTEMPTS,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn bin_counts() {
        assert_eq!(bin_count(0, 128), Some(5248)); // ⌈1.27 · 4096⌉ = 5202, then 41 blocks
        assert_eq!(bin_count(1 << 20, 1), Some(1_331_692));
        assert_eq!(bin_count(1 << 20, 128), Some(1_331_712));
        assert_eq!(bin_count(1 << 40, 128), None);
    }

    #[test]
    fn candidate_bins_are_distinct_and_in_range() {
        for bins in [3u32, 4, 5, 1000] {
            for words in [
                [0, 0, 0],
                [u64::MAX; 3],
                [u64::MAX, 0, u64::MAX / 2],
                [1, 2, 3],
            ] {
                let chosen = distinct_bins(words, bins);
                assert!(chosen.iter().all(|&b| b < bins));
                assert!(chosen[0] != chosen[1] && chosen[0] != chosen[2] && chosen[1] != chosen[2]);
            }
        }
    }

    /// The third bin is uniform over the bins the first two left.
    #[test]
    fn third_bin_skips_exactly_the_first_two() {
        let bins = 5;
        let mut seen = std::collections::BTreeSet::new();
        for k in 0..(bins - 2) as u64 {
            let word = (u64::MAX / u64::from(bins - 2)) * k + 1;
            seen.insert(distinct_bins([u64::MAX / 2, 0, word], bins)[2]);
        }
        // first = 2, second = 0: the third takes each of 1, 3, 4 once.
        assert_eq!(seen.into_iter().collect::<Vec<_>>(), [1, 3, 4]);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(16))]

        /// Every item sits in exactly one of its three bins, and each bin holds at most one.
        #[test]
        fn every_item_is_in_one_of_its_bins(
            items in 0usize..20_000,
            seed in any::<[u8; 16]>(),
            key in any::<u128>(),
        ) {
            let hashes: Vec<u128> = (0..items as u128).map(|i| i.wrapping_mul(key | 1)).collect();
            let bins = bin_count(items as u64, 128).unwrap();
            let mut candidates = vec![[0u32; HASHES]; items];
            BinHasher::new(&seed, bins).bins_of(&hashes, &mut candidates);
            let table = CuckooTable::build(&candidates, bins, 7).unwrap();
            let mut placed = vec![0u32; items];
            for (bin, &item) in table.slots().iter().enumerate() {
                if item != EMPTY {
                    prop_assert!(candidates[item as usize].contains(&(bin as u32)));
                    placed[item as usize] += 1;
                }
            }
            prop_assert!(placed.iter().all(|&count| count == 1));
        }
    }

    #[test]
    fn a_million_items_fit() {
        let hashes: Vec<u128> = (0..1u128 << 20)
            .map(|i| i * 0x9e37_79b9_7f4a_7c15)
            .collect();
        let bins = bin_count(hashes.len() as u64, 128).unwrap();
        let (_, table) = place(&hashes, bins, &mut OsSampler::new()).unwrap();
        let filled = table.slots().iter().filter(|&&item| item != EMPTY).count();
        assert_eq!(filled, hashes.len());
    }
}
