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

use crate::PeerError;

/// Proof that this CPU has AVX-512 F, DQ and IFMA: only [`Ifma::detect`] makes one (and none
/// can exist off x86-64).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Ifma(Proof);

#[cfg(target_arch = "x86_64")]
type Proof = ();
#[cfg(not(target_arch = "x86_64"))]
type Proof = std::convert::Infallible;

impl Ifma {
    /// The kernel, if this CPU can run it.
    pub(crate) fn detect() -> Option<Self> {
        #[cfg(target_arch = "x86_64")]
        if is_x86_feature_detected!("avx512f")
            && is_x86_feature_detected!("avx512dq")
            && is_x86_feature_detected!("avx512ifma")
        {
            return Some(Self(()));
        }
        None
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
        // SAFETY: `self` exists only where `detect` found the features the kernel is built for.
        unsafe {
            ifma::raise_uniform(digits, strings, width, out)
        }
        #[cfg(not(target_arch = "x86_64"))]
        match (self.0, digits, strings, width, out) {}
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
        // SAFETY: `self` exists only where `detect` found the features the kernel is built for.
        unsafe {
            ifma::raise_encoded(digits, encodings, width, out)
        }
        #[cfg(not(target_arch = "x86_64"))]
        match (self.0, digits, encodings, width, out) {}
    }
}
