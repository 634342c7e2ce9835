//! Gadget decomposition: a polynomial modulo `q` as `ℓ` polynomials of small signed digits.

use super::{Coefficients, Poly, Ring};

/// The gadget `g = (1, B, B^2, …, B^(ℓ−1))` with `B = 2^b`. A polynomial `a` modulo `q`
/// decomposes into `d_0 … d_(ℓ−1)` with `Σ B^j · d_j = a` and every coefficient of every `d_j`
/// in `[−B/2, B/2)`: each centered coefficient `x` (`|x| ≤ q/2`) gives its balanced digits one
/// at a time (`d = x mods B`, `x ← (x − d) / B`), and `|x|` after `j` digits is at most
/// `q / (2·B^j) + 1/2 + 1/(2B) + … < q / (2·B^j) + B / (2(B − 1))`: for `B ≥ 4` and
/// `B^ℓ ≥ 2q` that is below `1/4 + 2/3`, so nothing is left after `ℓ` digits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Gadget {
    base_bits: u32,
    digits: usize,
}

impl Gadget {
    /// The gadget of base `2^base_bits` and `digits` digits for `ring`; `None` unless
    /// `2 ≤ base_bits ≤ 30` and `2^(base_bits · digits) ≥ 2q` (the decomposition is exact).
    pub fn new(ring: &Ring, base_bits: u32, digits: usize) -> Option<Self> {
        let total = u64::from(base_bits).checked_mul(digits as u64)?;
        let covers = total >= 64 || 1u64 << total >= 2 * ring.modulus();
        ((2..=30).contains(&base_bits) && covers).then_some(Self { base_bits, digits })
    }

    /// The smallest exact gadget of base `2^base_bits` for `ring`.
    pub fn covering(ring: &Ring, base_bits: u32) -> Option<Self> {
        (1..=64).find_map(|digits| Self::new(ring, base_bits, digits))
    }

    /// `b`, the bits of the base.
    pub fn base_bits(&self) -> u32 {
        self.base_bits
    }

    /// `ℓ`, the number of digits.
    pub fn digits(&self) -> usize {
        self.digits
    }

    /// `B^j mod q`, the `j`-th entry of the gadget vector.
    pub fn power(&self, ring: &Ring, j: usize) -> u64 {
        let q = u128::from(ring.modulus());
        let mut power = 1u128;
        for _ in 0..j {
            power = (power << self.base_bits) % q;
        }
        power as u64
    }

    /// The balanced digits of the centered integer `x`, least significant first.
    fn digits_of(&self, mut x: i64, out: &mut [i64]) {
        let base = 1i64 << self.base_bits;
        let half = base / 2;
        for digit in out {
            // x mod B in [−B/2, B/2).
            let d = ((x + half) & (base - 1)) - half;
            *digit = d;
            x = (x - d) >> self.base_bits;
        }
    }

    /// The digit polynomials `d_0 … d_(ℓ−1)` of `a` (see [`Gadget`]).
    pub fn decompose(&self, ring: &Ring, a: &Poly<Coefficients>) -> Vec<Poly<Coefficients>> {
        let n = ring.degree();
        let mut digits = vec![vec![0i64; n]; self.digits];
        let mut one = vec![0i64; self.digits];
        for (i, x) in ring.centered(a).into_iter().enumerate() {
            self.digits_of(x, &mut one);
            for (digit, &d) in digits.iter_mut().zip(&one) {
                digit[i] = d;
            }
        }
        digits.iter().map(|d| ring.from_signed(d)).collect()
    }
}
