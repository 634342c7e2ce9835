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

super::simd::simd_kernels!("avx2");
