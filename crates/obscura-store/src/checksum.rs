//! The checksum of a database file: SHA-256 over the public setup's length, the setup, and the
//! SHA-256 of the matrices, which is itself the SHA-256 of the list of SHA-256s of their bytes
//! in chunks of [`CHUNK_BYTES`] (the last one shorter). The chunks are hashed in parallel, on
//! load and on write, and a setup streamed to disk is hashed as its matrix is written, before
//! the public setup exists.

use rayon::prelude::*;
use sha2::{Digest as _, Sha256};

/// Bytes of matrix hashed on their own.
pub const CHUNK_BYTES: usize = 64 << 20;

/// The checksum of a payload with public setup `setup` and matrices whose
/// [`MatrixHasher`] digest is `matrices`.
pub fn payload_checksum(setup: &[u8], matrices: &[u8; 32]) -> [u8; 32] {
    checksum(setup.len() as u64, setup, matrices)
}

/// SHA-256 over the setup length `setup_len` as written, the setup and the matrices' digest.
fn checksum(setup_len: u64, setup: &[u8], matrices: &[u8; 32]) -> [u8; 32] {
    let mut hash = Sha256::new();
    hash.update(setup_len.to_le_bytes());
    hash.update(setup);
    hash.update(matrices);
    hash.finalize().into()
}

/// The checksum of a whole `payload`: the setup's length (its first 8 bytes), the setup and
/// the matrices after it (a length beyond the payload takes all of it as the setup).
pub fn checksum_of_payload(payload: &[u8]) -> [u8; 32] {
    let setup_len = payload
        .get(..8)
        .map_or(0, |b| u64::from_le_bytes(b.try_into().expect("8 bytes")));
    let rest = payload.get(8..).unwrap_or_default();
    let split = usize::try_from(setup_len)
        .unwrap_or(usize::MAX)
        .min(rest.len());
    let (setup, matrices) = rest.split_at(split);
    checksum(setup_len, setup, &MatrixHasher::digest(matrices))
}

/// The digest of matrix bytes handed over in pieces of any size, in order.
pub struct MatrixHasher {
    chunk_bytes: usize,
    chunks: Sha256,
    partial: Sha256,
    partial_len: usize,
}

impl Default for MatrixHasher {
    fn default() -> Self {
        Self::with_chunks(CHUNK_BYTES)
    }
}

impl MatrixHasher {
    /// A hasher of chunks of `chunk_bytes` (tests use small ones).
    fn with_chunks(chunk_bytes: usize) -> Self {
        Self {
            chunk_bytes,
            chunks: Sha256::new(),
            partial: Sha256::new(),
            partial_len: 0,
        }
    }

    /// The digest of `bytes`, all the matrices at once.
    pub fn digest(bytes: &[u8]) -> [u8; 32] {
        let mut hasher = Self::default();
        hasher.update(bytes);
        hasher.finish()
    }

    /// Hashes the next `bytes`: the chunk begun before is completed, the whole chunks are
    /// hashed in parallel, and the rest begins the next chunk.
    pub fn update(&mut self, mut bytes: &[u8]) {
        if self.partial_len > 0 {
            let take = (self.chunk_bytes - self.partial_len).min(bytes.len());
            self.partial.update(&bytes[..take]);
            self.partial_len += take;
            bytes = &bytes[take..];
            if self.partial_len < self.chunk_bytes {
                return;
            }
            let full = std::mem::take(&mut self.partial);
            self.chunks.update(full.finalize());
            self.partial_len = 0;
        }
        let whole = bytes.len() / self.chunk_bytes * self.chunk_bytes;
        let hashes: Vec<[u8; 32]> = bytes[..whole]
            .par_chunks(self.chunk_bytes)
            .map(|chunk| Sha256::digest(chunk).into())
            .collect();
        for hash in hashes {
            self.chunks.update(hash);
        }
        self.partial.update(&bytes[whole..]);
        self.partial_len = bytes.len() - whole;
    }

    /// The digest of everything hashed.
    pub fn finish(mut self) -> [u8; 32] {
        if self.partial_len > 0 {
            self.chunks.update(self.partial.finalize());
        }
        self.chunks.finalize().into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn a_payload_checksum_covers_its_parts() {
        let setup = b"setup bytes";
        let matrices = [3u8; 100];
        let mut payload = (setup.len() as u64).to_le_bytes().to_vec();
        payload.extend_from_slice(setup);
        payload.extend_from_slice(&matrices);
        let expected = payload_checksum(setup, &MatrixHasher::digest(&matrices));
        assert_eq!(checksum_of_payload(&payload), expected);
        payload[20] ^= 1;
        assert_ne!(checksum_of_payload(&payload), expected);
        // Lengths past the end, and payloads too short for one, are hashed, not refused.
        for short in [&[][..], &[1, 2, 3], &u64::MAX.to_le_bytes()] {
            let _ = checksum_of_payload(short);
        }
    }

    #[test]
    fn the_digest_is_the_hash_of_the_chunk_hashes() {
        let bytes: Vec<u8> = (0..1000u32).map(|i| (i * 7) as u8).collect();
        let mut hasher = MatrixHasher::with_chunks(300);
        hasher.update(&bytes);
        let mut list = Sha256::new();
        for chunk in bytes.chunks(300) {
            list.update(Sha256::digest(chunk));
        }
        assert_eq!(hasher.finish(), <[u8; 32]>::from(list.finalize()));
        assert_eq!(
            MatrixHasher::digest(&[]),
            <[u8; 32]>::from(Sha256::digest([]))
        );
    }

    proptest! {
        #[test]
        fn pieces_of_any_size_give_the_same_digest(
            bytes in proptest::collection::vec(any::<u8>(), 0..2000),
            cuts in proptest::collection::vec(0usize..2000, 0..6),
            chunk in 1usize..400,
        ) {
            let mut whole = MatrixHasher::with_chunks(chunk);
            whole.update(&bytes);
            let mut cuts: Vec<usize> = cuts.into_iter().map(|c| c.min(bytes.len())).collect();
            cuts.sort_unstable();
            let mut pieces = MatrixHasher::with_chunks(chunk);
            let mut start = 0;
            for cut in cuts.into_iter().chain([bytes.len()]) {
                pieces.update(&bytes[start..cut]);
                start = cut;
            }
            prop_assert_eq!(pieces.finish(), whole.finish());
        }
    }
}
