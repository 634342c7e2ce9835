//! A party's secret exponent and the batch kernel that raises points to it and encodes them.
//!
//! Encoding a ristretto255 point needs an inverse square root, which cannot be shared between
//! points, but encoding the *doubles* of many points can (`double_and_compress_batch`: one
//! inversion per batch). So the exponent is kept as `k / 2 mod ℓ`: a point is multiplied by
//! `k / 2` and the batch doubles and encodes it, which gives the encoding of `k · P`.

use curve25519_dalek::ristretto::RistrettoPoint;
use curve25519_dalek::scalar::Scalar;
use obscura_math::sample::{OsSampler, RngError};
use rayon::prelude::*;
use zeroize::Zeroize;

/// Points per `double_and_compress_batch` call: enough to amortise its one inversion.
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

/// A secret non-zero scalar `k`, held as `k / 2` (wiped on drop).
pub(crate) struct Exponent {
    half: Scalar,
}

impl Exponent {
    /// A uniformly random non-zero exponent ([`random_nonzero_scalar`]).
    pub(crate) fn random(rng: &mut OsSampler) -> Result<Self, RngError> {
        Ok(Self::from_scalar(random_nonzero_scalar(rng)?).expect("the scalar is not zero"))
    }

    /// The exponent `k`, or `None` for zero.
    pub(crate) fn from_scalar(mut k: Scalar) -> Option<Self> {
        if k == Scalar::ZERO {
            return None;
        }
        let half = k * Scalar::from(2u8).invert();
        k.zeroize();
        Some(Self { half })
    }

    /// For each input, takes its point (`point` may reject it), raises it to `k` and writes the
    /// first `width` bytes (at most 32) of the encoding into the next `width` bytes of `out`,
    /// which holds `inputs.len() * width` bytes. Runs in parallel on the current rayon pool.
    pub(crate) fn raise_into<T: Sync, E: Send>(
        &self,
        inputs: &[T],
        point: impl Fn(&T) -> Result<RistrettoPoint, E> + Sync,
        width: usize,
        out: &mut [u8],
    ) -> Result<(), E> {
        inputs
            .par_chunks(BATCH)
            .zip(out.par_chunks_mut(BATCH * width))
            .try_for_each(|(inputs, out)| {
                let halves = inputs
                    .iter()
                    .map(|input| Ok(self.half * point(input)?))
                    .collect::<Result<Vec<_>, E>>()?;
                let encoded = RistrettoPoint::double_and_compress_batch(&halves);
                for (out, encoded) in out.chunks_exact_mut(width).zip(&encoded) {
                    out.copy_from_slice(&encoded.as_bytes()[..width]);
                }
                Ok(())
            })
    }
}

impl Drop for Exponent {
    fn drop(&mut self) {
        self.half.zeroize();
    }
}

#[cfg(test)]
mod tests {
    use std::convert::Infallible;

    use curve25519_dalek::ristretto::CompressedRistretto;

    use super::*;
    use crate::hash_to_group::HashToGroup;
    use crate::point;

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

    fn raise(exponent: &Exponent, points: &[RistrettoPoint]) -> Vec<u8> {
        let mut out = vec![0u8; points.len() * POINT_BYTES];
        exponent
            .raise_into(points, |p| Ok::<_, Infallible>(*p), POINT_BYTES, &mut out)
            .unwrap();
        out
    }

    /// The batch path (multiply by k/2, double and encode in batches) gives `(k·P).compress()`
    /// for every point, across batch boundaries, and truncation keeps the encoding's prefix.
    #[test]
    fn batch_path_equals_single_point_path() {
        let hash = HashToGroup::psi();
        let mut rng = OsSampler::new();
        let wide: [u8; 64] = std::array::from_fn(|i| (i * 37 + 11) as u8);
        let k = Scalar::from_bytes_mod_order_wide(&wide);
        let exponent = Exponent::from_scalar(k).unwrap();
        for count in [0, 1, 63, 64, 65, 200] {
            let points: Vec<RistrettoPoint> = (0..count)
                .map(|_| hash.hash(&rng.next_u64().unwrap().to_le_bytes()))
                .collect();
            let batch = raise(&exponent, &points);
            let single: Vec<u8> = points
                .iter()
                .flat_map(|p| (k * p).compress().to_bytes())
                .collect();
            assert_eq!(batch, single, "{count} points");
            let mut tags = vec![0u8; count * 9];
            exponent
                .raise_into(&points, |p| Ok::<_, Infallible>(*p), 9, &mut tags)
                .unwrap();
            let prefixes: Vec<u8> = single.chunks(32).flat_map(|c| c[..9].to_vec()).collect();
            assert_eq!(tags, prefixes);
        }
    }

    #[test]
    fn random_exponents_differ_and_zero_is_refused() {
        let mut rng = OsSampler::new();
        let point = HashToGroup::psi().hash(b"x");
        let a = raise(&Exponent::random(&mut rng).unwrap(), &[point]);
        let b = raise(&Exponent::random(&mut rng).unwrap(), &[point]);
        assert_ne!(a, b);
        assert!(Exponent::from_scalar(Scalar::ZERO).is_none());
    }

    /// RFC 9497 appendix A.1.1 (OPRF(ristretto255, SHA-512), mode 0): the blinded elements are
    /// `blind · HashToGroup(input)` and the evaluation `skSm · blindedElement`, with the same
    /// hash-to-group and the same encoding as ours.
    #[test]
    fn rfc9497_oprf_vectors() {
        let hash = HashToGroup::new(b"HashToGroup-OPRFV1-\x00-ristretto255-SHA512");
        let blind = Exponent::from_scalar(scalar(
            "64d37aed22a27f5191de1c1d69fadb899d8862b58eb4220029e036ec4c1f6706",
        ))
        .unwrap();
        let inputs = [vec![0x00], vec![0x5a; 17]];
        let points: Vec<_> = inputs.iter().map(|input| hash.hash(input)).collect();
        let blinded = raise(&blind, &points);
        assert_eq!(
            blinded[..32],
            decode_hex("609a0ae68c15a3cf6903766461307e5c8bb2f95e7e6550e1ffa2dc99e412803c")
        );
        assert_eq!(
            blinded[32..],
            decode_hex("da27ef466870f5f15296299850aa088629945a17d1f5b7f5ff043f76b3c06418")
        );
        let key = Exponent::from_scalar(scalar(
            "5ebcea5ee37023ccb9fc2d2019f9d7737be85591ae8652ffa9ef0f4d37063b0e",
        ))
        .unwrap();
        let first: [u8; 32] = blinded[..32].try_into().unwrap();
        let mut evaluated = [0u8; 32];
        key.raise_into(&[first], point::decode, POINT_BYTES, &mut evaluated)
            .unwrap();
        assert_eq!(
            evaluated[..],
            decode_hex("7ec6578ae5120958eb2db1745758ff379e77cb64fe77b0b2d8cc917ea0869c7e")
        );
        assert!(CompressedRistretto(evaluated).decompress().is_some());
    }
}
