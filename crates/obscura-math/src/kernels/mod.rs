//! The hot loops of the LWE schemes.
//!
//! Following curve25519-dalek's backend pattern, [`portable`] holds the reference
//! implementation that runs everywhere (wasm included); SIMD backends join it as sibling modules
//! with the same functions, and this module alone decides which one runs. Every backend is held
//! to the portable one by tests on random inputs.
//!
//! Plaintext matrices store one centered digit per byte as two's-complement `i8`, so a database
//! entry costs one byte of memory traffic; kernels sign-extend it before multiplying.

pub mod portable;

use rayon::prelude::*;

/// Rows handled by one parallel task in the matrix-vector products.
const ROWS_PER_TASK: usize = 16;

/// `out = D · v` over Z_{2^32}, where `D` is a row-major plaintext matrix of `out.len()` rows and
/// `v.len()` columns (entries are `i8` digits). Rows are spread over the rayon thread pool.
pub fn plaintext_mat_vec(d: &[u8], v: &[u32], out: &mut [u32]) {
    let cols = v.len();
    assert_eq!(d.len(), out.len() * cols, "matrix shape");
    if cols == 0 {
        out.fill(0);
        return;
    }
    out.par_chunks_mut(ROWS_PER_TASK)
        .zip(d.par_chunks(ROWS_PER_TASK * cols))
        .for_each(|(out, d)| {
            for (o, row) in out.iter_mut().zip(d.chunks_exact(cols)) {
                *o = portable::dot_i8_u32(row, v);
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
    assert!(n > 0 && block.len() % n == 0, "block shape");
    let b = block.len() / n;
    let rows = h.len() / n;
    assert_eq!(h.len(), rows * n, "hint shape");
    assert_eq!(d.len(), rows * d_cols, "matrix shape");
    assert!(first + b <= d_cols, "column block out of range");
    h.par_chunks_mut(n)
        .zip(d.par_chunks(d_cols))
        .for_each(|(h_row, d_row)| {
            portable::row_times_block_acc(&d_row[first..first + b], block, h_row);
        });
}
