//! The hot loops of the LWE schemes.
//!
//! Following curve25519-dalek's backend pattern, [`portable`] holds the reference
//! implementation that runs everywhere (wasm included); `avx2` and `avx512` hold the same
//! kernels for x86-64 vector units, and this module alone decides which one runs
//! ([`Backend::detect`], once per process). Tests hold every backend to the portable one on
//! random inputs.
//!
//! Plaintext matrices store one centered digit per byte as two's-complement `i8`, so a database
//! entry costs one byte of memory traffic; kernels sign-extend it before multiplying. Two kernel
//! shapes cover every product:
//!
//! - `gemv_acc`: vector lanes run along a row (one query: `D·q`);
//! - `gemm_acc`: vector lanes run along the output row (`D·B` for a batch of queries, and the
//!   hint product `D·A`), a 4-row x 4-vector tile of the output held in registers.
//!
//! The parallel drivers below split rows over the rayon pool (the caller's pool decides the
//! thread count) and tile the columns so the vector operand stays in cache.

#![allow(unsafe_code)]

#[cfg(target_arch = "x86_64")]
mod avx2;
#[cfg(target_arch = "x86_64")]
mod avx512;
pub mod portable;
#[cfg(target_arch = "x86_64")]
mod simd;

use std::sync::OnceLock;

use rayon::prelude::*;

/// An implementation of the kernels.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backend {
    /// Plain Rust; runs everywhere.
    Portable,
    /// x86-64 AVX2, 8 lanes.
    Avx2,
    /// x86-64 AVX-512 (F and BW), 16 lanes.
    Avx512,
}

impl Backend {
    /// The fastest backend this CPU supports, detected once.
    pub fn detect() -> Self {
        static DETECTED: OnceLock<Backend> = OnceLock::new();
        *DETECTED.get_or_init(|| *Self::available().last().expect("portable is always there"))
    }

    /// Every backend this CPU supports, slowest first.
    pub fn available() -> Vec<Self> {
        let mut backends = vec![Self::Portable];
        #[cfg(target_arch = "x86_64")]
        {
            if is_x86_feature_detected!("avx2") {
                backends.push(Self::Avx2);
            }
            if is_x86_feature_detected!("avx512f") && is_x86_feature_detected!("avx512bw") {
                backends.push(Self::Avx512);
            }
        }
        backends
    }

    /// The backend's name.
    pub fn name(self) -> &'static str {
        match self {
            Self::Portable => "portable",
            Self::Avx2 => "avx2",
            Self::Avx512 => "avx512",
        }
    }

    /// `out[r] += Σ_c d[r·stride + c] · v[c]` (see [`portable::gemv_acc`]).
    ///
    /// # Panics
    /// If the slices are too short for the shape, or the backend is not available.
    pub fn gemv_acc(self, d: &[u8], stride: usize, v: &[u32], out: &mut [u32]) {
        let rows = out.len();
        if rows == 0 {
            return;
        }
        assert!(v.len() <= stride || rows == 1, "row stride");
        assert!(d.len() >= (rows - 1) * stride + v.len(), "matrix too short");
        match self {
            Self::Portable => portable::gemv_acc(d, stride, v, out),
            #[cfg(target_arch = "x86_64")]
            Self::Avx2 => {
                assert!(is_x86_feature_detected!("avx2"));
                // SAFETY: the feature is present and the bounds were checked above.
                unsafe { avx2::gemv_acc(d, stride, v, out) }
            }
            #[cfg(target_arch = "x86_64")]
            Self::Avx512 => {
                assert!(
                    is_x86_feature_detected!("avx512f") && is_x86_feature_detected!("avx512bw")
                );
                // SAFETY: the features are present and the bounds were checked above.
                unsafe { avx512::gemv_acc(d, stride, v, out) }
            }
            #[cfg(not(target_arch = "x86_64"))]
            _ => unreachable!("only the portable backend exists here"),
        }
    }

    /// `out[r·out_stride + j] += Σ_c d[r·d_stride + c] · b[c·b_stride + j]`
    /// (see [`portable::gemm_acc`]).
    ///
    /// # Panics
    /// If the slices are too short for the shape, or the backend is not available.
    #[allow(clippy::too_many_arguments)]
    pub fn gemm_acc(
        self,
        d: &[u8],
        d_stride: usize,
        rows: usize,
        cols: usize,
        b: &[u32],
        b_stride: usize,
        width: usize,
        out: &mut [u32],
        out_stride: usize,
    ) {
        if rows == 0 || cols == 0 || width == 0 {
            return;
        }
        assert!(
            cols <= d_stride && width <= b_stride && width <= out_stride,
            "strides"
        );
        assert!(d.len() >= (rows - 1) * d_stride + cols, "matrix too short");
        assert!(
            b.len() >= (cols - 1) * b_stride + width,
            "operand too short"
        );
        assert!(
            out.len() >= (rows - 1) * out_stride + width,
            "output too short"
        );
        let args = (d, d_stride, rows, cols, b, b_stride, width, out, out_stride);
        match self {
            Self::Portable => {
                let (d, ds, r, c, b, bs, w, o, os) = args;
                portable::gemm_acc(d, ds, r, c, b, bs, w, o, os)
            }
            #[cfg(target_arch = "x86_64")]
            Self::Avx2 => {
                assert!(is_x86_feature_detected!("avx2"));
                let (d, ds, r, c, b, bs, w, o, os) = args;
                // SAFETY: the feature is present and the bounds were checked above.
                unsafe { avx2::gemm_acc(d, ds, r, c, b, bs, w, o, os) }
            }
            #[cfg(target_arch = "x86_64")]
            Self::Avx512 => {
                assert!(
                    is_x86_feature_detected!("avx512f") && is_x86_feature_detected!("avx512bw")
                );
                let (d, ds, r, c, b, bs, w, o, os) = args;
                // SAFETY: the features are present and the bounds were checked above.
                unsafe { avx512::gemm_acc(d, ds, r, c, b, bs, w, o, os) }
            }
            #[cfg(not(target_arch = "x86_64"))]
            _ => unreachable!("only the portable backend exists here"),
        }
    }
}

/// Rows handed to one parallel task.
const ROWS_PER_TASK: usize = 16;

/// Bytes of the vector operand kept in cache while a tile of columns is processed.
const OPERAND_TILE_BYTES: usize = 128 << 10;

/// `out = D · v` over Z_{2^32}, where `D` is a row-major plaintext matrix of `out.len()` rows and
/// `v.len()` columns. Rows are spread over the rayon pool; columns are tiled so the slice of `v`
/// in use stays in the L2 cache.
pub fn plaintext_mat_vec(d: &[u8], v: &[u32], out: &mut [u32]) {
    let cols = v.len();
    assert_eq!(d.len(), out.len() * cols, "matrix shape");
    out.fill(0);
    if cols == 0 {
        return;
    }
    let backend = Backend::detect();
    let tile = (OPERAND_TILE_BYTES / 4).min(cols);
    out.par_chunks_mut(ROWS_PER_TASK)
        .zip(d.par_chunks(ROWS_PER_TASK * cols))
        .for_each(|(out, d)| {
            for first in (0..cols).step_by(tile) {
                let last = (first + tile).min(cols);
                backend.gemv_acc(&d[first..], cols, &v[first..last], out);
            }
        });
}

/// `out = D · Q` over Z_{2^32} for a batch of `k` vectors: `Q` is `cols x k` row-major (entry
/// `c·k + j` is entry `c` of vector `j`) and `out` is `rows x k`. One pass over `D` answers all
/// `k` vectors.
pub fn plaintext_mat_mat(d: &[u8], q: &[u32], k: usize, out: &mut [u32]) {
    assert!(k > 0, "empty batch");
    let cols = q.len() / k;
    let rows = out.len() / k;
    assert_eq!(q.len(), cols * k, "operand shape");
    assert_eq!(out.len(), rows * k, "output shape");
    assert_eq!(d.len(), rows * cols, "matrix shape");
    out.fill(0);
    if cols == 0 {
        return;
    }
    let backend = Backend::detect();
    let tile = (OPERAND_TILE_BYTES / (4 * k)).clamp(1, cols);
    out.par_chunks_mut(ROWS_PER_TASK * k)
        .zip(d.par_chunks(ROWS_PER_TASK * cols))
        .for_each(|(out, d)| {
            let rows = out.len() / k;
            for first in (0..cols).step_by(tile) {
                let count = tile.min(cols - first);
                backend.gemm_acc(
                    &d[first..],
                    cols,
                    rows,
                    count,
                    &q[first * k..],
                    k,
                    k,
                    out,
                    k,
                );
            }
        });
}

/// `out = M · v` over Z_{2^32}, where `M` is row-major with `out.len()` rows and `v.len()` columns.
pub fn mat_vec(m: &[u32], v: &[u32], out: &mut [u32]) {
    let cols = v.len();
    assert_eq!(m.len(), out.len() * cols, "matrix shape");
    if cols == 0 {
        out.fill(0);
        return;
    }
    out.par_chunks_mut(ROWS_PER_TASK)
        .zip(m.par_chunks(ROWS_PER_TASK * cols))
        .for_each(|(out, m)| {
            for (o, row) in out.iter_mut().zip(m.chunks_exact(cols)) {
                *o = portable::dot_u32(row, v);
            }
        });
}

/// `H += D[:, first .. first + b] · B` over Z_{2^32}, where `D` is a row-major plaintext matrix
/// with `d_cols` columns, `B` is a row-major `b x n` block and `H` is row-major `rows x n`.
///
/// This is one step of the blocked hint product `H = D · A`, with `B` a block of rows of `A`.
pub fn plaintext_mat_mul_acc(
    d: &[u8],
    d_cols: usize,
    first: usize,
    block: &[u32],
    n: usize,
    h: &mut [u32],
) {
    assert!(n > 0 && block.len().is_multiple_of(n), "block shape");
    let b = block.len() / n;
    let rows = h.len() / n;
    assert_eq!(h.len(), rows * n, "hint shape");
    assert_eq!(d.len(), rows * d_cols, "matrix shape");
    assert!(first + b <= d_cols, "column block out of range");
    if b == 0 {
        return;
    }
    let backend = Backend::detect();
    h.par_chunks_mut(4 * n)
        .zip(d.par_chunks(4 * d_cols))
        .for_each(|(h, d)| {
            let rows = h.len() / n;
            backend.gemm_acc(&d[first..], d_cols, rows, b, block, n, n, h, n);
        });
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn random(seed: u64) -> impl FnMut() -> u32 {
        let mut x = seed | 1;
        move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u32
        }
    }

    proptest! {
        #[test]
        fn gemv_backends_agree(rows in 1usize..12, cols in 0usize..90, pad in 0usize..5, seed in any::<u64>()) {
            let mut next = random(seed);
            let stride = cols + pad;
            let d: Vec<u8> = (0..rows * stride).map(|_| next() as u8).collect();
            let v: Vec<u32> = (0..cols).map(|_| next()).collect();
            let start: Vec<u32> = (0..rows).map(|_| next()).collect();
            let mut expected = start.clone();
            portable::gemv_acc(&d, stride, &v, &mut expected);
            for backend in Backend::available() {
                let mut out = start.clone();
                backend.gemv_acc(&d, stride, &v, &mut out);
                prop_assert_eq!(&out, &expected, "{}", backend.name());
            }
        }

        #[test]
        fn gemm_backends_agree(
            rows in 1usize..11, cols in 1usize..20, width in 1usize..150, pad in 0usize..3, seed in any::<u64>()
        ) {
            let mut next = random(seed);
            let (d_stride, b_stride, out_stride) = (cols + pad, width + pad, width + 2 * pad);
            let d: Vec<u8> = (0..rows * d_stride).map(|_| next() as u8).collect();
            let b: Vec<u32> = (0..cols * b_stride).map(|_| next()).collect();
            let start: Vec<u32> = (0..rows * out_stride).map(|_| next()).collect();
            let mut expected = start.clone();
            portable::gemm_acc(&d, d_stride, rows, cols, &b, b_stride, width, &mut expected, out_stride);
            for backend in Backend::available() {
                let mut out = start.clone();
                backend.gemm_acc(&d, d_stride, rows, cols, &b, b_stride, width, &mut out, out_stride);
                prop_assert_eq!(&out, &expected, "{}", backend.name());
            }
        }

        #[test]
        fn batch_product_matches_single_products(rows in 0usize..40, cols in 0usize..70, k in 1usize..20, seed in any::<u64>()) {
            let mut next = random(seed);
            let d: Vec<u8> = (0..rows * cols).map(|_| next() as u8).collect();
            let q: Vec<u32> = (0..cols * k).map(|_| next()).collect();
            let mut out = vec![0u32; rows * k];
            plaintext_mat_mat(&d, &q, k, &mut out);
            for j in 0..k {
                let v: Vec<u32> = (0..cols).map(|c| q[c * k + j]).collect();
                let mut single = vec![0u32; rows];
                plaintext_mat_vec(&d, &v, &mut single);
                let column: Vec<u32> = (0..rows).map(|r| out[r * k + j]).collect();
                prop_assert_eq!(column, single);
            }
        }
    }

    #[test]
    fn large_tiles_agree() {
        // More columns than one operand tile, so the tiling is exercised.
        let mut next = random(7);
        let (rows, cols) = (5, 3 * OPERAND_TILE_BYTES / 4 + 17);
        let d: Vec<u8> = (0..rows * cols).map(|_| next() as u8).collect();
        let v: Vec<u32> = (0..cols).map(|_| next()).collect();
        let mut out = vec![0u32; rows];
        plaintext_mat_vec(&d, &v, &mut out);
        let mut expected = vec![0u32; rows];
        portable::gemv_acc(&d, cols, &v, &mut expected);
        assert_eq!(out, expected);
    }

    #[test]
    fn this_machine_has_its_backends() {
        let available = Backend::available();
        assert_eq!(available[0], Backend::Portable);
        assert_eq!(Backend::detect(), *available.last().unwrap());
    }
}
