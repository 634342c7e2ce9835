//! The OT extension of Ishai, Kilian, Nissim and Petrank (CRYPTO 2003) in the general form of
//! Kolesnikov, Kumaresan, Rosulek and Trieu (CCS 2016): from `k = 128 · W` base OTs, `m` rows
//! (a multiple of 128) of `k`-bit words with `q_j = t_j ⊕ (d_j ∧ s)`.
//!
//! The receiver holds both seeds `k_i^0, k_i^1` of base OT `i` and one `k`-bit word `d_j` per
//! row; the sender holds secret choice bits `s ∈ {0,1}^k` and the seeds `k_i^{s_i}`.
//!
//! - `G(k)` expands a seed to a column: AES-128 under `k` in counter mode, keystream block `b`
//!   (the column's bits of rows `128b .. 128b + 128`, row `128b + r` in bit `r`) being `AES_k(b)`
//!   with `b` as a 128-bit little-endian integer. Each seed is expanded once into an AES key
//!   schedule and each block computed on demand, so any block of rows can be produced without
//!   the ones before it.
//! - The receiver sets `T = [G(k_i^0)]_i` and sends `U = T ⊕ [G(k_i^1)]_i ⊕ D` (`D` the matrix
//!   of rows `d_j`); the sender computes `Q = [G(k_i^{s_i}) ⊕ s_i · u^i]_i`, which row by row is
//!   `q_j = t_j ⊕ (d_j ∧ s)`.
//!
//! IKNP's correlated OT ([`super::iknp`]) is `W = 1` with `d_j` the receiver's choice bit
//! repeated (`q_j = t_j ⊕ c_j · Δ`, `Δ = s`); KKRT's OPRF ([`super::kkrt`]) is `W = 4` with `d_j`
//! the codeword of the row's input. `U` travels in blocks of 128 rows (`k` columns of 128 bits,
//! little-endian, column by column); both sides transpose each block to rows with `W` 128 x 128
//! bit transposes ([`crate::transpose`]). Work is split by blocks of rows, so it runs in
//! parallel and in cache, and the sender processes each frame of blocks as it arrives.
//!
//! Semi-honest security: each column of `U` is masked by the expansion of the seed the sender
//! does not hold (AES as a PRF), and the receiver never sees `s` (hidden by the base OTs).

use aes::Aes128;
use rayon::prelude::*;
use zeroize::Zeroize;

use crate::block::{cipher, encrypt_each};
use crate::ot::base::Seed;
use crate::transpose::transpose_128;
pub(crate) use crate::transpose::SIDE;
use crate::wire::FrameKind;

/// Receiver to sender: a frame of blocks of the extension matrix `U`.
pub const OT_EXTENSION: FrameKind = FrameKind::new(10, "ot-extension");

/// Rows per block.
pub(crate) const BLOCK_ROWS: usize = SIDE;
/// Blocks per parallel task: the consecutive keystream blocks of one column are encrypted
/// together, so AES-NI has several in flight.
const TASK_BLOCKS: usize = 8;

/// A block of 128 rows of `128 · W` bits in column form (entry `[q][c]`: column `128q + c`, row
/// `r` in bit `r`) or, after [`flip`], in row form (entry `[q][r]`: word `q` of row `r`).
pub(crate) type Block<const W: usize> = [[u128; SIDE]; W];

/// Turns a block's column form into its row form and back.
pub(crate) fn flip<const W: usize>(block: &mut Block<W>) {
    for quarter in block {
        transpose_128(quarter);
    }
}

/// Row `r` of a block in row form.
fn row_of<const W: usize>(block: &Block<W>, r: usize) -> [u128; W] {
    std::array::from_fn(|q| block[q][r])
}

/// Bytes of one block of `U`.
pub(crate) const fn block_bytes(words: usize) -> usize {
    128 * words * 16
}

/// Writes the keystream blocks `first .. first + out.len()` of `G(seed)` for column `column`
/// into the blocks `out`.
fn expand<const W: usize>(column_key: &Aes128, column: usize, first: u64, out: &mut [Block<W>]) {
    let counters = (first..first + out.len() as u64).map(u128::from);
    let (q, c) = (column / SIDE, column % SIDE);
    encrypt_each(column_key, counters, |b, word| out[b][q][c] = word);
}

/// The extension's receiver: both seeds of every base OT.
pub(crate) struct Receiver<const W: usize> {
    columns: Vec<[Aes128; 2]>,
}

impl<const W: usize> Receiver<W> {
    /// The receiver for the `128 · W` base-OT seed pairs `[k_i^0, k_i^1]`.
    pub(crate) fn new(seeds: &[[Seed; 2]]) -> Self {
        debug_assert_eq!(seeds.len(), 128 * W);
        Self {
            columns: seeds.iter().map(|pair| pair.map(cipher)).collect(),
        }
    }

    /// For the `rows.len() / 128` whole blocks starting at block `first`: writes `U` into `u`
    /// ([`block_bytes`] per block) and the rows `t_j` into `rows`. `d(b, block)` writes block
    /// `b`'s words `d_j` (`b` counted from `first`) into `block` (zeroed) in column form. Runs in
    /// parallel on the current rayon pool.
    pub(crate) fn extend(
        &self,
        first: u64,
        d: impl Fn(usize, &mut Block<W>) + Sync,
        u: &mut [u8],
        rows: &mut [[u128; W]],
    ) {
        let bytes = block_bytes(W);
        u.par_chunks_mut(TASK_BLOCKS * bytes)
            .zip(rows.par_chunks_mut(TASK_BLOCKS * BLOCK_ROWS))
            .enumerate()
            .for_each(|(task, (u, rows))| {
                let blocks = rows.len() / BLOCK_ROWS;
                let mut t = vec![[[0u128; SIDE]; W]; blocks];
                let mut g1 = vec![[[0u128; SIDE]; W]; blocks];
                let task_first = first + (task * TASK_BLOCKS) as u64;
                for (column, [zero, one]) in self.columns.iter().enumerate() {
                    expand(zero, column, task_first, &mut t);
                    expand(one, column, task_first, &mut g1);
                }
                let mut words = [[0u128; SIDE]; W];
                for (b, (t, g1)) in t.iter_mut().zip(&g1).enumerate() {
                    words = [[0; SIDE]; W];
                    d(task * TASK_BLOCKS + b, &mut words);
                    let u = &mut u[b * bytes..][..bytes];
                    let columns = t.as_flattened().iter().zip(g1.as_flattened());
                    let columns = columns.zip(words.as_flattened());
                    for (out, ((t, g1), d)) in u.as_chunks_mut::<16>().0.iter_mut().zip(columns) {
                        *out = (t ^ g1 ^ d).to_le_bytes();
                    }
                    flip(t);
                    for (r, row) in rows[b * BLOCK_ROWS..][..BLOCK_ROWS].iter_mut().enumerate() {
                        *row = row_of(t, r);
                    }
                }
                words.zeroize();
            });
    }
}

/// The extension's sender: its choice bits `s` and the chosen seed of every base OT.
pub(crate) struct Sender<const W: usize> {
    columns: Vec<Aes128>,
    choices: [u128; W],
}

impl<const W: usize> Drop for Sender<W> {
    fn drop(&mut self) {
        self.choices.zeroize();
    }
}

impl<const W: usize> Sender<W> {
    /// The sender with choice bits `choices` (column `i` = bit `i mod 128` of word `i / 128`)
    /// and the seeds `k_i^{s_i}`.
    pub(crate) fn new(choices: [u128; W], seeds: &[Seed]) -> Self {
        debug_assert_eq!(seeds.len(), 128 * W);
        Self {
            columns: seeds.iter().map(|&seed| cipher(seed)).collect(),
            choices,
        }
    }

    /// The choice bits `s`.
    pub(crate) fn choices(&self) -> &[u128; W] {
        &self.choices
    }

    /// From the whole blocks of `U` in `u` ([`block_bytes`] each) starting at block `first`,
    /// writes the rows `q_j` into `rows`. Runs in parallel on the current rayon pool.
    pub(crate) fn extend(&self, first: u64, u: &[u8], rows: &mut [[u128; W]]) {
        let bytes = block_bytes(W);
        u.par_chunks(TASK_BLOCKS * bytes)
            .zip(rows.par_chunks_mut(TASK_BLOCKS * BLOCK_ROWS))
            .enumerate()
            .for_each(|(task, (u, rows))| {
                let mut q = vec![[[0u128; SIDE]; W]; u.len() / bytes];
                let task_first = first + (task * TASK_BLOCKS) as u64;
                for (column, key) in self.columns.iter().enumerate() {
                    expand(key, column, task_first, &mut q);
                }
                for (b, (q, u)) in q.iter_mut().zip(u.chunks_exact(bytes)).enumerate() {
                    let columns = q.as_flattened_mut().iter_mut();
                    for (column, (word, u)) in columns.zip(u.as_chunks::<16>().0).enumerate() {
                        let chosen = (self.choices[column / SIDE] >> (column % SIDE)) & 1;
                        *word ^= u128::from_le_bytes(*u) & 0u128.wrapping_sub(chosen);
                    }
                    flip(q);
                    for (r, row) in rows[b * BLOCK_ROWS..][..BLOCK_ROWS].iter_mut().enumerate() {
                        *row = row_of(q, r);
                    }
                }
            });
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::ot::base;
    use obscura_math::sample::OsSampler;
    use proptest::prelude::*;

    /// A receiver and a sender joined by real base OTs, the sender choosing `choices`.
    pub(crate) fn pair<const W: usize>(choices: [u128; W]) -> (Receiver<W>, Sender<W>) {
        let mut rng = OsSampler::new();
        let bits: Vec<bool> = (0..128 * W)
            .map(|i| (choices[i / 128] >> (i % 128)) & 1 == 1)
            .collect();
        let sender = base::Sender::new(&mut rng).unwrap();
        let (reply, chosen) = base::receive(&bits, &sender.message(), &mut rng).unwrap();
        let seeds = sender.seeds(&reply).unwrap();
        (Receiver::new(&seeds), Sender::new(choices, &chosen))
    }

    /// `q_j = t_j ⊕ (d_j ∧ s)` for every row, over `blocks` blocks from block `first` (more
    /// than one task of blocks), with `d_j` pseudorandom words from `salt`.
    fn rows_differ_by_the_chosen_bits_of_d<const W: usize>(
        choices: [u128; W],
        blocks: usize,
        first: u64,
        salt: u128,
    ) -> Result<(), TestCaseError> {
        let (receiver, sender) = pair(choices);
        let word = |j: usize, q: usize| (j as u128 * 4 + q as u128).wrapping_mul(salt | 1) ^ salt;
        let d = |b: usize, block: &mut Block<W>| {
            for (q, column) in block.iter_mut().enumerate() {
                for (r, word_out) in column.iter_mut().enumerate() {
                    *word_out = word(b * BLOCK_ROWS + r, q);
                }
            }
            flip(block);
        };
        let mut u = vec![0u8; blocks * block_bytes(W)];
        let mut t = vec![[0u128; W]; blocks * BLOCK_ROWS];
        receiver.extend(first, d, &mut u, &mut t);
        let mut q = vec![[0u128; W]; blocks * BLOCK_ROWS];
        sender.extend(first, &u, &mut q);
        for (j, (t, q)) in t.iter().zip(&q).enumerate() {
            let expected: [u128; W] = std::array::from_fn(|w| t[w] ^ (word(j, w) & choices[w]));
            prop_assert_eq!(*q, expected, "row {}", j);
        }
        Ok(())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(6))]

        #[test]
        fn one_word_rows_differ_by_the_chosen_bits_of_d(
            choices in any::<[u128; 1]>(),
            blocks in 1usize..20,
            first in 0u64..1000,
            salt in any::<u128>(),
        ) {
            rows_differ_by_the_chosen_bits_of_d(choices, blocks, first, salt)?;
        }

        #[test]
        fn four_word_rows_differ_by_the_chosen_bits_of_d(
            choices in any::<[u128; 4]>(),
            blocks in 1usize..20,
            first in 0u64..1000,
            salt in any::<u128>(),
        ) {
            rows_differ_by_the_chosen_bits_of_d(choices, blocks, first, salt)?;
        }
    }

    /// With no column chosen, `Q = T`: the sender learns nothing of `U`, and the rows are the
    /// expanded seeds (distinct).
    #[test]
    fn the_columns_are_the_expanded_seeds() {
        let (receiver, sender) = pair([0u128; 4]);
        let mut u = vec![0u8; block_bytes(4)];
        let mut t = vec![[0u128; 4]; BLOCK_ROWS];
        receiver.extend(3, |_, block| block[0][0] = 5, &mut u, &mut t);
        let mut q = vec![[1u128; 4]; BLOCK_ROWS];
        sender.extend(3, &u, &mut q);
        assert_eq!(q, t);
        assert_ne!(t[0], t[1]);
    }
}
