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

use std::sync::{Arc, OnceLock};

use aes::cipher::{KeyIvInit, StreamCipher, StreamCipherSeek};
use rayon::prelude::*;

use crate::kernels::portable::dot_u32;
use crate::ntt::{FixedMultiplier, NttPlan, Transformed};

/// The most bytes of a public matrix's rows that a party multiplying by it many times keeps
/// expanded ([`PublicMatrix::expanded`]; 1,024 rows at n = 1024): its products then read them
/// from the caches instead of expanding or transforming `A` again, which costs more for so few
/// rows.
pub const MAX_EXPANDED_BYTES: usize = 4 << 20;

/// The most memory [`PublicMatrix::precompute`] spends on transformed blocks (12 bytes per row).
pub const MAX_PRECOMPUTED_BYTES: usize = 64 << 20;

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
    pub fn random() -> Result<Self, crate::sample::RngError> {
        let mut seed = [0u8; SEED_BYTES];
        crate::sample::fill_random(&mut seed)?;
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

/// Rows of a uniform matrix expanded per parallel task while computing `A·s`: 256 x 1024
/// entries are 1 MiB, so a client holds a few such blocks, never the whole matrix.
const PRODUCT_BLOCK: usize = 256;

/// A `rows x n` matrix over Z_{2^32} made of stacked negacyclic `n x n` blocks: block `i` is the
/// matrix of multiplication by `a_i(x)` in Z_{2^32}\[x\]/(x^n + 1), where the coefficients of
/// `a_i` are row `i` of a [`SeededMatrix`] with the same seed and domain. Row `i·n + r` is
/// `(a_i[r], a_i[r-1], …, a_i[0], -a_i[n-1], …, -a_i[r+1])`.
///
/// It is defined by `rows` (rounded up to whole blocks) expanded words instead of `rows · n`,
/// and `A·s` costs a few NTTs per block instead of `n²` products.
#[derive(Clone, Debug)]
pub struct NegacyclicMatrix {
    polynomials: SeededMatrix,
    rows: usize,
    n: usize,
    /// The transforms of degree `n`, made at the first product that needs them.
    plan: OnceLock<Arc<NttPlan>>,
    /// The forward transform of every block, once [`PublicMatrix::precompute`] made them.
    transformed: Option<Vec<Transformed>>,
}

impl NegacyclicMatrix {
    /// The matrix with the given seed, domain tag and shape; `None` unless `n` is a power of two
    /// that the NTT supports.
    pub fn new(seed: MatrixSeed, domain: u64, rows: usize, n: usize) -> Option<Self> {
        if !NttPlan::supports(n) {
            return None;
        }
        Some(Self {
            polynomials: SeededMatrix::new(seed, domain, rows.div_ceil(n), n),
            rows,
            n,
            plan: OnceLock::new(),
            transformed: None,
        })
    }

    /// The transforms of its degree.
    pub(crate) fn plan(&self) -> &NttPlan {
        self.plan
            .get_or_init(|| NttPlan::shared(self.n).expect("a degree checked by `new`"))
    }

    /// The degree of its blocks.
    pub(crate) fn degree(&self) -> usize {
        self.n
    }

    /// Writes the coefficients of block `block`'s polynomial `a_block` into `out` (length n).
    pub(crate) fn polynomial(&self, block: usize, out: &mut [u32]) {
        self.polynomials.fill_rows(block, out);
    }

    /// Writes rows `first .. first + out.len() / n` into `out` (row-major).
    pub fn fill_rows(&self, first: usize, out: &mut [u32]) {
        let n = self.n;
        assert!(out.len().is_multiple_of(n), "partial row");
        assert!(first + out.len() / n <= self.rows, "rows out of range");
        let mut block = usize::MAX;
        let mut a = vec![0u32; n];
        for (offset, row) in out.chunks_exact_mut(n).enumerate() {
            let c = first + offset;
            if c / n != block {
                block = c / n;
                self.polynomials.fill_rows(block, &mut a);
            }
            // Entries 0..=r are a_i[r], …, a_i[0]; the rest are -a_i[n-1], …, -a_i[r+1].
            let r = c % n;
            let (head, tail) = row.split_at_mut(r + 1);
            for (value, &x) in head.iter_mut().zip(a[..=r].iter().rev()) {
                *value = x;
            }
            for (value, &x) in tail.iter_mut().zip(a[r + 1..].iter().rev()) {
                *value = x.wrapping_neg();
            }
        }
    }
}

/// A public matrix `A` (`rows x n`): uniform, or structured as stacked negacyclic blocks.
#[derive(Clone, Debug)]
pub enum PublicMatrix {
    /// Every entry expanded from the seed.
    Uniform(SeededMatrix),
    /// Stacked negacyclic blocks.
    Negacyclic(NegacyclicMatrix),
}

impl PublicMatrix {
    /// Number of rows.
    pub fn rows(&self) -> usize {
        match self {
            Self::Uniform(m) => m.rows(),
            Self::Negacyclic(m) => m.rows,
        }
    }

    /// Number of columns (the LWE dimension n).
    pub fn cols(&self) -> usize {
        match self {
            Self::Uniform(m) => m.cols(),
            Self::Negacyclic(m) => m.n,
        }
    }

    /// Writes rows `first .. first + out.len() / cols` into `out` (row-major).
    pub fn fill_rows(&self, first: usize, out: &mut [u32]) {
        match self {
            Self::Uniform(m) => m.fill_rows(first, out),
            Self::Negacyclic(m) => m.fill_rows(first, out),
        }
    }

    /// Every row, row-major, if they fit in [`MAX_EXPANDED_BYTES`].
    pub fn expanded(&self) -> Option<Vec<u32>> {
        let words = self.rows().checked_mul(self.cols())?;
        (words.checked_mul(4)? <= MAX_EXPANDED_BYTES).then(|| {
            let mut rows = vec![0u32; words];
            self.fill_rows(0, &mut rows);
            rows
        })
    }

    /// Makes later products [`mul_secrets`](Self::mul_secrets) cheaper, for a client that
    /// prepares many queries: a negacyclic matrix keeps the forward transform of every block
    /// (12 bytes per row, skipped beyond [`MAX_PRECOMPUTED_BYTES`]), so a product costs one
    /// inverse transform per block instead of expanding, transforming and inverting. A uniform
    /// matrix has nothing to keep.
    pub fn precompute(&mut self) {
        let Self::Negacyclic(m) = self else {
            return;
        };
        let (n, blocks) = (m.n, m.rows.div_ceil(m.n));
        if m.transformed.is_some() || blocks * n * 12 > MAX_PRECOMPUTED_BYTES {
            return;
        }
        let transformed = (0..blocks)
            .into_par_iter()
            .map_init(
                || vec![0u32; n],
                |a, block| {
                    m.polynomials.fill_rows(block, a);
                    m.plan().forward(a)
                },
            )
            .collect();
        m.transformed = Some(transformed);
    }

    /// `A·s` for every secret (each of length n), in one pass over `A`, on the rayon pool.
    pub fn mul_secrets(&self, secrets: &[Vec<u32>]) -> Vec<Vec<u32>> {
        let (rows, n, k) = (self.rows(), self.cols(), secrets.len());
        assert!(secrets.iter().all(|s| s.len() == n), "secret length");
        if k == 0 || rows == 0 {
            return vec![vec![0; rows]; k];
        }
        // Interleaved: entry c·k + i is (A·s_i)[c].
        let mut interleaved = vec![0u32; rows * k];
        match self {
            Self::Uniform(m) => {
                interleaved
                    .par_chunks_mut(PRODUCT_BLOCK * k)
                    .enumerate()
                    .for_each(|(block, out)| {
                        let a = m.rows_block(block * PRODUCT_BLOCK, out.len() / k);
                        for (row, out) in a.chunks_exact(n).zip(out.chunks_exact_mut(k)) {
                            for (o, secret) in out.iter_mut().zip(secrets) {
                                *o = dot_u32(row, secret);
                            }
                        }
                    });
            }
            Self::Negacyclic(m) => {
                let multipliers: Vec<_> = secrets
                    .iter()
                    .map(|s| FixedMultiplier::new(m.plan(), s))
                    .collect();
                interleaved
                    .par_chunks_mut(n * k)
                    .enumerate()
                    .for_each(|(block, out)| {
                        let mut product = vec![0u32; n];
                        // The block's transform, kept or made here once for every secret.
                        let made;
                        let a_hat = match &m.transformed {
                            Some(blocks) => &blocks[block],
                            None => {
                                let mut a = vec![0u32; n];
                                m.polynomials.fill_rows(block, &mut a);
                                made = m.plan().forward(&a);
                                &made
                            }
                        };
                        for (i, multiplier) in multipliers.iter().enumerate() {
                            multiplier.multiply_transformed(a_hat, &mut product);
                            for (o, &value) in out.chunks_exact_mut(k).zip(&product) {
                                o[i] = value;
                            }
                        }
                    });
            }
        }
        (0..k)
            .map(|i| (0..rows).map(|c| interleaved[c * k + i]).collect())
            .collect()
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
    fn negacyclic_rows_are_the_multiplication_matrix() {
        let n = 8;
        let m = NegacyclicMatrix::new(seed(), 5, 19, n).unwrap();
        let polynomials = SeededMatrix::new(seed(), 5, 3, n).rows_block(0, 3);
        let mut rows = vec![0u32; 19 * n];
        m.fill_rows(0, &mut rows);
        // Row i·n + r of block i applied to s is coefficient r of a_i·s.
        let s: Vec<u32> = (0..n as u32).map(|x| x.wrapping_mul(0x9e37_79b9)).collect();
        for block in 0..3 {
            let a = &polynomials[block * n..(block + 1) * n];
            let product = crate::ntt::negacyclic_schoolbook(a, &s);
            for (r, &expected) in product.iter().enumerate() {
                let c = block * n + r;
                if c < 19 {
                    assert_eq!(dot_u32(&rows[c * n..(c + 1) * n], &s), expected);
                }
            }
        }
        let mut tail = vec![0u32; 4 * n];
        m.fill_rows(15, &mut tail);
        assert_eq!(tail, rows[15 * n..]);
    }

    #[test]
    fn products_with_secrets_match_the_rows() {
        for n in [16, 1024] {
            let rows = 2 * n + 3;
            for matrix in [
                PublicMatrix::Uniform(SeededMatrix::new(seed(), 1, rows, n)),
                PublicMatrix::Negacyclic(NegacyclicMatrix::new(seed(), 1, rows, n).unwrap()),
            ] {
                let secrets: Vec<Vec<u32>> = (0..3u32)
                    .map(|j| {
                        (0..n as u32)
                            .map(|x| x.wrapping_mul(0x85eb_ca6b) ^ j)
                            .collect()
                    })
                    .collect();
                let mut a = vec![0u32; rows * n];
                matrix.fill_rows(0, &mut a);
                let expected: Vec<Vec<u32>> = secrets
                    .iter()
                    .map(|secret| a.chunks_exact(n).map(|row| dot_u32(row, secret)).collect())
                    .collect();
                // Streamed, then with the transforms kept (negacyclic only).
                let mut matrix = matrix;
                assert_eq!(matrix.mul_secrets(&secrets), expected);
                matrix.precompute();
                assert_eq!(matrix.mul_secrets(&secrets), expected);
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
