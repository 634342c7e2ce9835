//! Correlated OT (IKNP): the extension of module [`extension`] with 128 columns and each row's
//! word the receiver's choice bit repeated, so that for choice bits `c_j` the sender gets rows
//! `q_j` and the receiver rows `t_j = q_j ⊕ c_j · Δ`, where `Δ` is the sender's 128 base-OT
//! choice bits. This is a subfield VOLE with `c_j ∈ GF(2)`; the RR22 module uses it for the
//! base correlations of the sparse VOLE and, hashed, as random OTs for the punctured PRFs.
//!
//! Each block of `U` carries, per column, `AES_{k_i^0}(b) ⊕ AES_{k_i^1}(b) ⊕ c_b` (`c_b` the
//! block's 128 choice bits).

use super::extension::{self, SIDE};
use crate::ot::base::Seed;

/// Base OTs, columns of the extension, and bits of `Δ`.
pub(crate) const BASE_OTS: usize = SIDE;
/// Rows per block.
pub(crate) const BLOCK_ROWS: usize = extension::BLOCK_ROWS;
/// Bytes of one block of the receiver's message: 128 columns of 128 bits.
pub(crate) const BLOCK_BYTES: usize = extension::block_bytes(1);

/// The extension's receiver: both seeds of every base OT.
pub(crate) struct Receiver(extension::Receiver<1>);

impl Receiver {
    /// The receiver for the 128 base-OT seed pairs.
    pub(crate) fn new(seeds: &[[Seed; 2]]) -> Self {
        Self(extension::Receiver::new(seeds))
    }

    /// For the blocks starting at block `first`, with 128 choice bits per block in `choices`:
    /// returns the message (`BLOCK_BYTES` per block) and appends the rows `t_j` to `rows`.
    pub(crate) fn extend(&self, first: u64, choices: &[u128], rows: &mut Vec<u128>) -> Vec<u8> {
        let start = rows.len();
        rows.resize(start + choices.len() * BLOCK_ROWS, 0);
        let mut message = vec![0u8; choices.len() * BLOCK_BYTES];
        let repeated = |b: usize, block: &mut extension::Block<1>| block[0] = [choices[b]; SIDE];
        let rows = rows[start..].as_chunks_mut::<1>().0;
        self.0.extend(first, repeated, &mut message, rows);
        message
    }
}

/// The extension's sender: `Δ` and the chosen seed of every base OT.
pub(crate) struct Sender(extension::Sender<1>);

impl Sender {
    /// The sender with base-OT choice bits `delta` (bit `i` for OT `i`) and the seeds
    /// `k_i^{Δ_i}`.
    pub(crate) fn new(delta: u128, seeds: &[Seed]) -> Self {
        Self(extension::Sender::new([delta], seeds))
    }

    /// From the receiver's message for the whole blocks starting at block `first`, appends the
    /// rows `q_j` to `rows`.
    pub(crate) fn extend(&self, first: u64, message: &[u8], rows: &mut Vec<u128>) {
        let start = rows.len();
        rows.resize(start + message.len() / BLOCK_BYTES * BLOCK_ROWS, 0);
        self.0
            .extend(first, message, rows[start..].as_chunks_mut::<1>().0);
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A receiver and a sender joined by real base OTs, with `Δ = delta`.
    pub(crate) fn pair(delta: u128) -> (Receiver, Sender) {
        let (receiver, sender) = extension::tests::pair([delta]);
        (Receiver(receiver), Sender(sender))
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
