//! The bucket plan both parties follow: how many buckets, the key that sends an item to its
//! bucket, and the size every bucket is padded to.

use sha2::{Digest, Sha256};

use crate::load::max_load;
use crate::transport::{FrameKind, Transport};
use crate::{hello, HelloError, PsiError, Role};

/// The most buckets: each is one open file while partitioning.
pub const MAX_BUCKETS: u64 = 1024;

/// A bucket overflows its padded size with probability at most `2^-FAILURE_BITS`.
const FAILURE_BITS: f64 = 40.0;

/// Bytes of one party's plan announcement: rows (`u64` LE), bucket size (`u64` LE), nonce.
const LEN: usize = 8 + 8 + 32;

/// What one party announces before partitioning.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Announcement {
    /// Its number of input rows (duplicates included).
    pub rows: u64,
    /// The most distinct items it wants in one bucket.
    pub bucket_items: u64,
    /// Its share of the bucketing key, from the OS CSPRNG.
    pub nonce: [u8; 32],
}

impl Announcement {
    fn encode(&self) -> [u8; LEN] {
        let mut bytes = [0u8; LEN];
        bytes[..8].copy_from_slice(&self.rows.to_le_bytes());
        bytes[8..16].copy_from_slice(&self.bucket_items.to_le_bytes());
        bytes[16..].copy_from_slice(&self.nonce);
        bytes
    }

    fn decode(bytes: &[u8]) -> Result<Self, HelloError> {
        let bytes: &[u8; LEN] = bytes.try_into().map_err(|_| HelloError::Length {
            len: bytes.len(),
            expected: LEN,
        })?;
        let word = |at: usize| {
            let mut word = [0u8; 8];
            word.copy_from_slice(&bytes[at..at + 8]);
            u64::from_le_bytes(word)
        };
        let mut nonce = [0u8; 32];
        nonce.copy_from_slice(&bytes[16..]);
        Ok(Self {
            rows: word(0),
            bucket_items: word(8),
            nonce,
        })
    }
}

/// The plan of one bucketed session, the same on both sides.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BucketPlan {
    key: [u8; 32],
    buckets: u64,
    client_size: u64,
    server_size: u64,
}

impl BucketPlan {
    /// The plan for sets of `client_rows` and `server_rows` rows with at most about
    /// `bucket_items` items per bucket, hashing with `key`.
    pub(crate) fn new(
        key: [u8; 32],
        client_rows: u64,
        server_rows: u64,
        bucket_items: u64,
    ) -> Self {
        let largest = client_rows.max(server_rows);
        let buckets = largest.div_ceil(bucket_items.max(1)).clamp(1, MAX_BUCKETS);
        Self {
            key,
            buckets,
            client_size: padded_size(client_rows, buckets),
            server_size: padded_size(server_rows, buckets),
        }
    }

    /// The number of buckets.
    pub fn buckets(&self) -> u64 {
        self.buckets
    }

    /// The number of distinct items (real and dummy) each bucket of `role` enters the protocol
    /// with.
    pub fn padded_size(&self, role: Role) -> u64 {
        match role {
            Role::Client => self.client_size,
            Role::Server => self.server_size,
        }
    }

    /// The bucket of `item`: a keyed SHA-256 of the item, mapped to `0..buckets` without bias
    /// worth speaking of (a 64-bit multiply-high).
    pub(crate) fn bucket_of(&self, item: &[u8]) -> u64 {
        let digest = Sha256::new()
            .chain_update(self.key)
            .chain_update(item)
            .finalize();
        let mut word = [0u8; 8];
        word.copy_from_slice(&digest[..8]);
        ((u128::from(u64::from_le_bytes(word)) * u128::from(self.buckets)) >> 64) as u64
    }
}

/// A size no bucket of `rows` distinct items spread over `buckets` buckets exceeds, except with
/// probability `2^-40` (Bernstein's inequality with a union bound over the buckets); the row
/// count itself for one bucket (nothing to hide then). Duplicate rows only lower the count of
/// distinct items, so the row count is a safe stand-in for it.
pub fn padded_size(rows: u64, buckets: u64) -> u64 {
    max_load(rows, buckets, FAILURE_BITS)
}

/// Exchanges the plan announcements and returns the common plan: the key is SHA-256 of both
/// nonces (client's first), so neither party picks it alone. Both must ask for the same bucket
/// size.
pub(crate) fn agree<T: Transport + ?Sized>(
    transport: &mut T,
    role: Role,
    ours: &Announcement,
) -> Result<(BucketPlan, Announcement), PsiError> {
    transport.send(FrameKind::BucketPlan, &ours.encode())?;
    let peer = Announcement::decode(&hello::recv_opening(transport, FrameKind::BucketPlan, LEN)?)?;
    if peer.bucket_items != ours.bucket_items {
        return Err(HelloError::BucketSizeMismatch {
            ours: ours.bucket_items,
            theirs: peer.bucket_items,
        }
        .into());
    }
    let (client, server) = match role {
        Role::Client => (ours, &peer),
        Role::Server => (&peer, ours),
    };
    let key: [u8; 32] = Sha256::new()
        .chain_update(b"obscura-psi bucket key v1")
        .chain_update(client.nonce)
        .chain_update(server.nonce)
        .finalize()
        .into();
    let plan = BucketPlan::new(key, client.rows, server.rows, ours.bucket_items);
    Ok((plan, peer))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_bucket_needs_no_padding() {
        assert_eq!(padded_size(1000, 1), 1000);
        let plan = BucketPlan::new([1; 32], 10, 1000, 1 << 20);
        assert_eq!(plan.buckets(), 1);
        assert_eq!(plan.padded_size(Role::Client), 10);
        assert_eq!(plan.padded_size(Role::Server), 1000);
    }

    #[test]
    fn padding_is_small_for_large_buckets() {
        // 2^26 rows in 64 buckets of 2^20: under 1% of padding.
        let size = padded_size(1 << 26, 64);
        assert!(
            size > 1 << 20 && size < (1 << 20) + (1 << 20) / 100,
            "{size}"
        );
        assert_eq!(padded_size(5, 4), 5); // never more than the rows
    }

    /// Empirically, no bucket of a random spread exceeds its padded size.
    #[test]
    fn buckets_stay_within_their_padded_size() {
        let plan = BucketPlan::new([7; 32], 200_000, 200_000, 10_000);
        assert_eq!(plan.buckets(), 20);
        let mut counts = vec![0u64; 20];
        for i in 0..200_000u64 {
            counts[plan.bucket_of(&i.to_le_bytes()) as usize] += 1;
        }
        let size = plan.padded_size(Role::Client);
        assert!(counts.iter().all(|&c| c <= size), "{counts:?} vs {size}");
        assert!(counts.iter().all(|&c| c > 9_000), "{counts:?}");
    }

    #[test]
    fn announcements_round_trip() {
        let ours = Announcement {
            rows: 1 << 40,
            bucket_items: 1 << 20,
            nonce: [9; 32],
        };
        assert_eq!(Announcement::decode(&ours.encode()), Ok(ours));
        assert!(Announcement::decode(&ours.encode()[..LEN - 1]).is_err());
    }
}
