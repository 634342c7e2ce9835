//! AVX2 kernels: 8 lanes of `u32`.

use std::arch::x86_64::*;

const LANES: usize = 8;

#[inline]
#[target_feature(enable = "avx2")]
fn zero() -> __m256i {
    _mm256_setzero_si256()
}

#[inline]
#[target_feature(enable = "avx2")]
unsafe fn load(p: *const u32) -> __m256i {
    _mm256_loadu_si256(p.cast())
}

#[inline]
#[target_feature(enable = "avx2")]
unsafe fn store(p: *mut u32, v: __m256i) {
    _mm256_storeu_si256(p.cast(), v)
}

#[inline]
#[target_feature(enable = "avx2")]
fn splat(x: i32) -> __m256i {
    _mm256_set1_epi32(x)
}

/// `acc + a · b` lane by lane, wrapping.
#[inline]
#[target_feature(enable = "avx2")]
fn mul_add(acc: __m256i, a: __m256i, b: __m256i) -> __m256i {
    _mm256_add_epi32(acc, _mm256_mullo_epi32(a, b))
}

/// 8 `i8` digits, sign-extended.
#[inline]
#[target_feature(enable = "avx2")]
unsafe fn load_digits(p: *const u8) -> __m256i {
    _mm256_cvtepi8_epi32(_mm_loadl_epi64(p.cast()))
}

#[inline]
#[target_feature(enable = "avx2")]
fn reduce(v: __m256i) -> u32 {
    let sum = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256::<1>(v));
    let sum = _mm_add_epi32(sum, _mm_shuffle_epi32::<0b01_00_11_10>(sum));
    let sum = _mm_add_epi32(sum, _mm_shuffle_epi32::<0b10_11_00_01>(sum));
    _mm_cvtsi128_si32(sum) as u32
}

/// See [`super::portable::gemv_acc`].
///
/// # Safety
/// The CPU must support this backend's features, `v.len() <= stride`, and `d` must hold
/// `out.len()` rows of `stride` bytes (the last one at least `v.len()` bytes).
#[target_feature(enable = "avx2")]
pub unsafe fn gemv_acc(d: &[u8], stride: usize, v: &[u32], out: &mut [u32]) {
    let rows = out.len();
    let mut r = 0;
    while r < rows {
        let block = (rows - r).min(4);
        let at = &d[r * stride..];
        let sums = match block {
            4 => gemv_rows::<4>(at, stride, v),
            3 => gemv_rows::<3>(at, stride, v),
            2 => gemv_rows::<2>(at, stride, v),
            _ => gemv_rows::<1>(at, stride, v),
        };
        for (o, sum) in out[r..r + block].iter_mut().zip(sums) {
            *o = o.wrapping_add(sum);
        }
        r += block;
    }
}

/// `R` rows of [`gemv_acc`]; the sums are in the first `R` entries.
#[target_feature(enable = "avx2")]
unsafe fn gemv_rows<const R: usize>(d: &[u8], stride: usize, v: &[u32]) -> [u32; 4] {
    let cols = v.len();
    let body = cols - cols % LANES;
    let mut acc = [zero(); R];
    let mut c = 0;
    while c < body {
        let q = load(v.as_ptr().add(c));
        for (i, acc) in acc.iter_mut().enumerate() {
            *acc = mul_add(*acc, load_digits(d.as_ptr().add(i * stride + c)), q);
        }
        c += LANES;
    }
    let mut sums = [0u32; 4];
    for i in 0..R {
        let tail = super::portable::dot_i8(&d[i * stride + body..i * stride + cols], &v[body..]);
        sums[i] = reduce(acc[i]).wrapping_add(tail);
    }
    sums
}

/// See [`super::portable::gemm_acc`].
///
/// # Safety
/// The CPU must support this backend's features, and the slices must hold every row
/// the arguments describe.
#[target_feature(enable = "avx2")]
#[allow(clippy::too_many_arguments)]
pub unsafe fn gemm_acc(
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
    let body = width - width % LANES;
    let mut r = 0;
    while r < rows {
        let block = (rows - r).min(4);
        let mut j = 0;
        while j < body {
            let vectors = ((body - j) / LANES).min(4);
            let d = d.as_ptr().add(r * d_stride);
            let b = b.as_ptr().add(j);
            let o = out.as_mut_ptr().add(r * out_stride + j);
            macro_rules! tile {
                ($r:literal) => {
                    match vectors {
                        4 => gemm_tile::<$r, 4>(d, d_stride, cols, b, b_stride, o, out_stride),
                        3 => gemm_tile::<$r, 3>(d, d_stride, cols, b, b_stride, o, out_stride),
                        2 => gemm_tile::<$r, 2>(d, d_stride, cols, b, b_stride, o, out_stride),
                        _ => gemm_tile::<$r, 1>(d, d_stride, cols, b, b_stride, o, out_stride),
                    }
                };
            }
            match block {
                4 => tile!(4),
                3 => tile!(3),
                2 => tile!(2),
                _ => tile!(1),
            }
            j += LANES * vectors;
        }
        r += block;
    }
    if body < width {
        super::portable::gemm_acc(
            d,
            d_stride,
            rows,
            cols,
            &b[body..],
            b_stride,
            width - body,
            &mut out[body..],
            out_stride,
        );
    }
}

/// An `R`-row, `V`-vector tile of [`gemm_acc`], held in registers across all columns.
#[target_feature(enable = "avx2")]
unsafe fn gemm_tile<const R: usize, const V: usize>(
    d: *const u8,
    d_stride: usize,
    cols: usize,
    b: *const u32,
    b_stride: usize,
    out: *mut u32,
    out_stride: usize,
) {
    let mut acc = [[zero(); V]; R];
    for (i, acc) in acc.iter_mut().enumerate() {
        for (k, acc) in acc.iter_mut().enumerate() {
            *acc = load(out.add(i * out_stride + k * LANES));
        }
    }
    for c in 0..cols {
        let mut bq = [zero(); V];
        for (k, bq) in bq.iter_mut().enumerate() {
            *bq = load(b.add(c * b_stride + k * LANES));
        }
        for (i, acc) in acc.iter_mut().enumerate() {
            let scale = splat(i32::from(*d.add(i * d_stride + c) as i8));
            for (acc, &bq) in acc.iter_mut().zip(&bq) {
                *acc = mul_add(*acc, scale, bq);
            }
        }
    }
    for (i, acc) in acc.iter().enumerate() {
        for (k, &acc) in acc.iter().enumerate() {
            store(out.add(i * out_stride + k * LANES), acc);
        }
    }
}
