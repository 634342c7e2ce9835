//! AVX-512 kernels built on VNNI's `vpdpbusd` (AVX-512F, BW and VNNI: Ice Lake, Zen 4 and later).
//!
//! `vpdpbusd` multiplies unsigned bytes by signed bytes and adds groups of four products into
//! 32-bit lanes, wrapping: 64 byte products per instruction. A `u32` operand is split into its
//! four byte planes, `x = Σ_k 2^{8k}·x_k`, so `Σ_c d_c·x_c = Σ_k 2^{8k}·Σ_c d_c·x_{k,c}` modulo
//! 2^32; each inner sum is one `vpdpbusd` stream and the planes are recombined at the end. That
//! is 16 `u32` multiply-adds per instruction, against 16 per `vpmulld` + `vpaddd` pair, and the
//! digits are read 64 at a time without widening.
//!
//! Operands are split into planes once ([`vector_planes`] per panel, [`matrix_planes`] per
//! block) and shared by all rows. Same contracts as [`super::portable`]; the safe wrappers in
//! [`super`] run them only for a [`VnniToken`](crate::backend::VnniToken) and check the bounds.

use std::arch::x86_64::*;
use std::ops::Range;

use rayon::prelude::*;

use super::PREFETCH_BYTES;
use crate::layout::{Group, STEP_COLS};

/// Columns per `vpdpbusd` step of the matrix-vector kernel (one 64-byte load of digits).
pub const STEP: usize = 64;

/// Bytes of plane operand per tile of the matrix-matrix kernel (stays in L2).
const PLANE_TILE_BYTES: usize = 256 << 10;

/// Output lanes per vector.
const LANES: usize = 16;

/// Blocks of [`quads_mat_vec`] that share each broadcast of a vector's planes (four blocks'
/// sums take 16 of the 32 registers).
const SHARED_BLOCKS: usize = 4;

/// The four byte planes of `v`, interleaved by steps of 64 columns so that one step's planes
/// are 256 contiguous bytes: byte `k` of `v[64·s + i]` is at `256·s + 64·k + i`. The last
/// partial step is zero-padded. This runs once per panel of every answer (a few KiB), on the
/// calling thread.
#[target_feature(enable = "avx512f")]
pub fn vector_planes(v: &[u32]) -> Vec<u8> {
    let mut planes = vec![0u8; 4 * v.len().next_multiple_of(STEP)];
    for (step, words) in planes.chunks_exact_mut(4 * STEP).zip(v.chunks(STEP)) {
        let mut padded = [0u32; STEP];
        padded[..words.len()].copy_from_slice(words);
        for (k, plane) in step.chunks_exact_mut(STEP).enumerate() {
            let shift = _mm_cvtsi32_si128(8 * k as i32);
            for (quarter, out) in padded
                .chunks_exact(LANES)
                .zip(plane.chunks_exact_mut(LANES))
            {
                // SAFETY: `quarter` is 16 words, one 64-byte load.
                let x = unsafe { _mm512_loadu_si512(quarter.as_ptr().cast()) };
                // vpmovdb keeps the low byte of each lane.
                let bytes = _mm512_cvtepi32_epi8(_mm512_srl_epi32(x, shift));
                // SAFETY: `out` is 16 bytes, one store.
                unsafe { _mm_storeu_si128(out.as_mut_ptr().cast(), bytes) };
            }
        }
    }
    planes
}

/// The byte planes of a `rows x width` matrix by groups of four rows, laid out so that one
/// 16-column vector's planes are contiguous across all groups: the `u32` at
/// `((v·quads + q)·4 + k)·16 + l` packs byte `k` of rows `4q .. 4q + 4` in column `16v + l`.
/// Covers whole groups (`quads = rows / 4`) and whole vectors (`width / 16`).
pub fn matrix_planes(b: &[u32], stride: usize, rows: usize, width: usize) -> Vec<u32> {
    let vectors = width / LANES;
    let quads = rows / 4;
    let mut planes = vec![0u32; vectors * quads * 4 * LANES];
    // One task per vector of output columns: this runs for every block of the hint product and
    // every panel of a large batch.
    planes
        .par_chunks_mut((quads * 4 * LANES).max(1))
        .enumerate()
        .for_each(|(v, vector)| {
            for (q, chunk) in vector.chunks_exact_mut(4 * LANES).enumerate() {
                for l in 0..LANES {
                    let j = v * LANES + l;
                    let words = [0, 1, 2, 3].map(|i| b[(4 * q + i) * stride + j].to_le_bytes());
                    for k in 0..4 {
                        chunk[k * LANES + l] = u32::from_le_bytes([
                            words[0][k],
                            words[1][k],
                            words[2][k],
                            words[3][k],
                        ]);
                    }
                }
            }
        });
    planes
}

/// `Σ_k 2^{8k}·acc[k]` lane by lane, wrapping: a row's four plane sums as one vector.
#[inline]
#[target_feature(enable = "avx512f")]
fn combine(acc: &[__m512i; 4]) -> __m512i {
    _mm512_add_epi32(
        _mm512_add_epi32(acc[0], _mm512_slli_epi32::<8>(acc[1])),
        _mm512_add_epi32(
            _mm512_slli_epi32::<16>(acc[2]),
            _mm512_slli_epi32::<24>(acc[3]),
        ),
    )
}

/// The sums of the lanes of each of four vectors, wrapping: pairs of vectors interleaved and
/// added twice leave each 128-bit lane holding a partial sum of every vector, and the four
/// 128-bit lanes are then added, instead of four full reductions.
#[inline]
#[target_feature(enable = "avx512f")]
fn lane_sums(v: [__m512i; 4]) -> [u32; 4] {
    let t0 = _mm512_add_epi32(
        _mm512_unpacklo_epi32(v[0], v[1]),
        _mm512_unpackhi_epi32(v[0], v[1]),
    );
    let t1 = _mm512_add_epi32(
        _mm512_unpacklo_epi32(v[2], v[3]),
        _mm512_unpackhi_epi32(v[2], v[3]),
    );
    // Each 128-bit lane: a partial sum of v[0], v[1], v[2], v[3] in that order.
    let u = _mm512_add_epi32(_mm512_unpacklo_epi64(t0, t1), _mm512_unpackhi_epi64(t0, t1));
    let halves = _mm512_add_epi32(u, _mm512_shuffle_i32x4::<0b01_00_11_10>(u, u));
    let quarters = _mm512_add_epi32(
        halves,
        _mm512_shuffle_i32x4::<0b10_11_00_01>(halves, halves),
    );
    let mut sums = [0u32; 4];
    // SAFETY: `sums` holds the 16 bytes stored.
    unsafe { _mm_storeu_si128(sums.as_mut_ptr().cast(), _mm512_castsi512_si128(quarters)) };
    sums
}

/// For each group in turn, [`gemv_group`]'s sums added to the next entries of `out`.
///
/// # Safety
/// As for [`gemv_group`], for every group; `out` must have an entry per row of the groups.
#[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
pub unsafe fn gemv_groups(groups: &[Group], planes: &[u8], out: &mut [u32]) {
    let mut at = 0;
    for group in groups {
        // SAFETY: the caller vouches for every group's shape and for `planes`.
        let sums = unsafe { gemv_group(group.bytes, group.rows, group.width, planes) };
        for (o, sum) in out[at..at + group.rows].iter_mut().zip(sums) {
            *o = o.wrapping_add(sum);
        }
        at += group.rows;
    }
}

/// Sums of the `rows` (1 to 4) rows of a group of `width` columns in step order (see
/// [`crate::layout`]) times the vector whose [`vector_planes`] are `planes`; the sums are in the
/// first `rows` entries. The narrower last step, if any, is read with masked loads against its
/// zero-padded planes.
///
/// # Safety
/// The CPU must support AVX-512F, BW and VNNI; `group` must hold `rows` rows of `width`
/// columns, and `planes` cover them.
#[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
unsafe fn gemv_group(group: &[u8], rows: usize, width: usize, planes: &[u8]) -> [u32; 4] {
    debug_assert!(group.len() >= rows * width && planes.len() >= 4 * width.next_multiple_of(STEP));
    // SAFETY: the caller's contract is `gemv_rows`' for `rows` rows.
    unsafe {
        match rows {
            4 => gemv_rows::<4>(group, width, planes),
            3 => gemv_rows::<3>(group, width, planes),
            2 => gemv_rows::<2>(group, width, planes),
            _ => gemv_rows::<1>(group, width, planes),
        }
    }
}

/// [`gemv_group`] for `R` rows: each step's `R` rows are 64 contiguous bytes each, read as one
/// stream (and fetched into L2 [`PREFETCH_BYTES`] ahead), and each of the step's four planes is
/// loaded once for all rows. The last step's `R` rows are `width % 64` bytes each.
///
/// # Safety
/// As [`gemv_group`] with `rows = R`.
#[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
unsafe fn gemv_rows<const R: usize>(group: &[u8], width: usize, planes: &[u8]) -> [u32; 4] {
    const _: () = assert!(STEP == STEP_COLS);
    let mut acc = [[_mm512_setzero_si512(); 4]; R];
    let (dp, pp) = (group.as_ptr(), planes.as_ptr());
    let (steps, tail) = (width / STEP, width % STEP);
    for s in 0..steps {
        let at = s * R * STEP;
        // The prefetches go first: issued behind loads that miss, they would wait for them.
        for i in 0..R {
            _mm_prefetch::<_MM_HINT_T1>(dp.wrapping_add(at + i * STEP + PREFETCH_BYTES).cast());
        }
        let mut x = [_mm512_setzero_si512(); R];
        for (i, x) in x.iter_mut().enumerate() {
            // SAFETY: `group` holds `R` rows of `width` columns (the caller's contract), so
            // row `i` of whole step `s` is 64 bytes inside it.
            *x = unsafe { _mm512_loadu_si512(dp.add(at + i * STEP).cast()) };
        }
        for k in 0..4 {
            // SAFETY: `planes` covers the vector's steps (the caller's contract).
            let p = unsafe { _mm512_loadu_si512(pp.add((4 * s + k) * STEP).cast()) };
            for (acc, &x) in acc.iter_mut().zip(&x) {
                acc[k] = _mm512_dpbusd_epi32(acc[k], p, x);
            }
        }
    }
    if tail > 0 {
        // Masked-off bytes read as zero (and are not touched), and the planes past the
        // vector's end are zero.
        let mask: __mmask64 = (1u64 << tail) - 1;
        let at = steps * R * STEP;
        let mut x = [_mm512_setzero_si512(); R];
        for (i, x) in x.iter_mut().enumerate() {
            // SAFETY: the mask reads row `i`'s `tail` bytes of the last step, inside `group`
            // (the caller's contract); masked-off bytes are not accessed.
            *x = unsafe { _mm512_maskz_loadu_epi8(mask, dp.add(at + i * tail).cast()) };
        }
        for k in 0..4 {
            // SAFETY: `planes` covers the zero-padded last step (the caller's contract).
            let p = unsafe { _mm512_loadu_si512(pp.add((4 * steps + k) * STEP).cast()) };
            for (acc, &x) in acc.iter_mut().zip(&x) {
                acc[k] = _mm512_dpbusd_epi32(acc[k], p, x);
            }
        }
    }
    let mut rows = [_mm512_setzero_si512(); 4];
    for (row, acc) in rows.iter_mut().zip(&acc) {
        *row = combine(acc);
    }
    lane_sums(rows)
}

/// `out[r·out_stride + j] += Σ_{c ∈ quads} d[r·d_stride + c]·b[c][j]` for `j < width`, with
/// `planes = matrix_planes(b, b_stride, _, width)`.
///
/// # Safety
/// The CPU must support AVX-512F, BW and VNNI; `quads` must start and end on multiples of four
/// inside the rows `planes` covers; `d` must hold `rows` rows of `d_stride` bytes reaching
/// column `quads.end`, and `out` `rows` rows of `out_stride` entries reaching `width`.
#[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
#[allow(clippy::too_many_arguments)]
pub unsafe fn gemm_acc(
    d: &[u8],
    d_stride: usize,
    rows: usize,
    b: &[u32],
    b_stride: usize,
    width: usize,
    planes: &[u32],
    quads: Range<usize>,
    out: &mut [u32],
    out_stride: usize,
) {
    let w = width - width % LANES;
    let total_quads = planes.len().checked_div(4 * w).unwrap_or(0);
    if w > 0 {
        let tile_quads = (PLANE_TILE_BYTES / (16 * w)).max(1);
        let mut c0 = quads.start;
        while c0 < quads.end {
            let count = tile_quads.min((quads.end - c0) / 4);
            let mut r = 0;
            while r < rows {
                let block = (rows - r).min(4);
                for v in 0..w / LANES {
                    // SAFETY: `d` holds rows `r .. r + block` reaching column `c0 + 4·count`,
                    // `planes` every quad of the vector's `total_quads` and `out` the rows'
                    // `out_stride` entries reaching `width` (the caller's contract), so the
                    // tile's reads and writes stay inside them.
                    unsafe {
                        let dp = d.as_ptr().add(r * d_stride + c0);
                        let pp = planes.as_ptr().add((v * total_quads + c0 / 4) * 4 * LANES);
                        let o = out.as_mut_ptr().add(r * out_stride + v * LANES);
                        match block {
                            4 => gemm_tile::<4>(dp, d_stride, count, pp, o, out_stride),
                            3 => gemm_tile::<3>(dp, d_stride, count, pp, o, out_stride),
                            2 => gemm_tile::<2>(dp, d_stride, count, pp, o, out_stride),
                            _ => gemm_tile::<1>(dp, d_stride, count, pp, o, out_stride),
                        }
                    }
                }
                r += block;
            }
            c0 += 4 * count;
        }
    }
    if w < width {
        super::portable::gemm_acc(
            &d[quads.start..],
            d_stride,
            rows,
            quads.len(),
            &b[quads.start * b_stride + w..],
            b_stride,
            width - w,
            &mut out[w..],
            out_stride,
        );
    }
}

/// `R` rows x 16 output lanes over `quads` groups of four columns, the four byte planes in
/// separate accumulators (16 registers for `R = 4`).
///
/// # Safety
/// `d` must hold `R` rows `d_stride` apart of `4·quads` bytes, `planes` `quads` quads of 64
/// words, and `out` `R` rows `out_stride` apart of 16 writable words.
#[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
unsafe fn gemm_tile<const R: usize>(
    d: *const u8,
    d_stride: usize,
    quads: usize,
    planes: *const u32,
    out: *mut u32,
    out_stride: usize,
) {
    let mut acc = [[_mm512_setzero_si512(); 4]; R];
    for q in 0..quads {
        let mut p = [_mm512_setzero_si512(); 4];
        for (k, p) in p.iter_mut().enumerate() {
            // SAFETY: plane `k` of quad `q` is 16 words of `planes` (the caller's contract).
            *p = unsafe { _mm512_loadu_si512(planes.add((q * 4 + k) * LANES).cast()) };
        }
        for (i, acc) in acc.iter_mut().enumerate() {
            // SAFETY: quad `q` of row `i` is 4 bytes of `d` (the caller's contract).
            let digits = unsafe { d.add(i * d_stride + 4 * q).cast::<i32>().read_unaligned() };
            let x = _mm512_set1_epi32(digits);
            for (acc, &p) in acc.iter_mut().zip(&p) {
                *acc = _mm512_dpbusd_epi32(*acc, p, x);
            }
        }
    }
    for (i, acc) in acc.iter().enumerate() {
        // SAFETY: row `i` of `out` has 16 writable words (the caller's contract).
        let o = unsafe { out.add(i * out_stride) };
        // SAFETY: as above.
        let mut sum = unsafe { _mm512_loadu_si512(o.cast()) };
        for (k, &acc) in acc.iter().enumerate() {
            sum = _mm512_add_epi32(sum, _mm512_sll_epi32(acc, _mm_cvtsi32_si128(8 * k as i32)));
        }
        // SAFETY: as above.
        unsafe { _mm512_storeu_si512(o.cast(), sum) };
    }
}

/// `out[j] = Σ_c v[c]·d[c][j]` for `j < width`, with the digits `d` laid out by
/// [`super::quad_interleaved`] and `planes[4q + k]` packing byte `k` of `v[4q .. 4q + 4]`:
/// sixteen columns of `d` at a time, their sums held in registers over every quad (one
/// contiguous stream per block), so no sum is reduced across lanes.
///
/// # Safety
/// The CPU must support AVX-512F, BW and VNNI; `t4` must hold `⌈width / 16⌉` blocks of
/// `planes.len() / 4` quads and `out` `width` entries.
#[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
pub unsafe fn quads_mat_vec(t4: &[u8], width: usize, planes: &[u32], out: &mut [u32]) {
    const _: () = assert!(super::QUAD_BLOCK == LANES);
    let quads = planes.len() / 4;
    let blocks = width.div_ceil(LANES);
    debug_assert!(t4.len() >= blocks * quads * 64 && out.len() >= width);
    // SAFETY: block `b < blocks` starts inside `t4` (the caller's contract).
    let block = |b: usize| unsafe { t4.as_ptr().add(b * quads * 64) };
    let store = |b: usize, sum: __m512i, out: &mut [u32]| {
        let lanes = (width - b * LANES).min(LANES);
        let mask: __mmask16 = if lanes == LANES {
            !0
        } else {
            (1u16 << lanes) - 1
        };
        // SAFETY: the mask writes the block's `lanes` entries, inside `out` (the caller's
        // contract).
        unsafe { _mm512_mask_storeu_epi32(out.as_mut_ptr().add(b * LANES).cast(), mask, sum) };
    };
    // Four blocks at a time share each broadcast of the vector's planes (the last ones repeat
    // the final block where fewer are left).
    for b in (0..blocks).step_by(SHARED_BLOCKS) {
        let starts: [*const u8; SHARED_BLOCKS] =
            std::array::from_fn(|i| block((b + i).min(blocks - 1)));
        let mut acc = [[_mm512_setzero_si512(); 4]; SHARED_BLOCKS];
        for q in 0..quads {
            // SAFETY: each block holds `quads` quads of 64 bytes (the caller's contract).
            let x: [__m512i; SHARED_BLOCKS] = std::array::from_fn(|i| unsafe {
                _mm512_loadu_si512(starts[i].add(q * 64).cast())
            });
            for k in 0..4 {
                let p = _mm512_set1_epi32(planes[4 * q + k] as i32);
                for (acc, &x) in acc.iter_mut().zip(&x) {
                    acc[k] = _mm512_dpbusd_epi32(acc[k], p, x);
                }
            }
        }
        for (i, acc) in acc.iter().enumerate() {
            if b + i < blocks {
                store(b + i, combine(acc), out);
            }
        }
    }
}
