//! Constants of edwards25519 and ristretto255 (RFC 9496 §4.1) in radix-2^51 limbs.
//!
//! Each is checked against its definition in the tests (`d · 121666 = -121665`,
//! `SQRT_M1² = -1`, and so on), so a wrong limb cannot go unnoticed.

use super::field::Limbs;

/// `d = -121665 / 121666`, the Edwards curve constant.
pub(crate) const EDWARDS_D: Limbs = [
    0x34dca135978a3,
    0x1a8283b156ebd,
    0x5e7a26001c029,
    0x739c663a03cbb,
    0x52036cee2b6ff,
];

/// `2d`.
pub(crate) const EDWARDS_D2: Limbs = [
    0x69b9426b2f159,
    0x35050762add7a,
    0x3cf44c0038052,
    0x6738cc7407977,
    0x2406d9dc56dff,
];

/// `SQRT_M1 = 2^((p - 1) / 4)`, a square root of -1.
pub(crate) const SQRT_M1: Limbs = [
    0x61b274a0ea0b0,
    0xd5a5fc8f189d,
    0x7ef5e9cbd0c60,
    0x78595a6804c9e,
    0x2b8324804fc1d,
];

/// `SQRT_AD_MINUS_ONE`, the square root of `a·d - 1 = -d - 1` that RFC 9496 lists.
pub(crate) const SQRT_AD_MINUS_ONE: Limbs = [
    0x7f6a0497b2e1b,
    0x1836f0a97afd2,
    0x7d747f6be7638,
    0x456079e7e6498,
    0x376931bf2b834,
];

/// `INVSQRT_A_MINUS_D = 1 / sqrt(a - d) = 1 / sqrt(-1 - d)`, as RFC 9496 lists it.
pub(crate) const INVSQRT_A_MINUS_D: Limbs = [
    0xfdaa805d40ea,
    0x2eb482e57d339,
    0x7610274bc58,
    0x6510b613dc8ff,
    0x786c8905cfaff,
];

/// `ONE_MINUS_D_SQ = 1 - d²`.
pub(crate) const ONE_MINUS_D_SQ: Limbs = [
    0x409c1945fc176,
    0x719abc6a1fc4f,
    0x1c37f90b20684,
    0x6bccca55eedf,
    0x29072a8b2b3e,
];

/// `D_MINUS_ONE_SQ = (d - 1)²`.
pub(crate) const D_MINUS_ONE_SQ: Limbs = [
    0x55aaa44ed4d20,
    0x59603c3332635,
    0x26d3baf4a7928,
    0x120a66e6997a9,
    0x5968b37af66c2,
];
