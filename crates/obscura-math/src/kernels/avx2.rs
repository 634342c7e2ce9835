//! AVX2 kernels: 8 lanes of `u32`. Products use `vpmaddwd` (16 products of `i16` per
//! instruction, against 8 for `vpmulld` at a higher cost): the `u32` operand is split into
//! signed 16-bit halves and digits are sign-extended to 16 bits.

use std::arch::x86_64::*;

use rayon::prelude::*;

use super::PREFETCH_BYTES;
use crate::layout::STEP_COLS;

const LANES: usize = 8;

#[inline]
#[target_feature(enable = "avx2")]
fn zero() -> __m256i {
    _mm256_setzero_si256()
}

/// The eight words at `p`.
///
/// # Safety
/// `p` must be valid for reading 32 bytes (no alignment needed).
#[inline]
#[target_feature(enable = "avx2")]
unsafe fn load(p: *const u32) -> __m256i {
    // SAFETY: the caller vouches for the 32 bytes.
    unsafe { _mm256_loadu_si256(p.cast()) }
}

/// `v` into the eight words at `p`.
///
/// # Safety
/// `p` must be valid for writing 32 bytes (no alignment needed).
#[inline]
#[target_feature(enable = "avx2")]
unsafe fn store(p: *mut u32, v: __m256i) {
    // SAFETY: the caller vouches for the 32 bytes.
    unsafe { _mm256_storeu_si256(p.cast(), v) }
}

#[inline]
#[target_feature(enable = "avx2")]
fn splat(x: i32) -> __m256i {
    _mm256_set1_epi32(x)
}

#[inline]
#[target_feature(enable = "avx2")]
fn reduce(v: __m256i) -> u32 {
    let sum = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256::<1>(v));
    let sum = _mm_add_epi32(sum, _mm_shuffle_epi32::<0b01_00_11_10>(sum));
    let sum = _mm_add_epi32(sum, _mm_shuffle_epi32::<0b10_11_00_01>(sum));
    _mm_cvtsi128_si32(sum) as u32
}

/// Columns per step of the matrix-vector kernel: 16 lanes of 16-bit halves.
pub const STEP: usize = 16;

/// The vector `v` split for [`gemv_group`]: each `x` as `hi·2^16 + lo` (mod 2^32) with `lo` and
/// `hi` signed 16-bit, so that `vpmaddwd` multiplies sign-extended digits by both halves, 16
/// columns per instruction. Per step of [`STEP`] columns: the 16 `lo`, then the 16 `hi`, as
/// little-endian bytes; the last step is zero-padded. This runs once per panel of every answer
/// (a few KiB), on the calling thread.
#[target_feature(enable = "avx2")]
pub fn vector_planes(v: &[u32]) -> Vec<u8> {
    let mut planes = vec![0u8; 4 * v.len().next_multiple_of(STEP)];
    let low_mask = splat(0xffff);
    for (step, words) in planes.chunks_exact_mut(4 * STEP).zip(v.chunks(STEP)) {
        let mut padded = [0u32; STEP];
        padded[..words.len()].copy_from_slice(words);
        let (first, second) = padded.split_at(LANES);
        // SAFETY: each half of `padded` is eight words, one load.
        let (a, b) = unsafe { (load(first.as_ptr()), load(second.as_ptr())) };
        // Both halves as values in [0, 2^16), which packus_epi32 narrows exactly; the pack
        // interleaves the 128-bit lanes of `a` and `b`, and the permutation puts them back in
        // order.
        let split = |x: __m256i| {
            let lo_signed = _mm256_srai_epi32::<16>(_mm256_slli_epi32::<16>(x));
            let hi = _mm256_srli_epi32::<16>(_mm256_sub_epi32(x, lo_signed));
            (_mm256_and_si256(x, low_mask), hi)
        };
        let ((lo_a, hi_a), (lo_b, hi_b)) = (split(a), split(b));
        let order = |x: __m256i| _mm256_permute4x64_epi64::<0b11_01_10_00>(x);
        let low = order(_mm256_packus_epi32(lo_a, lo_b));
        let high = order(_mm256_packus_epi32(hi_a, hi_b));
        let (low_half, high_half) = step.split_at_mut(2 * STEP);
        // SAFETY: `step` is `4 * STEP` = 64 bytes, so each half is one 32-byte store.
        unsafe {
            _mm256_storeu_si256(low_half.as_mut_ptr().cast(), low);
            _mm256_storeu_si256(high_half.as_mut_ptr().cast(), high);
        }
    }
    planes
}

/// Sums of the `rows` (1 to 4) rows of a group in step order (see [`crate::layout`]) times the
/// vector whose [`vector_planes`] are `planes`, over its first `steps` whole steps of
/// [`STEP_COLS`]; the sums are in the first `rows` entries. Driven by
/// [`super::gemv_in_steps`].
///
/// Per row, `Σ d·lo` and `Σ d·hi` are accumulated in 32-bit lanes (wrapping) and combined as
/// `Σ d·lo + 2^16·Σ d·hi`, which is `Σ d·v` mod 2^32.
///
/// # Safety
/// The CPU must support AVX2; `group` must hold `rows` rows of at least `steps` whole steps,
/// and `planes` cover `steps` steps.
#[target_feature(enable = "avx2")]
pub unsafe fn gemv_group(group: &[u8], rows: usize, steps: usize, planes: &[u8]) -> [u32; 4] {
    // SAFETY: the caller's contract is `gemv_rows`' for `rows` rows.
    unsafe {
        match rows {
            4 => gemv_rows::<4>(group, steps, planes),
            3 => gemv_rows::<3>(group, steps, planes),
            2 => gemv_rows::<2>(group, steps, planes),
            _ => gemv_rows::<1>(group, steps, planes),
        }
    }
}

/// [`gemv_group`] for `R` rows; a group step of [`STEP_COLS`] columns is four kernel steps of
/// [`STEP`]. Each row's line of a step is fetched into L2 [`PREFETCH_BYTES`] ahead.
///
/// # Safety
/// As [`gemv_group`] with `rows = R`.
#[target_feature(enable = "avx2")]
unsafe fn gemv_rows<const R: usize>(group: &[u8], steps: usize, planes: &[u8]) -> [u32; 4] {
    const _: () = assert!(STEP_COLS.is_multiple_of(STEP));
    let mut low = [zero(); R];
    let mut high = [zero(); R];
    let (dp, pp) = (group.as_ptr(), planes.as_ptr());
    for s in 0..steps {
        for part in (0..STEP_COLS).step_by(STEP) {
            let c = s * STEP_COLS + part;
            // SAFETY: `planes` covers `steps` steps (the caller's contract), so both 32-byte
            // halves of column `c`'s step are inside it.
            let (lo, hi) = unsafe {
                (
                    _mm256_loadu_si256(pp.add(4 * c).cast()),
                    _mm256_loadu_si256(pp.add(4 * c + 2 * STEP).cast()),
                )
            };
            for i in 0..R {
                let at = (s * R + i) * STEP_COLS + part;
                if part == 0 {
                    _mm_prefetch::<_MM_HINT_T1>(dp.wrapping_add(at + PREFETCH_BYTES).cast());
                }
                // SAFETY: `group` holds `R` rows of `steps` whole steps (the caller's contract),
                // so the 16 digits at `at` are inside it.
                let digits = _mm256_cvtepi8_epi16(unsafe { _mm_loadu_si128(dp.add(at).cast()) });
                low[i] = _mm256_add_epi32(low[i], _mm256_madd_epi16(digits, lo));
                high[i] = _mm256_add_epi32(high[i], _mm256_madd_epi16(digits, hi));
            }
        }
    }
    let mut sums = [0u32; 4];
    for i in 0..R {
        sums[i] = reduce(low[i]).wrapping_add(reduce(high[i]) << 16);
    }
    sums
}

/// The halves of a `rows x width` matrix (row stride `stride`) for [`gemm_acc`], by pairs of
/// rows: each entry `x` split as in [`vector_planes`], and the `u32` at
/// `((v·pairs + p)·2 + h)·8 + l` packs half `h` (0: low, 1: high) of rows `2p` and `2p + 1` in
/// column `8v + l`, as two `i16` (row `2p` in the low bits). Covers whole pairs
/// (`pairs = rows / 2`) and whole vectors (`width / 8`).
pub fn matrix_planes(b: &[u32], stride: usize, rows: usize, width: usize) -> Vec<u32> {
    let (vectors, pairs) = (width / LANES, rows / 2);
    let mut planes = vec![0u32; vectors * pairs * 2 * LANES];
    // One task per vector of output columns: this runs for every block of the hint product and
    // every panel of a large batch.
    planes
        .par_chunks_mut((pairs * 2 * LANES).max(1))
        .enumerate()
        .for_each(|(v, vector)| {
            for (p, chunk) in vector.chunks_exact_mut(2 * LANES).enumerate() {
                for l in 0..LANES {
                    let j = v * LANES + l;
                    let [(lo0, hi0), (lo1, hi1)] =
                        [0, 1].map(|i| halves(b[(2 * p + i) * stride + j]));
                    chunk[l] = u32::from(lo0) | u32::from(lo1) << 16;
                    chunk[LANES + l] = u32::from(hi0) | u32::from(hi1) << 16;
                }
            }
        });
    planes
}

/// `x` as `(lo, hi)` with `x ≡ hi·2^16 + lo` (mod 2^32), both read as signed 16-bit.
fn halves(x: u32) -> (u16, u16) {
    let lo = x as u16;
    // x − lo is a multiple of 2^16; its top half is hi (mod 2^16).
    let hi = (x.wrapping_sub(i32::from(lo as i16) as u32) >> 16) as u16;
    (lo, hi)
}

/// See [`super::portable::gemm_acc`], over the whole pairs of columns `pairs` of `d` (rows of
/// `b`), with `planes = matrix_planes(b, ...)`; the last `width % 8` output columns go through
/// the portable kernel.
///
/// # Safety
/// The CPU must support this backend's features, and the slices must hold every row and pair
/// the arguments describe.
#[target_feature(enable = "avx2")]
#[allow(clippy::too_many_arguments)]
pub unsafe fn gemm_acc(
    d: &[u8],
    d_stride: usize,
    rows: usize,
    b: &[u32],
    b_stride: usize,
    width: usize,
    planes: &[u32],
    pairs: std::ops::Range<usize>,
    out: &mut [u32],
    out_stride: usize,
) {
    let w = width - width % LANES;
    let total_pairs = planes.len().checked_div(2 * w).unwrap_or(0);
    let count = pairs.len();
    if w > 0 && count > 0 {
        // Each row's digit pairs, sign-extended to two i16 in one word, ready to broadcast.
        let mut packed = vec![0i32; 4 * count];
        let mut r = 0;
        while r < rows {
            let block = (rows - r).min(4);
            for (i, row) in packed.chunks_exact_mut(count).take(block).enumerate() {
                let digits = &d[(r + i) * d_stride + 2 * pairs.start..];
                for (word, pair) in row.iter_mut().zip(digits.chunks_exact(2)) {
                    let [x, y] = [pair[0], pair[1]].map(|b| i32::from(b as i8 as i16 as u16));
                    *word = x | y << 16;
                }
            }
            for v in 0..w / LANES {
                let x = packed.as_ptr();
                // SAFETY: `planes` holds every pair of the vector's `total_pairs` and `out` rows
                // `r .. r + block` of `out_stride` entries reaching `width` (the caller's
                // contract), so the tile's reads and writes stay inside them; `packed` holds
                // `block` rows of `count` pairs.
                unsafe {
                    let pp = planes
                        .as_ptr()
                        .add((v * total_pairs + pairs.start) * 2 * LANES);
                    let o = out.as_mut_ptr().add(r * out_stride + v * LANES);
                    match block {
                        4 => gemm_tile::<4>(x, count, pp, o, out_stride),
                        3 => gemm_tile::<3>(x, count, pp, o, out_stride),
                        2 => gemm_tile::<2>(x, count, pp, o, out_stride),
                        _ => gemm_tile::<1>(x, count, pp, o, out_stride),
                    }
                }
            }
            r += block;
        }
    }
    if w < width {
        let cols = 2 * pairs.start..2 * pairs.end;
        super::portable::gemm_acc(
            &d[cols.start..],
            d_stride,
            rows,
            cols.len(),
            &b[cols.start * b_stride + w..],
            b_stride,
            width - w,
            &mut out[w..],
            out_stride,
        );
    }
}

/// `R` rows x 8 output lanes over `pairs` pairs of columns: `packed` holds each row's digit
/// pairs (`pairs` words per row), `planes` the vector's halves; low and high halves are summed
/// apart and combined as `lo + 2^16·hi` at the end.
///
/// # Safety
/// `packed` must hold `R` rows of `pairs` words, `planes` `pairs` pairs of 16 words, and `out`
/// `R` rows `out_stride` apart of 8 writable words each.
#[target_feature(enable = "avx2")]
unsafe fn gemm_tile<const R: usize>(
    packed: *const i32,
    pairs: usize,
    planes: *const u32,
    out: *mut u32,
    out_stride: usize,
) {
    let mut low = [zero(); R];
    let mut high = [zero(); R];
    for p in 0..pairs {
        // SAFETY: pair `p` of `planes` is 16 words (the caller's contract).
        let (lo, hi) = unsafe {
            (
                load(planes.add(p * 2 * LANES)),
                load(planes.add((p * 2 + 1) * LANES)),
            )
        };
        for i in 0..R {
            // SAFETY: row `i` of `packed` has `pairs` words (the caller's contract).
            let x = splat(unsafe { *packed.add(i * pairs + p) });
            low[i] = _mm256_add_epi32(low[i], _mm256_madd_epi16(x, lo));
            high[i] = _mm256_add_epi32(high[i], _mm256_madd_epi16(x, hi));
        }
    }
    for i in 0..R {
        let sum = _mm256_add_epi32(low[i], _mm256_slli_epi32::<16>(high[i]));
        // SAFETY: row `i` of `out` has 8 writable words (the caller's contract).
        unsafe {
            let o = out.add(i * out_stride);
            store(o, _mm256_add_epi32(load(o), sum));
        }
    }
}
