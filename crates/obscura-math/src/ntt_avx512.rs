//! The lane transforms of [`crate::ntt`] written for AVX-512: a [`Lanes`] of sixteen residues
//! is one 512-bit register, so a butterfly is a handful of instructions. The generic versions
//! ([`PrimeTables::forward_lanes`], [`PrimeTables::inverse_lanes`]) are the reference, and the
//! tests hold these to them bit for bit (modulo `p` for the forward transform, which leaves its
//! values below `4p`).
//!
//! The butterflies are Harvey's lazy ones: with `p < 2^30`, values below `4p` fit a lane, so a
//! butterfly reduces its sum once instead of after every addition, subtraction and product.
//!
//! Every function is generated for AVX-512 F; callers outside hold an
//! [`Avx512Token`](crate::backend::Avx512Token).

#![allow(unsafe_code)]

use std::arch::x86_64::{
    __m512i, _mm512_add_epi32, _mm512_loadu_si512, _mm512_min_epu32, _mm512_mul_epu32,
    _mm512_mullo_epi32, _mm512_permutex2var_epi32, _mm512_set1_epi32, _mm512_set_epi32,
    _mm512_srli_epi64, _mm512_storeu_si512, _mm512_sub_epi32,
};

use crate::ntt::{Lanes, PrimeTables};

/// `y · w (mod p)` lane by lane, below `2p`, with `w_shoup = floor(w · 2^32 / p)`, for any
/// `y < 2^32`: Shoup's product without its final subtraction.
#[inline]
#[target_feature(enable = "avx512f")]
fn mul_shoup_lazy(y: __m512i, w: __m512i, w_shoup: __m512i, p: __m512i) -> __m512i {
    // The high halves of y·w_shoup: the even lanes' from one 32x32 -> 64 product, the odd
    // lanes' from another on the shifted input; each lies in the odd half of its 64-bit lane,
    // and one permutation gathers them.
    let even = _mm512_mul_epu32(y, w_shoup);
    let odd = _mm512_mul_epu32(_mm512_srli_epi64::<32>(y), w_shoup);
    let high_halves = _mm512_set_epi32(31, 15, 29, 13, 27, 11, 25, 9, 23, 7, 21, 5, 19, 3, 17, 1);
    let q = _mm512_permutex2var_epi32(even, high_halves, odd);
    _mm512_sub_epi32(_mm512_mullo_epi32(y, w), _mm512_mullo_epi32(q, p))
}

/// `x` less `bound` where that does not wrap: reduces `x < 2·bound` below `bound`.
#[inline]
#[target_feature(enable = "avx512f")]
fn reduce_below(x: __m512i, bound: __m512i) -> __m512i {
    _mm512_min_epu32(x, _mm512_sub_epi32(x, bound))
}

/// `(y · w) mod p` lane by lane, fully reduced, for any `y < 2^32`.
#[inline]
#[target_feature(enable = "avx512f")]
fn mul_shoup(y: __m512i, w: __m512i, w_shoup: __m512i, p: __m512i) -> __m512i {
    reduce_below(mul_shoup_lazy(y, w, w_shoup, p), p)
}

/// `(a + b) mod p` lane by lane, for `a, b < p`.
#[inline]
#[target_feature(enable = "avx512f")]
fn add_mod(a: __m512i, b: __m512i, p: __m512i) -> __m512i {
    reduce_below(_mm512_add_epi32(a, b), p)
}

/// The sixteen residues of `lane` in a register.
#[inline]
#[target_feature(enable = "avx512f")]
fn load(lane: &Lanes) -> __m512i {
    // SAFETY: `lane` is 64 readable bytes, the load's width; it needs no alignment.
    unsafe { _mm512_loadu_si512(lane.as_ptr().cast()) }
}

/// `value` into the sixteen residues of `lane`.
#[inline]
#[target_feature(enable = "avx512f")]
fn store(lane: &mut Lanes, value: __m512i) {
    // SAFETY: `lane` is 64 writable bytes, the store's width; it needs no alignment.
    unsafe { _mm512_storeu_si512(lane.as_mut_ptr().cast(), value) }
}

/// A twiddle and its Shoup quotient in every lane.
#[inline]
#[target_feature(enable = "avx512f")]
fn broadcast((w, w_shoup): (u32, u32)) -> (__m512i, __m512i) {
    (
        _mm512_set1_epi32(w as i32),
        _mm512_set1_epi32(w_shoup as i32),
    )
}

/// [`PrimeTables::forward_lanes`] of values below `4p`, leaving values below `4p` congruent
/// to its results modulo `p`.
#[target_feature(enable = "avx512f")]
pub(crate) fn forward_lanes(table: &PrimeTables, a: &mut [Lanes]) {
    let n = a.len();
    let p = _mm512_set1_epi32(table.prime() as i32);
    let two_p = _mm512_add_epi32(p, p);
    let mut t = n;
    let mut m = 1;
    while m < n {
        t /= 2;
        for i in 0..m {
            let (w, w_shoup) = broadcast(table.forward_twiddle(m + i));
            let (lo, hi) = a[2 * i * t..2 * i * t + 2 * t].split_at_mut(t);
            for (x, y) in lo.iter_mut().zip(hi.iter_mut()) {
                // u < 2p and v < 2p, so u + v and u − v + 2p stay below 4p.
                let u = reduce_below(load(x), two_p);
                let v = mul_shoup_lazy(load(y), w, w_shoup, p);
                store(x, _mm512_add_epi32(u, v));
                store(y, _mm512_sub_epi32(_mm512_add_epi32(u, two_p), v));
            }
        }
        m *= 2;
    }
}

/// [`PrimeTables::inverse_lanes`] of values below `2p`, with its fully reduced results.
#[target_feature(enable = "avx512f")]
pub(crate) fn inverse_lanes(table: &PrimeTables, a: &mut [Lanes]) {
    let n = a.len();
    let p = _mm512_set1_epi32(table.prime() as i32);
    let two_p = _mm512_add_epi32(p, p);
    let mut t = 1;
    let mut m = n;
    while m > 1 {
        let h = m / 2;
        for i in 0..h {
            let (w, w_shoup) = broadcast(table.inverse_twiddle(h + i));
            let (lo, hi) = a[2 * i * t..2 * i * t + 2 * t].split_at_mut(t);
            for (x, y) in lo.iter_mut().zip(hi.iter_mut()) {
                // x, y < 2p: the sum is reduced below 2p, the difference (shifted by 2p, below
                // 4p) goes into a lazy product, below 2p.
                let (u, v) = (load(x), load(y));
                store(x, reduce_below(_mm512_add_epi32(u, v), two_p));
                let difference = _mm512_sub_epi32(_mm512_add_epi32(u, two_p), v);
                store(y, mul_shoup_lazy(difference, w, w_shoup, p));
            }
        }
        t *= 2;
        m = h;
    }
    let (s, s_shoup) = broadcast(table.n_inverse());
    for x in a.iter_mut() {
        store(x, mul_shoup(load(x), s, s_shoup, p));
    }
}

/// `sums[j] += lanes[j] · w[j] (mod p)` lane by lane, `w[j]` given with its Shoup quotient,
/// for sums below `p` and any lanes below 2^32.
#[target_feature(enable = "avx512f")]
pub(crate) fn multiply_add(
    table: &PrimeTables,
    sums: &mut [Lanes],
    lanes: &[Lanes],
    w: &[(u32, u32)],
) {
    let p = _mm512_set1_epi32(table.prime() as i32);
    for ((sum, lane), &w) in sums.iter_mut().zip(lanes).zip(w) {
        let (w, w_shoup) = broadcast(w);
        let product = mul_shoup(load(lane), w, w_shoup, p);
        store(sum, add_mod(load(sum), product, p));
    }
}

/// `signed[c][l] = digits[l·width + c]` read as `i8`, for the `rows ≤ 16` rows of the row-major
/// `digits` (the lanes of absent rows are zero) and every column `c < width`: a transpose of
/// 16 x 16 byte tiles in registers, then a sign extension of each column.
#[target_feature(enable = "avx512f")]
pub(crate) fn widen_columns(digits: &[u8], rows: usize, width: usize, signed: &mut [[i32; 16]]) {
    use std::arch::x86_64::{
        __m128i, _mm512_cvtepi8_epi32, _mm_loadu_si128, _mm_setzero_si128, _mm_unpackhi_epi16,
        _mm_unpackhi_epi32, _mm_unpackhi_epi64, _mm_unpackhi_epi8, _mm_unpacklo_epi16,
        _mm_unpacklo_epi32, _mm_unpacklo_epi64, _mm_unpacklo_epi8,
    };
    assert!(rows <= 16 && digits.len() >= rows * width && signed.len() >= width);
    let tiles = width / 16;
    for tile in 0..tiles {
        let c = tile * 16;
        let r: [__m128i; 16] = std::array::from_fn(|l| {
            if l < rows {
                let row = &digits[l * width + c..l * width + c + 16];
                // SAFETY: `row` is 16 readable bytes, the load's width.
                unsafe { _mm_loadu_si128(row.as_ptr().cast()) }
            } else {
                _mm_setzero_si128()
            }
        });
        // Pairs of rows, byte by byte: columns 0-7 and 8-15.
        let lo8: [__m128i; 8] = std::array::from_fn(|k| _mm_unpacklo_epi8(r[2 * k], r[2 * k + 1]));
        let hi8: [__m128i; 8] = std::array::from_fn(|k| _mm_unpackhi_epi8(r[2 * k], r[2 * k + 1]));
        // Quads of rows: four columns each (group g holds columns 4g .. 4g + 3).
        let quad: [[__m128i; 4]; 4] = std::array::from_fn(|q| {
            [
                _mm_unpacklo_epi16(lo8[2 * q], lo8[2 * q + 1]),
                _mm_unpackhi_epi16(lo8[2 * q], lo8[2 * q + 1]),
                _mm_unpacklo_epi16(hi8[2 * q], hi8[2 * q + 1]),
                _mm_unpackhi_epi16(hi8[2 * q], hi8[2 * q + 1]),
            ]
        });
        // Octets of rows: two columns each (h holds columns 2h and 2h + 1).
        let octet: [[__m128i; 8]; 2] = std::array::from_fn(|o| {
            std::array::from_fn(|h| {
                let (g, high) = (h / 2, h % 2 == 1);
                let (x, y) = (quad[2 * o][g], quad[2 * o + 1][g]);
                if high {
                    _mm_unpackhi_epi32(x, y)
                } else {
                    _mm_unpacklo_epi32(x, y)
                }
            })
        });
        for h in 0..8 {
            let low = _mm_unpacklo_epi64(octet[0][h], octet[1][h]);
            let high = _mm_unpackhi_epi64(octet[0][h], octet[1][h]);
            // SAFETY: each `signed[_]` is 16 writable `i32`, the store's 64 bytes.
            unsafe {
                _mm512_storeu_si512(
                    signed[c + 2 * h].as_mut_ptr().cast(),
                    _mm512_cvtepi8_epi32(low),
                );
                _mm512_storeu_si512(
                    signed[c + 2 * h + 1].as_mut_ptr().cast(),
                    _mm512_cvtepi8_epi32(high),
                );
            }
        }
    }
    for c in tiles * 16..width {
        for (l, value) in signed[c].iter_mut().enumerate() {
            *value = if l < rows {
                i32::from(digits[l * width + c] as i8)
            } else {
                0
            };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::{vectorized, Backend};
    use crate::ntt::{NttPlan, LANES};

    /// Each backend's lane transforms (these on AVX-512, the generic ones compiled for the
    /// backend's vector unit otherwise) give the generic ones' residues at every degree (odd
    /// and even numbers of levels) and for every prime.
    #[test]
    fn every_backends_lane_transforms_match_the_generic_ones() {
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        for backend in Backend::available() {
            for log_n in 1..=12 {
                let plan = NttPlan::new(1 << log_n).expect("a supported degree");
                for k in 0..3 {
                    let table = plan.table(k);
                    let lanes: Vec<Lanes> = (0..1usize << log_n)
                        .map(|_| {
                            std::array::from_fn(|_| {
                                x ^= x << 13;
                                x ^= x >> 7;
                                x ^= x << 17;
                                (x % u64::from(table.prime())) as u32
                            })
                        })
                        .collect();
                    let (mut generic, mut vector) = (lanes.clone(), lanes.clone());
                    table.forward_lanes(&mut generic);
                    match backend.avx512() {
                        // SAFETY: the token proves avx512f, the feature `forward_lanes` enables.
                        Some(_) => unsafe { forward_lanes(table, &mut vector) },
                        None => {
                            vectorized!(backend, fn(table: &PrimeTables = table, v: &mut [Lanes] = &mut vector) {
                                table.forward_lanes(v)
                            })
                        }
                    }
                    let p = table.prime();
                    assert!(vector.as_flattened().iter().all(|&x| x < 4 * p));
                    vector.as_flattened_mut().iter_mut().for_each(|x| *x %= p);
                    let at = format!("{backend:?}, n = 2^{log_n}, prime {k}");
                    assert_eq!(generic, vector, "forward, {at}");
                    table.inverse_lanes(&mut generic);
                    match backend.avx512() {
                        // SAFETY: as above.
                        Some(_) => unsafe { inverse_lanes(table, &mut vector) },
                        None => {
                            vectorized!(backend, fn(table: &PrimeTables = table, v: &mut [Lanes] = &mut vector) {
                                table.inverse_lanes(v)
                            })
                        }
                    }
                    assert_eq!(generic, vector, "inverse, {at}");
                    assert_eq!(generic, lanes, "round trip, {at}");
                    assert_eq!(generic[0].len(), LANES);
                }
            }
        }
    }
}
