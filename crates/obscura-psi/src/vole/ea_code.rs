//! The expand-accumulate code (Boyle, Couteau, Gilboa, Ishai, Kohl, Resch and Scholl,
//! CRYPTO 2022) as the compressing map of dual-LPN silent VOLE: a length-`N` vector `v` becomes
//! `outputs` words `y_i = ⊕_{p ∈ E_i} acc(v)_p`, where `acc(v)_p = v_0 ⊕ … ⊕ v_p` (the
//! accumulator) and `E_i` holds [`EXPANDER_WEIGHT`] positions of output `i` (the expander).
//!
//! The expander is regular: position `k` of output `i` lies in the `k`-th of
//! [`EXPANDER_WEIGHT`] equal segments of `0..N` (`⌊N / 11⌋` wide; the last `N mod 11` positions
//! are never used), at an offset from the public seed: `AES_seed(3i + j)` for `j < 3` gives 12
//! 32-bit words, of which word `k` picks the offset of position `k` by a multiply-high.
//!
//! The map is linear over GF(2) and acts on each bit of the words alike, so it keeps a VOLE
//! correlation `c = b ⊕ e · Δ` (applied to `e`, `b` and `c`) and maps vectors of a GF(2)
//! subspace into that subspace. Its security role is in [`super`].

use aes::Aes128;
use obscura_math::memory::prefetch;
use rayon::prelude::*;

use crate::block::{cipher, encrypt_each};

/// Positions per output.
pub(crate) const EXPANDER_WEIGHT: usize = 11;
/// Bytes of the public seed of the expander.
pub(crate) const SEED_BYTES: usize = 16;
/// AES blocks per output (four 32-bit offsets each).
const BLOCKS_PER_OUTPUT: usize = EXPANDER_WEIGHT.div_ceil(4);
/// Outputs per parallel task.
const TASK_OUTPUTS: usize = 2048;
/// How many reads ahead [`EaCode::expand`] asks for a position of the source.
const PREFETCH_AHEAD: usize = 32;

/// The code of one session.
pub(crate) struct EaCode {
    cipher: Aes128,
    segment: u64,
}

impl EaCode {
    /// The code for input vectors of `len` words (at least [`EXPANDER_WEIGHT`]) whose expander
    /// comes from `seed`.
    pub(crate) fn new(len: usize, seed: [u8; SEED_BYTES]) -> Self {
        Self {
            cipher: cipher(seed),
            segment: (len / EXPANDER_WEIGHT) as u64,
        }
    }

    /// Replaces `vector` by its accumulation: `v_p ← v_0 ⊕ … ⊕ v_p`.
    pub(crate) fn accumulate(vector: &mut [u128]) {
        let mut sum = 0;
        for word in vector {
            sum ^= *word;
            *word = sum;
        }
    }

    /// Writes into `positions` the positions of outputs `first .. first + count`,
    /// [`EXPANDER_WEIGHT`] per output.
    fn positions(&self, first: usize, count: usize, positions: &mut Vec<usize>) {
        positions.clear();
        positions.resize(count * EXPANDER_WEIGHT, 0);
        let first = (first * BLOCKS_PER_OUTPUT) as u128;
        let blocks = (count * BLOCKS_PER_OUTPUT) as u128;
        encrypt_each(&self.cipher, first..first + blocks, |b, word| {
            let (output, j) = (b / BLOCKS_PER_OUTPUT, b % BLOCKS_PER_OUTPUT);
            for w in 0..4 {
                let k = 4 * j + w;
                if k < EXPANDER_WEIGHT {
                    let offset = u64::from((word >> (32 * w)) as u32);
                    let within = (offset * self.segment) >> 32;
                    positions[output * EXPANDER_WEIGHT + k] =
                        (k as u64 * self.segment + within) as usize;
                }
            }
        });
    }

    /// For each output `first + i` (`i < out.len()`), calls `combine(&mut out[i], &source[p])`
    /// for the positions `p` of its `E` (`source` being the accumulated vector), in parallel
    /// over outputs. A task's positions are computed first; its reads of `source` (random, in a
    /// vector far larger than the caches) then run in a tight loop that asks the CPU to fetch
    /// each one [`PREFETCH_AHEAD`] reads early, so that many are in flight at once.
    pub(crate) fn expand<S: Sync, O: Send>(
        &self,
        first: usize,
        out: &mut [O],
        source: &[S],
        combine: impl Fn(&mut O, &S) + Sync,
    ) {
        out.par_chunks_mut(TASK_OUTPUTS).enumerate().for_each_init(
            Vec::new,
            |positions, (task, out)| {
                self.positions(first + task * TASK_OUTPUTS, out.len(), positions);
                for (p, &position) in positions.iter().enumerate() {
                    if let Some(&ahead) = positions.get(p + PREFETCH_AHEAD) {
                        prefetch(&source[ahead]);
                    }
                    combine(&mut out[p / EXPANDER_WEIGHT], &source[position]);
                }
            },
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The positions of outputs `first .. first + count`, one list per output.
    fn positions_from(code: &EaCode, first: usize, count: usize) -> Vec<Vec<usize>> {
        let mut all = Vec::new();
        code.positions(first, count, &mut all);
        all.chunks(EXPANDER_WEIGHT).map(<[usize]>::to_vec).collect()
    }

    fn positions(code: &EaCode, outputs: usize) -> Vec<Vec<usize>> {
        positions_from(code, 0, outputs)
    }

    /// The code applied to `vector`: its first `outputs` words.
    fn encode(code: &EaCode, vector: &[u128], outputs: usize) -> Vec<u128> {
        let mut acc = vector.to_vec();
        EaCode::accumulate(&mut acc);
        let mut out = vec![0u128; outputs];
        code.expand(0, &mut out, &acc, |word, value| *word ^= value);
        out
    }

    #[test]
    fn positions_are_regular_and_from_the_seed() {
        let len = EXPANDER_WEIGHT * 1000 + 5;
        let code = EaCode::new(len, [9; 16]);
        let all = positions(&code, 5000);
        for positions in &all {
            assert_eq!(positions.len(), EXPANDER_WEIGHT);
            for (k, &p) in positions.iter().enumerate() {
                assert!((k * 1000..(k + 1) * 1000).contains(&p), "{k}: {p}");
            }
        }
        // Known answer: output 0's first offset is the low 32 bits of AES_seed(0).
        let mut first = 0u128;
        encrypt_each(&code.cipher, [0u128], |_, word| first = word);
        assert_eq!(all[0][0], ((first as u32 as u64 * 1000) >> 32) as usize);
        assert_ne!(all[0], all[1]);
        assert_ne!(positions(&EaCode::new(len, [8; 16]), 1)[0], all[0]);
    }

    /// Known answer: the first 1,000 outputs of a fixed seed on a fixed vector of 50,000 words,
    /// by their SHA-256, so the expander and the accumulator cannot change unnoticed.
    #[test]
    fn known_answer() {
        use sha2::{Digest, Sha256};
        let vector: Vec<u128> = (0..50_000u128)
            .map(|i| i.wrapping_mul(0x9e37_79b9_7f4a_7c15_f39c_c060_5ced_c835))
            .collect();
        let code = EaCode::new(vector.len(), *b"obscura ea kat\0\0");
        let digest = encode(&code, &vector, 1000)
            .iter()
            .fold(Sha256::new(), |hash, word| {
                hash.chain_update(word.to_le_bytes())
            })
            .finalize();
        let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(hex, KNOWN_OUTPUTS_SHA256);
    }

    const KNOWN_OUTPUTS_SHA256: &str =
        "cf0d68daf317fe2b90832d55546d1ba35558c0c8409d0d20a17bc612015c92e9";

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(16))]

        /// The code is linear and equals its definition on a few words.
        #[test]
        fn encoding_is_the_accumulated_expansion(
            vector in proptest::collection::vec(any::<u128>(), 100..400),
            other_seed in any::<u128>(),
        ) {
            let code = EaCode::new(vector.len(), [1; 16]);
            let all = positions(&code, 50);
            let out = encode(&code, &vector, 50);
            for (word, positions) in out.iter().zip(&all) {
                let direct = positions.iter().fold(0, |sum, &p| {
                    sum ^ vector[..=p].iter().fold(0, |s, w| s ^ w)
                });
                prop_assert_eq!(*word, direct);
            }
            let shifted: Vec<u128> = vector.iter().map(|w| w.rotate_left(3) ^ other_seed).collect();
            let sum: Vec<u128> = vector.iter().zip(&shifted).map(|(a, b)| a ^ b).collect();
            let (a, b, s) = (encode(&code, &vector, 50), encode(&code, &shifted, 50), encode(&code, &sum, 50));
            for i in 0..50 {
                prop_assert_eq!(s[i], a[i] ^ b[i]);
            }
            // Any range of outputs is the same as part of the whole, positions and values.
            prop_assert_eq!(&positions_from(&code, 20, 7)[..], &all[20..27]);
            let mut acc = vector.clone();
            EaCode::accumulate(&mut acc);
            let mut part = vec![0u128; 7];
            code.expand(20, &mut part, &acc, |word, value| *word ^= value);
            let whole = encode(&code, &vector, 27);
            prop_assert_eq!(&part[..], &whole[20..]);
        }
    }
}
