//! Correlated OT extension (Ishai, Kilian, Nissim and Petrank, CRYPTO 2003) from 128 base OTs:
//! for choice bits `c_j` of the receiver, the sender gets rows `q_j` and the receiver rows
//! `t_j = q_j ⊕ c_j · Δ`, where `Δ` is the sender's 128 base-OT choice bits. This is a
//! subfield VOLE with `c_j ∈ GF(2)`; the RR22 module uses it for the base correlations of the
//! sparse VOLE and, hashed, as random OTs for the punctured PRFs.
//!
//! Column `i` (base OT `i`, seeds `k_i^0, k_i^1`, the sender holding `k_i^{Δ_i}`) is expanded by
//! AES-128 in counter mode: its bits for rows `128b .. 128b + 128` are `AES_k(b)` (`b` as a
//! 128-bit little-endian integer, row `128b + r` in bit `r`). The receiver sends, block by block,
//! `u_i = AES_{k_i^0}(b) ⊕ AES_{k_i^1}(b) ⊕ c_b` (the 128 choice bits of the block) for each
//! column; the sender computes `AES_{k_i^{Δ_i}}(b) ⊕ Δ_i · u_i = AES_{k_i^0}(b) ⊕ Δ_i · c_b`, and
//! both transpose each block's 128 columns into 128 rows.
//!
//! Semi-honest security: `u_i` is masked by the expansion of the seed the sender does not hold
//! (AES as a PRF), and the receiver never sees `Δ` (hidden by the base OTs).

use aes::Aes128;
use zeroize::Zeroize;

use crate::block::{cipher, encrypt_each};
use crate::ot::base::Seed;
use crate::transpose::{transpose_128, SIDE};

/// Base OTs, columns of the extension, and bits of `Δ`.
pub(crate) const BASE_OTS: usize = SIDE;
/// Rows per block.
pub(crate) const BLOCK_ROWS: usize = SIDE;
/// Bytes of one block of the receiver's message: 128 columns of 128 bits.
pub(crate) const BLOCK_BYTES: usize = BASE_OTS * 16;

/// The columns of blocks `first ..` under `keys`, one 128-word block per entry of `out`.
fn expand(keys: &[Aes128], first: u64, out: &mut [[u128; SIDE]]) {
    for (column, key) in keys.iter().enumerate() {
        let counters = (first..first + out.len() as u64).map(u128::from);
        encrypt_each(key, counters, |b, word| out[b][column] = word);
    }
}

/// The extension's receiver: both seeds of every base OT.
pub(crate) struct Receiver {
    zero: Vec<Aes128>,
    one: Vec<Aes128>,
}

impl Receiver {
    /// The receiver for the 128 base-OT seed pairs.
    pub(crate) fn new(seeds: &[[Seed; 2]]) -> Self {
        Self {
            zero: seeds.iter().map(|pair| cipher(pair[0])).collect(),
            one: seeds.iter().map(|pair| cipher(pair[1])).collect(),
        }
    }

    /// For the blocks starting at block `first`, with 128 choice bits per block in `choices`:
    /// returns the message (`BLOCK_BYTES` per block) and appends the rows `t_j` to `rows`.
    pub(crate) fn extend(&self, first: u64, choices: &[u128], rows: &mut Vec<u128>) -> Vec<u8> {
        let mut t = vec![[0u128; SIDE]; choices.len()];
        let mut g1 = vec![[0u128; SIDE]; choices.len()];
        expand(&self.zero, first, &mut t);
        expand(&self.one, first, &mut g1);
        let mut message = Vec::with_capacity(choices.len() * BLOCK_BYTES);
        for ((t, g1), &choice) in t.iter_mut().zip(&g1).zip(choices) {
            for (t, g1) in t.iter().zip(g1) {
                message.extend_from_slice(&(t ^ g1 ^ choice).to_le_bytes());
            }
            transpose_128(t);
            rows.extend_from_slice(t);
        }
        message
    }
}

/// The extension's sender: `Δ` and the chosen seed of every base OT.
pub(crate) struct Sender {
    keys: Vec<Aes128>,
    delta: u128,
}

impl Drop for Sender {
    fn drop(&mut self) {
        self.delta.zeroize();
    }
}

impl Sender {
    /// The sender with base-OT choice bits `delta` (bit `i` for OT `i`) and the seeds
    /// `k_i^{Δ_i}`.
    pub(crate) fn new(delta: u128, seeds: &[Seed]) -> Self {
        Self {
            keys: seeds.iter().map(|&seed| cipher(seed)).collect(),
            delta,
        }
    }

    /// From the receiver's message for the whole blocks starting at block `first`, appends the
    /// rows `q_j` to `rows`.
    pub(crate) fn extend(&self, first: u64, message: &[u8], rows: &mut Vec<u128>) {
        let mut q = vec![[0u128; SIDE]; message.len() / BLOCK_BYTES];
        expand(&self.keys, first, &mut q);
        for (q, block) in q.iter_mut().zip(message.chunks_exact(BLOCK_BYTES)) {
            for (column, (word, u)) in q.iter_mut().zip(block.as_chunks::<16>().0).enumerate() {
                let chosen = 0u128.wrapping_sub((self.delta >> column) & 1);
                *word ^= u128::from_le_bytes(*u) & chosen;
            }
            transpose_128(q);
            rows.extend_from_slice(q);
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::ot::base as base_ot;
    use obscura_math::sample::OsSampler;

    /// A receiver and a sender joined by real base OTs, with `Δ = delta`.
    pub(crate) fn pair(delta: u128) -> (Receiver, Sender) {
        let mut rng = OsSampler::new();
        let bits: Vec<bool> = (0..BASE_OTS).map(|i| (delta >> i) & 1 == 1).collect();
        let sender = base_ot::Sender::new(&mut rng).unwrap();
        let (reply, chosen) = base_ot::receive(&bits, &sender.message(), &mut rng).unwrap();
        let seeds = sender.seeds(&reply).unwrap();
        (Receiver::new(&seeds), Sender::new(delta, &chosen))
    }

    #[test]
    fn rows_differ_by_delta_exactly_where_the_choice_is_one() {
        let delta = 0x0123_4567_89ab_cdef_fedc_ba98_7654_3210;
        let (receiver, sender) = pair(delta);
        let choices = [0u128, u128::MAX, 0xf0f0 << 60, 1 << 127];
        let (mut t, mut q) = (Vec::new(), Vec::new());
        // In two calls, so the block counter carries across them.
        let mut message = receiver.extend(5, &choices[..1], &mut t);
        message.extend(receiver.extend(6, &choices[1..], &mut t));
        sender.extend(5, &message[..BLOCK_BYTES], &mut q);
        sender.extend(6, &message[BLOCK_BYTES..], &mut q);
        assert_eq!(t.len(), 4 * BLOCK_ROWS);
        for (j, (t, q)) in t.iter().zip(&q).enumerate() {
            let choice = (choices[j / BLOCK_ROWS] >> (j % BLOCK_ROWS)) & 1;
            assert_eq!(t ^ q, delta * choice, "row {j}");
        }
        let mut distinct = q.clone();
        distinct.sort_unstable();
        distinct.dedup();
        assert_eq!(distinct.len(), q.len());
    }
}
