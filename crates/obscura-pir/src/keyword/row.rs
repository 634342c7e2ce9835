//! The row layout: key digests, the row check, the filter hash and the per-key mask digits.
//!
//! A row is `check ‖ len ‖ value ‖ zero padding`; its `len` takes the fewest bytes that hold the
//! longest value, or none when every value has the same length.

use obscura_math::mix::{mix64, mixed_bytes};
use sha2::{Digest as _, Sha256};

/// Bytes of a key digest; the filter hash and the duplicate check use all of them.
pub const DIGEST_BYTES: usize = 32;

/// Bytes of the check stored in each row and compared when decoding (128 bits).
pub const CHECK_BYTES: usize = 16;

/// The domain-separation string the row check's hash starts with.
const ROW_CHECK_DOMAIN: &[u8] = b"obscura/keyword/row/v1";

/// The fewest bytes that hold every length up to `max_value`, or none when every value is
/// `max_value` bytes long (the length is then implied).
pub(super) fn length_bytes(max_value: u64, uniform: bool) -> u8 {
    if uniform {
        0
    } else {
        (u64::BITS - max_value.leading_zeros()).div_ceil(8).max(1) as u8
    }
}

/// Bytes of a row before the value: the check, then a length of `length_bytes` bytes.
pub(super) fn row_header(length_bytes: u8) -> usize {
    CHECK_BYTES + usize::from(length_bytes)
}

/// The 32-byte digest of a key (SHA-256, domain-separated).
pub fn key_digest(key: &[u8]) -> [u8; DIGEST_BYTES] {
    let mut hash = Sha256::new();
    hash.update(b"obscura/keyword/key/v1");
    hash.update(key);
    hash.finalize().into()
}

/// The check a row stores: the first [`CHECK_BYTES`] of SHA-256 over a domain-separation
/// string, the key's digest, the value's length (u64 LE) and the value. It binds the value to the
/// key, so a decoded row whose value was altered fails the check like a row of another key.
pub fn row_check(digest: &[u8; DIGEST_BYTES], value: &[u8]) -> [u8; CHECK_BYTES] {
    let mut hash = Sha256::new();
    hash.update(ROW_CHECK_DOMAIN);
    hash.update(digest);
    hash.update((value.len() as u64).to_le_bytes());
    hash.update(value);
    hash.finalize()[..CHECK_BYTES]
        .try_into()
        .expect("check bytes")
}

/// The four little-endian 64-bit words of 32 bytes.
fn words(bytes: &[u8; 32]) -> [u64; 4] {
    std::array::from_fn(|i| {
        u64::from_le_bytes(bytes[8 * i..8 * i + 8].try_into().expect("8 bytes"))
    })
}

/// The 64-bit filter hash of a key digest under a (public) filter seed: a fold of MurmurHash3's
/// finalizer over the digest and seed words.
pub fn filter_hash(seed: &[u8; 32], digest: &[u8; DIGEST_BYTES]) -> u64 {
    words(digest)
        .into_iter()
        .zip(words(seed))
        .fold(0u64, |acc, (w, s)| {
            mix64(acc.wrapping_add(mix64(w.wrapping_add(s))))
        })
}

/// Digit `j` of the per-key mask, one at a time: the reference [`mask_digits`] is tested against.
#[cfg(test)]
pub(super) fn mask_digit(hash: u64, j: usize, log_p: u8) -> u8 {
    (mix64(hash.wrapping_add(j as u64)) & ((1u64 << log_p) - 1)) as u8
}

/// Digits `first .. first + out.len()` of the per-key mask: digit `j` is the low `log_p` bits of
/// `mix64(hash + j)`.
pub(super) fn mask_digits(hash: u64, first: usize, log_p: u8, out: &mut [u8]) {
    mixed_bytes(
        hash.wrapping_add(first as u64),
        ((1u16 << log_p) - 1) as u8,
        out,
    );
}
