//! RLWE ciphertexts and key switching.

use super::{Automorphism, Coefficients, Evaluations, Gadget, Poly, Ring};

/// An RLWE ciphertext `(a, b)` under a secret `s`: its phase `b − a·s` is the (scaled) message
/// plus a small error.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ciphertext {
    /// The mask.
    pub a: Poly<Coefficients>,
    /// The body, `a·s + e + message`.
    pub b: Poly<Coefficients>,
}

impl Ciphertext {
    /// The ciphertext with mask `a` of `message` (already scaled) under `s`, with error `e`.
    pub fn encrypt(
        ring: &Ring,
        s: &Poly<Evaluations>,
        a: Poly<Coefficients>,
        e: &Poly<Coefficients>,
        message: &Poly<Coefficients>,
    ) -> Self {
        let mut b = times_secret(ring, &a, s);
        ring.add_assign(&mut b, e);
        ring.add_assign(&mut b, message);
        Self { a, b }
    }

    /// The phase `b − a·s`.
    pub fn phase(&self, ring: &Ring, s: &Poly<Evaluations>) -> Poly<Coefficients> {
        let mut phase = self.b.clone();
        ring.sub_assign(&mut phase, &times_secret(ring, &self.a, s));
        phase
    }

    /// `self + other`.
    pub fn add(&self, ring: &Ring, other: &Self) -> Self {
        let (mut a, mut b) = (self.a.clone(), self.b.clone());
        ring.add_assign(&mut a, &other.a);
        ring.add_assign(&mut b, &other.b);
        Self { a, b }
    }

    /// `self − other`.
    pub fn sub(&self, ring: &Ring, other: &Self) -> Self {
        let (mut a, mut b) = (self.a.clone(), self.b.clone());
        ring.sub_assign(&mut a, &other.a);
        ring.sub_assign(&mut b, &other.b);
        Self { a, b }
    }

    /// `self · x^k`: the message and the error times `x^k`.
    pub fn multiply_monomial(&self, ring: &Ring, k: usize) -> Self {
        Self {
            a: ring.multiply_monomial(&self.a, k),
            b: ring.multiply_monomial(&self.b, k),
        }
    }

    /// `τ_k` of both parts: a ciphertext of `τ_k(message)` under `τ_k(s)`, with error `τ_k(e)`.
    pub fn automorphism(&self, ring: &Ring, tau: &Automorphism) -> Self {
        Self {
            a: tau.apply(ring, &self.a),
            b: tau.apply(ring, &self.b),
        }
    }
}

/// `a·s` in coefficient form, for `s` in evaluation form.
fn times_secret(ring: &Ring, a: &Poly<Coefficients>, s: &Poly<Evaluations>) -> Poly<Coefficients> {
    ring.inverse(&ring.multiply(&ring.forward(a), s))
}

/// A key that turns a ciphertext under `s'` into one of the same message under `s`: rows
/// `(a_j, b_j)` with `b_j = a_j·s + e_j − B^j·s'` for each gadget digit `j`, held in evaluation
/// form.
///
/// Switching `(a, b)` decomposes `a = Σ B^j·d_j` and returns `(Σ d_j·a_j, b + Σ d_j·b_j)`,
/// whose phase under `s` is `b − a·s' + Σ d_j·e_j`: the old phase plus an error of variance
/// `ℓ·n·σ_e²·B²/12` per coefficient (digits near uniform on `[−B/2, B/2)`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeySwitchKey {
    gadget: Gadget,
    rows: Vec<(Poly<Evaluations>, Poly<Evaluations>)>,
}

impl KeySwitchKey {
    /// The key from `from` (`s'`) to `to` (`s`) with masks `a` and errors `errors`, one of each
    /// per gadget digit.
    ///
    /// # Panics
    /// If there are not [`Gadget::digits`] masks and errors.
    pub fn new(
        ring: &Ring,
        gadget: Gadget,
        from: &Poly<Coefficients>,
        to: &Poly<Evaluations>,
        a: &[Poly<Coefficients>],
        errors: &[Poly<Coefficients>],
    ) -> Self {
        assert!(
            a.len() == gadget.digits() && errors.len() == gadget.digits(),
            "one mask and one error per digit"
        );
        let rows = a
            .iter()
            .zip(errors)
            .enumerate()
            .map(|(j, (a, e))| {
                let a_hat = ring.forward(a);
                let b = Self::body(ring, gadget.power(ring, j), from, to, &a_hat, e);
                (a_hat, ring.forward(&b))
            })
            .collect();
        Self { gadget, rows }
    }

    /// The body `a·s + e − power·s'` of a key row with mask `a` (in evaluation form), for
    /// `from` = `s'` and `to` = `s`: what a party that holds `s` sends for a row whose mask
    /// both sides expand from a seed.
    pub fn body(
        ring: &Ring,
        power: u64,
        from: &Poly<Coefficients>,
        to: &Poly<Evaluations>,
        a: &Poly<Evaluations>,
        e: &Poly<Coefficients>,
    ) -> Poly<Coefficients> {
        let mut b = ring.inverse(&ring.multiply(a, to));
        ring.add_assign(&mut b, e);
        ring.sub_assign(&mut b, &ring.scale(from, power));
        b
    }

    /// A key from its rows `(a_j, b_j)` in evaluation form; `None` unless there is one per
    /// gadget digit, each of `ring`'s degree.
    pub fn from_rows(
        ring: &Ring,
        gadget: Gadget,
        rows: Vec<(Poly<Evaluations>, Poly<Evaluations>)>,
    ) -> Option<Self> {
        let fits = rows.len() == gadget.digits()
            && rows
                .iter()
                .all(|(a, b)| a.degree() == ring.degree() && b.degree() == ring.degree());
        fits.then_some(Self { gadget, rows })
    }

    /// The rows `(a_j, b_j)`, in evaluation form.
    pub fn rows(&self) -> &[(Poly<Evaluations>, Poly<Evaluations>)] {
        &self.rows
    }

    /// The gadget the key decomposes with.
    pub fn gadget(&self) -> Gadget {
        self.gadget
    }

    /// `ct` (under `s'`) as a ciphertext of the same message under `s`.
    pub fn switch(&self, ring: &Ring, ct: &Ciphertext) -> Ciphertext {
        let n = ring.degree();
        let digits = self.decompose(ring, &ct.a);
        let (mut a, mut b) = (Poly::zero(n), Poly::zero(n));
        self.add_masks(ring, &digits, &mut a);
        self.add_bodies(ring, &digits, &mut b);
        let mut b = ring.inverse(&b);
        ring.add_assign(&mut b, &ct.b);
        Ciphertext {
            a: ring.inverse(&a),
            b,
        }
    }

    /// The gadget digits of a mask `a`, in evaluation form: what [`switch`](Self::switch)
    /// multiplies the key's rows by.
    pub fn decompose(&self, ring: &Ring, a: &Poly<Coefficients>) -> Vec<Poly<Evaluations>> {
        self.gadget
            .decompose(ring, a)
            .iter()
            .map(|digit| ring.forward(digit))
            .collect()
    }

    /// `acc += Σ d_j·a_j`: the switched ciphertext's mask, from the digits of the old one.
    pub fn add_masks(
        &self,
        ring: &Ring,
        digits: &[Poly<Evaluations>],
        acc: &mut Poly<Evaluations>,
    ) {
        self.add_products(ring, digits, acc, |(a, _)| a);
    }

    /// `acc += Σ d_j·b_j`: what the switch adds to the body, from the digits of the old mask.
    pub fn add_bodies(
        &self,
        ring: &Ring,
        digits: &[Poly<Evaluations>],
        acc: &mut Poly<Evaluations>,
    ) {
        self.add_products(ring, digits, acc, |(_, b)| b);
    }

    /// `acc += Σ d_j·part(row_j)`.
    fn add_products(
        &self,
        ring: &Ring,
        digits: &[Poly<Evaluations>],
        acc: &mut Poly<Evaluations>,
        part: impl Fn(&(Poly<Evaluations>, Poly<Evaluations>)) -> &Poly<Evaluations>,
    ) {
        for (digit, row) in digits.iter().zip(&self.rows) {
            ring.multiply_add(acc, digit, part(row));
        }
    }
}
