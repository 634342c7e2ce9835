//! The consistency checks of RR22's malicious mode: random linear combinations over
//! GF(2^128) with coefficients `χ_j = AES_s(j)` (`j` as a 128-bit little-endian integer) under
//! a fresh 16-byte seed `s` from the party the check protects, sent only once the other party
//! is bound to what is checked.
//!
//! - **OT extension** (Keller, Orsini and Scholl, CRYPTO 2015), protecting the server's `Δ`:
//!   the client proves `t_j = q_j ⊕ c_j · Δ` for every row `j` by sending `x = Σ χ_j · c_j`
//!   and `t = Σ χ_j · t_j`; the server checks `t = Σ χ_j · q_j ⊕ x · Δ`. At least 256 rows have
//!   uniformly random choice bits and feed no other use, so `x` is uniform and says nothing of
//!   the real choices. A client that passes with inconsistent rows has guessed the bits of `Δ`
//!   it deviated on, each guess failing with probability 1/2 (the KOS bound; Ferret, CCS 2020,
//!   uses this check for its base correlations the same way).
//! - **VOLE outputs** (as in Weng et al.'s Wolverine, S&P 2021), protecting the client against
//!   inconsistent GGM trees: with a mask correlation `c* = b* ⊕ y* · Δ` (`y*` uniform in
//!   GF(2^128)), the client sends `x' = Σ χ_i · A_i ⊕ y*`, the server returns the hash
//!   [`vole_digest`] of `V = Σ χ_i · B_i ⊕ b* ⊕ x' · Δ`, and the client checks it against the
//!   hash of `W = Σ χ_i · C_i ⊕ c*` (an equality test: `V` itself would hand a client that sent
//!   `x' ⊕ e` the value `W ⊕ e · Δ`, hence `Δ`; its hash only lets it test guesses of `Δ`). A
//!   server whose trees leave an error `D ≠ 0` on the client's outputs passes only if it guesses
//!   `Σ χ_i · D_i`, which, for coefficients drawn after the trees were sent, it can do for every
//!   value of the client's noise at once with probability at most `2^-128`; what it learns is
//!   whether one guess about the noise was right (the selective-failure leakage the dual-LPN
//!   parameters allow for, as in Wolverine and Ferret), since the client only stops or goes on.

use aes::Aes128;
use rayon::prelude::*;
use sha2::{Digest, Sha256};

use crate::block::{cipher, encrypt_each};
use crate::gf128::mul;

/// Bytes of a check's seed.
pub(crate) const SEED_BYTES: usize = 16;
/// Bytes of the client's answer to the OT-extension check ([`prove_rows`]).
pub(crate) const PROOF_BYTES: usize = 32;
/// Bytes of [`vole_digest`].
pub(crate) const DIGEST_BYTES: usize = 32;

const DIGEST_DOMAIN: &[u8] = b"obscura-psi rr22 vole check v1\0";
/// Rows per parallel task.
const TASK_ROWS: usize = 1 << 12;

/// The coefficients `χ_j` of one check.
pub(crate) struct Coefficients(Aes128);

impl Coefficients {
    /// The coefficients of the check with seed `seed`.
    pub(crate) fn new(seed: [u8; SEED_BYTES]) -> Self {
        Self(cipher(seed))
    }

    /// `Σ_j χ_{first + j} · values_j` for each of the `N` components of `values`.
    pub(crate) fn combine<const N: usize>(&self, first: usize, values: &[[u128; N]]) -> [u128; N] {
        values
            .par_chunks(TASK_ROWS)
            .enumerate()
            .map(|(task, values)| {
                let start = (first + task * TASK_ROWS) as u128;
                let mut sums = [0u128; N];
                encrypt_each(
                    &self.0,
                    (0..values.len() as u128).map(|j| start + j),
                    |j, chi| {
                        for (sum, &value) in sums.iter_mut().zip(&values[j]) {
                            *sum ^= mul(chi, value);
                        }
                    },
                );
                sums
            })
            .reduce(|| [0u128; N], |a, b| std::array::from_fn(|k| a[k] ^ b[k]))
    }

    /// `Σ_j χ_j · c_j` for the bits `c_j` of `choices` (row `j` in bit `j % 128` of word
    /// `j / 128`).
    pub(crate) fn combine_bits(&self, choices: &[u128]) -> u128 {
        let words_per_task = TASK_ROWS / 128;
        choices
            .par_chunks(words_per_task)
            .enumerate()
            .map(|(task, words)| {
                let start = (task * TASK_ROWS) as u128;
                let mut sum = 0;
                let rows = (0..128 * words.len() as u128).map(|j| start + j);
                encrypt_each(&self.0, rows, |j, chi| {
                    let bit = (words[j / 128] >> (j % 128)) & 1;
                    sum ^= chi & 0u128.wrapping_sub(bit);
                });
                sum
            })
            .reduce(|| 0, |a, b| a ^ b)
    }
}

/// The client's answer to the OT-extension check: `(x, t)`.
pub(crate) fn prove_rows(seed: [u8; SEED_BYTES], choices: &[u128], t: &[u128]) -> [u128; 2] {
    let chi = Coefficients::new(seed);
    [chi.combine_bits(choices), rows_sum(&chi, t)]
}

/// Whether the client's answer `[x, t]` passes the OT-extension check for the server's rows
/// `q` and `delta`.
pub(crate) fn verify_rows(
    seed: [u8; SEED_BYTES],
    q: &[u128],
    delta: u128,
    [x, t]: [u128; 2],
) -> bool {
    let chi = Coefficients::new(seed);
    rows_sum(&chi, q) ^ mul(x, delta) == t
}

/// What the server sends of the VOLE check's value `v`, and what the client compares it with:
/// `SHA-256("obscura-psi rr22 vole check v1\0" ‖ v)`.
pub(crate) fn vole_digest(value: u128) -> [u8; DIGEST_BYTES] {
    Sha256::new()
        .chain_update(DIGEST_DOMAIN)
        .chain_update(value.to_le_bytes())
        .finalize()
        .into()
}

/// `Σ_j χ_j · rows_j`.
fn rows_sum(chi: &Coefficients, rows: &[u128]) -> u128 {
    chi.combine(0, rows.as_chunks::<1>().0)[0]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ot::iknp::tests::pair;

    #[test]
    fn combinations_split_at_any_point() {
        let chi = Coefficients::new([3; 16]);
        let values: Vec<[u128; 2]> = (0..10_000u128).map(|i| [i * 7 + 1, i ^ 99]).collect();
        let whole = chi.combine(0, &values);
        let (head, tail) = values.split_at(4321);
        let parts = [chi.combine(0, head), chi.combine(4321, tail)];
        assert_eq!(
            whole,
            [parts[0][0] ^ parts[1][0], parts[0][1] ^ parts[1][1]]
        );
        // The bit form is the sum of the coefficients of the rows whose bit is set.
        let bits = [0xdead_beef_u128 << 70 | 5, u128::MAX, 0, 1 << 127];
        let words: Vec<[u128; 1]> = (0..512)
            .map(|j| [(bits[j / 128] >> (j % 128)) & 1])
            .collect();
        let expected = (0..512usize)
            .filter(|&j| words[j][0] == 1)
            .fold(0, |acc, j| acc ^ chi.combine(j, &[[1]])[0]);
        assert_eq!(chi.combine_bits(&bits), expected);
    }

    /// Honest rows pass; a single row extended with another choice than the one claimed fails.
    #[test]
    fn inconsistent_rows_fail_the_ot_check() {
        let delta = 0x5555_0000_ffff_1234_8765_4321_0f0f_a5a5;
        let (receiver, sender) = pair(delta);
        let choices = [0x1234u128, u128::MAX >> 3, 77];
        let (mut t, mut q) = (Vec::new(), Vec::new());
        let message = receiver.extend(0, &choices, &mut t);
        sender.extend(0, &message, &mut q);
        let seed = [9; 16];
        assert!(verify_rows(seed, &q, delta, prove_rows(seed, &choices, &t)));
        // Column 5 of the message carries a flipped choice for row 3.
        let mut forged = message.clone();
        forged[5 * 16] ^= 1 << 3;
        let mut q_forged = Vec::new();
        sender.extend(0, &forged, &mut q_forged);
        assert!(!verify_rows(
            seed,
            &q_forged,
            delta,
            prove_rows(seed, &choices, &t)
        ));
        let mut flipped = choices;
        flipped[0] ^= 1 << 3;
        assert!(!verify_rows(
            seed,
            &q_forged,
            delta,
            prove_rows(seed, &flipped, &t)
        ));
    }
}
