//! Eight elements of GF(2^255 - 19) at once, one per 64-bit lane of five AVX-512 registers.
//!
//! An element is `a_0 + a_1 2^51 + a_2 2^102 + a_3 2^153 + a_4 2^204` (radix 2^51). The IFMA
//! instructions multiply the low 52 bits of two lanes and add either the low or the high 52 bits
//! of the 104-bit product to a 64-bit accumulator, so every input of a product must have limbs
//! below 2^52. Every operation here returns a *weakly reduced* element, with limbs below
//! 2^51 + 2^18, and accepts weakly reduced elements, which keeps that promise with room to spare:
//!
//! - a product's columns sum at most five low halves (each < 2^52) and five high halves (each
//!   < 2^52, weighted 2 because the radix is 2^51), so a column is < 2^56; folding columns 5..9
//!   back with 2^255 = 19 gives limbs < 20 · 2^56 < 2^61, and one carry round leaves limbs
//!   < 2^51 + 19 · 2^10;
//! - a sum or difference (`a + 2p - b`) has limbs < 2^53 before its carry round, which leaves
//!   limbs < 2^51 + 19 · 4.
//!
//! Only [`Fe8::canonical`] reduces fully (limbs < 2^51, value < p); comparisons and signs go
//! through it.

use std::arch::x86_64::*;

/// The limbs of one element, radix 2^51, little-endian.
pub(crate) type Limbs = [u64; 5];

/// 2^51 - 1: the bits of a reduced limb.
const LOW_51_BITS: u64 = (1 << 51) - 1;

/// 2p in limbs of 52 bits (`2^52 - 38, 2^52 - 2, ...`), added before a subtraction so that no
/// limb goes below zero (every weakly reduced limb is smaller than these).
const TWO_P: Limbs = [
    (1 << 52) - 38,
    (1 << 52) - 2,
    (1 << 52) - 2,
    (1 << 52) - 2,
    (1 << 52) - 2,
];

/// Eight field elements, lane `i` of every limb register belonging to element `i`.
#[derive(Clone, Copy)]
pub(crate) struct Fe8([__m512i; 5]);

impl Fe8 {
    /// The same element in all eight lanes.
    #[inline]
    #[target_feature(enable = "avx512f,avx512dq,avx512ifma")]
    pub(crate) fn splat(limbs: Limbs) -> Self {
        Self(limbs.map(|limb| _mm512_set1_epi64(limb as i64)))
    }

    /// Zero in every lane.
    #[inline]
    #[target_feature(enable = "avx512f,avx512dq,avx512ifma")]
    pub(crate) fn zero() -> Self {
        Self::splat([0; 5])
    }

    /// One in every lane.
    #[inline]
    #[target_feature(enable = "avx512f,avx512dq,avx512ifma")]
    pub(crate) fn one() -> Self {
        Self::splat([1, 0, 0, 0, 0])
    }

    /// The elements whose limbs are `lanes` (each limb below 2^51 + 2^18).
    #[inline]
    #[target_feature(enable = "avx512f,avx512dq,avx512ifma")]
    pub(crate) fn from_lanes(lanes: &[Limbs; 8]) -> Self {
        Self(std::array::from_fn(|limb| {
            let column: [u64; 8] = std::array::from_fn(|lane| lanes[lane][limb]);
            load(&column)
        }))
    }

    /// The limbs of each lane (as they are: call [`Fe8::canonical`] first for unique ones).
    #[inline]
    #[target_feature(enable = "avx512f,avx512dq,avx512ifma")]
    pub(crate) fn to_lanes(self) -> [Limbs; 8] {
        let columns = self.0.map(|register| store(register));
        std::array::from_fn(|lane| std::array::from_fn(|limb| columns[limb][lane]))
    }

    /// `self + rhs`.
    #[inline]
    #[target_feature(enable = "avx512f,avx512dq,avx512ifma")]
    pub(crate) fn add(self, rhs: Self) -> Self {
        Self(std::array::from_fn(|i| {
            _mm512_add_epi64(self.0[i], rhs.0[i])
        }))
        .carry()
    }

    /// `self - rhs`.
    #[inline]
    #[target_feature(enable = "avx512f,avx512dq,avx512ifma")]
    pub(crate) fn sub(self, rhs: Self) -> Self {
        Self(std::array::from_fn(|i| {
            let biased = _mm512_add_epi64(self.0[i], _mm512_set1_epi64(TWO_P[i] as i64));
            _mm512_sub_epi64(biased, rhs.0[i])
        }))
        .carry()
    }

    /// `-self`.
    #[inline]
    #[target_feature(enable = "avx512f,avx512dq,avx512ifma")]
    pub(crate) fn neg(self) -> Self {
        Self::zero().sub(self)
    }

    /// `self · rhs`.
    #[inline]
    #[target_feature(enable = "avx512f,avx512dq,avx512ifma")]
    pub(crate) fn mul(self, rhs: Self) -> Self {
        let (a, b) = (self.0, rhs.0);
        let mut low = [_mm512_setzero_si512(); 9];
        let mut high = [_mm512_setzero_si512(); 9];
        for i in 0..5 {
            for j in 0..5 {
                low[i + j] = _mm512_madd52lo_epu64(low[i + j], a[i], b[j]);
                high[i + j] = _mm512_madd52hi_epu64(high[i + j], a[i], b[j]);
            }
        }
        Self::fold(low, high)
    }

    /// `self²`: the ten cross products once, doubled, then the five squares.
    #[inline]
    #[target_feature(enable = "avx512f,avx512dq,avx512ifma")]
    pub(crate) fn square(self) -> Self {
        let a = self.0;
        let mut low = [_mm512_setzero_si512(); 9];
        let mut high = [_mm512_setzero_si512(); 9];
        for i in 0..5 {
            for j in i + 1..5 {
                low[i + j] = _mm512_madd52lo_epu64(low[i + j], a[i], a[j]);
                high[i + j] = _mm512_madd52hi_epu64(high[i + j], a[i], a[j]);
            }
        }
        for column in 1..8 {
            low[column] = _mm512_slli_epi64::<1>(low[column]);
            high[column] = _mm512_slli_epi64::<1>(high[column]);
        }
        for i in 0..5 {
            low[2 * i] = _mm512_madd52lo_epu64(low[2 * i], a[i], a[i]);
            high[2 * i] = _mm512_madd52hi_epu64(high[2 * i], a[i], a[i]);
        }
        Self::fold(low, high)
    }

    /// `self^(2^n)`.
    #[inline]
    #[target_feature(enable = "avx512f,avx512dq,avx512ifma")]
    pub(crate) fn square_times(self, n: u32) -> Self {
        (0..n).fold(self, |x, _| x.square())
    }

    /// The product whose column `k` (weight 2^(51k)) holds `low[k] + 2 high[k - 1]` (the high
    /// half of a product sits 52 bits up, one limb and one bit), folded with 2^255 = 19.
    #[inline]
    #[target_feature(enable = "avx512f,avx512dq,avx512ifma")]
    fn fold(low: [__m512i; 9], high: [__m512i; 9]) -> Self {
        let column = |k: usize| {
            let low = if k < 9 {
                low[k]
            } else {
                _mm512_setzero_si512()
            };
            if k == 0 {
                low
            } else {
                _mm512_add_epi64(low, _mm512_slli_epi64::<1>(high[k - 1]))
            }
        };
        let nineteen = _mm512_set1_epi64(19);
        Self(std::array::from_fn(|k| {
            _mm512_add_epi64(column(k), _mm512_mullo_epi64(column(k + 5), nineteen))
        }))
        .carry()
    }

    /// One round of carries, all limbs at once: each limb keeps its low 51 bits and passes the
    /// rest up, the top limb's to limb 0 times 19.
    #[inline]
    #[target_feature(enable = "avx512f,avx512dq,avx512ifma")]
    fn carry(self) -> Self {
        let mask = _mm512_set1_epi64(LOW_51_BITS as i64);
        let carries = self.0.map(|limb| _mm512_srli_epi64::<51>(limb));
        let wrapped = _mm512_mullo_epi64(carries[4], _mm512_set1_epi64(19));
        Self(std::array::from_fn(|i| {
            let incoming = if i == 0 { wrapped } else { carries[i - 1] };
            _mm512_add_epi64(_mm512_and_si512(self.0[i], mask), incoming)
        }))
    }

    /// The unique representative of each lane: limbs below 2^51, value below p.
    #[inline]
    #[target_feature(enable = "avx512f,avx512dq,avx512ifma")]
    pub(crate) fn canonical(self) -> Self {
        let mask = _mm512_set1_epi64(LOW_51_BITS as i64);
        let nineteen = _mm512_set1_epi64(19);
        let mut r = self.0;
        // A sequential carry chain, limb 0 to limb 4 and around to limb 1: limbs below 2^51
        // but limb 1 (at most 2^51), so the value is below 2^255 + 2^102 < 2p.
        let propagate = |r: &mut [__m512i; 5], from: usize| {
            let carry = _mm512_srli_epi64::<51>(r[from]);
            r[from] = _mm512_and_si512(r[from], mask);
            if from == 4 {
                r[0] = _mm512_add_epi64(r[0], _mm512_mullo_epi64(carry, nineteen));
            } else {
                r[from + 1] = _mm512_add_epi64(r[from + 1], carry);
            }
        };
        for from in [0, 1, 2, 3, 4, 0] {
            propagate(&mut r, from);
        }
        // q = 1 exactly when the value is at least p, that is when value + 19 reaches 2^255.
        let mut q = _mm512_srli_epi64::<51>(_mm512_add_epi64(r[0], nineteen));
        for limb in &r[1..] {
            q = _mm512_srli_epi64::<51>(_mm512_add_epi64(*limb, q));
        }
        // Subtract q·p: add 19q and drop bit 255.
        r[0] = _mm512_add_epi64(r[0], _mm512_mullo_epi64(q, nineteen));
        for from in 0..4 {
            let carry = _mm512_srli_epi64::<51>(r[from]);
            r[from] = _mm512_and_si512(r[from], mask);
            r[from + 1] = _mm512_add_epi64(r[from + 1], carry);
        }
        r[4] = _mm512_and_si512(r[4], mask);
        Self(r)
    }

    /// The lanes that are zero.
    #[inline]
    #[target_feature(enable = "avx512f,avx512dq,avx512ifma")]
    pub(crate) fn is_zero(self) -> __mmask8 {
        let r = self.canonical().0;
        let any = r[1..]
            .iter()
            .fold(r[0], |acc, limb| _mm512_or_si512(acc, *limb));
        _mm512_cmpeq_epi64_mask(any, _mm512_setzero_si512())
    }

    /// The lanes where `self == rhs`.
    #[inline]
    #[target_feature(enable = "avx512f,avx512dq,avx512ifma")]
    pub(crate) fn equals(self, rhs: Self) -> __mmask8 {
        self.sub(rhs).is_zero()
    }

    /// The lanes that are negative in the sense of RFC 9496: odd as canonical integers.
    #[inline]
    #[target_feature(enable = "avx512f,avx512dq,avx512ifma")]
    pub(crate) fn is_negative(self) -> __mmask8 {
        _mm512_test_epi64_mask(self.canonical().0[0], _mm512_set1_epi64(1))
    }

    /// Lane by lane, `if_set` where `mask` is set and `otherwise` elsewhere.
    #[inline]
    #[target_feature(enable = "avx512f,avx512dq,avx512ifma")]
    pub(crate) fn select(mask: __mmask8, if_set: Self, otherwise: Self) -> Self {
        Self(std::array::from_fn(|i| {
            _mm512_mask_blend_epi64(mask, otherwise.0[i], if_set.0[i])
        }))
    }

    /// `-self` in the lanes of `mask`, `self` elsewhere.
    #[inline]
    #[target_feature(enable = "avx512f,avx512dq,avx512ifma")]
    pub(crate) fn negate_where(self, mask: __mmask8) -> Self {
        Self::select(mask, self.neg(), self)
    }

    /// The non-negative one of `±self` (RFC 9496 `CT_ABS`).
    #[inline]
    #[target_feature(enable = "avx512f,avx512dq,avx512ifma")]
    pub(crate) fn abs(self) -> Self {
        self.negate_where(self.is_negative())
    }

    /// `self^((p - 5) / 8) = self^(2^252 - 3)`, by the usual chain of 250 squarings.
    #[inline]
    #[target_feature(enable = "avx512f,avx512dq,avx512ifma")]
    fn pow_p58(self) -> Self {
        let z2 = self.square();
        let z9 = z2.square_times(2).mul(self);
        let z11 = z9.mul(z2);
        let z_5_0 = z11.square().mul(z9); // 2^5 - 1
        let z_10_0 = z_5_0.square_times(5).mul(z_5_0);
        let z_20_0 = z_10_0.square_times(10).mul(z_10_0);
        let z_40_0 = z_20_0.square_times(20).mul(z_20_0);
        let z_50_0 = z_40_0.square_times(10).mul(z_10_0);
        let z_100_0 = z_50_0.square_times(50).mul(z_50_0);
        let z_200_0 = z_100_0.square_times(100).mul(z_100_0);
        let z_250_0 = z_200_0.square_times(50).mul(z_50_0);
        z_250_0.square_times(2).mul(self)
    }

    /// RFC 9496 `SQRT_RATIO_M1(u, v)`: the lanes where `u / v` is a square, and the
    /// non-negative square root of `u / v` there (of `SQRT_M1 · u / v` elsewhere; zero where
    /// `v` is zero).
    #[inline]
    #[target_feature(enable = "avx512f,avx512dq,avx512ifma")]
    pub(crate) fn sqrt_ratio_m1(u: Self, v: Self) -> (__mmask8, Self) {
        let sqrt_m1 = Self::splat(super::constants::SQRT_M1);
        let v3 = v.square().mul(v);
        let v7 = v3.square().mul(v);
        let r = u.mul(v3).mul(u.mul(v7).pow_p58());
        let check = v.mul(r.square());
        let minus_u = u.neg();
        let correct_sign = check.equals(u);
        let flipped_sign = check.equals(minus_u);
        let flipped_sign_i = check.equals(minus_u.mul(sqrt_m1));
        let r = Self::select(flipped_sign | flipped_sign_i, r.mul(sqrt_m1), r);
        (correct_sign | flipped_sign, r.abs())
    }
}

/// One register from eight lanes.
#[inline]
#[target_feature(enable = "avx512f")]
fn load(lanes: &[u64; 8]) -> __m512i {
    // SAFETY: `lanes` is 64 readable bytes, and the load has no alignment requirement.
    unsafe { _mm512_loadu_si512(lanes.as_ptr().cast()) }
}

/// The eight lanes of a register.
#[inline]
#[target_feature(enable = "avx512f")]
fn store(register: __m512i) -> [u64; 8] {
    let mut lanes = [0u64; 8];
    // SAFETY: `lanes` is 64 writable bytes, and the store has no alignment requirement.
    unsafe { _mm512_storeu_si512(lanes.as_mut_ptr().cast(), register) };
    lanes
}

/// The limbs of the 255-bit integer in `bytes` (little-endian; bit 255 is ignored, and the
/// value may be p or above: it is then an unreduced representative).
pub(crate) fn limbs_from_bytes(bytes: &[u8; 32]) -> Limbs {
    let word = |i: usize| u64::from_le_bytes(bytes[8 * i..8 * i + 8].try_into().expect("8 bytes"));
    let (w0, w1, w2, w3) = (word(0), word(1), word(2), word(3));
    [
        w0 & LOW_51_BITS,
        ((w0 >> 51) | (w1 << 13)) & LOW_51_BITS,
        ((w1 >> 38) | (w2 << 26)) & LOW_51_BITS,
        ((w2 >> 25) | (w3 << 39)) & LOW_51_BITS,
        (w3 >> 12) & LOW_51_BITS,
    ]
}

/// The 32-byte little-endian encoding of canonical limbs (each below 2^51).
pub(crate) fn bytes_from_limbs(limbs: &Limbs) -> [u8; 32] {
    let [l0, l1, l2, l3, l4] = *limbs;
    let words = [
        l0 | (l1 << 51),
        (l1 >> 13) | (l2 << 38),
        (l2 >> 26) | (l3 << 25),
        (l3 >> 39) | (l4 << 12),
    ];
    let mut bytes = [0u8; 32];
    for (chunk, word) in bytes.chunks_exact_mut(8).zip(words) {
        chunk.copy_from_slice(&word.to_le_bytes());
    }
    bytes
}

/// Whether `bytes` is the canonical encoding of a field element: below p (so bit 255 clear).
pub(crate) fn is_canonical(bytes: &[u8; 32]) -> bool {
    // p = 2^255 - 19 is 0xed, then thirty 0xff, then 0x7f (little-endian).
    let mut p = [0xffu8; 32];
    p[0] = 0xed;
    p[31] = 0x7f;
    // Compare as big-endian integers: the first differing byte from the top decides.
    bytes.iter().rev().lt(p.iter().rev())
}
