//! Negacyclic number-theoretic transforms, and products in Z_{2^32}\[x\]/(x^n + 1) through them.
//!
//! Z_{2^32} has no roots of unity to transform with, so a product of two polynomials modulo
//! `x^n + 1` and 2^32 is computed exactly over the integers: both factors are lifted to centered
//! representatives, multiplied modulo three 30-bit primes `p ≡ 1 (mod 2^13)` (each has the
//! primitive 2n-th roots of unity a negacyclic NTT needs, for n up to 4096), and the exact
//! coefficients (|c| ≤ n·2^62 < P/2, P ≈ 2^90) are rebuilt by CRT and reduced modulo 2^32.
//! The primes stay below 2^30 so that four times a prime fits a 32-bit lane: the vector
//! transforms keep values below `4p` and reduce only where a sum could pass it (Harvey's lazy
//! butterflies).
//!
//! The transforms are the merged-twist Cooley–Tukey (forward) and Gentleman–Sande (inverse)
//! butterflies with bit-reversed powers of ψ (a primitive 2n-th root), so no separate twisting
//! pass is needed; twiddles use Shoup's precomputed quotients.

use std::sync::{Arc, Mutex, PoisonError};

use crate::backend::Backend;

/// The three NTT primes: the largest below 2^30 that are ≡ 1 modulo 2^13.
pub const PRIMES: [u32; 3] = [1_073_692_673, 1_073_668_097, 1_073_651_713];

/// The largest supported ring degree.
pub const MAX_DEGREE: usize = 4096;

/// `(a · b) mod p` with `b_shoup = floor(b · 2^32 / p)`, for `a < 2^32`, `b < p < 2^31`.
#[inline(always)]
pub(crate) fn mul_shoup(a: u32, b: u32, b_shoup: u32, p: u32) -> u32 {
    let q = ((u64::from(a) * u64::from(b_shoup)) >> 32) as u32;
    let r = a.wrapping_mul(b).wrapping_sub(q.wrapping_mul(p));
    // r < 2p: subtract p if that does not wrap (branch-free, so loops vectorize).
    r.min(r.wrapping_sub(p))
}

/// `floor(b · 2^32 / p)`: the quotient [`mul_shoup`] multiplies by `b` with.
pub(crate) fn shoup(b: u32, p: u32) -> u32 {
    ((u64::from(b) << 32) / u64::from(p)) as u32
}

pub(crate) fn pow_mod(mut base: u64, mut exp: u64, p: u64) -> u64 {
    let mut result = 1;
    base %= p;
    while exp > 0 {
        if exp & 1 == 1 {
            result = result * base % p;
        }
        base = base * base % p;
        exp >>= 1;
    }
    result
}

/// Whether `p` is prime (trial division).
pub(crate) fn is_prime(p: u32) -> bool {
    p > 1
        && (2u64..)
            .take_while(|d| d * d <= u64::from(p))
            .all(|d| !u64::from(p).is_multiple_of(d))
}

/// Polynomials transformed side by side: one coefficient of each.
pub(crate) const LANES: usize = 16;

/// One coefficient of [`LANES`] polynomials.
pub(crate) type Lanes = [u32; LANES];

/// Twiddle tables for one prime and one degree.
#[derive(Clone, Debug)]
pub(crate) struct PrimeTables {
    p: u32,
    /// ψ^{bitrev(i)} and its Shoup quotient.
    psi: Vec<(u32, u32)>,
    /// ψ^{-bitrev(i)} and its Shoup quotient.
    psi_inv: Vec<(u32, u32)>,
    /// n^{-1} mod p and its Shoup quotient.
    n_inv: (u32, u32),
}

impl PrimeTables {
    pub(crate) fn new(p: u32, n: usize) -> Self {
        let p64 = u64::from(p);
        // A quadratic non-residue g gives ψ = g^((p-1)/2n) with ψ^n = g^((p-1)/2) = -1.
        let g = (2..p64)
            .find(|&g| pow_mod(g, (p64 - 1) / 2, p64) == p64 - 1)
            .expect("p is an odd prime");
        let psi = pow_mod(g, (p64 - 1) / (2 * n as u64), p64);
        let psi_inv = pow_mod(psi, p64 - 2, p64);
        let bits = n.trailing_zeros();
        // Powers in order, one product each, then placed at their bit-reversed index.
        let table = |root: u64| -> Vec<(u32, u32)> {
            let mut table = vec![(0, 0); n];
            let mut w = 1u64;
            for e in 0..n {
                let i = if bits == 0 {
                    0
                } else {
                    e.reverse_bits() >> (usize::BITS - bits)
                };
                table[i] = (w as u32, shoup(w as u32, p));
                w = w * root % p64;
            }
            table
        };
        let n_inv = pow_mod(n as u64, p64 - 2, p64) as u32;
        Self {
            p,
            psi: table(psi),
            psi_inv: table(psi_inv),
            n_inv: (n_inv, shoup(n_inv, p)),
        }
    }

    /// In place, natural order in, bit-reversed order out; values in `[0, p)`.
    ///
    /// The stages whose butterflies pair entries fewer than [`LANES`] apart run on
    /// [`LANES`] butterflies gathered from neighbouring blocks ([`Self::short_stage`]), so
    /// that every stage runs on vector lanes.
    #[inline(always)]
    pub(crate) fn forward(&self, a: &mut [u32]) {
        let p = self.p;
        let n = a.len();
        if n < 2 * LANES {
            return self.forward_stages(a, |x, y, w, w_shoup| cooley_tukey(x, y, w, w_shoup, p));
        }
        let butterfly = |x: &mut u32, y: &mut u32, w, w_shoup| cooley_tukey(x, y, w, w_shoup, p);
        let mut t = n;
        let mut m = 1;
        while t > LANES {
            t /= 2;
            for i in 0..m {
                let (w, w_shoup) = self.psi[m + i];
                let (lo, hi) = a[2 * i * t..2 * i * t + 2 * t].split_at_mut(t);
                for (lo, hi) in lo.chunks_exact_mut(LANES).zip(hi.chunks_exact_mut(LANES)) {
                    for (x, y) in lo.iter_mut().zip(hi.iter_mut()) {
                        butterfly(x, y, w, w_shoup);
                    }
                }
            }
            m *= 2;
        }
        self.short_stage::<8>(a, &self.psi, m, butterfly);
        self.short_stage::<4>(a, &self.psi, 2 * m, butterfly);
        self.short_stage::<2>(a, &self.psi, 4 * m, butterfly);
        self.short_stage::<1>(a, &self.psi, 8 * m, butterfly);
    }

    /// One stage whose blocks pair entries `T` apart (`T < LANES`): twiddle `table[m + g]` for
    /// block `g`, the butterflies of `LANES / T` neighbouring blocks gathered into lanes.
    #[inline(always)]
    fn short_stage<const T: usize>(
        &self,
        a: &mut [u32],
        table: &[(u32, u32)],
        m: usize,
        butterfly: impl Fn(&mut u32, &mut u32, u32, u32),
    ) {
        let blocks = LANES / T;
        for (chunk, base) in a.chunks_exact_mut(2 * LANES).zip((m..).step_by(blocks)) {
            let (mut x, mut y) = ([0u32; LANES], [0u32; LANES]);
            let (mut w, mut w_shoup) = ([0u32; LANES], [0u32; LANES]);
            for j in 0..LANES {
                let (g, o) = (j / T, j % T);
                x[j] = chunk[2 * T * g + o];
                y[j] = chunk[2 * T * g + T + o];
                (w[j], w_shoup[j]) = table[base + g];
            }
            for j in 0..LANES {
                butterfly(&mut x[j], &mut y[j], w[j], w_shoup[j]);
            }
            for j in 0..LANES {
                let (g, o) = (j / T, j % T);
                chunk[2 * T * g + o] = x[j];
                chunk[2 * T * g + T + o] = y[j];
            }
        }
    }

    /// [`forward`](Self::forward) of [`LANES`] polynomials at once, stored coefficient by
    /// coefficient: every butterfly is one vector operation, at every stage.
    #[inline(always)]
    pub(crate) fn forward_lanes(&self, a: &mut [Lanes]) {
        let p = self.p;
        self.forward_stages(a, |x, y, w, w_shoup| {
            for (x, y) in x.iter_mut().zip(y.iter_mut()) {
                cooley_tukey(x, y, w, w_shoup, p);
            }
        });
    }

    /// [`inverse`](Self::inverse) of [`LANES`] polynomials at once, stored as
    /// [`forward_lanes`](Self::forward_lanes) leaves them.
    #[inline(always)]
    pub(crate) fn inverse_lanes(&self, a: &mut [Lanes]) {
        let p = self.p;
        self.inverse_stages(a, |x, y, w, w_shoup| {
            for (x, y) in x.iter_mut().zip(y.iter_mut()) {
                gentleman_sande(x, y, w, w_shoup, p);
            }
        });
        let (s, s_shoup) = self.n_inv;
        for x in a.iter_mut().flatten() {
            *x = mul_shoup(*x, s, s_shoup, p);
        }
    }

    /// The stages of the forward transform over elements of any kind (one residue, or one of
    /// several polynomials side by side): `butterfly(x, y, w, w_shoup)` on every pair, with the
    /// stage's twiddle `ψ^bitrev(m+i)`.
    #[inline(always)]
    fn forward_stages<E>(&self, a: &mut [E], butterfly: impl Fn(&mut E, &mut E, u32, u32)) {
        let n = a.len();
        let mut t = n;
        let mut m = 1;
        while m < n {
            t /= 2;
            for i in 0..m {
                let (w, w_shoup) = self.psi[m + i];
                let (lo, hi) = a[2 * i * t..2 * i * t + 2 * t].split_at_mut(t);
                for (x, y) in lo.iter_mut().zip(hi.iter_mut()) {
                    butterfly(x, y, w, w_shoup);
                }
            }
            m *= 2;
        }
    }

    /// The stages of the inverse transform (without the 1/n scaling), as
    /// [`forward_stages`](Self::forward_stages) has them for the forward one.
    #[inline(always)]
    fn inverse_stages<E>(&self, a: &mut [E], butterfly: impl Fn(&mut E, &mut E, u32, u32)) {
        let n = a.len();
        let mut t = 1;
        let mut m = n;
        while m > 1 {
            let h = m / 2;
            for i in 0..h {
                let (w, w_shoup) = self.psi_inv[h + i];
                let (lo, hi) = a[2 * i * t..2 * i * t + 2 * t].split_at_mut(t);
                for (x, y) in lo.iter_mut().zip(hi.iter_mut()) {
                    butterfly(x, y, w, w_shoup);
                }
            }
            t *= 2;
            m = h;
        }
    }

    /// The prime.
    pub(crate) fn prime(&self) -> u32 {
        self.p
    }

    /// The twiddle `ψ^bitrev(i)` of the forward transform, with its Shoup quotient.
    #[cfg(target_arch = "x86_64")]
    pub(crate) fn forward_twiddle(&self, i: usize) -> (u32, u32) {
        self.psi[i]
    }

    /// The twiddle `ψ^-bitrev(i)` of the inverse transform, with its Shoup quotient.
    #[cfg(target_arch = "x86_64")]
    pub(crate) fn inverse_twiddle(&self, i: usize) -> (u32, u32) {
        self.psi_inv[i]
    }

    /// `n^{-1} mod p`, with its Shoup quotient.
    #[cfg(target_arch = "x86_64")]
    pub(crate) fn n_inverse(&self) -> (u32, u32) {
        self.n_inv
    }

    /// In place, bit-reversed order in, natural order out, including the 1/n scaling; the
    /// short stages as in [`Self::forward`].
    #[inline(always)]
    pub(crate) fn inverse(&self, a: &mut [u32]) {
        let p = self.p;
        let n = a.len();
        let butterfly = |x: &mut u32, y: &mut u32, w, w_shoup| gentleman_sande(x, y, w, w_shoup, p);
        if n < 2 * LANES {
            self.inverse_stages(a, butterfly);
        } else {
            self.short_stage::<1>(a, &self.psi_inv, n / 2, butterfly);
            self.short_stage::<2>(a, &self.psi_inv, n / 4, butterfly);
            self.short_stage::<4>(a, &self.psi_inv, n / 8, butterfly);
            self.short_stage::<8>(a, &self.psi_inv, n / 16, butterfly);
            let mut t = LANES;
            let mut m = n / LANES;
            while m > 1 {
                let h = m / 2;
                for i in 0..h {
                    let (w, w_shoup) = self.psi_inv[h + i];
                    let (lo, hi) = a[2 * i * t..2 * i * t + 2 * t].split_at_mut(t);
                    for (lo, hi) in lo.chunks_exact_mut(LANES).zip(hi.chunks_exact_mut(LANES)) {
                        for (x, y) in lo.iter_mut().zip(hi.iter_mut()) {
                            butterfly(x, y, w, w_shoup);
                        }
                    }
                }
                t *= 2;
                m = h;
            }
        }
        let (s, s_shoup) = self.n_inv;
        for x in a.iter_mut() {
            *x = mul_shoup(*x, s, s_shoup, p);
        }
    }

    /// The residue of the centered lift of `x ∈ Z_{2^32}` (read as `i32`). `|x| ≤ 2^31 < 4p`,
    /// so two conditional subtractions (of `2p`, then of `p`) reduce.
    #[inline(always)]
    pub(crate) fn lift(&self, x: u32) -> u32 {
        let p = self.p;
        let magnitude = (x as i32).unsigned_abs();
        let below_2p = magnitude.min(magnitude.wrapping_sub(2 * p));
        let reduced = below_2p.min(below_2p.wrapping_sub(p));
        if (x as i32) < 0 && reduced != 0 {
            p - reduced
        } else {
            reduced
        }
    }
}

/// Transforms for one ring degree over the three primes.
#[derive(Clone, Debug)]
pub struct NttPlan {
    n: usize,
    tables: [PrimeTables; 3],
    crt: CrtConstants,
}

impl NttPlan {
    /// The plan for degree `n`, a power of two from 2 to [`MAX_DEGREE`].
    pub fn new(n: usize) -> Option<Self> {
        if !Self::supports(n) {
            return None;
        }
        let [p0, p1, p2] = PRIMES.map(u64::from);
        let with_quotient = |x: u64, p: u64| (x as u32, shoup(x as u32, p as u32));
        let crt = CrtConstants {
            inv01: with_quotient(pow_mod(p0, p1 - 2, p1), p1),
            inv012: with_quotient(pow_mod(p0 * p1 % p2, p2 - 2, p2), p2),
            p0_mod_p2: with_quotient(p0 % p2, p2),
        };
        Some(Self {
            n,
            tables: PRIMES.map(|p| PrimeTables::new(p, n)),
            crt,
        })
    }

    /// Whether there is a plan for degree `n`: a power of two from 2 to [`MAX_DEGREE`].
    pub fn supports(n: usize) -> bool {
        n.is_power_of_two() && (2..=MAX_DEGREE).contains(&n)
    }

    /// The plan for degree `n` as [`new`](Self::new) makes it, shared by every caller in the
    /// process: the tables are made once per degree.
    pub fn shared(n: usize) -> Option<Arc<Self>> {
        /// The plans made so far, one per degree.
        static PLANS: Mutex<Vec<Arc<NttPlan>>> = Mutex::new(Vec::new());
        let mut plans = PLANS.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(plan) = plans.iter().find(|plan| plan.n == n) {
            return Some(Arc::clone(plan));
        }
        let plan = Arc::new(Self::new(n)?);
        plans.push(Arc::clone(&plan));
        Some(plan)
    }

    /// The ring degree.
    pub fn degree(&self) -> usize {
        self.n
    }

    /// The tables of prime `k` (of [`PRIMES`]).
    pub(crate) fn table(&self, k: usize) -> &PrimeTables {
        &self.tables[k]
    }

    /// The forward transforms of `a` (length n), to multiply it later by
    /// [`FixedMultiplier::multiply_transformed`] without transforming it again.
    pub fn forward(&self, a: &[u32]) -> Transformed {
        Transformed(wide::transform(Backend::selected(), self, a))
    }

    /// The three residue transforms of the centered lift of `a` (length n).
    #[inline(always)]
    fn transform(&self, a: &[u32]) -> [Vec<u32>; 3] {
        assert_eq!(a.len(), self.n, "polynomial degree");
        let mut out = [vec![0u32; self.n], vec![0u32; self.n], vec![0u32; self.n]];
        for (table, residues) in self.tables.iter().zip(out.iter_mut()) {
            for (r, &x) in residues.iter_mut().zip(a) {
                *r = table.lift(x);
            }
            table.forward(residues);
        }
        out
    }

    /// Rebuilds coefficients modulo 2^32 from the three inverse-transformed residues.
    #[inline(always)]
    fn reconstruct(&self, residues: &[Vec<u32>; 3], out: &mut [u32]) {
        for (i, o) in out.iter_mut().enumerate() {
            *o = self.crt_three(residues[0][i], residues[1][i], residues[2][i]);
        }
    }

    /// The integer of absolute value below `p0·p1·p2 / 2` with residues `r0, r1, r2`, modulo
    /// 2^32.
    #[inline(always)]
    pub(crate) fn crt_three(&self, r0: u32, r1: u32, r2: u32) -> u32 {
        let [p0, p1, p2] = PRIMES;
        let c = &self.crt;
        let big_p = u128::from(p0) * u128::from(p1) * u128::from(p2);
        let p01 = u64::from(p0) * u64::from(p1);
        // Garner: x = r0 + p0·v1 + p0·p1·v2 with v1 < p1, v2 < p2.
        let v1 = self.garner_v1(r0, r1);
        let r0_mod_p2 = if r0 >= p2 { r0 - p2 } else { r0 };
        let partial = add_mod(
            r0_mod_p2,
            mul_shoup(v1, c.p0_mod_p2.0, c.p0_mod_p2.1, p2),
            p2,
        );
        let v2 = mul_shoup(sub_mod(r2, partial, p2), c.inv012.0, c.inv012.1, p2);
        let x = u128::from(r0) + u128::from(p0) * u128::from(v1) + u128::from(p01) * u128::from(v2);
        // The centered value is x or x − P; modulo 2^32 that is a wrapping subtraction.
        if x > big_p / 2 {
            (x as u32).wrapping_sub(big_p as u32)
        } else {
            x as u32
        }
    }

    /// The integer of absolute value below `p0·p1 / 2` with residues `r0, r1` (modulo the
    /// first two primes), modulo 2^32.
    #[inline(always)]
    pub(crate) fn crt_two(&self, r0: u32, r1: u32) -> u32 {
        let [p0, _, _] = PRIMES;
        let p01 = u64::from(p0) * u64::from(PRIMES[1]);
        let x = u64::from(r0) + u64::from(p0) * u64::from(self.garner_v1(r0, r1));
        if x > p01 / 2 {
            (x as u32).wrapping_sub(p01 as u32)
        } else {
            x as u32
        }
    }

    /// Garner's second digit: `v1 = (r1 − r0)·p0^{-1} mod p1`, so `r0 + p0·v1` has residues
    /// `r0, r1`.
    #[inline(always)]
    fn garner_v1(&self, r0: u32, r1: u32) -> u32 {
        let p1 = PRIMES[1];
        let c = &self.crt;
        let r0_mod_p1 = if r0 >= p1 { r0 - p1 } else { r0 };
        mul_shoup(sub_mod(r1, r0_mod_p1, p1), c.inv01.0, c.inv01.1, p1)
    }
}

/// The Cooley–Tukey butterfly: `(x, y) ← (x + w·y, x − w·y) mod p`.
#[inline(always)]
fn cooley_tukey(x: &mut u32, y: &mut u32, w: u32, w_shoup: u32, p: u32) {
    let u = *x;
    let v = mul_shoup(*y, w, w_shoup, p);
    *x = add_mod(u, v, p);
    *y = sub_mod(u, v, p);
}

/// The Gentleman–Sande butterfly: `(x, y) ← (x + y, w·(x − y)) mod p`.
#[inline(always)]
fn gentleman_sande(x: &mut u32, y: &mut u32, w: u32, w_shoup: u32, p: u32) {
    let (u, v) = (*x, *y);
    *x = add_mod(u, v, p);
    *y = mul_shoup(sub_mod(u, v, p), w, w_shoup, p);
}

/// `(a + b) mod p` for `a, b < p`.
#[inline(always)]
pub(crate) fn add_mod(a: u32, b: u32, p: u32) -> u32 {
    let sum = a + b;
    sum.min(sum.wrapping_sub(p))
}

/// `(a − b) mod p` for `a, b < p`.
#[inline(always)]
pub(crate) fn sub_mod(a: u32, b: u32, p: u32) -> u32 {
    let difference = a.wrapping_sub(b);
    difference.min(difference.wrapping_add(p))
}

/// Constants of the CRT reconstruction, each with its Shoup quotient.
#[derive(Clone, Debug)]
struct CrtConstants {
    /// p0^{-1} mod p1.
    inv01: (u32, u32),
    /// (p0·p1)^{-1} mod p2.
    inv012: (u32, u32),
    /// p0 mod p2.
    p0_mod_p2: (u32, u32),
}

/// A polynomial in the transform domain (its three residue transforms), from
/// [`NttPlan::forward`].
#[derive(Clone)]
pub struct Transformed([Vec<u32>; 3]);

impl std::fmt::Debug for Transformed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Transformed {{ degree: {} }}", self.0[0].len())
    }
}

/// Multiplication by a fixed polynomial `s` in Z_{2^32}\[x\]/(x^n + 1), with `s` transformed once.
#[derive(Clone, Debug)]
pub struct FixedMultiplier<'a> {
    plan: &'a NttPlan,
    /// Transformed residues of `s` with their Shoup quotients.
    s_hat: [Vec<(u32, u32)>; 3],
}

impl<'a> FixedMultiplier<'a> {
    /// Prepares multiplication by `s` (length n).
    pub fn new(plan: &'a NttPlan, s: &[u32]) -> Self {
        let transformed = plan.transform(s);
        let s_hat = [0, 1, 2].map(|k| {
            transformed[k]
                .iter()
                .map(|&x| (x, shoup(x, PRIMES[k])))
                .collect()
        });
        Self { plan, s_hat }
    }

    /// Writes `(a · s) mod (x^n + 1, 2^32)` into `out` (both of length n).
    ///
    /// The same code is compiled for the widest vector unit the CPU has (chosen at run time), so
    /// the butterflies and the CRT are auto-vectorized.
    pub fn multiply(&self, a: &[u32], out: &mut [u32]) {
        assert_eq!(a.len(), self.plan.n, "polynomial degree");
        assert_eq!(out.len(), self.plan.n, "polynomial degree");
        wide::multiply(Backend::selected(), self, Operand::Coefficients(a), out)
    }

    /// [`multiply`](Self::multiply) for an `a` already transformed by the same plan: about half
    /// the work (one set of inverse transforms).
    pub fn multiply_transformed(&self, a: &Transformed, out: &mut [u32]) {
        assert!(
            a.0.iter().all(|r| r.len() == self.plan.n),
            "polynomial degree"
        );
        assert_eq!(out.len(), self.plan.n, "polynomial degree");
        wide::multiply(Backend::selected(), self, Operand::Transformed(a), out)
    }

    #[inline(always)]
    fn multiply_inline(&self, a: Operand, out: &mut [u32]) {
        let mut residues = match a {
            Operand::Coefficients(a) => self.plan.transform(a),
            Operand::Transformed(a) => a.0.clone(),
        };
        for ((table, residues), s_hat) in self
            .plan
            .tables
            .iter()
            .zip(residues.iter_mut())
            .zip(&self.s_hat)
        {
            for (x, &(s, s_shoup)) in residues.iter_mut().zip(s_hat) {
                *x = mul_shoup(*x, s, s_shoup, table.p);
            }
            table.inverse(residues);
        }
        self.plan.reconstruct(&residues, out);
    }
}

/// The other factor of a [`FixedMultiplier`] product.
#[derive(Clone, Copy)]
enum Operand<'a> {
    /// Coefficients, to transform.
    Coefficients(&'a [u32]),
    /// Already transformed.
    Transformed(&'a Transformed),
}

/// [`NttPlan::transform`] and [`FixedMultiplier::multiply`] compiled for the vector units of a
/// [`Backend`]: the same code, auto-vectorized for each.
mod wide {
    use super::{Backend, FixedMultiplier, NttPlan, Operand};
    use crate::backend::vectorized;

    /// [`NttPlan::transform`] on `backend`'s vector units.
    pub(super) fn transform(backend: Backend, plan: &NttPlan, a: &[u32]) -> [Vec<u32>; 3] {
        vectorized!(backend, fn(plan: &NttPlan = plan, a: &[u32] = a) -> [Vec<u32>; 3] {
            plan.transform(a)
        })
    }

    /// [`FixedMultiplier::multiply`] on `backend`'s vector units.
    pub(super) fn multiply(backend: Backend, m: &FixedMultiplier, a: Operand, out: &mut [u32]) {
        vectorized!(backend, fn(m: &FixedMultiplier = m, a: Operand = a, out: &mut [u32] = out) {
            m.multiply_inline(a, out)
        })
    }
}

/// `(a · b) mod (x^n + 1, 2^32)` by schoolbook multiplication: the reference for tests.
pub fn negacyclic_schoolbook(a: &[u32], b: &[u32]) -> Vec<u32> {
    let n = a.len();
    assert_eq!(b.len(), n, "degrees");
    let mut out = vec![0u32; n];
    for (i, &x) in a.iter().enumerate() {
        for (j, &y) in b.iter().enumerate() {
            let product = x.wrapping_mul(y);
            if i + j < n {
                out[i + j] = out[i + j].wrapping_add(product);
            } else {
                out[i + j - n] = out[i + j - n].wrapping_sub(product);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn primes_fit_the_transforms() {
        for p in PRIMES {
            assert!(is_prime(p) && p < 1 << 30);
            assert_eq!((p - 1) % (2 * MAX_DEGREE as u32), 0);
        }
        let plan = NttPlan::new(1024).unwrap();
        for table in &plan.tables {
            let psi = u64::from(table.psi[1].0); // ψ^{bitrev(1)} = ψ^{n/2}
            assert_eq!(psi * psi % u64::from(table.p), u64::from(table.p) - 1);
        }
        assert!(NttPlan::new(1000).is_none() && NttPlan::new(8192).is_none());
    }

    /// The lift is the residue of the centered value, at the ends of the range and where the
    /// magnitude passes `p` and `2p`.
    #[test]
    fn lifts_reduce_the_centered_value() {
        let plan = NttPlan::new(2).unwrap();
        for table in &plan.tables {
            let p = i64::from(table.p);
            for x in [
                0,
                1,
                p - 1,
                p,
                p + 1,
                2 * p - 1,
                2 * p,
                2 * p + 1,
                i64::from(i32::MAX),
            ] {
                for x in [x, -x, i64::from(i32::MIN)] {
                    let expected = x.rem_euclid(p) as u32;
                    assert_eq!(table.lift(x as i32 as u32), expected, "x = {x}");
                }
            }
        }
    }

    #[test]
    fn forward_then_inverse_is_identity() {
        let plan = NttPlan::new(64).unwrap();
        let table = &plan.tables[1];
        let a: Vec<u32> = (0..64).map(|i| (i * 7919 + 3) % table.p).collect();
        let mut b = a.clone();
        table.forward(&mut b);
        assert_ne!(a, b);
        table.inverse(&mut b);
        assert_eq!(a, b);
    }

    /// Two pseudo-random polynomials of degree `n` from `seed` (xorshift).
    fn random_pair(n: usize, seed: u64) -> (Vec<u32>, Vec<u32>) {
        let mut x = seed | 1;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u32
        };
        let a = (0..n).map(|_| next()).collect();
        let s = (0..n).map(|_| next()).collect();
        (a, s)
    }

    proptest! {
        #[test]
        fn products_match_schoolbook(log_n in 1u32..8, seed in any::<u64>()) {
            let n = 1usize << log_n;
            let (a, s) = random_pair(n, seed);
            let plan = NttPlan::new(n).unwrap();
            let mut out = vec![0u32; n];
            FixedMultiplier::new(&plan, &s).multiply(&a, &mut out);
            prop_assert_eq!(out, negacyclic_schoolbook(&a, &s));
        }

        /// Every backend's transform and both products equal the portable code's, up to the
        /// largest degree.
        #[test]
        fn backends_agree_with_portable(log_n in 1u32..=12, seed in any::<u64>()) {
            let n = 1usize << log_n;
            let (a, s) = random_pair(n, seed);
            let plan = NttPlan::new(n).unwrap();
            let multiplier = FixedMultiplier::new(&plan, &s);
            let transformed = plan.transform(&a);
            let mut expected = vec![0u32; n];
            multiplier.multiply_inline(Operand::Coefficients(&a), &mut expected);
            for backend in Backend::available() {
                let name = backend.name();
                let forward = Transformed(wide::transform(backend, &plan, &a));
                prop_assert_eq!(&forward.0, &transformed, "{}", name);
                let mut out = vec![0u32; n];
                wide::multiply(backend, &multiplier, Operand::Coefficients(&a), &mut out);
                prop_assert_eq!(&out, &expected, "{}", name);
                let mut out = vec![0u32; n];
                wide::multiply(backend, &multiplier, Operand::Transformed(&forward), &mut out);
                prop_assert_eq!(&out, &expected, "{}", name);
            }
        }
    }

    #[test]
    fn extreme_coefficients_at_full_degree() {
        let n = 1024;
        let plan = NttPlan::new(n).unwrap();
        for (a_value, s_value) in [
            (0x8000_0000u32, 0x8000_0000u32),
            (0x7fff_ffff, 0x8000_0000),
            (u32::MAX, 1),
        ] {
            let a = vec![a_value; n];
            let s = vec![s_value; n];
            let mut out = vec![0u32; n];
            FixedMultiplier::new(&plan, &s).multiply(&a, &mut out);
            assert_eq!(out, negacyclic_schoolbook(&a, &s));
        }
    }
}
