//! Ring-LWE arithmetic: polynomials of `Z_q[x]/(x^n + 1)` for `q` the product of two NTT-friendly
//! primes below 2^30 (YPIR's pair, `268369921 · 249561089 ≈ 2^55.9`, at degree 2048), held as
//! their two residues (RNS), in coefficient form or in evaluation (NTT) form.
//!
//! - [`Ring`]: the degree, the primes, their transform tables; conversions between the forms
//!   and to and from integers modulo `q`, and the ring operations;
//! - [`Automorphism`]: `x ↦ x^k` for odd `k`, in either form;
//! - [`Gadget`]: decomposition into signed base-`2^b` digits;
//! - [`Ciphertext`] and [`KeySwitchKey`]: RLWE ciphertexts and key switching;
//! - [`pack`]: LWE ciphertexts packed into one RLWE ciphertext with [`PackingKeys`];
//! - [`Ring::switch_modulus`]: rounding a polynomial modulo `q` to a smaller modulus;
//! - [`words`]: matrices of 16-bit words times vectors modulo `q`.
//!
//! The transforms are [`crate::ntt`]'s (merged-twist Cooley–Tukey and Gentleman–Sande with
//! Shoup's products), compiled for each [`Backend`](crate::backend::Backend).

mod automorphism;
mod gadget;
mod keyswitch;
mod packing;
mod poly;
mod wide;
pub mod words;

use std::sync::{Arc, OnceLock};

pub use automorphism::Automorphism;
pub use gadget::Gadget;
pub use keyswitch::{Ciphertext, KeySwitchKey};
pub use packing::{lwe_to_rlwe, pack, packing_factor, PackingKeys, PackingPlan};
pub use poly::{Coefficients, Evaluations, Form, Poly};

use crate::ntt::{is_prime, mul_shoup, pow_mod, shoup, PrimeTables};

/// YPIR's ring degree.
pub const YPIR_DEGREE: usize = 2048;

/// YPIR's two NTT primes: `2^28 − 2^16 + 1` and `2^21 · 119 + 1`, both ≡ 1 modulo `2 · 2^15`.
pub const YPIR_MODULI: [u32; 2] = [268_369_921, 249_561_089];

/// The largest ring degree a [`Ring`] takes.
pub const MAX_RING_DEGREE: usize = 1 << 15;

/// Why a ring cannot be made.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum RingError {
    /// The degree is not a power of two from 2 to [`MAX_RING_DEGREE`].
    #[error("ring degree {0} is not a power of two from 2 to {MAX_RING_DEGREE}")]
    Degree(usize),
    /// A modulus is not a prime below 2^30 that is 1 modulo twice the degree, or the two are
    /// equal.
    #[error("modulus {0} is not a distinct prime below 2^30 that is 1 modulo 2n")]
    Modulus(u32),
}

/// The ring `Z_q[x]/(x^n + 1)` with `q = p0 · p1`.
#[derive(Clone, Debug)]
pub struct Ring {
    n: usize,
    moduli: [u32; 2],
    tables: [PrimeTables; 2],
    /// `p0^{-1} mod p1` with its Shoup quotient, for the CRT.
    p0_inverse: (u32, u32),
    /// For each prime `p < 2^b`: `b` and `floor(2^(2b) / p)`, for [`Ring::multiply_mod`].
    barrett: [(u32, u64); 2],
}

impl Ring {
    /// The ring of degree `n` over the primes `moduli`.
    pub fn new(n: usize, moduli: [u32; 2]) -> Result<Self, RingError> {
        if !n.is_power_of_two() || !(2..=MAX_RING_DEGREE).contains(&n) {
            return Err(RingError::Degree(n));
        }
        for (i, &p) in moduli.iter().enumerate() {
            let fits = p < 1 << 30 && is_prime(p) && (p - 1) % (2 * n as u32) == 0;
            if !fits || moduli[1 - i] == p {
                return Err(RingError::Modulus(p));
            }
        }
        let [p0, p1] = moduli.map(u64::from);
        let inverse = pow_mod(p0 % p1, p1 - 2, p1) as u32;
        Ok(Self {
            n,
            moduli,
            tables: moduli.map(|p| PrimeTables::new(p, n)),
            p0_inverse: (inverse, shoup(inverse, moduli[1])),
            barrett: moduli.map(|p| {
                let bits = u32::BITS - p.leading_zeros();
                (bits, (1u64 << (2 * bits)) / u64::from(p))
            }),
        })
    }

    /// YPIR's ring ([`YPIR_DEGREE`], [`YPIR_MODULI`]), made once per process.
    pub fn ypir() -> Arc<Ring> {
        static RING: OnceLock<Arc<Ring>> = OnceLock::new();
        Arc::clone(RING.get_or_init(|| {
            Arc::new(Ring::new(YPIR_DEGREE, YPIR_MODULI).expect("YPIR's ring is valid"))
        }))
    }

    /// The degree `n`.
    pub fn degree(&self) -> usize {
        self.n
    }

    /// The two primes.
    pub fn moduli(&self) -> [u32; 2] {
        self.moduli
    }

    /// `q`, the product of the primes.
    pub fn modulus(&self) -> u64 {
        u64::from(self.moduli[0]) * u64::from(self.moduli[1])
    }

    /// The residues of `x mod q` modulo each prime.
    fn residues(&self, x: u64) -> [u32; 2] {
        self.moduli.map(|p| (x % u64::from(p)) as u32)
    }

    /// The residues of a signed integer modulo each prime.
    fn signed_residues(&self, x: i64) -> [u32; 2] {
        self.moduli.map(|p| x.rem_euclid(i64::from(p)) as u32)
    }

    /// The integer in `[0, q)` with residues `r0 < p0`, `r1 < p1` (Garner).
    #[inline(always)]
    pub fn combine(&self, r0: u32, r1: u32) -> u64 {
        let [p0, p1] = self.moduli;
        let r0_mod_p1 = if r0 >= p1 { r0 - p1 } else { r0 };
        let difference = crate::ntt::sub_mod(r1, r0_mod_p1, p1);
        let v = mul_shoup(difference, self.p0_inverse.0, self.p0_inverse.1, p1);
        u64::from(r0) + u64::from(p0) * u64::from(v)
    }

    /// The polynomial with coefficients `values` (each taken modulo `q`).
    ///
    /// # Panics
    /// If `values` does not hold `n` coefficients.
    pub fn from_values(&self, values: &[u64]) -> Poly<Coefficients> {
        self.poly_with(values, |x| self.residues(x))
    }

    /// The polynomial with the small signed coefficients `values` (errors, secrets, digits).
    ///
    /// # Panics
    /// If `values` does not hold `n` coefficients.
    pub fn from_signed(&self, values: &[i64]) -> Poly<Coefficients> {
        self.poly_with(values, |x| self.signed_residues(x))
    }

    /// The polynomial whose coefficient `i` has the residues `residues(values[i])`.
    fn poly_with<T: Copy>(
        &self,
        values: &[T],
        residues: impl Fn(T) -> [u32; 2],
    ) -> Poly<Coefficients> {
        assert_eq!(values.len(), self.n, "a polynomial has n coefficients");
        let mut poly = Poly::zero(self.n);
        for (i, &x) in values.iter().enumerate() {
            let [r0, r1] = residues(x);
            poly.data[i] = r0;
            poly.data[self.n + i] = r1;
        }
        poly
    }

    /// The coefficients of `poly` in `[0, q)`.
    pub fn values(&self, poly: &Poly<Coefficients>) -> Vec<u64> {
        let (r0, r1) = poly.data.split_at(self.n);
        r0.iter()
            .zip(r1)
            .map(|(&a, &b)| self.combine(a, b))
            .collect()
    }

    /// The coefficients of `poly` as integers in `(−q/2, q/2]`.
    pub fn centered(&self, poly: &Poly<Coefficients>) -> Vec<i64> {
        let q = self.modulus();
        self.values(poly)
            .into_iter()
            .map(|x| {
                if x > q / 2 {
                    x as i64 - q as i64
                } else {
                    x as i64
                }
            })
            .collect()
    }

    /// The evaluation form of `poly`.
    pub fn forward(&self, poly: &Poly<Coefficients>) -> Poly<Evaluations> {
        let mut data = poly.data.clone();
        wide::forward(self, &mut data);
        Poly::from_data(data)
    }

    /// The coefficient form of `poly`.
    pub fn inverse(&self, poly: &Poly<Evaluations>) -> Poly<Coefficients> {
        let mut data = poly.data.clone();
        wide::inverse(self, &mut data);
        Poly::from_data(data)
    }

    /// `a += b`, in either form.
    pub fn add_assign<F: Form>(&self, a: &mut Poly<F>, b: &Poly<F>) {
        self.zip_residues(&mut a.data, &b.data, crate::ntt::add_mod);
    }

    /// `a −= b`, in either form.
    pub fn sub_assign<F: Form>(&self, a: &mut Poly<F>, b: &Poly<F>) {
        self.zip_residues(&mut a.data, &b.data, crate::ntt::sub_mod);
    }

    /// `c · a` for an integer `c` (taken modulo `q`), in either form.
    pub fn scale<F: Form>(&self, a: &Poly<F>, c: u64) -> Poly<F> {
        let mut scaled = a.clone();
        for (residues, (p, c)) in scaled
            .data
            .chunks_exact_mut(self.n)
            .zip(self.moduli.iter().zip(self.residues(c)))
        {
            let c_shoup = shoup(c, *p);
            for x in residues {
                *x = mul_shoup(*x, c, c_shoup, *p);
            }
        }
        scaled
    }

    /// The product `a · b` of two polynomials in evaluation form.
    pub fn multiply(&self, a: &Poly<Evaluations>, b: &Poly<Evaluations>) -> Poly<Evaluations> {
        let mut product = Poly::zero(self.n);
        self.multiply_add(&mut product, a, b);
        product
    }

    /// `acc += a · b` in evaluation form.
    pub fn multiply_add(
        &self,
        acc: &mut Poly<Evaluations>,
        a: &Poly<Evaluations>,
        b: &Poly<Evaluations>,
    ) {
        assert!(
            [a.data.len(), b.data.len(), acc.data.len()] == [2 * self.n; 3],
            "polynomials of this ring"
        );
        wide::multiply_add(self, &mut acc.data, &a.data, &b.data);
    }

    /// `a · x^k` for `k` in `[0, 2n)` (`x^n = −1`), in coefficient form.
    pub fn multiply_monomial(&self, a: &Poly<Coefficients>, k: usize) -> Poly<Coefficients> {
        let n = self.n;
        let k = k % (2 * n);
        let mut out = Poly::zero(n);
        for (p, (from, to)) in self
            .moduli
            .iter()
            .zip(a.data.chunks_exact(n).zip(out.data.chunks_exact_mut(n)))
        {
            for (i, &x) in from.iter().enumerate() {
                let j = i + k;
                // x^j = −x^(j−n) for n ≤ j < 2n, and x^j = x^(j−2n) past that.
                let (index, negate) = match j / n {
                    0 => (j, false),
                    1 => (j - n, true),
                    _ => (j - 2 * n, false),
                };
                to[index] = if negate && x != 0 { p - x } else { x };
            }
        }
        out
    }

    /// `a ⊙= b` residue by residue with `op(x, y, p)`.
    fn zip_residues(&self, a: &mut [u32], b: &[u32], op: impl Fn(u32, u32, u32) -> u32) {
        assert!(
            a.len() == 2 * self.n && b.len() == 2 * self.n,
            "polynomials of this ring"
        );
        for ((a, b), &p) in a
            .chunks_exact_mut(self.n)
            .zip(b.chunks_exact(self.n))
            .zip(&self.moduli)
        {
            for (x, &y) in a.iter_mut().zip(b) {
                *x = op(*x, y, p);
            }
        }
    }

    /// `a · b mod p_k` for residues `a, b < p_k`, by Barrett reduction: for `p < 2^b` and
    /// `m = floor(2^(2b) / p) ≤ 2^(b+1)`, the estimate `((a·b >> (b−2)) · m) >> (b+2)` of the
    /// quotient (every product below 2^63 for `b ≤ 30`) falls short of `floor(a·b / p)` by at
    /// most 2 (1/2 from the first shift, under 1 from `m`'s floor, under 1 from the last
    /// shift), so the remainder is below `3p < 2^32` and two conditional subtractions finish
    /// it. The loops around it vectorize.
    #[inline(always)]
    pub(super) fn multiply_mod(&self, k: usize, a: u32, b: u32) -> u32 {
        let p = self.moduli[k];
        let (bits, m) = self.barrett[k];
        let x = u64::from(a) * u64::from(b);
        // Both factors of the estimate fit 32 bits (x >> (b − 2) < 2^(b+2), m ≤ 2^(b+1)), and the
        // remainder is below 2^32, so the products run on 32-bit lanes.
        let quotient = (u64::from((x >> (bits - 2)) as u32) * (m as u32 as u64)) >> (bits + 2);
        let r = (x as u32).wrapping_sub((quotient as u32).wrapping_mul(p));
        let r = r.min(r.wrapping_sub(2 * p));
        r.min(r.wrapping_sub(p))
    }

    /// How many products of residues modulo `p_k` [`Ring::reduce_sum`] takes at once:
    /// `2^(30 − b)` for `p_k < 2^b` (4 for YPIR's 28-bit primes, 1 for 30-bit ones).
    pub(super) fn sum_terms(&self, k: usize) -> usize {
        1 << (30 - self.barrett[k].0)
    }

    /// `x mod p_k` for a sum of at most [`Ring::sum_terms`] products of residues
    /// (`x < 2^(30−b) · 2^(2b) = 2^(b+30)`), by the Barrett estimate of
    /// [`Ring::multiply_mod`]: its first shift leaves at most 32 bits, and it falls short of
    /// the quotient by less than `1.5 + 2^(30−b)` ≤ 5.5, so three conditional subtractions (of
    /// `4p`, `2p`, `p`) finish it.
    #[inline(always)]
    pub(super) fn reduce_sum(&self, k: usize, x: u64) -> u32 {
        let p = self.moduli[k];
        let (bits, m) = self.barrett[k];
        let quotient = (u64::from((x >> (bits - 2)) as u32) * (m as u32 as u64)) >> (bits + 2);
        let r = (x as u32).wrapping_sub((quotient as u32).wrapping_mul(p));
        let r = r.min(r.wrapping_sub(4 * p));
        let r = r.min(r.wrapping_sub(2 * p));
        r.min(r.wrapping_sub(p))
    }

    /// The transform tables of prime `k`.
    fn table(&self, k: usize) -> &PrimeTables {
        &self.tables[k]
    }

    /// Each coefficient `x` of `a` (in `[0, q)`) rounded to `round(x · to / q) mod to`: the
    /// polynomial modulo `to` whose phase, for a ciphertext, is the original one scaled by
    /// `to / q` plus a rounding error of at most 1/2 per coefficient.
    ///
    /// # Panics
    /// If `to` is zero or above `q`.
    pub fn switch_modulus(&self, a: &Poly<Coefficients>, to: u64) -> Vec<u64> {
        let q = self.modulus();
        assert!(to > 0 && to <= q, "switching to a smaller modulus");
        self.values(a)
            .into_iter()
            .map(|x| {
                let scaled = (u128::from(x) * u128::from(to) + u128::from(q / 2)) / u128::from(q);
                (scaled % u128::from(to)) as u64
            })
            .collect()
    }
}

#[cfg(test)]
mod tests;
