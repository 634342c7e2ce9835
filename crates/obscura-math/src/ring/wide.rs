//! The ring's transforms and pointwise products compiled for the vector units of each kernel
//! [`Backend`]: the same code, auto-vectorized for each, chosen once per call.

#![allow(unsafe_code)]

use super::Ring;
use crate::kernels::Backend;
use crate::ntt::add_mod;

/// Forward transforms of both residue halves of `data`, on the detected backend.
pub(super) fn forward(ring: &Ring, data: &mut [u32]) {
    forward_on(Backend::detect(), ring, data)
}

/// Inverse transforms of both residue halves of `data`, on the detected backend.
pub(super) fn inverse(ring: &Ring, data: &mut [u32]) {
    inverse_on(Backend::detect(), ring, data)
}

/// `acc += a · b` residue by residue, on the detected backend.
pub(super) fn multiply_add(ring: &Ring, acc: &mut [u32], a: &[u32], b: &[u32]) {
    multiply_add_on(Backend::detect(), ring, acc, a, b)
}

/// [`forward`] on `backend`.
pub(super) fn forward_on(backend: Backend, ring: &Ring, data: &mut [u32]) {
    match backend {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: the token proves avx512f, avx512bw, avx512dq and avx512vl, the features
        // `forward_avx512` enables.
        Backend::Avx512(_) => unsafe { forward_avx512(ring, data) },
        #[cfg(target_arch = "x86_64")]
        // SAFETY: the token proves avx2, the one feature `forward_avx2` enables.
        Backend::Avx2(_) => unsafe { forward_avx2(ring, data) },
        _ => forward_inline(ring, data),
    }
}

/// [`inverse`] on `backend`.
pub(super) fn inverse_on(backend: Backend, ring: &Ring, data: &mut [u32]) {
    match backend {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: as for `forward_on`.
        Backend::Avx512(_) => unsafe { inverse_avx512(ring, data) },
        #[cfg(target_arch = "x86_64")]
        // SAFETY: as for `forward_on`.
        Backend::Avx2(_) => unsafe { inverse_avx2(ring, data) },
        _ => inverse_inline(ring, data),
    }
}

/// [`multiply_add`] on `backend`.
pub(super) fn multiply_add_on(
    backend: Backend,
    ring: &Ring,
    acc: &mut [u32],
    a: &[u32],
    b: &[u32],
) {
    match backend {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: as for `forward_on`.
        Backend::Avx512(_) => unsafe { multiply_add_avx512(ring, acc, a, b) },
        #[cfg(target_arch = "x86_64")]
        // SAFETY: as for `forward_on`.
        Backend::Avx2(_) => unsafe { multiply_add_avx2(ring, acc, a, b) },
        _ => multiply_add_inline(ring, acc, a, b),
    }
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

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512dq,avx512vl")]
unsafe fn forward_avx512(ring: &Ring, data: &mut [u32]) {
    forward_inline(ring, data)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn forward_avx2(ring: &Ring, data: &mut [u32]) {
    forward_inline(ring, data)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512dq,avx512vl")]
unsafe fn inverse_avx512(ring: &Ring, data: &mut [u32]) {
    inverse_inline(ring, data)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn inverse_avx2(ring: &Ring, data: &mut [u32]) {
    inverse_inline(ring, data)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512dq,avx512vl")]
unsafe fn multiply_add_avx512(ring: &Ring, acc: &mut [u32], a: &[u32], b: &[u32]) {
    multiply_add_inline(ring, acc, a, b)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn multiply_add_avx2(ring: &Ring, acc: &mut [u32], a: &[u32], b: &[u32]) {
    multiply_add_inline(ring, acc, a, b)
}
