//! A party's secret exponent and the batch kernels that raise points to it and encode them.
//!
//! Two backends give the same bytes:
//!
//! - **multi-buffer** ([`crate::multibuffer`]), on CPUs with AVX-512 IFMA: eight points per
//!   instruction stream, from the hash (or the peer's encoding) to the encoding of `k · P`;
//! - **single point**, everywhere else: curve25519-dalek's fastest backend for the CPU. Encoding a
//!   point needs an inverse square root, which cannot be shared between points, but encoding the
//!   *doubles* of many points can (`double_and_compress_batch`: one inversion per batch). So
//!   this path multiplies by `k / 2` and lets the batch double and encode.

use curve25519_dalek::ristretto::RistrettoPoint;
use curve25519_dalek::scalar::Scalar;
use obscura_math::backend::Backend;
use obscura_math::sample::{OsSampler, RngError};
use rayon::prelude::*;
use zeroize::Zeroize;

use crate::hash_to_group::HashToGroup;
use crate::multibuffer::digits::Digits;
use crate::multibuffer::Ifma;
use crate::{point, PeerError};

/// Points per parallel task (and per `double_and_compress_batch` call: enough to amortise its
/// one inversion).
const BATCH: usize = 64;

/// Bytes of an encoded point.
pub(crate) const POINT_BYTES: usize = 32;

/// A uniformly random non-zero scalar: 64 bytes from the OS CSPRNG reduced mod ℓ (bias below
/// 2^-259), drawn again in the (2^-252) case that they reduce to zero.
pub(crate) fn random_nonzero_scalar(rng: &mut OsSampler) -> Result<Scalar, RngError> {
    loop {
        let mut wide = [0u8; 64];
        for word in wide.chunks_exact_mut(8) {
            word.copy_from_slice(&rng.next_u64()?.to_le_bytes());
        }
        let k = Scalar::from_bytes_mod_order_wide(&wide);
        wide.zeroize();
        if k != Scalar::ZERO {
            return Ok(k);
        }
    }
}

/// Which code raises points to the exponent.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Raiser {
    /// The AVX-512 IFMA multi-buffer kernel.
    MultiBuffer(Ifma),
    /// curve25519-dalek, one point at a time.
    SinglePoint,
}

impl Raiser {
    /// The code for `backend`: the multi-buffer kernel where it offers IFMA.
    pub(crate) fn on(backend: Backend) -> Self {
        Ifma::on(backend).map_or(Self::SinglePoint, Self::MultiBuffer)
    }

    /// The code for the process's selected backend.
    pub(crate) fn selected() -> Self {
        Self::on(Backend::selected())
    }
}

/// A secret non-zero scalar `k`, held as `k / 2` for the single-point backend and as the digits
/// of `k` for the multi-buffer one (both wiped on drop).
pub(crate) struct Exponent {
    half: Scalar,
    digits: Digits,
    raiser: Raiser,
}

impl Exponent {
    /// A uniformly random non-zero exponent ([`random_nonzero_scalar`]) on the selected backend.
    pub(crate) fn random(rng: &mut OsSampler) -> Result<Self, RngError> {
        let k = random_nonzero_scalar(rng)?;
        Ok(Self::from_scalar(k, Raiser::selected()).expect("the scalar is not zero"))
    }

    /// The exponent `k` raised by `raiser`, or `None` for zero.
    pub(crate) fn from_scalar(mut k: Scalar, raiser: Raiser) -> Option<Self> {
        if k == Scalar::ZERO {
            return None;
        }
        let half = k * Scalar::from(2u8).invert();
        let digits = Digits::new(&k);
        k.zeroize();
        Some(Self {
            half,
            digits,
            raiser,
        })
    }

    /// For each item, raises `hash`'s point of it to `k` and writes the first `width` bytes (at
    /// most 32) of the encoding into the next `width` bytes of `out`, which holds
    /// `items.len() * width` bytes. Runs in parallel on the current rayon pool.
    pub(crate) fn raise_items_into(
        &self,
        hash: &HashToGroup,
        items: &[&[u8]],
        width: usize,
        out: &mut [u8],
    ) {
        match self.raiser {
            Raiser::MultiBuffer(kernel) => parallel(items, width, out, |items, out| {
                let strings: Vec<[u8; 64]> = items
                    .iter()
                    .map(|item| hash.expand_message::<64>(item))
                    .collect();
                kernel.raise_uniform(&self.digits, &strings, width, out);
                Ok::<_, PeerError>(())
            }),
            Raiser::SinglePoint => parallel(items, width, out, |items, out| {
                self.raise_batch(items, |item| Ok(hash.hash(item)), width, out)
            }),
        }
        .expect("hashing always gives a point")
    }

    /// For each 32-byte encoding from a peer, decodes its point ([`point::decode`]: the identity
    /// and invalid encodings are refused), raises it to `k` and writes the first `width` bytes
    /// of the encoding as [`Exponent::raise_items_into`] does.
    pub(crate) fn raise_points_into(
        &self,
        encodings: &[[u8; POINT_BYTES]],
        width: usize,
        out: &mut [u8],
    ) -> Result<(), PeerError> {
        match self.raiser {
            Raiser::MultiBuffer(kernel) => parallel(encodings, width, out, |encodings, out| {
                kernel.raise_encoded(&self.digits, encodings, width, out)
            }),
            Raiser::SinglePoint => parallel(encodings, width, out, |encodings, out| {
                self.raise_batch(encodings, point::decode, width, out)
            }),
        }
    }

    /// The single-point path for one batch: `(k / 2) · P` for each input's point, then one
    /// `double_and_compress_batch`.
    fn raise_batch<T>(
        &self,
        inputs: &[T],
        point: impl Fn(&T) -> Result<RistrettoPoint, PeerError>,
        width: usize,
        out: &mut [u8],
    ) -> Result<(), PeerError> {
        let halves = inputs
            .iter()
            .map(|input| Ok(self.half * point(input)?))
            .collect::<Result<Vec<_>, PeerError>>()?;
        let encoded = RistrettoPoint::double_and_compress_batch(&halves);
        point::write_prefixes(encoded.iter().map(|e| e.as_bytes()), width, out);
        Ok(())
    }
}

/// Runs `batch` on [`BATCH`] inputs at a time with their `width`-byte slots of `out`, in
/// parallel on the current rayon pool; the first error wins.
fn parallel<T: Sync>(
    inputs: &[T],
    width: usize,
    out: &mut [u8],
    batch: impl Fn(&[T], &mut [u8]) -> Result<(), PeerError> + Sync,
) -> Result<(), PeerError> {
    inputs
        .par_chunks(BATCH)
        .zip(out.par_chunks_mut(BATCH * width))
        .try_for_each(|(inputs, out)| batch(inputs, out))
}

impl Drop for Exponent {
    fn drop(&mut self) {
        self.half.zeroize();
    }
}

#[cfg(test)]
mod tests {
    use curve25519_dalek::ristretto::CompressedRistretto;

    use super::*;

    fn scalar(hex: &str) -> Scalar {
        let bytes: [u8; 32] = decode_hex(hex).try_into().unwrap();
        Scalar::from_canonical_bytes(bytes).unwrap()
    }

    fn decode_hex(hex: &str) -> Vec<u8> {
        (0..hex.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
            .collect()
    }

    /// The code of every backend available (the multi-buffer kernel only where one offers
    /// AVX-512 IFMA), the single-point code first.
    fn backends() -> Vec<Raiser> {
        let mut backends = vec![Raiser::SinglePoint];
        backends.extend(
            Backend::available()
                .into_iter()
                .filter_map(Ifma::on)
                .map(Raiser::MultiBuffer),
        );
        backends
    }

    fn raise_items(
        exponent: &Exponent,
        hash: &HashToGroup,
        items: &[&[u8]],
        width: usize,
    ) -> Vec<u8> {
        let mut out = vec![0u8; items.len() * width];
        exponent.raise_items_into(hash, items, width, &mut out);
        out
    }

    fn raise_points(
        exponent: &Exponent,
        encodings: &[[u8; 32]],
        width: usize,
    ) -> Result<Vec<u8>, PeerError> {
        let mut out = vec![0u8; encodings.len() * width];
        exponent.raise_points_into(encodings, width, &mut out)?;
        Ok(out)
    }

    /// Both batch paths give `(k·P).compress()` for every point, for hashed items and for
    /// encodings, across vector and batch boundaries; truncation keeps the encoding's prefix.
    #[test]
    fn every_backend_equals_the_single_point_formula() {
        let hash = HashToGroup::psi();
        let mut rng = OsSampler::new();
        let k = random_nonzero_scalar(&mut rng).unwrap();
        for backend in backends() {
            let exponent = Exponent::from_scalar(k, backend).unwrap();
            for count in [0, 1, 7, 8, 9, 63, 64, 65, 200] {
                let owned: Vec<[u8; 8]> = (0..count)
                    .map(|_| rng.next_u64().unwrap().to_le_bytes())
                    .collect();
                let items: Vec<&[u8]> = owned.iter().map(|item| &item[..]).collect();
                let points: Vec<RistrettoPoint> =
                    items.iter().map(|item| hash.hash(item)).collect();
                let expected: Vec<u8> = points
                    .iter()
                    .flat_map(|p| (k * p).compress().to_bytes())
                    .collect();
                assert_eq!(
                    raise_items(&exponent, &hash, &items, 32),
                    expected,
                    "{backend:?}, {count} items"
                );
                let encodings: Vec<[u8; 32]> =
                    points.iter().map(|p| p.compress().to_bytes()).collect();
                assert_eq!(
                    raise_points(&exponent, &encodings, 32).unwrap(),
                    expected,
                    "{backend:?}, {count} points"
                );
                let prefixes: Vec<u8> = expected.chunks(32).flat_map(|c| c[..9].to_vec()).collect();
                assert_eq!(raise_items(&exponent, &hash, &items, 9), prefixes);
                assert_eq!(raise_points(&exponent, &encodings, 9).unwrap(), prefixes);
            }
        }
    }

    /// An identity or invalid encoding anywhere in the input fails the whole call, on every
    /// backend, with the error `point::decode` gives.
    #[test]
    fn bad_encodings_are_refused_on_every_backend() {
        let hash = HashToGroup::psi();
        let good: Vec<[u8; 32]> = (0u8..20)
            .map(|i| hash.hash(&[i]).compress().to_bytes())
            .collect();
        // RFC 9496 A.2: a non-canonical, a negative and a non-square encoding.
        let invalid = [
            "edffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
            "0100000000000000000000000000000000000000000000000000000000000000",
            "26948d35ca62e643e26a83177332e6b6afeb9d08e4268b650f1f5bbd8d81d371",
        ];
        let exponent_scalar = Scalar::from(7u8);
        for backend in backends() {
            let exponent = Exponent::from_scalar(exponent_scalar, backend).unwrap();
            for position in [0, 3, 7, 8, 19] {
                let mut encodings = good.clone();
                encodings[position] = [0u8; 32];
                assert_eq!(
                    raise_points(&exponent, &encodings, 32),
                    Err(PeerError::IdentityPoint)
                );
                for bad in invalid {
                    encodings[position] = decode_hex(bad).try_into().unwrap();
                    assert_eq!(
                        raise_points(&exponent, &encodings, 32),
                        Err(PeerError::InvalidPoint),
                        "{backend:?}, {bad} at {position}"
                    );
                }
            }
        }
    }

    #[test]
    fn random_exponents_differ_and_zero_is_refused() {
        let mut rng = OsSampler::new();
        let hash = HashToGroup::psi();
        let a = raise_items(&Exponent::random(&mut rng).unwrap(), &hash, &[b"x"], 32);
        let b = raise_items(&Exponent::random(&mut rng).unwrap(), &hash, &[b"x"], 32);
        assert_ne!(a, b);
        assert!(Exponent::from_scalar(Scalar::ZERO, Raiser::SinglePoint).is_none());
    }

    /// RFC 9497 appendix A.1.1 (OPRF(ristretto255, SHA-512), mode 0): the blinded elements are
    /// `blind · HashToGroup(input)` and the evaluation `skSm · blindedElement`, with the same
    /// hash-to-group and the same encoding as ours.
    #[test]
    fn rfc9497_oprf_vectors() {
        let hash = HashToGroup::new(b"HashToGroup-OPRFV1-\x00-ristretto255-SHA512");
        let blind = scalar("64d37aed22a27f5191de1c1d69fadb899d8862b58eb4220029e036ec4c1f6706");
        let key = scalar("5ebcea5ee37023ccb9fc2d2019f9d7737be85591ae8652ffa9ef0f4d37063b0e");
        let long_input = [0x5a; 17];
        for backend in backends() {
            let blinded = raise_items(
                &Exponent::from_scalar(blind, backend).unwrap(),
                &hash,
                &[&[0x00], &long_input],
                32,
            );
            assert_eq!(
                blinded[..32],
                decode_hex("609a0ae68c15a3cf6903766461307e5c8bb2f95e7e6550e1ffa2dc99e412803c")
            );
            assert_eq!(
                blinded[32..],
                decode_hex("da27ef466870f5f15296299850aa088629945a17d1f5b7f5ff043f76b3c06418")
            );
            let first: [u8; 32] = blinded[..32].try_into().unwrap();
            let evaluated =
                raise_points(&Exponent::from_scalar(key, backend).unwrap(), &[first], 32).unwrap();
            assert_eq!(
                evaluated[..],
                decode_hex("7ec6578ae5120958eb2db1745758ff379e77cb64fe77b0b2d8cc917ea0869c7e")
            );
            assert!(CompressedRistretto(evaluated.try_into().unwrap())
                .decompress()
                .is_some());
        }
    }
}
