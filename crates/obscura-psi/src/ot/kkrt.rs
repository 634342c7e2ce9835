//! The OT extension of KKRT as a batched OPRF (BaRK-OPRF): from 512 base OTs, one OPRF
//! evaluation per bin.
//!
//! # Matrices
//!
//! `m` rows (bins, a multiple of 128) by `k = 512` columns. The receiver (the PSI client) holds
//! both seeds `k_i^0, k_i^1` of base OT `i` and one 128-bit input `r_j` per row; the sender (the
//! PSI server) holds secret choice bits `s ∈ {0,1}^512` and the seeds `k_i^{s_i}`.
//!
//! - `G(k)` expands a seed to a column: AES-128 under `k` in counter mode, keystream block `b`
//!   (the column's bits of rows `128b .. 128b + 128`, row `128b + r` in bit `r`) being
//!   `AES_k(b)` with `b` as a 128-bit little-endian integer. Each seed is expanded once into an
//!   AES key schedule and each block computed on demand, so any block of rows can be produced
//!   without the ones before it.
//! - The receiver sets `T = [G(k_i^0)]_i` and sends `U = T ⊕ [G(k_i^1)]_i ⊕ C`, where row `j` of
//!   `C` is the codeword `C(r_j)`; the sender computes `Q = [G(k_i^{s_i}) ⊕ s_i·u^i]_i`, so that
//!   row by row `q_j = t_j ⊕ (C(r_j) ∧ s)`.
//! - The OPRF: the sender's `F(j, x) = H(j, q_j ⊕ (C(x) ∧ s))`, the receiver's output for row
//!   `j` is `H(j, t_j)`, and they are equal exactly when `C(x) ∧ s = C(r_j) ∧ s`: always when
//!   `x = r_j`, and otherwise only if `C(x) ⊕ C(r_j)` (a random 512-bit string for distinct
//!   inputs) has no bit set where `s` has one, which has probability `(3/4)^512 < 2^-212`.
//!
//! `U` travels in blocks of 128 rows (512 columns of 128 bits, 8 KiB): the receiver builds
//! each block's columns, and both sides transpose the block to rows with four 128 x 128 bit
//! transposes ([`crate::transpose`]). Work is split by blocks of rows, so it runs in parallel
//! and in cache, and the sender processes each frame of blocks as it arrives.
//!
//! # The hash `H`
//!
//! `H(j, v)` is `SHA-256("obscura-psi kkrt oprf v1\0" ‖ j (u64 LE) ‖ v)` (the 64 bytes of `v`
//! as four little-endian words), truncated to the tag length: KKRT's security proof models `H`
//! as a random oracle (it must break the correlation between `q_j` and `t_j`), which SHA-256 is
//! the standard stand-in for; with the SHA extensions of current x86 CPUs (picked at run time by
//! the `sha2` crate) two compressions cost about a tenth of a microsecond.

use aes::Aes128;
use rayon::prelude::*;
use sha2::{Digest, Sha256};

use super::code::{Code, Row, CODE_WORDS};
use crate::block::{cipher, encrypt_each};
use crate::ot::base::Seed;
use crate::transpose::{transpose_128, SIDE};

/// Columns: the code length `k` and the number of base OTs.
pub(crate) const CODE_BITS: usize = 128 * CODE_WORDS;
/// Rows per block of the matrices.
pub(crate) const BLOCK_ROWS: usize = SIDE;
/// Bytes of one block of `U`: 512 columns of 128 bits, little-endian.
pub(crate) const BLOCK_BYTES: usize = CODE_BITS * 16;
/// Blocks per parallel task: the consecutive keystream blocks of one column are encrypted
/// together, so AES-NI has several in flight.
const TASK_BLOCKS: usize = 8;

const OUTPUT_DOMAIN: &[u8] = b"obscura-psi kkrt oprf v1\0";

/// A block of 128 rows in column form (entry `i`: column `i`, row `r` in bit `r`) or, after
/// [`flip`], in row form (entry `128q + r`: word `q` of row `r`).
type Block = [u128; CODE_BITS];

/// Turns a block's column form into its row form and back: the 128 x 128 submatrix of each
/// word position is transposed.
fn flip(block: &mut Block) {
    for quarter in block.as_chunks_mut::<BLOCK_ROWS>().0 {
        transpose_128(quarter);
    }
}

/// Row `r` of a block in row form.
fn row_of(block: &Block, r: usize) -> Row {
    std::array::from_fn(|q| block[q * BLOCK_ROWS + r])
}

/// Writes the keystream blocks `first .. first + out.len()` of `G(seed)`, for the column `column`,
/// into the blocks `out`.
fn expand(column_key: &Aes128, column: usize, first: u64, out: &mut [Block]) {
    let counters = (first..first + out.len() as u64).map(u128::from);
    encrypt_each(column_key, counters, |b, word| out[b][column] = word);
}

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
    columns: Vec<[Aes128; 2]>,
    code: Code,
}

impl Receiver {
    /// The receiver for the base-OT seed pairs `[k_i^0, k_i^1]` of the 512 columns.
    pub(crate) fn new(seeds: &[[Seed; 2]]) -> Self {
        Self {
            columns: seeds.iter().map(|pair| pair.map(cipher)).collect(),
            code: Code::new(),
        }
    }

    /// For the whole blocks of rows starting at block `first_block`, with one input per row in
    /// `inputs`: writes those blocks of `U` into `u` (`BLOCK_BYTES` per block) and the rows of
    /// `T` into `rows`. Runs in parallel on the current rayon pool.
    pub(crate) fn encode(&self, first_block: u64, inputs: &[u128], u: &mut [u8], rows: &mut [Row]) {
        inputs
            .par_chunks(TASK_BLOCKS * BLOCK_ROWS)
            .zip(u.par_chunks_mut(TASK_BLOCKS * BLOCK_BYTES))
            .zip(rows.par_chunks_mut(TASK_BLOCKS * BLOCK_ROWS))
            .enumerate()
            .for_each(|(task, ((inputs, u), rows))| {
                let first = first_block + (task * TASK_BLOCKS) as u64;
                self.encode_task(first, inputs, u, rows);
            });
    }

    fn encode_task(&self, first: u64, inputs: &[u128], u: &mut [u8], rows: &mut [Row]) {
        let blocks = inputs.len() / BLOCK_ROWS;
        let mut t = vec![[0u128; CODE_BITS]; blocks];
        let mut g1 = vec![[0u128; CODE_BITS]; blocks];
        for (column, [zero, one]) in self.columns.iter().enumerate() {
            expand(zero, column, first, &mut t);
            expand(one, column, first, &mut g1);
        }
        let mut codes = vec![[0u128; CODE_WORDS]; inputs.len()];
        self.code.encode(inputs, &mut codes);
        let mut code_block = [0u128; CODE_BITS];
        for (b, (t, g1)) in t.iter_mut().zip(&g1).enumerate() {
            for (r, code) in codes[b * BLOCK_ROWS..][..BLOCK_ROWS].iter().enumerate() {
                for (q, word) in code.iter().enumerate() {
                    code_block[q * BLOCK_ROWS + r] = *word;
                }
            }
            flip(&mut code_block);
            let u = &mut u[b * BLOCK_BYTES..][..BLOCK_BYTES];
            for (column, out) in u.as_chunks_mut::<16>().0.iter_mut().enumerate() {
                *out = (t[column] ^ g1[column] ^ code_block[column]).to_le_bytes();
            }
            flip(t);
            for (r, row) in rows[b * BLOCK_ROWS..][..BLOCK_ROWS].iter_mut().enumerate() {
                *row = row_of(t, r);
            }
        }
    }
}

/// The OPRF sender (the PSI server): its choice bits and the chosen seed of every base OT.
pub(crate) struct Sender {
    columns: Vec<Aes128>,
    choices: Row,
    code: Code,
}

impl Sender {
    /// The sender with choice bits `choices` (column `i` = bit `i mod 128` of word `i / 128`)
    /// and the seeds `k_i^{s_i}` of the 512 columns.
    pub(crate) fn new(choices: Row, seeds: &[Seed]) -> Self {
        Self {
            columns: seeds.iter().map(|&seed| cipher(seed)).collect(),
            choices,
            code: Code::new(),
        }
    }

    /// Whether column `i` was chosen with bit 1.
    fn choice(&self, column: usize) -> bool {
        (self.choices[column / 128] >> (column % 128)) & 1 == 1
    }

    /// From the whole blocks of `U` in `u` (`BLOCK_BYTES` each) starting at block
    /// `first_block`, writes the rows of `Q` into `rows`. Runs in parallel on the current rayon
    /// pool.
    pub(crate) fn decode(&self, first_block: u64, u: &[u8], rows: &mut [Row]) {
        u.par_chunks(TASK_BLOCKS * BLOCK_BYTES)
            .zip(rows.par_chunks_mut(TASK_BLOCKS * BLOCK_ROWS))
            .enumerate()
            .for_each(|(task, (u, rows))| {
                let first = first_block + (task * TASK_BLOCKS) as u64;
                self.decode_task(first, u, rows);
            });
    }

    fn decode_task(&self, first: u64, u: &[u8], rows: &mut [Row]) {
        let mut q = vec![[0u128; CODE_BITS]; u.len() / BLOCK_BYTES];
        for (column, key) in self.columns.iter().enumerate() {
            expand(key, column, first, &mut q);
        }
        for (b, (q, u)) in q.iter_mut().zip(u.chunks_exact(BLOCK_BYTES)).enumerate() {
            for (column, (word, u)) in q.iter_mut().zip(u.as_chunks::<16>().0).enumerate() {
                let mask = 0u128.wrapping_sub(u128::from(self.choice(column)));
                *word ^= u128::from_le_bytes(*u) & mask;
            }
            flip(q);
            for (r, row) in rows[b * BLOCK_ROWS..][..BLOCK_ROWS].iter_mut().enumerate() {
                *row = row_of(q, r);
            }
        }
    }

    /// Writes the codewords `C(h)` of `hashes` into `out`.
    pub(crate) fn encode_items(&self, hashes: &[u128], out: &mut [Row]) {
        self.code.encode(hashes, out);
    }

    /// `F(j, x)` truncated to `out.len()` bytes, from row `q_j` of `Q` and the codeword
    /// `C(x)`.
    pub(crate) fn evaluate(&self, row: u64, q: &Row, code: &Row, out: &mut [u8]) {
        let value: Row = std::array::from_fn(|w| q[w] ^ (code[w] & self.choices[w]));
        output(row, &value, out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ot::base as base_ot;
    use obscura_math::sample::OsSampler;
    use proptest::prelude::*;

    /// A receiver and a sender joined by real base OTs.
    fn pair(choices: Row) -> (Receiver, Sender) {
        let mut rng = OsSampler::new();
        let bits: Vec<bool> = (0..CODE_BITS)
            .map(|i| (choices[i / 128] >> (i % 128)) & 1 == 1)
            .collect();
        let sender = base_ot::Sender::new(&mut rng).unwrap();
        let (reply, chosen) = base_ot::receive(&bits, &sender.message(), &mut rng).unwrap();
        let seeds = sender.seeds(&reply).unwrap();
        (Receiver::new(&seeds), Sender::new(choices, &chosen))
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

    /// With no column chosen, `Q = T`: the sender learns nothing of `U` and the receiver's rows
    /// are the sender's.
    #[test]
    fn the_columns_are_the_expanded_seeds() {
        let (receiver, sender) = pair([0; CODE_WORDS]);
        let inputs = vec![5u128; BLOCK_ROWS];
        let mut u = vec![0u8; BLOCK_BYTES];
        let mut t = vec![[0u128; CODE_WORDS]; BLOCK_ROWS];
        receiver.encode(3, &inputs, &mut u, &mut t);
        let mut q = vec![[1u128; CODE_WORDS]; BLOCK_ROWS];
        sender.decode(3, &u, &mut q);
        assert_eq!(q, t);
        assert_ne!(t[0], t[1]);
    }
}
