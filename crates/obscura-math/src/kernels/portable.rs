//! Portable reference kernels: plain Rust, wrapping arithmetic, written so the compiler can
//! auto-vectorize them. Every other backend must produce exactly these results.
//!
//! A matrix-vector product runs over a [`Group`] of a plaintext matrix (see
//! [`crate::layout`]); a matrix-matrix product over row-major digits addressed as
//! `(bytes, stride)`: row `r` starts at `r * stride`.

use crate::layout::Group;

/// `out[i] += Σ_c row_i[c] · v[c]` over Z_{2^32} for the rows of `group`, with the digits read
/// as two's-complement `i8` and `v` holding `group.width` entries.
pub fn gemv_group(group: &Group, v: &[u32], out: &mut [u32]) {
    for (i, o) in out.iter_mut().enumerate().take(group.rows) {
        let sum = group.stretches(i).fold(0u32, |sum, (c, stretch)| {
            sum.wrapping_add(dot_i8(stretch, &v[c..c + stretch.len()]))
        });
        *o = o.wrapping_add(sum);
    }
}

/// `out[r·out_stride + j] += Σ_c d[r·d_stride + c] · b[c·b_stride + j]` for `r < rows`,
/// `c < cols`, `j < width`, over Z_{2^32}, with `d` read as two's-complement `i8` digits.
/// Inlined into the SIMD backends' wrappers for the columns outside their kernels' groups.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
pub fn gemm_acc(
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
    for r in 0..rows {
        let out_row = &mut out[r * out_stride..r * out_stride + width];
        for c in 0..cols {
            let scale = widen(d[r * d_stride + c]);
            if scale == 0 {
                continue;
            }
            let b_row = &b[c * b_stride..c * b_stride + width];
            for (acc, &x) in out_row.iter_mut().zip(b_row) {
                *acc = acc.wrapping_add(scale.wrapping_mul(x));
            }
        }
    }
}

/// `Σ d[j] · v[j]` over Z_{2^32}, with `d[j]` read as a two's-complement `i8` digit.
#[inline(always)]
pub fn dot_i8(d: &[u8], v: &[u32]) -> u32 {
    dot(d, v, widen)
}

/// `Σ a[j] · b[j]` over Z_{2^32}.
#[inline(always)]
pub fn dot_u32(a: &[u32], b: &[u32]) -> u32 {
    dot(a, b, |x| x)
}

/// Lanes of [`dot`]'s accumulator.
const DOT_LANES: usize = 16;

/// `Σ lift(a[j]) · b[j]` over Z_{2^32}, in sixteen independent lanes so it vectorizes
/// (one AVX-512 register, two AVX2 ones).
#[inline(always)]
fn dot<T: Copy>(a: &[T], b: &[u32], lift: impl Fn(T) -> u32) -> u32 {
    debug_assert_eq!(a.len(), b.len());
    let mut lanes = [0u32; DOT_LANES];
    let mut a_chunks = a.chunks_exact(DOT_LANES);
    let mut b_chunks = b.chunks_exact(DOT_LANES);
    for (ac, bc) in (&mut a_chunks).zip(&mut b_chunks) {
        for k in 0..DOT_LANES {
            lanes[k] = lanes[k].wrapping_add(lift(ac[k]).wrapping_mul(bc[k]));
        }
    }
    let tail = a_chunks
        .remainder()
        .iter()
        .zip(b_chunks.remainder())
        .fold(0u32, |acc, (&x, &y)| {
            acc.wrapping_add(lift(x).wrapping_mul(y))
        });
    lanes.iter().fold(tail, |acc, &x| acc.wrapping_add(x))
}

/// Sign-extends a stored `i8` digit into Z_{2^32}.
#[inline(always)]
pub fn widen(digit: u8) -> u32 {
    digit as i8 as i32 as u32
}
