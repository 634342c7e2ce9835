//! Dense row-major matrices over Z_{2^32}, and of plaintext digits.

use std::sync::Arc;

use rayon::prelude::*;

use crate::kernels;

/// A dense row-major matrix over Z_{2^32} (wrapping arithmetic).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Matrix {
    rows: usize,
    cols: usize,
    data: Vec<u32>,
}

impl Matrix {
    /// The all-zero `rows x cols` matrix.
    pub fn zeros(rows: usize, cols: usize) -> Self {
        Self {
            rows,
            cols,
            data: vec![0; rows * cols],
        }
    }

    /// A matrix over existing row-major data; `None` if the length does not match the shape.
    pub fn from_vec(rows: usize, cols: usize, data: Vec<u32>) -> Option<Self> {
        (rows.checked_mul(cols)? == data.len()).then_some(Self { rows, cols, data })
    }

    /// Number of rows.
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// Number of columns.
    pub fn cols(&self) -> usize {
        self.cols
    }

    /// The row-major entries.
    pub fn as_slice(&self) -> &[u32] {
        &self.data
    }

    /// The row-major entries, mutable.
    pub fn as_mut_slice(&mut self) -> &mut [u32] {
        &mut self.data
    }

    /// Row `r`.
    pub fn row(&self, r: usize) -> &[u32] {
        &self.data[r * self.cols..(r + 1) * self.cols]
    }

    /// `self · v` over Z_{2^32}.
    ///
    /// # Panics
    /// If `v.len() != self.cols()`.
    pub fn mul_vec(&self, v: &[u32]) -> Vec<u32> {
        assert_eq!(v.len(), self.cols, "vector length");
        let mut out = vec![0u32; self.rows];
        kernels::mat_vec(&self.data, v, &mut out);
        out
    }
}

/// Bytes kept alive by someone else (for instance a memory-mapped database file).
pub type SharedBytes = Arc<dyn AsRef<[u8]> + Send + Sync>;

/// Where the bytes of a plaintext matrix live.
#[derive(Clone)]
enum Storage {
    Owned(Vec<u8>),
    Shared {
        owner: SharedBytes,
        start: usize,
        len: usize,
    },
}

/// A dense row-major matrix of plaintext digits, one centered digit per byte
/// (two's-complement `i8`), the form in which databases are stored and streamed. The bytes are
/// owned, or shared with their owner (a memory-mapped file is served without a copy).
#[derive(Clone)]
pub struct PlaintextMatrix {
    rows: usize,
    cols: usize,
    storage: Storage,
}

impl PlaintextMatrix {
    /// A matrix over existing row-major bytes; `None` if the length does not match the shape.
    pub fn from_vec(rows: usize, cols: usize, data: Vec<u8>) -> Option<Self> {
        (rows.checked_mul(cols)? == data.len()).then_some(Self {
            rows,
            cols,
            storage: Storage::Owned(data),
        })
    }

    /// A matrix over the `rows · cols` bytes of `owner` from `start`; `None` if they are not
    /// all there.
    pub fn from_shared(rows: usize, cols: usize, owner: SharedBytes, start: usize) -> Option<Self> {
        let len = rows.checked_mul(cols)?;
        let available = (*owner).as_ref().len().checked_sub(start)?;
        (available >= len).then_some(Self {
            rows,
            cols,
            storage: Storage::Shared { owner, start, len },
        })
    }

    /// Number of rows.
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// Number of columns.
    pub fn cols(&self) -> usize {
        self.cols
    }

    /// The row-major bytes.
    pub fn as_bytes(&self) -> &[u8] {
        match &self.storage {
            Storage::Owned(data) => data,
            Storage::Shared { owner, start, len } => &(**owner).as_ref()[*start..*start + *len],
        }
    }

    /// The largest squared Euclidean norm of a row, digits read as signed (`0` for an empty
    /// matrix): the noise of an LWE answer grows with it.
    pub fn max_row_norm(&self) -> u64 {
        if self.cols == 0 {
            return 0;
        }
        self.as_bytes()
            .par_chunks(self.cols)
            .map(|row| {
                // Chunks of 2^16 digits keep an i32 sum exact (2^16 · 2^14 = 2^30).
                row.chunks(1 << 16)
                    .map(|chunk| {
                        let sum: i32 = chunk
                            .iter()
                            .map(|&d| i32::from(d as i8) * i32::from(d as i8))
                            .sum();
                        sum as u64
                    })
                    .sum::<u64>()
            })
            .max()
            .unwrap_or(0)
    }

    /// `self · v` over Z_{2^32}, digits read as signed.
    ///
    /// # Panics
    /// If `v.len() != self.cols()`.
    pub fn mul_vec(&self, v: &[u32]) -> Vec<u32> {
        assert_eq!(v.len(), self.cols, "vector length");
        let mut out = vec![0u32; self.rows];
        kernels::plaintext_mat_vec(self.as_bytes(), v, &mut out);
        out
    }
}

impl PartialEq for PlaintextMatrix {
    fn eq(&self, other: &Self) -> bool {
        (self.rows, self.cols) == (other.rows, other.cols) && self.as_bytes() == other.as_bytes()
    }
}

impl Eq for PlaintextMatrix {}

impl std::fmt::Debug for PlaintextMatrix {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PlaintextMatrix")
            .field("rows", &self.rows)
            .field("cols", &self.cols)
            .field("shared", &matches!(self.storage, Storage::Shared { .. }))
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::portable::widen;
    use proptest::prelude::*;

    fn naive(rows: usize, cols: usize, m: &[u32], v: &[u32]) -> Vec<u32> {
        (0..rows)
            .map(|r| {
                (0..cols).fold(0u32, |acc, c| {
                    acc.wrapping_add(m[r * cols + c].wrapping_mul(v[c]))
                })
            })
            .collect()
    }

    proptest! {
        #[test]
        fn max_row_norm_matches_naive(rows in 0usize..6, cols in 0usize..200_000, seed in any::<u64>()) {
            let mut x = seed | 1;
            let bytes: Vec<u8> = (0..rows * cols).map(|_| { x ^= x << 13; x ^= x >> 7; x ^= x << 17; x as u8 }).collect();
            let expected = bytes
                .chunks(cols.max(1))
                .map(|row| row.iter().map(|&d| (i64::from(d as i8)).pow(2) as u64).sum::<u64>())
                .max()
                .unwrap_or(0);
            let matrix = PlaintextMatrix::from_vec(rows, cols, bytes).unwrap();
            prop_assert_eq!(matrix.max_row_norm(), expected);
        }

        #[test]
        fn mat_vec_matches_naive(rows in 0usize..40, cols in 0usize..70, seed in any::<u64>()) {
            let mut x = seed | 1;
            let mut next = move || { x ^= x << 13; x ^= x >> 7; x ^= x << 17; x as u32 };
            let m: Vec<u32> = (0..rows * cols).map(|_| next()).collect();
            let v: Vec<u32> = (0..cols).map(|_| next()).collect();
            let matrix = Matrix::from_vec(rows, cols, m.clone()).unwrap();
            prop_assert_eq!(matrix.mul_vec(&v), naive(rows, cols, &m, &v));
        }

        #[test]
        fn plaintext_mat_vec_matches_naive(rows in 0usize..40, cols in 0usize..70, seed in any::<u64>()) {
            let mut x = seed | 1;
            let mut next = move || { x ^= x << 13; x ^= x >> 7; x ^= x << 17; x as u32 };
            let d: Vec<u8> = (0..rows * cols).map(|_| next() as u8).collect();
            let v: Vec<u32> = (0..cols).map(|_| next()).collect();
            let wide: Vec<u32> = d.iter().map(|&b| widen(b)).collect();
            let matrix = PlaintextMatrix::from_vec(rows, cols, d).unwrap();
            prop_assert_eq!(matrix.mul_vec(&v), naive(rows, cols, &wide, &v));
        }

        #[test]
        fn blocked_product_matches_naive(rows in 1usize..20, cols in 1usize..40, n in 1usize..24, block in 1usize..16, seed in any::<u64>()) {
            let mut x = seed | 1;
            let mut next = move || { x ^= x << 13; x ^= x >> 7; x ^= x << 17; x as u32 };
            let d: Vec<u8> = (0..rows * cols).map(|_| next() as u8).collect();
            let a: Vec<u32> = (0..cols * n).map(|_| next()).collect();
            let mut h = vec![0u32; rows * n];
            let mut first = 0;
            while first < cols {
                let b = block.min(cols - first);
                kernels::plaintext_mat_mul_acc(&d, cols, first, &a[first * n..(first + b) * n], n, &mut h);
                first += b;
            }
            for r in 0..rows {
                for k in 0..n {
                    let expected = (0..cols).fold(0u32, |acc, c| acc.wrapping_add(widen(d[r * cols + c]).wrapping_mul(a[c * n + k])));
                    prop_assert_eq!(h[r * n + k], expected);
                }
            }
        }
    }

    #[test]
    fn shape_checks() {
        assert!(Matrix::from_vec(2, 3, vec![0; 5]).is_none());
        assert!(PlaintextMatrix::from_vec(usize::MAX, 2, vec![]).is_none());
        assert_eq!(Matrix::zeros(2, 3).row(1), &[0, 0, 0]);
        let owner: SharedBytes = Arc::new(vec![1u8, 2, 3, 4, 5, 6, 7]);
        let shared = PlaintextMatrix::from_shared(2, 3, owner.clone(), 1).unwrap();
        assert_eq!(shared.as_bytes(), &[2, 3, 4, 5, 6, 7]);
        assert_eq!(
            shared,
            PlaintextMatrix::from_vec(2, 3, vec![2, 3, 4, 5, 6, 7]).unwrap()
        );
        assert!(PlaintextMatrix::from_shared(2, 3, owner.clone(), 2).is_none());
        assert!(PlaintextMatrix::from_shared(1, 1, owner, 9).is_none());
    }
}
