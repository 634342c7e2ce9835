//! Packing LWE ciphertexts into one RLWE ciphertext (Chen, Dai, Kim and Song, "Efficient
//! Homomorphic Conversion Between (Ring) LWE Ciphertexts", ACNS 2021, Algorithm 2), with the
//! automorphisms' key switches.
//!
//! An LWE ciphertext `(a, b)` of dimension `n` modulo `q` under the secret `s` (the
//! coefficients of the ring secret `s(x)`) has phase `b − ⟨a, s⟩`. As the RLWE ciphertext
//! `(ā, b)` with `ā(x) = a_0 − Σ_{i≥1} a_i·x^(n−i)`, the constant coefficient of its phase
//! `b − ā(x)·s(x)` is that same phase; the other coefficients are garbage.
//!
//! Packing `2^L` of them (`L ≤ log n`) runs levels `ℓ = 1 … L` over a working list that starts
//! as the inputs: at level `ℓ`, with `h = 2^(L−ℓ)` and `y = x^(n/2^ℓ)`, entry `i < h` becomes
//! `(E + y·O) + τ_(2^ℓ+1)(E − y·O)` for `E`, `O` the entries `i` and `i + h`, the
//! automorphism's output switched back to `s`. `τ_(2^ℓ+1)` negates `y` and fixes the
//! coefficients at multiples of `2n/2^ℓ`, so the wanted coefficients double and the ones
//! between cancel. The trace `c ← c + τ_(2^k+1)(c)` for `k = L+1 … log n` then clears every
//! coefficient off the multiples of `t = n/2^L`. The phase of the result has `n` times the
//! phase of input `j` at `x^(j·t)` (plus the key switches' errors, doubled by each later
//! level): [`pack`] takes its inputs already multiplied by `n^{-1} mod q` (`q` is odd) so that
//! it ends with the phases themselves.
//!
//! Every mask in that tree depends only on the inputs' masks and the keys' masks, and every
//! body only on the inputs' bodies, the keys' bodies and the masks' digits. A [`PackingPlan`]
//! runs the masks ahead of time and keeps the digits, so that packing ciphertexts with those
//! masks is then only products in evaluation form, with no transform before the last.

use std::sync::Mutex;

use rayon::prelude::*;

use super::{
    wide, Automorphism, Ciphertext, Coefficients, Evaluations, Gadget, KeySwitchKey, Poly, Ring,
};

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

/// The combine of a level with `y`, the automorphism's `sources` and the key switch's
/// `products`, from zero entries or not.
fn combine_step<'a>(
    y: &'a [u32],
    sources: &'a [u32],
    products: &'a [(&'a [u32], &'a [u32])],
    from_zero: bool,
) -> wide::Combine<'a> {
    wide::Combine {
        y,
        sources,
        products,
        from_zero,
    }
}

/// The pairs `(d_j, b_j)` of a key switch's digits and the key's bodies.
fn products<'a>(
    digits: &'a [Poly<Evaluations>],
    key: &'a KeySwitchKey,
) -> Vec<(&'a [u32], &'a [u32])> {
    digits
        .iter()
        .zip(key.rows())
        .map(|(d, (_, b))| (d.residues(), b.residues()))
        .collect()
}

/// One step of packing `count` ciphertexts: a combine of working entries `i` and `i + h` at a
/// level, or a trace level on entry 0.
#[derive(Clone, Copy, Debug)]
enum Step {
    Combine { level: usize, i: usize, h: usize },
    Trace { level: usize },
}

impl Step {
    /// The level `ℓ`, whose automorphism is `τ_(2^ℓ+1)`.
    fn level(self) -> usize {
        match self {
            Step::Combine { level, .. } | Step::Trace { level } => level,
        }
    }
}

/// The steps of packing `count` ciphertexts in degree `n`, in order.
///
/// # Panics
/// If `count` is not a power of two from 1 to `n`.
fn steps(n: usize, count: usize) -> Vec<Step> {
    assert!(
        count.is_power_of_two() && count <= n,
        "a power of two of ciphertexts, at most n"
    );
    let (top, last) = (count.trailing_zeros() as usize, n.trailing_zeros() as usize);
    let combines = (1..=top).flat_map(|level| {
        let h = count >> level;
        (0..h).map(move |i| Step::Combine { level, i, h })
    });
    combines
        .chain((top + 1..=last).map(|level| Step::Trace { level }))
        .collect()
}

/// One RLWE ciphertext whose phase has the phase of `cts[j]`'s constant coefficient, times
/// `n`, at `x^(j·n/len)`, and nothing elsewhere (up to the key switches' errors); see the
/// module's notes. Inputs multiplied by [`packing_factor`] come out with their own phases.
///
/// # Panics
/// If the number of ciphertexts is not a power of two from 1 to `n`.
pub fn pack(ring: &Ring, keys: &PackingKeys, cts: &[Ciphertext]) -> Ciphertext {
    let n = ring.degree();
    let mut work = cts.to_vec();
    for step in steps(n, cts.len()) {
        let (tau, key) = &keys.keys[step.level() - 1];
        match step {
            Step::Combine { level, i, h } => {
                let odd = work[i + h].multiply_monomial(ring, n >> level);
                let sum = work[i].add(ring, &odd);
                let difference = work[i].sub(ring, &odd);
                work[i] = sum.add(ring, &key.switch(ring, &difference.automorphism(ring, tau)));
            }
            Step::Trace { .. } => {
                let switched = key.switch(ring, &work[0].automorphism(ring, tau));
                work[0] = work[0].add(ring, &switched);
            }
        }
    }
    work.swap_remove(0)
}

/// The mask side of packing ciphertexts with given masks, worked out once: the packed mask and,
/// for every key switch, the digits of the mask it switches (in evaluation form; about
/// `3 · 16 KiB` per step at degree 2048 over YPIR's primes, `count − 1 + log(n/count)` steps).
/// [`PackingPlan::pack`] then packs ciphertexts with those masks and any bodies.
#[derive(Debug)]
pub struct PackingPlan {
    count: usize,
    mask: Poly<Coefficients>,
    digits: Vec<Vec<Poly<Evaluations>>>,
    /// `y = x^(n/2^ℓ)` in evaluation form for each level `ℓ = 1 … log n`.
    monomials: Vec<Poly<Evaluations>>,
    /// Working memory of earlier packs, kept so that each pack does not fault in fresh pages.
    buffers: Mutex<Vec<Vec<u32>>>,
}

/// A copy of the plan, with no working memory of its own yet.
impl Clone for PackingPlan {
    fn clone(&self) -> Self {
        Self {
            count: self.count,
            mask: self.mask.clone(),
            digits: self.digits.clone(),
            monomials: self.monomials.clone(),
            buffers: Mutex::new(Vec::new()),
        }
    }
}

impl PackingPlan {
    /// The plan for inputs with masks `masks` (a power of two of them, at most `n`), with the
    /// keys' masks from `keys` (their bodies are not read).
    pub fn new(ring: &Ring, keys: &PackingKeys, masks: &[Poly<Coefficients>]) -> Self {
        let n = ring.degree();
        let mut work = masks.to_vec();
        let mut digits = Vec::new();
        // τ(mask) switched: its digits, kept, and the switched mask.
        let mut switch = |tau: &Automorphism, key: &KeySwitchKey, mask: &Poly<Coefficients>| {
            let step_digits = key.decompose(ring, &tau.apply(ring, mask));
            let mut switched = Poly::zero(n);
            key.add_masks(ring, &step_digits, &mut switched);
            digits.push(step_digits);
            ring.inverse(&switched)
        };
        for step in steps(n, masks.len()) {
            let (tau, key) = &keys.keys[step.level() - 1];
            match step {
                Step::Combine { level, i, h } => {
                    let odd = ring.multiply_monomial(&work[i + h], n >> level);
                    let mut sum = work[i].clone();
                    ring.add_assign(&mut sum, &odd);
                    let mut difference = work[i].clone();
                    ring.sub_assign(&mut difference, &odd);
                    ring.add_assign(&mut sum, &switch(tau, key, &difference));
                    work[i] = sum;
                }
                Step::Trace { .. } => {
                    let switched = switch(tau, key, &work[0]);
                    ring.add_assign(&mut work[0], &switched);
                }
            }
        }
        let monomials = (1..=n.trailing_zeros() as usize)
            .map(|level| {
                let mut y = vec![0u64; n];
                y[n >> level] = 1;
                ring.forward(&ring.from_values(&y))
            })
            .collect();
        Self {
            count: masks.len(),
            mask: work.swap_remove(0),
            digits,
            monomials,
            buffers: Mutex::new(Vec::new()),
        }
    }

    /// A working buffer of `len` words from the kept ones, or a new one.
    fn take_buffer(&self, len: usize) -> Vec<u32> {
        let kept = self
            .buffers
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .pop();
        kept.filter(|b| b.len() == len)
            .unwrap_or_else(|| crate::memory::written(len, 0u32))
    }

    /// Keeps a working buffer for a later pack (at most two: one per concurrent pack is
    /// enough for a server's answers).
    fn return_buffer(&self, buffer: Vec<u32>) {
        let mut kept = self
            .buffers
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if kept.len() < 2 {
            kept.push(buffer);
        }
    }

    /// The number of ciphertexts the plan packs.
    pub fn count(&self) -> usize {
        self.count
    }

    /// [`pack`] of the ciphertexts with the plan's masks and the constant bodies `bodies` (one
    /// per input, as [`lwe_to_rlwe`] makes them), with `keys` whose masks are the plan's. The
    /// combines of a level are independent and run on the rayon pool.
    ///
    /// # Panics
    /// If there is not one body per input.
    pub fn pack(&self, ring: &Ring, keys: &PackingKeys, bodies: &[u64]) -> Ciphertext {
        assert_eq!(bodies.len(), self.count, "one body per packed ciphertext");
        let n = ring.degree();
        // A constant body has no garbage: the tree takes it to n·β at x^(j·n/count) exactly,
        // so the working bodies start at zero and carry only what the key switches add. With
        // four inputs or more, each combine of level 2 first makes its two entries of level 1
        // (sums of products alone, from zero), so that level 1 never reaches memory; the
        // entries of level 2 are the first quarter of the list, and each later level works
        // within them.
        let entry = 2 * n;
        let fused = self.count >= 4;
        let kept = if fused {
            self.count / 4
        } else {
            self.count / 2
        };
        let mut work = self.take_buffer(entry * kept.max(1));
        if self.count == 1 {
            // No combine: the trace starts from the zero body.
            work.fill(0);
        }
        let zero = vec![0u32; entry];
        let first_level = &self.digits[..self.count / 2];
        let mut digits = self.digits.iter();
        for (level, (tau, key)) in keys.keys.iter().enumerate().map(|(k, key)| (k + 1, key)) {
            let h = self.count >> level;
            let (y, sources) = (
                self.monomials[level - 1].residues(),
                tau.evaluation_sources(),
            );
            if h == 0 {
                // A trace level: entry 0 plus its automorphism, switched.
                let products = products(digits.next().expect("a step per level"), key);
                let mut scratch = vec![0u32; 3 * n];
                let step = combine_step(y, sources, &products, false);
                wide::combine(ring, &step, &mut work[..entry], &zero, &mut scratch);
                continue;
            }
            let level_digits: Vec<_> = digits.by_ref().take(h).collect();
            if fused && level == 1 {
                continue;
            }
            let (front, back) = work.split_at_mut(h.min(kept) * entry);
            let (tau_1, key_1) = &keys.keys[0];
            let (y_1, sources_1) = (self.monomials[0].residues(), tau_1.evaluation_sources());
            front
                .par_chunks_mut(entry)
                .zip(level_digits)
                .enumerate()
                .for_each_init(
                    || (vec![0u32; 3 * n], vec![0u32; entry]),
                    |(scratch, odd), (i, (e, d))| {
                        let odd: &[u32] = match level {
                            1 => &zero,
                            2 if fused => {
                                // Entries i and i + h of level 1, made here.
                                let even = products(&first_level[i], key_1);
                                let step = combine_step(y_1, sources_1, &even, true);
                                wide::combine(ring, &step, e, &zero, scratch);
                                let other = products(&first_level[i + h], key_1);
                                let step = combine_step(y_1, sources_1, &other, true);
                                wide::combine(ring, &step, odd, &zero, scratch);
                                odd
                            }
                            _ => &back[i * entry..(i + 1) * entry],
                        };
                        let products = products(d, key);
                        let step = combine_step(y, sources, &products, level == 1);
                        wide::combine(ring, &step, e, odd, scratch);
                    },
                );
        }
        let mut b = ring.inverse(&Poly::from_data(work[..entry].to_vec()));
        self.return_buffer(work);
        let stride = n / self.count;
        let mut constants = vec![0u64; n];
        let q = u128::from(ring.modulus());
        for (j, &beta) in bodies.iter().enumerate() {
            constants[j * stride] = (u128::from(beta) * n as u128 % q) as u64;
        }
        ring.add_assign(&mut b, &ring.from_values(&constants));
        Ciphertext {
            a: self.mask.clone(),
            b,
        }
    }
}
