//! Checking the group elements a peer sends.

use curve25519_dalek::ristretto::{CompressedRistretto, RistrettoPoint};

use crate::PeerError;

/// The point encoded by `bytes`, which must be a canonical ristretto255 encoding of a point
/// other than the identity (whose encoding, the only all-zero one, is refused first).
pub(crate) fn decode(bytes: &[u8; 32]) -> Result<RistrettoPoint, PeerError> {
    if bytes == &[0u8; 32] {
        return Err(PeerError::IdentityPoint);
    }
    CompressedRistretto(*bytes)
        .decompress()
        .ok_or(PeerError::InvalidPoint)
}
