//! AVX-512 kernels: 16 lanes of `u32` (AVX-512F, with BW for the byte loads).

use std::arch::x86_64::*;

const LANES: usize = 16;

#[inline]
#[target_feature(enable = "avx512f")]
fn zero() -> __m512i {
    _mm512_setzero_si512()
}

#[inline]
#[target_feature(enable = "avx512f")]
unsafe fn load(p: *const u32) -> __m512i {
    _mm512_loadu_si512(p.cast())
}

#[inline]
#[target_feature(enable = "avx512f")]
unsafe fn store(p: *mut u32, v: __m512i) {
    _mm512_storeu_si512(p.cast(), v)
}

#[inline]
#[target_feature(enable = "avx512f")]
fn splat(x: i32) -> __m512i {
    _mm512_set1_epi32(x)
}

/// `acc + a · b` lane by lane, wrapping.
#[inline]
#[target_feature(enable = "avx512f")]
fn mul_add(acc: __m512i, a: __m512i, b: __m512i) -> __m512i {
    _mm512_add_epi32(acc, _mm512_mullo_epi32(a, b))
}

/// 16 `i8` digits, sign-extended.
#[inline]
#[target_feature(enable = "avx512f,avx512bw")]
unsafe fn load_digits(p: *const u8) -> __m512i {
    _mm512_cvtepi8_epi32(_mm_loadu_si128(p.cast()))
}

#[inline]
#[target_feature(enable = "avx512f")]
fn reduce(v: __m512i) -> u32 {
    _mm512_reduce_add_epi32(v) as u32
}

super::simd::simd_kernels!("avx512f,avx512bw");
