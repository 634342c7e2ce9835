//! KKRT's batched OPRF (BaRK-OPRF): from 512 base OTs, one OPRF evaluation per bin.
//!
//! The extension of module [`extension`] with `k = 512` columns: `m` rows (bins, a multiple of
//! 128), the receiver (the PSI client) holding one 128-bit input `r_j` per row and using the
//! codeword `C(r_j)` of module [`code`](super::code) as the row's word, so that
//! `q_j = t_j ⊕ (C(r_j) ∧ s)` for the sender's (the PSI server's) secret `s ∈ {0,1}^512`.
//!
//! - The OPRF: the sender's `F(j, x) = H(j, q_j ⊕ (C(x) ∧ s))`, the receiver's output for row
//!   `j` is `H(j, t_j)`, and they are equal exactly when `C(x) ∧ s = C(r_j) ∧ s`: always when
//!   `x = r_j`, and otherwise only if `C(x) ⊕ C(r_j)` (a random 512-bit string for distinct
//!   inputs) has no bit set where `s` has one, which has probability `(3/4)^512 < 2^-212`.
//! - `U` travels in blocks of 128 rows (512 columns of 128 bits, 8 KiB).
//!
//! # The hash `H`
//!
//! `H(j, v)` is `SHA-256("obscura-psi kkrt oprf v1\0" ‖ j (u64 LE) ‖ v)` (the 64 bytes of `v`
//! as four little-endian words), truncated to the tag length: KKRT's security proof models `H`
//! as a random oracle (it must break the correlation between `q_j` and `t_j`), which SHA-256 is
//! the standard stand-in for; with the SHA extensions of current x86 CPUs (picked at run time by
//! the `sha2` crate) two compressions cost about a tenth of a microsecond.

use sha2::{Digest, Sha256};

use super::code::{Code, Row, CODE_WORDS};
use super::extension::{self, flip};
use crate::ot::base::Seed;

/// Columns: the code length `k` and the number of base OTs.
pub(crate) const CODE_BITS: usize = 128 * CODE_WORDS;
/// Rows per block of the matrices.
pub(crate) const BLOCK_ROWS: usize = extension::BLOCK_ROWS;
/// Bytes of one block of `U`: 512 columns of 128 bits, little-endian.
pub(crate) const BLOCK_BYTES: usize = extension::block_bytes(CODE_WORDS);

const OUTPUT_DOMAIN: &[u8] = b"obscura-psi kkrt oprf v1\0";

/// `H(j, value)`, truncated to `out.len()` bytes (at most 32).
pub(crate) fn output(row: u64, value: &Row, out: &mut [u8]) {
    let mut hash = Sha256::new();
    hash.update(OUTPUT_DOMAIN);
    hash.update(row.to_le_bytes());
    for word in value {
        hash.update(word.to_le_bytes());
    }
    out.copy_from_slice(&hash.finalize()[..out.len()]);
}

/// The OPRF receiver (the PSI client): both seeds of every base OT.
pub(crate) struct Receiver {
    extension: extension::Receiver<CODE_WORDS>,
    code: Code,
}

impl Receiver {
    /// The receiver for the base-OT seed pairs `[k_i^0, k_i^1]` of the 512 columns.
    pub(crate) fn new(seeds: &[[Seed; 2]]) -> Self {
        Self {
            extension: extension::Receiver::new(seeds),
            code: Code::new(),
        }
    }

    /// For the whole blocks of rows starting at block `first_block`, with one input per row in
    /// `inputs`: writes those blocks of `U` into `u` (`BLOCK_BYTES` per block) and the rows of
    /// `T` into `rows`. Runs in parallel on the current rayon pool.
    pub(crate) fn encode(&self, first_block: u64, inputs: &[u128], u: &mut [u8], rows: &mut [Row]) {
        let codewords = |b: usize, block: &mut extension::Block<CODE_WORDS>| {
            self.code
                .encode_block(&inputs[b * BLOCK_ROWS..][..BLOCK_ROWS], block);
            flip(block);
        };
        self.extension.extend(first_block, codewords, u, rows);
    }
}

/// The OPRF sender (the PSI server): its choice bits and the chosen seed of every base OT.
pub(crate) struct Sender {
    extension: extension::Sender<CODE_WORDS>,
    code: Code,
}

impl Sender {
    /// The sender with choice bits `choices` (column `i` = bit `i mod 128` of word `i / 128`)
    /// and the seeds `k_i^{s_i}` of the 512 columns.
    pub(crate) fn new(choices: Row, seeds: &[Seed]) -> Self {
        Self {
            extension: extension::Sender::new(choices, seeds),
            code: Code::new(),
        }
    }

    /// From the whole blocks of `U` in `u` (`BLOCK_BYTES` each) starting at block
    /// `first_block`, writes the rows of `Q` into `rows`. Runs in parallel on the current rayon
    /// pool.
    pub(crate) fn decode(&self, first_block: u64, u: &[u8], rows: &mut [Row]) {
        self.extension.extend(first_block, u, rows);
    }

    /// Writes the codewords `C(h)` of `hashes` into `out`.
    pub(crate) fn encode_items(&self, hashes: &[u128], out: &mut [Row]) {
        self.code.encode(hashes, out);
    }

    /// `F(j, x)` truncated to `out.len()` bytes, from row `q_j` of `Q` and the codeword
    /// `C(x)`.
    pub(crate) fn evaluate(&self, row: u64, q: &Row, code: &Row, out: &mut [u8]) {
        let choices = self.extension.choices();
        let value: Row = std::array::from_fn(|w| q[w] ^ (code[w] & choices[w]));
        output(row, &value, out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// A receiver and a sender joined by real base OTs.
    fn pair(choices: Row) -> (Receiver, Sender) {
        let (extension, sender) = extension::tests::pair(choices);
        let code = Code::new;
        (
            Receiver {
                extension,
                code: code(),
            },
            Sender {
                extension: sender,
                code: code(),
            },
        )
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(8))]

        /// `F(j, r_j)` is the receiver's output for row `j`; `F(j, x)` for any other `x`, or
        /// for `r_j` at another row, is not.
        #[test]
        fn sender_and_receiver_agree_exactly_on_the_receivers_inputs(
            choices in any::<[u128; CODE_WORDS]>(),
            blocks in 1usize..20,
            first_block in 0u64..1000,
            salt in any::<u128>(),
        ) {
            let (receiver, sender) = pair(choices);
            let inputs: Vec<u128> = (0..(blocks * BLOCK_ROWS) as u128)
                .map(|i| i.wrapping_mul(salt | 1) ^ salt)
                .collect();
            let mut u = vec![0u8; blocks * BLOCK_BYTES];
            let mut t = vec![[0u128; CODE_WORDS]; inputs.len()];
            receiver.encode(first_block, &inputs, &mut u, &mut t);
            let mut q = vec![[0u128; CODE_WORDS]; inputs.len()];
            sender.decode(first_block, &u, &mut q);
            let mut codes = vec![[0u128; CODE_WORDS]; inputs.len()];
            sender.encode_items(&inputs, &mut codes);
            let (mut ours, mut theirs) = ([0u8; 16], [0u8; 16]);
            for j in 0..inputs.len() {
                let bin = first_block * BLOCK_ROWS as u64 + j as u64;
                output(bin, &t[j], &mut ours);
                sender.evaluate(bin, &q[j], &codes[j], &mut theirs);
                prop_assert_eq!(ours, theirs);
                let other = (j + 1) % inputs.len();
                if other != j {
                    sender.evaluate(bin, &q[j], &codes[other], &mut theirs);
                    prop_assert_ne!(ours, theirs);
                    sender.evaluate(bin + 1, &q[j], &codes[j], &mut theirs);
                    prop_assert_ne!(ours, theirs);
                }
            }
        }
    }
}
