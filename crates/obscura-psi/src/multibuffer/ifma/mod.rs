//! The AVX-512 IFMA kernel: eight independent ristretto255 points per instruction stream, in
//! radix 2^51 with 52-bit multiply-accumulate (`vpmadd52luq`, `vpmadd52huq`).
//!
//! All functions need AVX-512 F, DQ and IFMA; [`super::Ifma`] is the only caller and exists only
//! on CPUs that have them.

mod constants;
mod edwards;
mod field;
mod ristretto;
#[cfg(test)]
mod tests;

use super::digits::Digits;
use crate::{point, PeerError};

/// Points per vector.
const LANES: usize = 8;

/// For each 64-byte uniform string, the point RFC 9496 derives from it raised to the scalar of
/// `digits`; writes the first `width` bytes of each encoding to the next `width` bytes of `out`.
#[target_feature(enable = "avx512f,avx512dq,avx512ifma")]
pub(super) fn raise_uniform(digits: &Digits, strings: &[[u8; 64]], width: usize, out: &mut [u8]) {
    for (group, out) in strings.chunks(LANES).zip(out.chunks_mut(LANES * width)) {
        let raised = ristretto::from_uniform_bytes(&padded(group)).mul(digits);
        point::write_prefixes(&ristretto::encode(&raised), width, out);
    }
}

/// For each encoding, the decoded point raised to the scalar of `digits`; writes the first
/// `width` bytes of each encoding to the next `width` bytes of `out`. Fails, as
/// [`crate::point::decode`] does, on the identity's encoding or on an invalid one.
#[target_feature(enable = "avx512f,avx512dq,avx512ifma")]
pub(super) fn raise_encoded(
    digits: &Digits,
    encodings: &[[u8; 32]],
    width: usize,
    out: &mut [u8],
) -> Result<(), PeerError> {
    for (group, out) in encodings.chunks(LANES).zip(out.chunks_mut(LANES * width)) {
        group.iter().try_for_each(point::refuse_identity)?;
        let (decoded, valid) = ristretto::decode(&padded(group));
        let used = u8::MAX >> (LANES - group.len());
        if valid & used != used {
            return Err(PeerError::InvalidPoint);
        }
        point::write_prefixes(&ristretto::encode(&decoded.mul(digits)), width, out);
    }
    Ok(())
}

/// A group of one to eight inputs as eight lanes, the last input repeated in the spare ones.
fn padded<T: Copy>(group: &[T]) -> [T; LANES] {
    std::array::from_fn(|lane| group[lane.min(group.len() - 1)])
}
