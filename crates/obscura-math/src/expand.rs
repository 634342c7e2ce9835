//! Public matrices expanded from a seed.
//!
//! A public LWE matrix `A` (rows x cols over Z_{2^32}) is never stored or sent: it is defined by a
//! 16-byte [`MatrixSeed`] and a 64-bit domain tag, and any block of rows can be regenerated on
//! demand. The expander is version-stable by construction: it is AES-128 in counter mode with
//!
//! - key = the seed,
//! - initial counter block = `domain` (big-endian u64) ‖ 0u64, incremented as one big-endian
//!   128-bit integer (`Ctr128BE`),
//! - entry `A[r][c]` = the little-endian `u32` at byte offset `4 * (r * cols + c)` of the
//!   keystream.
//!
//! The known-answer tests below pin this definition, so a dependency bump cannot change `A`.

use aes::cipher::{KeyIvInit, StreamCipher, StreamCipherSeek};

type Aes128Ctr = ctr::Ctr128BE<aes::Aes128>;

/// Length in bytes of a [`MatrixSeed`].
pub const SEED_BYTES: usize = 16;

/// The public seed from which a matrix is expanded (an AES-128 key).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct MatrixSeed(pub [u8; SEED_BYTES]);

impl MatrixSeed {
    /// A fresh seed from the OS random number generator.
    ///
    /// The seed is public; it comes from the OS only so that a server cannot be accused of
    /// choosing a weak matrix.
    pub fn random() -> Result<Self, getrandom::Error> {
        let mut seed = [0u8; SEED_BYTES];
        getrandom::getrandom(&mut seed)?;
        Ok(Self(seed))
    }
}

/// A `rows x cols` matrix over Z_{2^32} defined by a seed and a domain tag.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SeededMatrix {
    seed: MatrixSeed,
    domain: u64,
    rows: usize,
    cols: usize,
}

impl SeededMatrix {
    /// The matrix with the given seed, domain tag and shape. Different domain tags give
    /// independent matrices from the same seed.
    pub fn new(seed: MatrixSeed, domain: u64, rows: usize, cols: usize) -> Self {
        Self {
            seed,
            domain,
            rows,
            cols,
        }
    }

    /// Number of rows.
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// Number of columns.
    pub fn cols(&self) -> usize {
        self.cols
    }

    /// Writes rows `first .. first + out.len() / cols` into `out` (row-major).
    ///
    /// # Panics
    /// If `out.len()` is not a multiple of `cols` or the rows run past the end of the matrix;
    /// both are programming errors, never input errors.
    pub fn fill_rows(&self, first: usize, out: &mut [u32]) {
        assert!(
            self.cols > 0 && out.len().is_multiple_of(self.cols),
            "partial row"
        );
        let count = out.len() / self.cols;
        assert!(first + count <= self.rows, "rows out of range");
        let mut iv = [0u8; 16];
        iv[..8].copy_from_slice(&self.domain.to_be_bytes());
        let mut cipher = Aes128Ctr::new(&self.seed.0.into(), &iv.into());
        cipher.seek((first as u64) * (self.cols as u64) * 4);
        for chunk in out.chunks_mut(1024) {
            let mut bytes = [0u8; 4096];
            let bytes = &mut bytes[..chunk.len() * 4];
            cipher.apply_keystream(bytes);
            for (value, word) in chunk.iter_mut().zip(bytes.chunks_exact(4)) {
                *value = u32::from_le_bytes([word[0], word[1], word[2], word[3]]);
            }
        }
    }

    /// Rows `first .. first + count` as a new row-major vector.
    pub fn rows_block(&self, first: usize, count: usize) -> Vec<u32> {
        let mut out = vec![0u32; count * self.cols];
        self.fill_rows(first, &mut out);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seed() -> MatrixSeed {
        MatrixSeed(core::array::from_fn(|i| i as u8))
    }

    /// Known answers computed independently with `openssl enc -aes-128-ctr` for key
    /// 000102..0f and IV = domain ‖ 0.
    #[test]
    fn known_answer_domain_zero() {
        let m = SeededMatrix::new(seed(), 0, 4, 4);
        let a = m.rows_block(0, 4);
        // Keystream block 0 = AES_k(0^128) = c6a13b37 878f5b82 6f4f8162 a1c8d879.
        assert_eq!(
            &a[..4],
            &[0x373b_a1c6, 0x825b_8f87, 0x6281_4f6f, 0x79d8_c8a1]
        );
        assert_eq!(&a[4..8], &KAT_DOMAIN0_BLOCK1);
    }

    #[test]
    fn known_answer_domain_seven() {
        let m = SeededMatrix::new(seed(), 7, 2, 4);
        assert_eq!(&m.rows_block(0, 1)[..], &KAT_DOMAIN7_BLOCK0);
    }

    const KAT_DOMAIN0_BLOCK1: [u32; 4] = [0x9513_4673, 0x1eb4_c095, 0xe3bd_7b49, 0x0a2d_f465];
    const KAT_DOMAIN7_BLOCK0: [u32; 4] = [0x67c3_0c15, 0x469e_f9e1, 0xf5ee_e105, 0xa9c2_2567];

    #[test]
    fn blocks_agree_with_whole_matrix() {
        let m = SeededMatrix::new(seed(), 3, 37, 19);
        let whole = m.rows_block(0, 37);
        for first in [0, 1, 5, 17, 36] {
            for count in [1, 2, 37 - first] {
                if first + count <= 37 {
                    let block = m.rows_block(first, count);
                    assert_eq!(block, whole[first * 19..(first + count) * 19]);
                }
            }
        }
    }

    #[test]
    fn domains_and_seeds_differ() {
        let a = SeededMatrix::new(seed(), 0, 8, 8).rows_block(0, 8);
        let b = SeededMatrix::new(seed(), 1, 8, 8).rows_block(0, 8);
        let c = SeededMatrix::new(MatrixSeed([9; 16]), 0, 8, 8).rows_block(0, 8);
        assert_ne!(a, b);
        assert_ne!(a, c);
    }
}
