//! Packing LWE ciphertexts into one RLWE ciphertext (Chen, Dai, Kim and Song, "Efficient
//! Homomorphic Conversion Between (Ring) LWE Ciphertexts", ACNS 2021, Algorithm 2), with the
//! automorphisms' key switches.
//!
//! An LWE ciphertext `(a, b)` of dimension `n` modulo `q` under the secret `s` (the
//! coefficients of the ring secret `s(x)`) has phase `b − ⟨a, s⟩`. As the RLWE ciphertext
//! `(ā, b)` with `ā(x) = a_0 − Σ_{i≥1} a_i·x^(n−i)`, the constant coefficient of its phase
//! `b − ā(x)·s(x)` is that same phase; the other coefficients are garbage.
//!
//! Packing `2^ℓ` of them (`ℓ ≤ log n`) combines halves recursively: the even-indexed and the
//! odd-indexed ones are packed into `c_e` and `c_o`, then with `t = n / 2^ℓ`
//! `c = (c_e + x^t·c_o) + τ_(2^ℓ+1)(c_e − x^t·c_o)`, the automorphism's output switched back to
//! `s`. `τ_(2^ℓ+1)` fixes the coefficients at multiples of `2t` and negates those at odd
//! multiples of `t`, so the wanted coefficients double and the ones between cancel. The trace
//! `c ← c + τ_(2^k+1)(c)` for `k = ℓ+1 … log n` then clears every coefficient off the multiples
//! of `t`. The phase of the result has `n` times the phase of ciphertext `j` at `x^(j·t)` (plus
//! the key switches' errors, doubled by each later level): [`pack`] takes its inputs already
//! multiplied by `n^{-1} mod q` (`q` is odd) so that it ends with the phases themselves.

use super::{Automorphism, Ciphertext, Coefficients, Gadget, KeySwitchKey, Poly, Ring};

/// The automorphism key switches [`pack`] needs: from `τ_(2^k+1)(s)` back to `s` for
/// `k = 1 … log n`.
#[derive(Clone, Debug)]
pub struct PackingKeys {
    /// `(τ_(2^k+1), its key)` for `k = 1 … log n`.
    keys: Vec<(Automorphism, KeySwitchKey)>,
}

impl PackingKeys {
    /// The keys for secret `s`, each of [`Gadget::digits`] rows with masks from `mask(k, j)`
    /// and errors from `error(k, j)` (`k` the level, `j` the digit).
    pub fn new(
        ring: &Ring,
        gadget: Gadget,
        s: &Poly<Coefficients>,
        mut mask: impl FnMut(usize, usize) -> Poly<Coefficients>,
        mut error: impl FnMut(usize, usize) -> Poly<Coefficients>,
    ) -> Self {
        let s_hat = ring.forward(s);
        let keys = Self::levels(ring)
            .map(|k| {
                let tau = Self::automorphism(ring, k);
                let masks: Vec<_> = (0..gadget.digits()).map(|j| mask(k, j)).collect();
                let errors: Vec<_> = (0..gadget.digits()).map(|j| error(k, j)).collect();
                let key =
                    KeySwitchKey::new(ring, gadget, &tau.apply(ring, s), &s_hat, &masks, &errors);
                (tau, key)
            })
            .collect();
        Self { keys }
    }

    /// Keys made elsewhere, one per level `k = 1 … log n` in order; `None` if there are not
    /// `log n` of them.
    pub fn from_keys(ring: &Ring, keys: Vec<KeySwitchKey>) -> Option<Self> {
        (keys.len() == ring.degree().trailing_zeros() as usize).then(|| Self {
            keys: Self::levels(ring)
                .zip(keys)
                .map(|(k, key)| (Self::automorphism(ring, k), key))
                .collect(),
        })
    }

    /// The keys, level `k = 1 … log n` in order.
    pub fn keys(&self) -> impl Iterator<Item = &KeySwitchKey> {
        self.keys.iter().map(|(_, key)| key)
    }

    /// The levels `k = 1 … log n`.
    fn levels(ring: &Ring) -> std::ops::RangeInclusive<usize> {
        1..=ring.degree().trailing_zeros() as usize
    }

    /// `τ_(2^k+1)`.
    fn automorphism(ring: &Ring, k: usize) -> Automorphism {
        Automorphism::new(ring, (1 << k) + 1).expect("2^k + 1 is odd")
    }

    /// `c + τ_(2^k+1)(c)`, the automorphism's output switched back to `s`.
    fn add_automorphism(&self, ring: &Ring, k: usize, c: &Ciphertext) -> Ciphertext {
        let (tau, key) = &self.keys[k - 1];
        c.add(ring, &key.switch(ring, &c.automorphism(ring, tau)))
    }
}

/// The LWE ciphertext `(a, b)` (`a` of `n` entries modulo `q`) as an RLWE ciphertext whose
/// phase has the LWE phase as its constant coefficient.
///
/// # Panics
/// If `a` does not have `n` entries.
pub fn lwe_to_rlwe(ring: &Ring, a: &[u64], b: u64) -> Ciphertext {
    let (n, q) = (ring.degree(), ring.modulus());
    assert_eq!(a.len(), n, "an LWE mask of the ring's dimension");
    let mut mask = vec![0u64; n];
    mask[0] = a[0] % q;
    for (i, &x) in a.iter().enumerate().skip(1) {
        let x = x % q;
        mask[n - i] = if x == 0 { 0 } else { q - x };
    }
    let mut body = vec![0u64; n];
    body[0] = b % q;
    Ciphertext {
        a: ring.from_values(&mask),
        b: ring.from_values(&body),
    }
}

/// `n^{-1} mod q`, the factor [`pack`]'s inputs are multiplied by beforehand.
pub fn packing_factor(ring: &Ring) -> u64 {
    let q = u128::from(ring.modulus());
    let n = ring.degree() as u128;
    // q is odd and n a power of two: n · ((q + 1) / 2)^(log n) ≡ 1.
    let half = q.div_ceil(2);
    let mut inverse = 1u128;
    for _ in 0..n.trailing_zeros() {
        inverse = inverse * half % q;
    }
    debug_assert_eq!(inverse * n % q, 1);
    inverse as u64
}

/// One RLWE ciphertext whose phase has the phase of `cts[j]`'s constant coefficient, times
/// `n`, at `x^(j·n/len)`, and nothing elsewhere (up to the key switches' errors); see the
/// module's notes. Inputs multiplied by [`packing_factor`] come out with their own phases.
///
/// # Panics
/// If the number of ciphertexts is not a power of two from 1 to `n`.
pub fn pack(ring: &Ring, keys: &PackingKeys, cts: &[Ciphertext]) -> Ciphertext {
    let n = ring.degree();
    assert!(
        cts.len().is_power_of_two() && cts.len() <= n,
        "a power of two of ciphertexts, at most n"
    );
    let level = cts.len().trailing_zeros() as usize;
    let mut packed = pack_levels(ring, keys, cts, level);
    for k in level + 1..=n.trailing_zeros() as usize {
        packed = keys.add_automorphism(ring, k, &packed);
    }
    packed
}

/// The recursive step over `2^level` ciphertexts (the ones at a stride through the original
/// list).
fn pack_levels(ring: &Ring, keys: &PackingKeys, cts: &[Ciphertext], level: usize) -> Ciphertext {
    if level == 0 {
        return cts[0].clone();
    }
    let (even, odd): (Vec<_>, Vec<_>) = cts
        .chunks_exact(2)
        .map(|p| (p[0].clone(), p[1].clone()))
        .unzip();
    let even = pack_levels(ring, keys, &even, level - 1);
    let odd = pack_levels(ring, keys, &odd, level - 1);
    let shift = ring.degree() >> level;
    let odd = odd.multiply_monomial(ring, shift);
    let sum = even.add(ring, &odd);
    let difference = even.sub(ring, &odd);
    let (tau, key) = &keys.keys[level - 1];
    sum.add(ring, &key.switch(ring, &difference.automorphism(ring, tau)))
}
