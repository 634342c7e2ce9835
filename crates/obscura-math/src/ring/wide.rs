//! The ring's transforms and pointwise products compiled for the vector units of each
//! [`Backend`]: the same code, auto-vectorized for each.

use super::Ring;
use crate::backend::{vectorized, Backend};
use crate::ntt::add_mod;

/// Forward transforms of both residue halves of `data`, on the selected backend.
pub(super) fn forward(ring: &Ring, data: &mut [u32]) {
    forward_on(Backend::selected(), ring, data)
}

/// Inverse transforms of both residue halves of `data`, on the selected backend.
pub(super) fn inverse(ring: &Ring, data: &mut [u32]) {
    inverse_on(Backend::selected(), ring, data)
}

/// `acc += a · b` residue by residue, on the selected backend.
pub(super) fn multiply_add(ring: &Ring, acc: &mut [u32], a: &[u32], b: &[u32]) {
    multiply_add_on(Backend::selected(), ring, acc, a, b)
}

/// [`forward`] on `backend`.
pub(super) fn forward_on(backend: Backend, ring: &Ring, data: &mut [u32]) {
    vectorized!(backend, fn(ring: &Ring = ring, data: &mut [u32] = data) {
        forward_inline(ring, data)
    })
}

/// [`inverse`] on `backend`.
pub(super) fn inverse_on(backend: Backend, ring: &Ring, data: &mut [u32]) {
    vectorized!(backend, fn(ring: &Ring = ring, data: &mut [u32] = data) {
        inverse_inline(ring, data)
    })
}

/// [`multiply_add`] on `backend`.
pub(super) fn multiply_add_on(
    backend: Backend,
    ring: &Ring,
    acc: &mut [u32],
    a: &[u32],
    b: &[u32],
) {
    vectorized!(backend, fn(ring: &Ring = ring, acc: &mut [u32] = acc, a: &[u32] = a, b: &[u32] = b) {
        multiply_add_inline(ring, acc, a, b)
    })
}

/// One combine of packing's body side, in evaluation form: with `yo = o·y`,
/// `e ← e + yo + τ(e − yo) + Σ_j d_j·b_j`, `τ` given by the source slot of each output slot,
/// the `(d_j, b_j)` pairs by `products`; `scratch` holds `3n` words.
pub(super) struct Combine<'a> {
    /// `y = x^(n/2^ℓ)` in evaluation form.
    pub y: &'a [u32],
    /// The automorphism's source slot for each slot.
    pub sources: &'a [u32],
    /// The digits and the key's bodies they multiply.
    pub products: &'a [(&'a [u32], &'a [u32])],
    /// Whether `e` and `o` are zero (packing's first level): then `e ← Σ_j d_j·b_j`.
    pub from_zero: bool,
}

/// [`Combine`] of `e` with `o` on the selected backend.
pub(super) fn combine(
    ring: &Ring,
    step: &Combine<'_>,
    e: &mut [u32],
    o: &[u32],
    scratch: &mut [u32],
) {
    combine_on(Backend::selected(), ring, step, e, o, scratch)
}

/// [`combine`] on `backend`.
pub(super) fn combine_on(
    backend: Backend,
    ring: &Ring,
    step: &Combine<'_>,
    e: &mut [u32],
    o: &[u32],
    scratch: &mut [u32],
) {
    vectorized!(
        backend,
        fn(
            ring: &Ring = ring,
            step: &Combine<'_> = step,
            e: &mut [u32] = e,
            o: &[u32] = o,
            scratch: &mut [u32] = scratch,
        ) {
            combine_inline(ring, step, e, o, scratch)
        }
    )
}

#[inline(always)]
fn combine_inline(ring: &Ring, step: &Combine<'_>, e: &mut [u32], o: &[u32], scratch: &mut [u32]) {
    let n = ring.degree();
    let (yo, rest) = scratch[..3 * n].split_at_mut(n);
    let (t, moved) = rest.split_at_mut(n);
    for (k, (e, o)) in e.chunks_exact_mut(n).zip(o.chunks_exact(n)).enumerate() {
        let p = ring.moduli()[k];
        if step.from_zero {
            e.fill(0);
        } else {
            combine_automorphism(ring, k, step, e, o, yo, t, moved);
        }
        // The products summed unreduced, as many as a reduction takes at once.
        for group in step.products.chunks(ring.sum_terms(k)) {
            let residues: Vec<(&[u32], &[u32])> = group
                .iter()
                .map(|&(d, b)| (residue(d, k, n), residue(b, k, n)))
                .collect();
            match residues.as_slice() {
                &[(d0, b0), (d1, b1), (d2, b2)] => {
                    for (i, e) in e.iter_mut().enumerate() {
                        let x = u64::from(d0[i]) * u64::from(b0[i])
                            + u64::from(d1[i]) * u64::from(b1[i])
                            + u64::from(d2[i]) * u64::from(b2[i]);
                        *e = add_mod(*e, ring.reduce_sum(k, x), p);
                    }
                }
                pairs => {
                    for (i, e) in e.iter_mut().enumerate() {
                        let x: u64 = pairs
                            .iter()
                            .map(|&(d, b)| u64::from(d[i]) * u64::from(b[i]))
                            .sum();
                        *e = add_mod(*e, ring.reduce_sum(k, x), p);
                    }
                }
            }
        }
    }
}

/// `e ← e + yo + τ(e − yo)` for residue `k`, with `yo = o·y`.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn combine_automorphism(
    ring: &Ring,
    k: usize,
    step: &Combine<'_>,
    e: &mut [u32],
    o: &[u32],
    yo: &mut [u32],
    t: &mut [u32],
    moved: &mut [u32],
) {
    let n = ring.degree();
    let p = ring.moduli()[k];
    let y = &step.y[k * n..(k + 1) * n];
    for (((yo, t), (&o, &y)), &e) in yo
        .iter_mut()
        .zip(t.iter_mut())
        .zip(o.iter().zip(y))
        .zip(e.iter())
    {
        *yo = ring.multiply_mod(k, o, y);
        *t = crate::ntt::sub_mod(e, *yo, p);
    }
    // The automorphism alone, so that the sums around it run on vector lanes.
    for (moved, &source) in moved.iter_mut().zip(step.sources) {
        *moved = t[source as usize];
    }
    for ((e, &yo), &moved) in e.iter_mut().zip(yo.iter()).zip(moved.iter()) {
        *e = add_mod(add_mod(*e, yo, p), moved, p);
    }
}

/// Residue `k` of a polynomial of degree `n`.
#[inline(always)]
fn residue(x: &[u32], k: usize, n: usize) -> &[u32] {
    &x[k * n..(k + 1) * n]
}

#[inline(always)]
fn forward_inline(ring: &Ring, data: &mut [u32]) {
    for (k, residues) in data.chunks_exact_mut(ring.degree()).enumerate() {
        ring.table(k).forward(residues);
    }
}

#[inline(always)]
fn inverse_inline(ring: &Ring, data: &mut [u32]) {
    for (k, residues) in data.chunks_exact_mut(ring.degree()).enumerate() {
        ring.table(k).inverse(residues);
    }
}

/// `acc += a · b` modulo each prime, with [`Ring::multiply_mod`]'s Barrett reduction.
#[inline(always)]
fn multiply_add_inline(ring: &Ring, acc: &mut [u32], a: &[u32], b: &[u32]) {
    let n = ring.degree();
    for (k, ((acc, a), b)) in acc
        .chunks_exact_mut(n)
        .zip(a.chunks_exact(n))
        .zip(b.chunks_exact(n))
        .enumerate()
    {
        let p = ring.moduli()[k];
        for ((acc, &a), &b) in acc.iter_mut().zip(a).zip(b) {
            *acc = add_mod(*acc, ring.multiply_mod(k, a, b), p);
        }
    }
}
