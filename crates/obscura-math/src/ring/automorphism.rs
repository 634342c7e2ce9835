//! The automorphisms `τ_k: a(x) ↦ a(x^k)` of `Z_q[x]/(x^n + 1)`, for odd `k`.

use super::{Form, Poly, Ring};

/// `τ_k` for one odd `k` in `[1, 2n)`, with its action on both forms worked out once.
///
/// In coefficient form `x^i ↦ x^(i·k mod 2n)`, and `x^(n+j) = −x^j`: a signed permutation. In
/// evaluation form the value at `ψ^e` becomes the value at `ψ^(e·k)`: a permutation of the
/// evaluation points, with no signs.
#[derive(Clone, Debug)]
pub struct Automorphism {
    k: usize,
    /// For coefficient `i`: where it goes, and whether it changes sign.
    coefficients: Vec<(u32, bool)>,
    /// For evaluation slot `i`: the slot of the input it takes its value from.
    evaluations: Vec<u32>,
}

impl Automorphism {
    /// `τ_k` on `ring`; `None` unless `k` is odd (`k` is taken modulo `2n`).
    pub fn new(ring: &Ring, k: usize) -> Option<Self> {
        let n = ring.degree();
        let k = k % (2 * n);
        if k.is_multiple_of(2) {
            return None;
        }
        let coefficients = (0..n)
            .map(|i| {
                let j = i * k % (2 * n);
                if j < n {
                    (j as u32, false)
                } else {
                    ((j - n) as u32, true)
                }
            })
            .collect();
        let bits = n.trailing_zeros();
        let reverse = |i: usize| i.reverse_bits() >> (usize::BITS - bits);
        // Slot i holds the value at ψ^(2·bitrev(i) + 1); the odd exponent e is slot
        // bitrev((e − 1) / 2).
        let evaluations = (0..n)
            .map(|i| {
                let exponent = (2 * reverse(i) + 1) * k % (2 * n);
                reverse((exponent - 1) / 2) as u32
            })
            .collect();
        Some(Self {
            k,
            coefficients,
            evaluations,
        })
    }

    /// For each evaluation slot, the slot of the input it takes its value from.
    pub(super) fn evaluation_sources(&self) -> &[u32] {
        &self.evaluations
    }

    /// `k`.
    pub fn exponent(&self) -> usize {
        self.k
    }

    /// `τ_k(a)`, in `a`'s form.
    ///
    /// # Panics
    /// If `a` is not a polynomial of the ring this automorphism was made for.
    pub fn apply<F: Form>(&self, ring: &Ring, a: &Poly<F>) -> Poly<F> {
        let n = ring.degree();
        assert!(
            n == self.coefficients.len() && a.data.len() == 2 * n,
            "polynomials of this ring"
        );
        let mut out = Poly::zero(n);
        for (p, (from, to)) in ring
            .moduli()
            .iter()
            .zip(a.data.chunks_exact(n).zip(out.data.chunks_exact_mut(n)))
        {
            if F::EVALUATIONS {
                for (to, &source) in to.iter_mut().zip(&self.evaluations) {
                    *to = from[source as usize];
                }
            } else {
                for (&x, &(target, negate)) in from.iter().zip(&self.coefficients) {
                    to[target as usize] = if negate && x != 0 { p - x } else { x };
                }
            }
        }
        out
    }
}
