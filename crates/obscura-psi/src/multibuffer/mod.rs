//! Multi-buffer ristretto255: many independent points raised to one secret scalar together,
//! each in its own vector lane, as IPP-crypto's `mbx` functions do.
//!
//! curve25519-dalek's vector backends spread the four coordinates of *one* point over the
//! lanes; here every lane holds a different point, so the whole formula runs in each lane with
//! no shuffles, and the field's inverse square roots (decoding, hashing, encoding) are
//! vectorized too. The only kernel is for AVX-512 IFMA ([`Ifma`], eight 52-bit lanes); on other
//! CPUs ECDH-PSI runs curve25519-dalek's single-point path, and the tests hold this kernel to
//! that path and to the RFC 9496 vectors.

#![allow(unsafe_code)]

pub(crate) mod digits;
#[cfg(target_arch = "x86_64")]
mod ifma;

use digits::Digits;
use obscura_math::backend::{Backend, IfmaToken};

use crate::PeerError;

/// The AVX-512 IFMA kernel, which holds the proof that this CPU can run it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Ifma(IfmaToken);

impl Ifma {
    /// The kernel, if `backend` offers AVX-512 IFMA.
    pub(crate) fn on(backend: Backend) -> Option<Self> {
        backend.ifma().map(Self)
    }

    /// For each 64-byte uniform string, `k · P` for the point `P` that RFC 9496 derives from it
    /// and the scalar `k` of `digits`: the first `width` bytes (at most 32) of its encoding go
    /// to the next `width` bytes of `out`, which holds `strings.len() * width` bytes.
    pub(crate) fn raise_uniform(
        self,
        digits: &Digits,
        strings: &[[u8; 64]],
        width: usize,
        out: &mut [u8],
    ) {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: `self` holds an `IfmaToken`, which proves avx512f, avx512dq and avx512ifma,
        // every feature the kernel enables.
        unsafe {
            ifma::raise_uniform(digits, strings, width, out)
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            let _ = (self, digits, strings, width, out);
            unreachable!("no IFMA token exists off x86-64")
        }
    }

    /// For each encoding, `k · P` for the point `P` it encodes and the scalar `k` of `digits`,
    /// written as [`Ifma::raise_uniform`] writes. Fails on the identity's encoding or on an
    /// invalid one, as [`crate::point::decode`] does.
    pub(crate) fn raise_encoded(
        self,
        digits: &Digits,
        encodings: &[[u8; 32]],
        width: usize,
        out: &mut [u8],
    ) -> Result<(), PeerError> {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: `self` holds an `IfmaToken`, which proves avx512f, avx512dq and avx512ifma,
        // every feature the kernel enables.
        unsafe {
            ifma::raise_encoded(digits, encodings, width, out)
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            let _ = (self, digits, encodings, width, out);
            unreachable!("no IFMA token exists off x86-64")
        }
    }
}
