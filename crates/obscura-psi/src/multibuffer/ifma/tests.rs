//! The kernel against a big-integer reference (field), its own definitions (constants),
//! curve25519-dalek (points, point by point) and the RFC 9496 vectors.
//!
//! Tests of the kernel itself need AVX-512 IFMA: on other CPUs they say so and pass without
//! running (the constants are checked everywhere).

use curve25519_dalek::constants::RISTRETTO_BASEPOINT_POINT;
use curve25519_dalek::ristretto::{CompressedRistretto, RistrettoPoint};
use curve25519_dalek::scalar::Scalar;
use num_bigint::BigUint;
use obscura_math::backend::Backend;
use proptest::prelude::*;

use super::constants::*;
use super::edwards::Point8;
use super::field::{bytes_from_limbs, limbs_from_bytes, Fe8, Limbs};
use super::{ristretto, LANES};
use crate::multibuffer::digits::Digits;
use crate::multibuffer::Ifma;
use crate::rfc9496_vectors::{hex, BAD_ENCODINGS, MULTIPLES_OF_THE_GENERATOR};

/// The largest limb a weakly reduced element may have, plus one.
const WEAK_LIMB_BOUND: u64 = (1 << 51) + (1 << 18);

fn p() -> BigUint {
    (BigUint::from(1u8) << 255u32) - 19u32
}

fn value(limbs: &Limbs) -> BigUint {
    limbs
        .iter()
        .rev()
        .fold(BigUint::from(0u8), |acc, &limb| (acc << 51u32) + limb)
}

fn residue(limbs: &Limbs) -> BigUint {
    value(limbs) % p()
}

/// Whether the selected backend runs the kernel; says so when it does not.
fn kernel_available() -> bool {
    let available = Ifma::on(Backend::selected()).is_some();
    if !available {
        eprintln!(
            "the selected backend has no AVX-512 IFMA: the multi-buffer kernel is not tested"
        );
    }
    available
}

/// Runs `$body` (a block that uses the kernel) when the selected backend has IFMA.
macro_rules! with_kernel {
    ($body:block) => {{
        #[target_feature(enable = "avx512f,avx512dq,avx512ifma")]
        fn body() $body
        if kernel_available() {
            // SAFETY: the CPU has the features `body` is compiled for.
            unsafe { body() }
        }
    }};
}

#[test]
fn constants_match_their_definitions() {
    let p = p();
    let d = residue(&EDWARDS_D);
    let minus = |x: &BigUint| (&p - x % &p) % &p;
    assert_eq!((&d * 121666u32 + 121665u32) % &p, BigUint::from(0u8));
    assert_eq!(residue(&EDWARDS_D2), (&d * 2u8) % &p);
    let sqrt_m1 = residue(&SQRT_M1);
    assert_eq!(
        sqrt_m1.modpow(&BigUint::from(2u8), &p),
        minus(&BigUint::from(1u8))
    );
    let ad_minus_one = minus(&(&d + 1u8));
    assert_eq!(
        residue(&SQRT_AD_MINUS_ONE).modpow(&BigUint::from(2u8), &p),
        ad_minus_one
    );
    let invsqrt = residue(&INVSQRT_A_MINUS_D);
    assert_eq!(
        (&invsqrt * &invsqrt * minus(&(&d + 1u8))) % &p,
        BigUint::from(1u8)
    );
    assert_eq!(residue(&ONE_MINUS_D_SQ), minus(&(&d * &d + &p - 1u8)));
    assert_eq!(
        residue(&D_MINUS_ONE_SQ),
        ((&d + &p - 1u8) * (&d + &p - 1u8)) % &p
    );
    // RFC 9496 lists these two as integers; they are not the even square roots.
    assert_eq!(
        value(&SQRT_AD_MINUS_ONE).to_string(),
        "25063068953384623474111414158702152701244531502492656460079210482610430750235"
    );
    assert_eq!(
        value(&INVSQRT_A_MINUS_D).to_string(),
        "54469307008909316920995813868745141605393597292927456921205312896311721017578"
    );
}

#[test]
fn bytes_and_limbs_round_trip() {
    let bytes: [u8; 32] = std::array::from_fn(|i| (i as u8).wrapping_mul(97) ^ 0x5c);
    let mut masked = bytes;
    masked[31] &= 0x7f;
    assert_eq!(bytes_from_limbs(&limbs_from_bytes(&bytes)), masked);
}

/// A limb of a weakly reduced element, drawn often from the edges of its range.
fn weak_limb() -> impl Strategy<Value = u64> {
    prop_oneof![
        Just(0u64),
        Just((1 << 51) - 1),
        Just(1 << 51),
        Just(WEAK_LIMB_BOUND - 1),
        0..WEAK_LIMB_BOUND,
    ]
}

fn weak_lanes() -> impl Strategy<Value = [Limbs; LANES]> {
    proptest::array::uniform8(proptest::array::uniform5(weak_limb()))
}

/// Every lane of `result` is weakly reduced and congruent to `expected` of the inputs' lane.
fn assert_lanes(result: [Limbs; LANES], expected: impl Fn(usize) -> BigUint, what: &str) {
    for (lane, limbs) in result.iter().enumerate() {
        assert!(
            limbs.iter().all(|&limb| limb < WEAK_LIMB_BOUND),
            "{what}: {limbs:x?}"
        );
        assert_eq!(residue(limbs), expected(lane) % p(), "{what}, lane {lane}");
    }
}

#[target_feature(enable = "avx512f,avx512dq,avx512ifma")]
fn check_arithmetic(a: [Limbs; LANES], b: [Limbs; LANES]) {
    let (x, y) = (Fe8::from_lanes(&a), Fe8::from_lanes(&b));
    let (va, vb) = (a.map(|l| value(&l)), b.map(|l| value(&l)));
    let p = p();
    assert_lanes(x.add(y).to_lanes(), |i| &va[i] + &vb[i], "add");
    assert_lanes(
        x.sub(y).to_lanes(),
        |i| &va[i] + &p * 2u8 - &vb[i] % &p,
        "sub",
    );
    assert_lanes(x.neg().to_lanes(), |i| &p * 2u8 - &va[i] % &p, "neg");
    assert_lanes(x.mul(y).to_lanes(), |i| &va[i] * &vb[i], "mul");
    assert_lanes(x.square().to_lanes(), |i| &va[i] * &va[i], "square");
    for (lane, limbs) in x.canonical().to_lanes().iter().enumerate() {
        assert!(limbs.iter().all(|&limb| limb < 1 << 51));
        assert_eq!(value(limbs), &va[lane] % &p, "canonical, lane {lane}");
    }
    let negative = x.is_negative();
    let zero = x.is_zero();
    let equal = x.equals(y);
    for lane in 0..LANES {
        let canonical = &va[lane] % &p;
        assert_eq!(negative >> lane & 1 == 1, canonical.bit(0));
        assert_eq!(zero >> lane & 1 == 1, canonical == BigUint::from(0u8));
        assert_eq!(equal >> lane & 1 == 1, canonical == &vb[lane] % &p);
    }
}

#[target_feature(enable = "avx512f,avx512dq,avx512ifma")]
fn check_sqrt_ratio(u: [Limbs; LANES], v: [Limbs; LANES]) {
    let p = p();
    let (was_square, root) = Fe8::sqrt_ratio_m1(Fe8::from_lanes(&u), Fe8::from_lanes(&v));
    let sqrt_m1 = residue(&SQRT_M1);
    let legendre_exponent = (&p - 1u8) >> 1u32;
    for (lane, root) in root.canonical().to_lanes().iter().enumerate() {
        let (u, v, r) = (residue(&u[lane]), residue(&v[lane]), value(root));
        let zero = BigUint::from(0u8);
        let ratio_is_square = v != zero
            && (u == zero
                || (&u * v.modpow(&(&p - 2u8), &p)).modpow(&legendre_exponent, &p)
                    == BigUint::from(1u8));
        // RFC 9496: (TRUE, sqrt(u/v)) for a square, (FALSE, 0) for v = 0 and u != 0,
        // (TRUE, 0) for u = 0, (FALSE, sqrt(SQRT_M1 · u / v)) otherwise.
        assert_eq!(
            was_square >> lane & 1 == 1,
            ratio_is_square || u == zero,
            "lane {lane}"
        );
        assert!(!r.bit(0), "the root is non-negative");
        let target = if was_square >> lane & 1 == 1 {
            u.clone()
        } else {
            (&sqrt_m1 * &u) % &p
        };
        if v != zero {
            assert_eq!((&r * &r * &v) % &p, target, "lane {lane}");
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Sums, differences, products, squares, reductions, signs and comparisons agree with big
    /// integers mod p, and every result stays weakly reduced.
    #[test]
    fn field_arithmetic_matches_big_integers(a in weak_lanes(), b in weak_lanes()) {
        if kernel_available() {
            // SAFETY: the CPU has the features `check_arithmetic` is compiled for.
            unsafe { check_arithmetic(a, b) }
        }
    }

    /// SQRT_RATIO_M1 follows RFC 9496's definition case by case.
    #[test]
    fn sqrt_ratio_matches_its_definition(u in weak_lanes(), v in weak_lanes()) {
        if kernel_available() {
            // SAFETY: the CPU has the features `check_sqrt_ratio` is compiled for.
            unsafe { check_sqrt_ratio(u, v) }
        }
    }
}

#[test]
fn sqrt_ratio_edge_cases() {
    with_kernel!({
        let zero = [0u64; 5];
        let one = [1u64, 0, 0, 0, 0];
        let two = [2u64, 0, 0, 0, 0];
        let u = [zero, one, one, two, zero, one, SQRT_M1, EDWARDS_D];
        let v = [one, zero, one, one, zero, [4, 0, 0, 0, 0], one, EDWARDS_D2];
        check_sqrt_ratio(u, v)
    });
}

/// The multiples decode (the identity too: its refusal is the caller's), encode back to the
/// same bytes, and the generator times k, computed by the kernel, encodes as k B.
#[test]
fn rfc9496_multiples_of_the_generator() {
    with_kernel!({
        let encodings = MULTIPLES_OF_THE_GENERATOR.map(hex);
        for group in encodings.chunks_exact(LANES) {
            let group: [[u8; 32]; LANES] = group.try_into().unwrap();
            let (points, valid) = ristretto::decode(&group);
            assert_eq!(valid, 0xff);
            assert_eq!(ristretto::encode(&points), group);
        }
        let generator = [encodings[1]; LANES];
        let (generator, _) = ristretto::decode(&generator);
        for k in 0..16u8 {
            let product = generator.mul(&Digits::new(&Scalar::from(k)));
            assert_eq!(
                ristretto::encode(&product),
                [encodings[usize::from(k)]; LANES],
                "{k} B"
            );
        }
    });
}

/// RFC 9496 appendix A.2: bad encodings are invalid in whichever lane they sit.
#[test]
fn rfc9496_bad_encodings_are_invalid() {
    with_kernel!({
        let generator = hex(MULTIPLES_OF_THE_GENERATOR[1]);
        for encoding in BAD_ENCODINGS.map(hex) {
            for lane in [0, 5] {
                let mut group = [generator; LANES];
                group[lane] = encoding;
                let (_, valid) = ristretto::decode(&group);
                assert_eq!(valid, !(1u8 << lane), "{encoding:02x?} in lane {lane}");
            }
        }
    });
}

fn dalek_agreement_strings() -> impl Strategy<Value = [[u8; 64]; LANES]> {
    proptest::array::uniform8(proptest::collection::vec(any::<u8>(), 64))
        .prop_map(|lanes| lanes.map(|bytes| bytes.try_into().unwrap()))
}

#[target_feature(enable = "avx512f,avx512dq,avx512ifma")]
fn check_against_dalek(strings: [[u8; 64]; LANES], scalar_bytes: [u8; 32], raw: [[u8; 32]; LANES]) {
    // Hashing, multiplication and encoding.
    let scalar = Scalar::from_bytes_mod_order(scalar_bytes);
    let ours = ristretto::from_uniform_bytes(&strings);
    let theirs = strings.map(|bytes| RistrettoPoint::from_uniform_bytes(&bytes));
    assert_eq!(
        ristretto::encode(&ours),
        theirs.map(|p| p.compress().to_bytes())
    );
    let product = ours.mul(&Digits::new(&scalar));
    assert_eq!(
        ristretto::encode(&product),
        theirs.map(|p| (scalar * p).compress().to_bytes())
    );
    // Decoding: valid encodings of those points, and raw strings (mostly invalid).
    let encodings = theirs.map(|p| p.compress().to_bytes());
    let (decoded, valid) = ristretto::decode(&encodings);
    assert_eq!(valid, 0xff);
    assert_eq!(ristretto::encode(&decoded), encodings);
    let (decoded, valid) = ristretto::decode(&raw);
    let reencoded = ristretto::encode(&decoded);
    for lane in 0..LANES {
        let dalek = CompressedRistretto(raw[lane]).decompress();
        assert_eq!(
            valid >> lane & 1 == 1,
            dalek.is_some(),
            "{:02x?}",
            raw[lane]
        );
        if dalek.is_some() {
            assert_eq!(reencoded[lane], raw[lane]);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Hash-to-group, multiplication by a scalar, encoding and decoding agree with
    /// curve25519-dalek point by point.
    #[test]
    fn points_match_curve25519_dalek(
        strings in dalek_agreement_strings(),
        scalar in proptest::array::uniform32(any::<u8>()),
        raw in proptest::array::uniform8(proptest::array::uniform32(any::<u8>())),
    ) {
        // Raw strings made even and below 2^255 pass the cheap checks half the time, so the
        // square-root test decides.
        let raw = raw.map(|mut bytes| { bytes[0] &= 0xfe; bytes[31] &= 0x7f; bytes });
        if kernel_available() {
            // SAFETY: the CPU has the features `check_against_dalek` is compiled for.
            unsafe { check_against_dalek(strings, scalar, raw) }
        }
    }
}

/// Multiplying by scalars near the edges of the recoding (0, 1, ℓ - 1, digits of -8) agrees
/// with curve25519-dalek, for the generator in every lane and for distinct points.
#[test]
fn edge_scalars_match_curve25519_dalek() {
    with_kernel!({
        let points: [RistrettoPoint; LANES] =
            std::array::from_fn(|i| Scalar::from(3u64 + i as u64) * RISTRETTO_BASEPOINT_POINT);
        let encodings = points.map(|p| p.compress().to_bytes());
        let (ours, _) = ristretto::decode(&encodings);
        let scalars = [
            Scalar::ZERO,
            Scalar::ONE,
            -Scalar::ONE,
            Scalar::from_bytes_mod_order([0x88; 32]),
            Scalar::from_bytes_mod_order([0xff; 32]),
            Scalar::from(8u8),
        ];
        for scalar in scalars {
            let product: Point8 = ours.mul(&Digits::new(&scalar));
            assert_eq!(
                ristretto::encode(&product),
                points.map(|p| (scalar * p).compress().to_bytes())
            );
        }
    });
}
