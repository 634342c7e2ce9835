//! ristretto255 encoding, decoding and hashing (RFC 9496 §4.3) for eight points at once.

use std::arch::x86_64::*;

use super::constants::{
    D_MINUS_ONE_SQ, EDWARDS_D, INVSQRT_A_MINUS_D, ONE_MINUS_D_SQ, SQRT_AD_MINUS_ONE, SQRT_M1,
};
use super::edwards::Point8;
use super::field::{bytes_from_limbs, is_canonical, limbs_from_bytes, Fe8, Limbs};

/// RFC 9496 §4.3.1 DECODE of eight encodings: the points, and the lanes whose encoding is
/// valid (canonical, non-negative, and of a point of the group). Invalid lanes hold garbage.
#[inline]
#[target_feature(enable = "avx512f,avx512dq,avx512ifma")]
pub(crate) fn decode(encodings: &[[u8; 32]; 8]) -> (Point8, __mmask8) {
    // Canonical and non-negative: public facts about public bytes, checked lane by lane.
    let mut well_formed: __mmask8 = 0;
    for (lane, bytes) in encodings.iter().enumerate() {
        if is_canonical(bytes) && bytes[0] & 1 == 0 {
            well_formed |= 1 << lane;
        }
    }
    let limbs: [Limbs; 8] = std::array::from_fn(|lane| limbs_from_bytes(&encodings[lane]));
    let s = Fe8::from_lanes(&limbs);
    let one = Fe8::one();
    let ss = s.square();
    let u1 = one.sub(ss);
    let u2 = one.add(ss);
    let u2_sqr = u2.square();
    let v = Fe8::splat(EDWARDS_D).mul(u1.square()).neg().sub(u2_sqr);
    let (was_square, invsqrt) = Fe8::sqrt_ratio_m1(one, v.mul(u2_sqr));
    let den_x = invsqrt.mul(u2);
    let den_y = invsqrt.mul(den_x).mul(v);
    let s2 = s.add(s);
    let x = s2.mul(den_x).abs();
    let y = u1.mul(den_y);
    let t = x.mul(y);
    let valid = well_formed & was_square & !t.is_negative() & !y.is_zero();
    (Point8 { x, y, z: one, t }, valid)
}

/// RFC 9496 §4.3.2 ENCODE of eight points.
#[inline]
#[target_feature(enable = "avx512f,avx512dq,avx512ifma")]
pub(crate) fn encode(point: &Point8) -> [[u8; 32]; 8] {
    let Point8 {
        x: x0,
        y: y0,
        z: z0,
        t: t0,
    } = *point;
    let sqrt_m1 = Fe8::splat(SQRT_M1);
    let u1 = z0.add(y0).mul(z0.sub(y0));
    let u2 = x0.mul(y0);
    let (_, invsqrt) = Fe8::sqrt_ratio_m1(Fe8::one(), u1.mul(u2.square()));
    let den1 = invsqrt.mul(u1);
    let den2 = invsqrt.mul(u2);
    let z_inv = den1.mul(den2).mul(t0);
    let ix0 = x0.mul(sqrt_m1);
    let iy0 = y0.mul(sqrt_m1);
    let enchanted_denominator = den1.mul(Fe8::splat(INVSQRT_A_MINUS_D));
    let rotate = t0.mul(z_inv).is_negative();
    let x = Fe8::select(rotate, iy0, x0);
    let y = Fe8::select(rotate, ix0, y0);
    let den_inv = Fe8::select(rotate, enchanted_denominator, den2);
    let y = y.negate_where(x.mul(z_inv).is_negative());
    let s = den_inv.mul(z0.sub(y)).abs();
    s.canonical()
        .to_lanes()
        .map(|limbs| bytes_from_limbs(&limbs))
}

/// RFC 9496 §4.3.4 MAP (the Elligator map of one-way hashing) of eight 32-byte strings.
#[inline]
#[target_feature(enable = "avx512f,avx512dq,avx512ifma")]
fn map(strings: &[Limbs; 8]) -> Point8 {
    let t = Fe8::from_lanes(strings);
    let one = Fe8::one();
    let d = Fe8::splat(EDWARDS_D);
    let r = Fe8::splat(SQRT_M1).mul(t.square());
    let u = r.add(one).mul(Fe8::splat(ONE_MINUS_D_SQ));
    let v = one.neg().sub(r.mul(d)).mul(r.add(d));
    let (was_square, s) = Fe8::sqrt_ratio_m1(u, v);
    let s_prime = s.mul(t).abs().neg();
    let s = Fe8::select(was_square, s, s_prime);
    let c = Fe8::select(was_square, one.neg(), r);
    let n = c.mul(r.sub(one)).mul(Fe8::splat(D_MINUS_ONE_SQ)).sub(v);
    let s_sq = s.square();
    let w0 = s.add(s).mul(v);
    let w1 = n.mul(Fe8::splat(SQRT_AD_MINUS_ONE));
    let w2 = one.sub(s_sq);
    let w3 = one.add(s_sq);
    Point8 {
        x: w0.mul(w3),
        y: w2.mul(w1),
        z: w1.mul(w3),
        t: w0.mul(w2),
    }
}

/// RFC 9496 §4.3.4 element derivation from 64 uniform bytes, for eight strings: the sum of the
/// maps of their two halves (each read as an integer with bit 255 cleared).
#[inline]
#[target_feature(enable = "avx512f,avx512dq,avx512ifma")]
pub(crate) fn from_uniform_bytes(strings: &[[u8; 64]; 8]) -> Point8 {
    let half = |offset: usize| -> [Limbs; 8] {
        std::array::from_fn(|lane| {
            let bytes: &[u8; 32] = strings[lane][offset..offset + 32]
                .try_into()
                .expect("32 bytes");
            limbs_from_bytes(bytes)
        })
    };
    let first = map(&half(0));
    let second = map(&half(32));
    first.add(&second.to_cached())
}
