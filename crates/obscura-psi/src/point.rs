//! Checking the group elements a peer sends, and writing the ones we send.

use curve25519_dalek::ristretto::{CompressedRistretto, RistrettoPoint};

use crate::PeerError;

/// The point encoded by `bytes`, which must be a canonical ristretto255 encoding of a point
/// other than the identity (whose encoding, the only all-zero one, is refused first).
pub(crate) fn decode(bytes: &[u8; 32]) -> Result<RistrettoPoint, PeerError> {
    refuse_identity(bytes)?;
    CompressedRistretto(*bytes)
        .decompress()
        .ok_or(PeerError::InvalidPoint)
}

/// Refuses the identity's encoding, the only all-zero one: no honest party sends it.
pub(crate) fn refuse_identity(bytes: &[u8; 32]) -> Result<(), PeerError> {
    if bytes == &[0u8; 32] {
        return Err(PeerError::IdentityPoint);
    }
    Ok(())
}

/// Writes the first `width` bytes (at most 32) of each encoding into the next `width` bytes of
/// `out`, for as many encodings as `out` has room for.
pub(crate) fn write_prefixes<'a>(
    encodings: impl IntoIterator<Item = &'a [u8; 32]>,
    width: usize,
    out: &mut [u8],
) {
    for (out, encoding) in out.chunks_exact_mut(width).zip(encodings) {
        out.copy_from_slice(&encoding[..width]);
    }
}

#[cfg(test)]
mod tests {
    use curve25519_dalek::constants::RISTRETTO_BASEPOINT_POINT;
    use curve25519_dalek::scalar::Scalar;

    use super::*;
    use crate::rfc9496_vectors::{hex, BAD_ENCODINGS, MULTIPLES_OF_THE_GENERATOR};

    /// RFC 9496 appendix A.1: the encodings of 1 B, ..., 15 B (0 B, the identity, is refused).
    #[test]
    fn rfc9496_multiples_of_the_generator_decode() {
        for (k, encoding) in (0u8..).zip(MULTIPLES_OF_THE_GENERATOR.map(hex)).skip(1) {
            let point = decode(&encoding).unwrap();
            assert_eq!(point, Scalar::from(k) * RISTRETTO_BASEPOINT_POINT, "{k} B");
            assert_eq!(point.compress().to_bytes(), encoding);
        }
        assert_eq!(
            decode(&hex(MULTIPLES_OF_THE_GENERATOR[0])),
            Err(PeerError::IdentityPoint)
        );
    }

    /// The bad encodings of RFC 9496 appendix A.2 are all refused.
    #[test]
    fn rfc9496_bad_encodings_are_refused() {
        for encoding in BAD_ENCODINGS.map(hex) {
            assert_eq!(
                decode(&encoding),
                Err(PeerError::InvalidPoint),
                "{encoding:02x?}"
            );
        }
    }
}
