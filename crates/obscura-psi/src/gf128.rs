//! Arithmetic in GF(2^128) = GF(2)[x] / (x^128 + x^7 + x^2 + x + 1), an element being a `u128`
//! whose bit `i` is the coefficient of `x^i`. Addition is XOR; multiplication uses the CPU's
//! carry-less multiply (PCLMULQDQ) where the selected backend offers it
//! ([`Backend::clmul`]) and a portable shift-and-add otherwise, with identical results.

use obscura_math::backend::Backend;

/// The reduction polynomial without its leading term: `x^7 + x^2 + x + 1`.
const REDUCTION: u64 = 0x87;

/// The product `a · b`.
pub(crate) fn mul(a: u128, b: u128) -> u128 {
    #[cfg(target_arch = "x86_64")]
    if let Some(token) = Backend::selected().clmul() {
        return clmul_x86::mul(token, a, b);
    }
    mul_portable(a, b)
}

/// `x · a`: one shift and a conditional reduction.
pub(crate) fn mul_by_x(a: u128) -> u128 {
    let carry = (a >> 127) as u64;
    (a << 1) ^ u128::from(REDUCTION & carry.wrapping_neg())
}

/// `Σ_k x^k · terms[k]`, by Horner's rule.
pub(crate) fn combine_powers(terms: &[u128]) -> u128 {
    terms
        .iter()
        .rev()
        .fold(0, |acc, &term| mul_by_x(acc) ^ term)
}

/// The portable product: four 64 x 64-bit carry-less products, then the reduction.
fn mul_portable(a: u128, b: u128) -> u128 {
    let (a0, a1) = (a as u64, (a >> 64) as u64);
    let (b0, b1) = (b as u64, (b >> 64) as u64);
    let low = clmul_portable(a0, b0);
    let high = clmul_portable(a1, b1);
    let middle = clmul_portable(a0, b1) ^ clmul_portable(a1, b0);
    reduce(high ^ (middle >> 64), low ^ (middle << 64), clmul_portable)
}

/// The 128-bit carry-less product of two 64-bit words, bit by bit (constant time: every bit of
/// `b` costs the same masked XOR).
fn clmul_portable(a: u64, b: u64) -> u128 {
    (0..64).fold(0u128, |acc, i| {
        let mask = ((b >> i) & 1).wrapping_neg();
        acc ^ (u128::from(a & mask) << i)
    })
}

/// `high · x^128 + low` reduced: `x^128 ≡ x^7 + x^2 + x + 1`, applied twice (the first pass
/// leaves at most 7 bits above `x^127`).
fn reduce(high: u128, low: u128, clmul: impl Fn(u64, u64) -> u128) -> u128 {
    let folded_low = clmul(high as u64, REDUCTION);
    let folded_high = clmul((high >> 64) as u64, REDUCTION);
    let overflow = (folded_high >> 64) as u64;
    low ^ folded_low ^ (folded_high << 64) ^ clmul(overflow, REDUCTION)
}

#[cfg(target_arch = "x86_64")]
#[allow(unsafe_code)]
mod clmul_x86 {
    use obscura_math::backend::ClmulToken;
    use std::arch::x86_64::{
        __m128i, _mm_clmulepi64_si128, _mm_cvtsi128_si64, _mm_extract_epi64, _mm_set_epi64x,
    };

    /// The product with PCLMULQDQ.
    pub(super) fn mul(_: ClmulToken, a: u128, b: u128) -> u128 {
        // SAFETY: the token proves pclmulqdq and sse4.1, the features `mul_clmul` enables.
        unsafe { mul_clmul(a, b) }
    }

    #[target_feature(enable = "pclmulqdq,sse4.1")]
    fn word(a: u64, b: u64) -> u128 {
        let product =
            _mm_clmulepi64_si128::<0>(_mm_set_epi64x(0, a as i64), _mm_set_epi64x(0, b as i64));
        to_u128(product)
    }

    #[target_feature(enable = "pclmulqdq,sse4.1")]
    fn to_u128(v: __m128i) -> u128 {
        let low = _mm_cvtsi128_si64(v) as u64;
        let high = _mm_extract_epi64::<1>(v) as u64;
        u128::from(low) | u128::from(high) << 64
    }

    #[target_feature(enable = "pclmulqdq,sse4.1")]
    fn mul_clmul(a: u128, b: u128) -> u128 {
        let (a0, a1) = (a as u64, (a >> 64) as u64);
        let (b0, b1) = (b as u64, (b >> 64) as u64);
        let low = word(a0, b0);
        let high = word(a1, b1);
        let middle = word(a0, b1) ^ word(a1, b0);
        super::reduce(high ^ (middle >> 64), low ^ (middle << 64), |a, b| {
            word(a, b)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Multiplication by shifting one operand: the definition, bit by bit.
    fn mul_reference(a: u128, b: u128) -> u128 {
        let mut acc = 0;
        let mut shifted = a;
        for i in 0..128 {
            if (b >> i) & 1 == 1 {
                acc ^= shifted;
            }
            shifted = mul_by_x(shifted);
        }
        acc
    }

    #[test]
    fn known_products() {
        // x^127 · x = x^128 = x^7 + x^2 + x + 1.
        assert_eq!(mul(1 << 127, 2), 0x87);
        // (x^64)^2 = x^128.
        assert_eq!(mul(1 << 64, 1 << 64), 0x87);
        // x^127 · x^127 = x^254 = x^126 · x^128 ≡ x^126 (x^7 + x^2 + x + 1), reduced again.
        assert_eq!(mul(1 << 127, 1 << 127), mul_reference(1 << 127, 1 << 127));
        assert_eq!(mul(0x1234, 1), 0x1234);
        assert_eq!(combine_powers(&[1, 1, 1]), 0b111);
        assert_eq!(combine_powers(&[5, 0, 1]), 5 ^ 4);
    }

    proptest! {
        #[test]
        fn products_agree_with_the_definition(a in any::<u128>(), b in any::<u128>(), c in any::<u128>()) {
            let product = mul_reference(a, b);
            prop_assert_eq!(mul(a, b), product);
            prop_assert_eq!(mul_portable(a, b), product);
            prop_assert_eq!(mul(b, a), product);
            prop_assert_eq!(mul(a, b ^ c), product ^ mul(a, c));
            prop_assert_eq!(mul(mul(a, b), c), mul(a, mul(b, c)));
        }
    }

    /// Every nonzero element has an inverse (`a^(2^128 - 2)`), so multiplication by a nonzero
    /// element is a bijection: the modulus is irreducible.
    #[test]
    fn nonzero_elements_are_invertible() {
        for a in [1u128, 2, 0x87, u128::MAX, 0xdead_beef << 70] {
            let mut power = a;
            let mut inverse = 1u128;
            // a^(2^128 - 2) = Π_{i=1}^{127} a^(2^i).
            for _ in 1..128 {
                power = mul(power, power);
                inverse = mul(inverse, power);
            }
            assert_eq!(mul(a, inverse), 1, "{a:#x}");
        }
    }
}
