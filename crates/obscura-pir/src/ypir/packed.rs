//! The packed layer both variants end with: a matrix of small entries times a query of RLWE
//! samples modulo `q ≈ 2^56`, whose products (LWE ciphertexts) are packed into RLWE
//! ciphertexts and switched to a 28-bit mask and a 20-bit body.
//!
//! A query vector of `C` entries is `⌈C/d⌉` blocks, block `k` the coefficients of
//! `a_k·s + d^{-1}·(e_k + Δ·x^β·[k = α])` (the last block truncated), which selects column
//! `α·d + β`. For a row `x` of the matrix, `Σ_j x_j·query_j` is an LWE ciphertext under `s`
//! whose RLWE mask is `Σ_k a_k·x_k^*`, `x_k` the row's block `k` as a polynomial and
//! `x^*(X) = x(X^{-1})`: masks depend on the matrix only, so the server packs them ahead of
//! time ([`PackingPlan`]) and packs each answer's bodies online.
//!
//! [`word_matrix`]: obscura_math::ring::words::word_matrix

use std::sync::Arc;

use obscura_math::expand::{MatrixSeed, SeededMatrix};
use obscura_math::ring::{
    packing_factor, Automorphism, Ciphertext, Coefficients, Evaluations, Gadget, KeySwitchKey,
    PackingKeys, PackingPlan, Poly, Ring,
};
use obscura_math::sample::{DiscreteGaussian, OsSampler};
use std::ops::Range;

use obscura_math::layout::GROUP_ROWS;
use obscura_math::matrix::PlaintextMatrix;
use rayon::prelude::*;
use zeroize::Zeroize;

use super::params::{
    key_dropped_bits, BODY_BITS, DEGREE, GADGET_BITS, GADGET_DIGITS, LEVELS, MASK_BITS, MODULUS,
    SIGMA,
};
use crate::PirError;

/// The domain of the query matrix's polynomials `a_k` under the database's seed.
const QUERY_DOMAIN: u64 = 0x5950_4952_0000_0001;

/// The domain of the packing keys' masks under the database's seed.
const KEY_DOMAIN: u64 = 0x5950_4952_0000_0002;

/// Polynomials of the key masks: one per level and gadget digit.
pub(super) const KEY_POLYNOMIALS: usize = LEVELS * GADGET_DIGITS;

/// The public side of a packed layer of `columns` columns: the ring, the gadget, the query
/// matrix's polynomials and the packing keys' masks (both in evaluation form).
#[derive(Clone)]
pub(super) struct PackedLayer {
    ring: Arc<Ring>,
    gadget: Gadget,
    columns: usize,
    blocks: Vec<Poly<Evaluations>>,
    key_masks: Vec<Poly<Evaluations>>,
}

/// The client's secret `s` of one query, in both forms. Wiped when dropped.
pub(super) struct Secret {
    coefficients: Vec<i64>,
    hat: Poly<Evaluations>,
}

impl Drop for Secret {
    fn drop(&mut self) {
        self.coefficients.zeroize();
        self.hat.zeroize();
    }
}

impl PackedLayer {
    /// The layer of `columns` columns whose public polynomials come from `seed`.
    pub(super) fn new(seed: MatrixSeed, columns: usize) -> Self {
        let ring = Ring::ypir();
        let gadget = Gadget::new(&ring, GADGET_BITS, GADGET_DIGITS).expect("an exact gadget");
        let blocks = public_polynomials(&ring, seed, QUERY_DOMAIN, columns.div_ceil(DEGREE));
        let key_masks = public_polynomials(&ring, seed, KEY_DOMAIN, KEY_POLYNOMIALS);
        Self {
            ring,
            gadget,
            columns,
            blocks,
            key_masks,
        }
    }

    /// The ring.
    pub(super) fn ring(&self) -> &Ring {
        &self.ring
    }

    /// A fresh secret from the OS CSPRNG.
    pub(super) fn secret(&self) -> Result<Secret, PirError> {
        let coefficients = gaussian(DEGREE)?;
        let hat = self.ring.forward(&self.ring.from_signed(&coefficients));
        Ok(Secret { coefficients, hat })
    }

    /// The query vector that selects `column` for plaintexts of `plaintext_bits` bits, under
    /// `secret`: [`Self::new`]'s `columns` values modulo `q`, each rounded to leave out its
    /// `dropped` low bits ([`round`]).
    pub(super) fn query(
        &self,
        secret: &Secret,
        column: usize,
        plaintext_bits: u32,
        dropped: u32,
    ) -> Result<Vec<u64>, PirError> {
        let ring = &*self.ring;
        let factor = packing_factor(ring);
        let delta = (ring.modulus() >> plaintext_bits) as i64;
        let mut values = Vec::with_capacity(self.columns);
        for (k, a) in self.blocks.iter().enumerate() {
            let mut noise = gaussian(DEGREE)?;
            if column / DEGREE == k {
                noise[column % DEGREE] += delta;
            }
            let mut block = ring.inverse(&ring.multiply(a, &secret.hat));
            ring.add_assign(&mut block, &ring.scale(&ring.from_signed(&noise), factor));
            noise.zeroize();
            let take = (self.columns - k * DEGREE).min(DEGREE);
            values.extend(
                ring.values(&block)[..take]
                    .iter()
                    .map(|&v| round(v, dropped)),
            );
        }
        Ok(values)
    }

    /// The bodies of the packing keys for `secret`: level `ℓ = 1 … log d`, digit `j`, each
    /// `a·s + e − B^j·τ_(2^ℓ+1)(s)` with the seeded mask `a`, `d` values modulo `q` each,
    /// rounded to leave out [`key_dropped_bits`] low bits.
    pub(super) fn key_bodies(&self, secret: &Secret) -> Result<Vec<u64>, PirError> {
        let ring = &*self.ring;
        let s = ring.from_signed(&secret.coefficients);
        let mut bodies = Vec::with_capacity(KEY_POLYNOMIALS * DEGREE);
        for level in 1..=LEVELS {
            let tau = Automorphism::new(ring, (1 << level) + 1).expect("an odd exponent");
            let moved = tau.apply(ring, &s);
            for j in 0..GADGET_DIGITS {
                let mut error = gaussian(DEGREE)?;
                let a = &self.key_masks[(level - 1) * GADGET_DIGITS + j];
                let body = KeySwitchKey::body(
                    ring,
                    self.gadget.power(ring, j),
                    &moved,
                    &secret.hat,
                    a,
                    &ring.from_signed(&error),
                );
                error.zeroize();
                let dropped = key_dropped_bits(level, j);
                bodies.extend(ring.values(&body).into_iter().map(|v| round(v, dropped)));
            }
        }
        Ok(bodies)
    }

    /// The packing keys with the seeded masks and `bodies` ([`Self::key_bodies`]' layout,
    /// rounded); zero bodies give the keys a plan needs, whose bodies it never reads.
    pub(super) fn packing_keys(&self, bodies: Option<&[u64]>) -> PackingKeys {
        let ring = &*self.ring;
        let zero = Poly::zero(DEGREE);
        let keys = (0..LEVELS)
            .map(|level| {
                let rows = (0..GADGET_DIGITS)
                    .map(|j| {
                        let index = level * GADGET_DIGITS + j;
                        let body = match bodies {
                            Some(bodies) => {
                                let dropped = key_dropped_bits(level + 1, j);
                                let values: Vec<u64> = bodies[index * DEGREE..(index + 1) * DEGREE]
                                    .iter()
                                    .map(|&v| restore(v, dropped))
                                    .collect();
                                ring.forward(&ring.from_values(&values))
                            }
                            None => zero.clone(),
                        };
                        (self.key_masks[index].clone(), body)
                    })
                    .collect();
                KeySwitchKey::from_rows(ring, self.gadget, rows).expect("rows of the ring")
            })
            .collect();
        PackingKeys::from_keys(ring, keys).expect("one key per level")
    }

    /// The RLWE masks of `rows` rows of the matrix whose entry `(r, j)` is `entry(r, j)`
    /// (`j` below the layer's columns): `Σ_k a_k·x_k^*` for each row `x`.
    pub(super) fn masks(
        &self,
        rows: usize,
        entry: impl Fn(usize, usize) -> u16 + Sync,
    ) -> Vec<Poly<Coefficients>> {
        (0..rows)
            .into_par_iter()
            .map_init(
                || vec![0i64; DEGREE],
                |reversed, r| self.mask(reversed, |j| entry(r, j)),
            )
            .collect()
    }

    /// [`Self::masks`] of the rows `rows` of a [`word_matrix`] (starting on a group of rows),
    /// read a group of rows at a time in storage order.
    pub(super) fn word_masks(
        &self,
        matrix: &PlaintextMatrix,
        rows: Range<usize>,
    ) -> Vec<Poly<Coefficients>> {
        assert!(
            rows.start.is_multiple_of(GROUP_ROWS),
            "rows from a group's first"
        );
        let width = matrix.cols();
        let groups: Vec<usize> = rows.clone().step_by(GROUP_ROWS).collect();
        groups
            .into_par_iter()
            .flat_map_iter(|first| {
                let end = (first + GROUP_ROWS).min(rows.end);
                let mut bytes = vec![0u8; (end - first) * width];
                matrix.copy_block(first..end, 0..width, &mut bytes);
                let mut reversed = vec![0i64; DEGREE];
                bytes
                    .chunks_exact(width)
                    .map(|row| {
                        self.mask(&mut reversed, |j| {
                            u16::from_le_bytes([row[2 * j], row[2 * j + 1]])
                        })
                    })
                    .collect::<Vec<_>>()
            })
            .collect()
    }

    /// The mask `Σ_k a_k·x_k^*` of the row whose entry `j` is `entry(j)`, with `reversed` as
    /// scratch (`d` entries).
    fn mask(&self, reversed: &mut [i64], entry: impl Fn(usize) -> u16) -> Poly<Coefficients> {
        let ring = &*self.ring;
        let mut sum = Poly::<Evaluations>::zero(DEGREE);
        for (k, a) in self.blocks.iter().enumerate() {
            let first = k * DEGREE;
            let width = (self.columns - first).min(DEGREE);
            // x^*: x_0 at 1, −x_β at x^(d−β).
            reversed.fill(0);
            reversed[0] = i64::from(entry(first));
            for beta in 1..width {
                reversed[DEGREE - beta] = -i64::from(entry(first + beta));
            }
            ring.multiply_add(&mut sum, &ring.forward(&ring.from_signed(reversed)), a);
        }
        ring.inverse(&sum)
    }

    /// The plan that packs ciphertexts with `masks` (a power of two of them, at most `d`).
    pub(super) fn plan(&self, masks: &[Poly<Coefficients>]) -> PackingPlan {
        PackingPlan::new(&self.ring, &self.packing_keys(None), masks)
    }

    /// `ct` switched to the answer's moduli: `d` masks of [`MASK_BITS`] bits and `d` bodies of
    /// [`BODY_BITS`] bits.
    pub(super) fn switch(&self, ct: &Ciphertext) -> (Vec<u32>, Vec<u32>) {
        let narrow = |poly, bits| {
            self.ring
                .switch_modulus(poly, 1u64 << bits)
                .into_iter()
                .map(|x| x as u32)
                .collect()
        };
        (narrow(&ct.a, MASK_BITS), narrow(&ct.b, BODY_BITS))
    }

    /// The phases of a switched ciphertext under `secret`, modulo the body's modulus: the body
    /// less `â·s` (exact over the integers, scaled from the mask's modulus to the body's).
    pub(super) fn phases(&self, secret: &Secret, mask: &[u32], body: &[u32]) -> Vec<u32> {
        let ring = &*self.ring;
        let values: Vec<u64> = mask.iter().map(|&x| u64::from(x)).collect();
        // |â·s| < d · 2^28 · max|s| < q/2: the centered product is the integer one.
        let product = ring.centered(
            &ring.inverse(&ring.multiply(&ring.forward(&ring.from_values(&values)), &secret.hat)),
        );
        let shift = MASK_BITS - BODY_BITS;
        let body_mask = (1u32 << BODY_BITS) - 1;
        product
            .iter()
            .zip(body)
            .map(|(&x, &b)| {
                let masked = (x.rem_euclid(1 << MASK_BITS) as u32 + (1 << (shift - 1))) >> shift;
                b.wrapping_sub(masked) & body_mask
            })
            .collect()
    }

    /// The `plaintext_bits`-bit plaintexts of a switched ciphertext under `secret`: its
    /// [`phases`](Self::phases), each rounded to its plaintext.
    pub(super) fn decrypt(
        &self,
        secret: &Secret,
        mask: &[u32],
        body: &[u32],
        plaintext_bits: u32,
    ) -> Vec<u32> {
        let step = BODY_BITS - plaintext_bits;
        self.phases(secret, mask, body)
            .into_iter()
            .map(|phase| ((phase + (1 << (step - 1))) >> step) & ((1 << plaintext_bits) - 1))
            .collect()
    }
}

/// `v` (below `q`, or below 2^32 for the first layer) without its `dropped` low bits, rounded to
/// the nearest and a tie to the even result, at most [`rounded_bound`] (for values below `q`).
///
/// Ties go to the even result so that the error `2^dropped·round(v) − v` has mean zero over
/// uniform `v` (variance [`rounding_variance`](super::params::rounding_variance)). Rounding
/// ties up would give it mean 1/2, which the pass sums over a row into a bias of
/// `Σ_j D[r][j]/2`, which packing multiplies by `d`: at 2^15 columns of 15-bit words, up to 17
/// steps of the body modulus, so every coefficient of a row of large words decoded wrong.
pub(super) fn round(v: u64, dropped: u32) -> u64 {
    if dropped == 0 {
        v
    } else {
        (v + (1 << (dropped - 1)) - 1 + ((v >> dropped) & 1)) >> dropped
    }
}

/// The largest value [`round`] gives with `dropped` bits left out.
pub(super) fn rounded_bound(dropped: u32) -> u64 {
    round(MODULUS - 1, dropped)
}

/// A rounded value brought back modulo `q`: `v · 2^dropped mod q`, within `2^(dropped−1)` of
/// the value it was rounded from.
pub(super) fn restore(v: u64, dropped: u32) -> u64 {
    ((u128::from(v) << dropped) % u128::from(MODULUS)) as u64
}

/// `count` polynomials uniform modulo `q`, expanded from `seed` in `domain`: coefficient `i` of
/// polynomial `k` is 128 bits of the keystream (4 words at `(k·d + i)·4`) modulo `q` (bias
/// below 2^-72).
fn public_polynomials(
    ring: &Ring,
    seed: MatrixSeed,
    domain: u64,
    count: usize,
) -> Vec<Poly<Evaluations>> {
    let stream = SeededMatrix::new(seed, domain, count, 4 * DEGREE);
    let q = u128::from(ring.modulus());
    (0..count)
        .into_par_iter()
        .map(|k| {
            let mut words = vec![0u32; 4 * DEGREE];
            stream.fill_rows(k, &mut words);
            let values: Vec<u64> = words
                .chunks_exact(4)
                .map(|w| {
                    let wide = w
                        .iter()
                        .rev()
                        .fold(0u128, |acc, &x| (acc << 32) | u128::from(x));
                    (wide % q) as u64
                })
                .collect();
            ring.forward(&ring.from_values(&values))
        })
        .collect()
}

/// `count` samples of the discrete Gaussian of standard deviation [`SIGMA`] from the OS CSPRNG.
fn gaussian(count: usize) -> Result<Vec<i64>, PirError> {
    thread_local! {
        static GAUSSIAN: DiscreteGaussian = DiscreteGaussian::new(SIGMA);
    }
    let mut words = vec![0u32; count];
    GAUSSIAN.with(|g| OsSampler::new().fill_gaussian(g, &mut words))?;
    let values = words.iter().map(|&w| i64::from(w as i32)).collect();
    words.zeroize();
    Ok(values)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// A rounded value comes back within half a step, and over every low-bit pattern the
        /// errors sum to zero: a tie goes to the even result, half of them each way.
        #[test]
        fn rounding_is_nearest_and_unbiased(high in 0u64..(1 << 40), dropped in 1u32..12) {
            let step = 1u64 << dropped;
            let mut total = 0i64;
            for low in 0..step {
                for parity in 0..2 {
                    let v = ((high * 2 + parity) << dropped) + low;
                    let error = (round(v, dropped) << dropped) as i64 - v as i64;
                    prop_assert!(error.unsigned_abs() <= step / 2);
                    if error.unsigned_abs() == step / 2 {
                        prop_assert_eq!(round(v, dropped) % 2, 0);
                    }
                    total += error;
                }
            }
            prop_assert_eq!(total, 0);
        }
    }
}
