//! The items' 128-bit hashes and the pseudorandom code `C` of the OPRF.
//!
//! An item `x` (any byte string) is first hashed to `h(x)`: the first 16 bytes of
//! `SHA-256("obscura-psi kkrt item v1\0" ‖ x)`. The code of a 128-bit input `r` is
//! `C(r) = AES_{K_0}(r) ‖ AES_{K_1}(r) ‖ AES_{K_2}(r) ‖ AES_{K_3}(r)` (512 bits), under four fixed,
//! public AES-128 keys `K_q` = the first 16 bytes of `SHA-256("obscura-psi kkrt code key v1\0" ‖ q)`.
//!
//! KKRT need a pseudorandom code: for inputs chosen independently of the code, two distinct
//! codewords must differ in enough positions that `(C(x) ⊕ C(x')) ∧ s` is unpredictable for the
//! sender's secret `s`. With `h` modelled as a random oracle and AES as a pseudorandom
//! permutation, `C(h(x))` is a uniformly random 512-bit string for each distinct `h(x)`, which is
//! the random-code instantiation the paper analyses (§5: a 512-bit code suffices for 2^-40 at
//! these set sizes). Two items with the same 128-bit hash would share a code; among the
//! `n_c + n_s ≤ 2^33` items of a session that happens with probability below 2^-62.

use aes::Aes128;
use rayon::prelude::*;
use sha2::{Digest, Sha256};

use super::extension::Block;
use crate::block::{cipher, encrypt_each};

/// 128-bit words in a codeword.
pub(crate) const CODE_WORDS: usize = 4;

/// A 512-bit row of the OT-extension matrices (a codeword, a bin's row): word `q` holds
/// columns `128q .. 128q + 128`, column `128q + c` in bit `c`.
pub(crate) type Row = [u128; CODE_WORDS];

const ITEM_DOMAIN: &[u8] = b"obscura-psi kkrt item v1\0";
const CODE_KEY_DOMAIN: &[u8] = b"obscura-psi kkrt code key v1\0";
/// Items per parallel task.
const TASK_ITEMS: usize = 4096;

/// `h(x)` for each item, in parallel on the current rayon pool.
pub(crate) fn item_hashes(items: &[&[u8]]) -> Vec<u128> {
    items
        .par_iter()
        .with_min_len(TASK_ITEMS)
        .map(|item| {
            let digest = Sha256::new()
                .chain_update(ITEM_DOMAIN)
                .chain_update(item)
                .finalize();
            u128::from_le_bytes(digest[..16].try_into().expect("16 of 32 bytes"))
        })
        .collect()
}

/// The pseudorandom code: four AES-128 ciphers under the fixed public keys.
pub(crate) struct Code {
    ciphers: [Aes128; CODE_WORDS],
}

impl Code {
    /// The code with the documented fixed keys.
    pub(crate) fn new() -> Self {
        Self {
            ciphers: std::array::from_fn(|q| {
                let digest = Sha256::new()
                    .chain_update(CODE_KEY_DOMAIN)
                    .chain_update([q as u8])
                    .finalize();
                cipher(digest[..16].try_into().expect("16 of 32 bytes"))
            }),
        }
    }

    /// Writes `C(r)` for each of `inputs` into `out` (same length).
    pub(crate) fn encode(&self, inputs: &[u128], out: &mut [Row]) {
        for (q, cipher) in self.ciphers.iter().enumerate() {
            encrypt_each(cipher, inputs.iter().copied(), |k, word| out[k][q] = word);
        }
    }

    /// Writes `C(r)` for each of the 128 `inputs` of a block of the OT extension into `block`
    /// in row form (word `q` of row `r` at `[q][r]`).
    pub(crate) fn encode_block(&self, inputs: &[u128], block: &mut Block<CODE_WORDS>) {
        for (cipher, words) in self.ciphers.iter().zip(block) {
            encrypt_each(cipher, inputs.iter().copied(), |r, word| words[r] = word);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hashes_and_codes_are_fixed_functions() {
        let hashes = item_hashes(&[b"alice", b"bob", b"alice"]);
        assert_eq!(hashes[0], hashes[2]);
        assert_ne!(hashes[0], hashes[1]);
        let code = Code::new();
        let mut rows = [[0u128; CODE_WORDS]; 3];
        code.encode(&hashes, &mut rows);
        assert_eq!(rows[0], rows[2]);
        assert_ne!(rows[0], rows[1]);
        // The four words of a codeword come from four different keys.
        assert!(rows[0][0] != rows[0][1] && rows[0][1] != rows[0][2] && rows[0][2] != rows[0][3]);
        let mut again = [[0u128; CODE_WORDS]; 1];
        Code::new().encode(&hashes[..1], &mut again);
        assert_eq!(again[0], rows[0]);
    }
}
