//! Eight edwards25519 points at once, in extended coordinates, and their multiplication by one
//! shared secret scalar.
//!
//! Formulas are RFC 8032 §5.1.4's for `a = -1`: a doubling costs four squarings and four
//! products (three when the next step is another doubling, which never reads `T`), an
//! addition of a point in cached form costs eight products.

use std::arch::x86_64::*;

use super::constants::EDWARDS_D2;
use super::field::Fe8;
use crate::multibuffer::digits::{Digits, DIGITS};

/// Eight points `(X : Y : Z : T)` with `x = X/Z`, `y = Y/Z`, `xy = T/Z`.
#[derive(Clone, Copy)]
pub(crate) struct Point8 {
    pub(crate) x: Fe8,
    pub(crate) y: Fe8,
    pub(crate) z: Fe8,
    pub(crate) t: Fe8,
}

/// Eight points prepared as the right-hand side of an addition:
/// `(Y + X, Y - X, 2Z, 2d·T)`.
#[derive(Clone, Copy)]
pub(crate) struct Cached8 {
    y_plus_x: Fe8,
    y_minus_x: Fe8,
    z2: Fe8,
    t2d: Fe8,
}

impl Point8 {
    /// `self + other`.
    #[inline]
    #[target_feature(enable = "avx512f,avx512dq,avx512ifma")]
    pub(crate) fn add(&self, other: &Cached8) -> Self {
        let a = self.y.sub(self.x).mul(other.y_minus_x);
        let b = self.y.add(self.x).mul(other.y_plus_x);
        let c = self.t.mul(other.t2d);
        let d = self.z.mul(other.z2);
        let (e, f, g, h) = (b.sub(a), d.sub(c), d.add(c), b.add(a));
        Self::from_terms(e, f, g, h)
    }

    /// `2^n · self` for `n ≥ 1`.
    #[inline]
    #[target_feature(enable = "avx512f,avx512dq,avx512ifma")]
    pub(crate) fn double_times(&self, n: u32) -> Self {
        let mut point = *self;
        for _ in 1..n {
            let (e, f, g, h) = point.doubling_terms();
            // T is not read by the next doubling.
            point = Self {
                x: e.mul(f),
                y: g.mul(h),
                z: f.mul(g),
                t: point.t,
            };
        }
        let (e, f, g, h) = point.doubling_terms();
        Self::from_terms(e, f, g, h)
    }

    /// The point `(EF : GH : FG : EH)` that both formulas end with.
    #[inline]
    #[target_feature(enable = "avx512f,avx512dq,avx512ifma")]
    fn from_terms(e: Fe8, f: Fe8, g: Fe8, h: Fe8) -> Self {
        Self {
            x: e.mul(f),
            y: g.mul(h),
            z: f.mul(g),
            t: e.mul(h),
        }
    }

    /// The terms `E, F, G, H` of a doubling, from which `2P = (EF : GH : FG : EH)`.
    #[inline]
    #[target_feature(enable = "avx512f,avx512dq,avx512ifma")]
    fn doubling_terms(&self) -> (Fe8, Fe8, Fe8, Fe8) {
        let a = self.x.square();
        let b = self.y.square();
        let c = self.z.square();
        let c = c.add(c);
        let h = a.add(b);
        let e = h.sub(self.x.add(self.y).square());
        let g = a.sub(b);
        let f = c.add(g);
        (e, f, g, h)
    }

    /// The cached form of `self`.
    #[inline]
    #[target_feature(enable = "avx512f,avx512dq,avx512ifma")]
    pub(crate) fn to_cached(self) -> Cached8 {
        Cached8 {
            y_plus_x: self.y.add(self.x),
            y_minus_x: self.y.sub(self.x),
            z2: self.z.add(self.z),
            t2d: self.t.mul(Fe8::splat(EDWARDS_D2)),
        }
    }

    /// `s · self` in every lane, for the scalar `s` of `digits`: four doublings and one addition
    /// per digit, with table entries read in constant time.
    #[inline]
    #[target_feature(enable = "avx512f,avx512dq,avx512ifma")]
    pub(crate) fn mul(&self, digits: &Digits) -> Self {
        let table = Table::new(self);
        let mut point = Self::identity().add(&table.select(digits.0[DIGITS - 1]));
        for &digit in digits.0[..DIGITS - 1].iter().rev() {
            point = point.double_times(4).add(&table.select(digit));
        }
        point
    }

    /// The neutral element `(0 : 1 : 1 : 0)`.
    #[inline]
    #[target_feature(enable = "avx512f,avx512dq,avx512ifma")]
    fn identity() -> Self {
        Self {
            x: Fe8::zero(),
            y: Fe8::one(),
            z: Fe8::one(),
            t: Fe8::zero(),
        }
    }
}

impl Cached8 {
    /// The neutral element in cached form, `(1, 1, 2, 0)`.
    #[inline]
    #[target_feature(enable = "avx512f,avx512dq,avx512ifma")]
    fn identity() -> Self {
        Self {
            y_plus_x: Fe8::one(),
            y_minus_x: Fe8::one(),
            z2: Fe8::one().add(Fe8::one()),
            t2d: Fe8::zero(),
        }
    }

    /// In every lane, `entry` where `mask` is set and `self` elsewhere.
    #[inline]
    #[target_feature(enable = "avx512f,avx512dq,avx512ifma")]
    fn replaced_where(self, mask: __mmask8, entry: &Self) -> Self {
        Self {
            y_plus_x: Fe8::select(mask, entry.y_plus_x, self.y_plus_x),
            y_minus_x: Fe8::select(mask, entry.y_minus_x, self.y_minus_x),
            z2: Fe8::select(mask, entry.z2, self.z2),
            t2d: Fe8::select(mask, entry.t2d, self.t2d),
        }
    }

    /// `-self` where `mask` is set: `Y + X` and `Y - X` swap, `2d·T` changes sign.
    #[inline]
    #[target_feature(enable = "avx512f,avx512dq,avx512ifma")]
    fn negated_where(self, mask: __mmask8) -> Self {
        Self {
            y_plus_x: Fe8::select(mask, self.y_minus_x, self.y_plus_x),
            y_minus_x: Fe8::select(mask, self.y_plus_x, self.y_minus_x),
            z2: self.z2,
            t2d: self.t2d.negate_where(mask),
        }
    }
}

/// The cached multiples `1P, ..., 8P` of eight points.
struct Table([Cached8; 8]);

impl Table {
    /// The table of `point`: one doubling and six additions.
    #[inline]
    #[target_feature(enable = "avx512f,avx512dq,avx512ifma")]
    fn new(point: &Point8) -> Self {
        let first = point.to_cached();
        let mut entries = [first; 8];
        let mut multiple = point.double_times(1);
        entries[1] = multiple.to_cached();
        for entry in &mut entries[2..] {
            multiple = multiple.add(&first);
            *entry = multiple.to_cached();
        }
        Self(entries)
    }

    /// `digit · P` in cached form for a digit in `[-8, 8]`, the same in all lanes. Every entry
    /// is read and the choice made with masks, so neither the memory accesses nor the branches
    /// depend on the secret digit.
    #[inline]
    #[target_feature(enable = "avx512f,avx512dq,avx512ifma")]
    fn select(&self, digit: i8) -> Cached8 {
        let negative = (digit >> 7) as u8; // 0xff when negative, else 0
        let magnitude = (digit as u8 ^ negative).wrapping_sub(negative);
        let mut chosen = Cached8::identity();
        for (j, entry) in (1u8..).zip(&self.0) {
            // All ones exactly when magnitude == j: (x ^ j) - 1 borrows only from zero.
            let equal = (((magnitude ^ j) as u16).wrapping_sub(1) >> 8) as u8;
            chosen = chosen.replaced_where(equal, entry);
        }
        chosen.negated_where(negative)
    }
}
