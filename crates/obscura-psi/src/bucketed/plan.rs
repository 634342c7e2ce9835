//! The bucket plan both parties follow: the key that sends an item to its bucket (agreed before
//! either party reads its input), then, once both have counted their rows, how many buckets and
//! the size every bucket is padded to.

use crate::kinds;
use std::hash::Hasher;

use sha2::{Digest, Sha256};
use siphasher::sip::SipHasher24;

use crate::hello::{self, Hello};
use crate::load::max_load;
use crate::transport::Transport;
use crate::{HelloError, PsiError, Role};

/// The most buckets.
pub const MAX_BUCKETS: u64 = 1024;

/// A bucket overflows its padded size with probability at most `2^-FAILURE_BITS`.
const FAILURE_BITS: f64 = 40.0;

/// Bytes of one party's opening: its handshake (item count 0: not known yet), the bucket size
/// it asks for (`u64` LE) and its nonce.
const OPENING_LEN: usize = hello::LEN + 8 + 32;

/// What one party announces before reading its input.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Opening {
    /// The session every bucket runs: protocol, role, options (its item count is ignored).
    pub session: Hello,
    /// The most distinct items it wants in one bucket.
    pub bucket_items: u64,
    /// Its share of the bucketing key, from the OS CSPRNG.
    pub nonce: [u8; 32],
}

impl Opening {
    fn encode(&self) -> [u8; OPENING_LEN] {
        let mut bytes = [0u8; OPENING_LEN];
        let session = Hello {
            items: 0,
            ..self.session
        };
        bytes[..hello::LEN].copy_from_slice(&session.encode());
        bytes[hello::LEN..hello::LEN + 8].copy_from_slice(&self.bucket_items.to_le_bytes());
        bytes[hello::LEN + 8..].copy_from_slice(&self.nonce);
        bytes
    }

    fn decode(bytes: &[u8]) -> Result<Self, HelloError> {
        if bytes.len() != OPENING_LEN {
            return Err(HelloError::Length {
                len: bytes.len(),
                expected: OPENING_LEN,
            });
        }
        let (session, rest) = bytes.split_at(hello::LEN);
        let (bucket_items, nonce) = rest.split_at(8);
        Ok(Self {
            session: Hello::decode(session)?,
            bucket_items: u64::from_le_bytes(bucket_items.try_into().expect("8 bytes")),
            nonce: nonce.try_into().expect("32 bytes"),
        })
    }
}

/// The keyed hash that places items in buckets: SipHash-2-4 (a PRF) under a key neither party
/// chose alone, so the items of an honest party land independently and uniformly.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct BucketKey([u8; 16]);

impl BucketKey {
    /// The 64-bit hash of `item`.
    pub(crate) fn hash(&self, item: &[u8]) -> u64 {
        let mut hasher = SipHasher24::new_with_key(&self.0);
        hasher.write(item);
        hasher.finish()
    }
}

/// The plan of one bucketed session, the same on both sides.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BucketPlan {
    buckets: u64,
    client_size: u64,
    server_size: u64,
}

impl BucketPlan {
    /// The plan for sets of `client_rows` and `server_rows` rows with at most about
    /// `bucket_items` items per bucket.
    pub(crate) fn new(client_rows: u64, server_rows: u64, bucket_items: u64) -> Self {
        let largest = client_rows.max(server_rows);
        let buckets = largest.div_ceil(bucket_items.max(1)).clamp(1, MAX_BUCKETS);
        Self {
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

    /// The bucket of an item of [`BucketKey::hash`] `hash`: `hash · buckets / 2^64` (a 64-bit
    /// multiply-high: buckets are consecutive ranges of hashes, without bias worth speaking of).
    pub(crate) fn bucket_of_hash(&self, hash: u64) -> u64 {
        ((u128::from(hash) * u128::from(self.buckets)) >> 64) as u64
    }
}

/// A size no bucket of `rows` distinct items spread over `buckets` buckets exceeds, except with
/// probability `2^-40` (Bernstein's inequality with a union bound over the buckets); the row
/// count itself for one bucket (nothing to hide then). Duplicate rows only lower the count of
/// distinct items, so the row count is a safe stand-in for it.
pub fn padded_size(rows: u64, buckets: u64) -> u64 {
    max_load(rows, buckets, FAILURE_BITS)
}

/// Exchanges the openings, checks that the two sessions fit (protocol, roles, options, bucket
/// size) and returns the bucketing key: derived from both nonces (client's first), so neither
/// party picks it alone.
pub(crate) fn agree_key<T: Transport + ?Sized>(
    transport: &mut T,
    ours: &Opening,
) -> Result<BucketKey, PsiError> {
    transport.send(kinds::BUCKET_PLAN, &ours.encode())?;
    let peer = Opening::decode(&hello::recv_opening(
        transport,
        kinds::BUCKET_PLAN,
        OPENING_LEN,
    )?)?;
    ours.session.check_peer(&peer.session)?;
    if peer.bucket_items != ours.bucket_items {
        return Err(HelloError::BucketSizeMismatch {
            ours: ours.bucket_items,
            theirs: peer.bucket_items,
        }
        .into());
    }
    let (client, server) = match ours.session.role {
        Role::Client => (ours, &peer),
        Role::Server => (&peer, ours),
    };
    let digest = Sha256::new()
        .chain_update(b"obscura-psi bucket key v2")
        .chain_update(client.nonce)
        .chain_update(server.nonce)
        .finalize();
    Ok(BucketKey(digest[..16].try_into().expect("16 bytes")))
}

/// Exchanges the row counts (duplicates included) and returns the common plan and the peer's
/// count.
pub(crate) fn agree_plan<T: Transport + ?Sized>(
    transport: &mut T,
    role: Role,
    rows: u64,
    bucket_items: u64,
) -> Result<(BucketPlan, u64), PsiError> {
    transport.send(kinds::BUCKET_ROWS, &rows.to_le_bytes())?;
    let peer: [u8; 8] = crate::chunk::recv_array(transport, kinds::BUCKET_ROWS)?;
    let peer = u64::from_le_bytes(peer);
    let (client, server) = match role {
        Role::Client => (rows, peer),
        Role::Server => (peer, rows),
    };
    Ok((BucketPlan::new(client, server, bucket_items), peer))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Protocol;

    #[test]
    fn one_bucket_needs_no_padding() {
        assert_eq!(padded_size(1000, 1), 1000);
        let plan = BucketPlan::new(10, 1000, 1 << 20);
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
        let key = BucketKey([7; 16]);
        let plan = BucketPlan::new(200_000, 200_000, 10_000);
        assert_eq!(plan.buckets(), 20);
        let mut counts = vec![0u64; 20];
        for i in 0..200_000u64 {
            counts[plan.bucket_of_hash(key.hash(&i.to_le_bytes())) as usize] += 1;
        }
        let size = plan.padded_size(Role::Client);
        assert!(counts.iter().all(|&c| c <= size), "{counts:?} vs {size}");
        assert!(counts.iter().all(|&c| c > 9_000), "{counts:?}");
    }

    #[test]
    fn buckets_are_ranges_of_hashes() {
        let plan = BucketPlan::new(3_000, 10, 1_000);
        assert_eq!(plan.buckets(), 3);
        assert_eq!(plan.bucket_of_hash(0), 0);
        assert_eq!(plan.bucket_of_hash(u64::MAX / 3), 0);
        assert_eq!(plan.bucket_of_hash(u64::MAX / 3 + 1), 1);
        assert_eq!(plan.bucket_of_hash(u64::MAX), 2);
    }

    #[test]
    fn openings_round_trip() {
        let ours = Opening {
            session: Hello {
                protocol: Protocol::Rr22,
                role: Role::Server,
                items: 0,
                both_learn: true,
            },
            bucket_items: 1 << 20,
            nonce: [9; 32],
        };
        assert_eq!(Opening::decode(&ours.encode()), Ok(ours));
        assert!(Opening::decode(&ours.encode()[..OPENING_LEN - 1]).is_err());
        let mut other_version = ours.encode();
        other_version[8] ^= 1;
        assert!(matches!(
            Opening::decode(&other_version),
            Err(HelloError::Version { .. })
        ));
    }
}
