//! ECDH-PSI over ristretto255: the commutative-blinding protocol of Meadows (1986) and
//! Huberman, Franklin and Hogg (1999), in the semi-honest model.
//!
//! # Protocol
//!
//! Each party de-duplicates its items and draws a secret non-zero scalar from the OS CSPRNG: the
//! client `a`, the server `b`. `H` is RFC 9380 hash-to-ristretto255 (see [`crate::hash_to_group`]).
//! After the handshake (which fixes both set sizes `n_c`, `n_s`):
//!
//! 1. the client sends `H(x)^a` for its items, in chunks; the server answers each chunk with
//!    the tags of `(H(x)^a)^b = H(x)^{ab}`, in the same order (lockstep: one chunk in flight
//!    each way, so no socket buffer size can deadlock it, while the client already blinds its
//!    next chunk);
//! 2. the server sends `H(y)^b` for its items in a uniformly random order (an OS-CSPRNG
//!    shuffle), in chunks; the client computes the tags of `(H(y)^b)^a = H(y)^{ab}` and looks
//!    them up among the tags of its own items: the items whose tag appears are the intersection;
//! 3. with *both learn*, the client sends the positions (in the shuffled sequence) of the
//!    server's elements that matched, and the server maps them back to its items.
//!
//! If either set is empty, both parties know from the handshake that the intersection is empty
//! and the session ends there. A tag is the first [`tag_bytes`]`(n_c, n_s)` bytes of a point's
//! encoding. Every point is sent as its 32-byte ristretto255 encoding. Points are computed in
//! parallel on the caller's rayon pool, 64 at a time, by the fastest code for the CPU
//! ([`kernel`]): a multi-buffer kernel that runs eight points per AVX-512 IFMA instruction
//! stream, from the hash or the peer's encoding to the result's encoding, or else
//! curve25519-dalek, one point at a time with batched encoding (one inversion per 64 points).
//!
//! # Security
//!
//! - **Assumption.** ristretto255 is a prime-order group (order ℓ ≈ 2^252) in which the
//!   decisional Diffie-Hellman problem is believed hard (about 128-bit security); `H` is modelled
//!   as a random oracle. Under DDH in the random-oracle model, the values `H(z)^a`, `H(z)^b` and
//!   `H(z)^{ab}` for items the other party does not hold are indistinguishable from random group
//!   elements, so the protocol is secure against semi-honest (honest-but-curious) parties.
//!   It is not secure against a malicious peer, who could for instance answer with tags of
//!   its choice.
//! - **What the client learns:** the server's set size `n_s` and the intersection; the other
//!   server elements look random, and the shuffle hides the server's input order.
//! - **What the server learns:** the client's set size `n_c` (the client's points look random),
//!   and with *both learn* the intersection; nothing else.
//! - **Duplicates** are removed before the protocol (equal items would give equal points and
//!   reveal their multiplicity); the [`crate::Outcome`] reports how many were dropped.
//! - **False positives.** Tags are `40 + ⌈log2 n_c⌉ + ⌈log2 n_s⌉` bits rounded up to bytes, so
//!   the chance that some server item outside the intersection has the tag of some client item
//!   is at most `n_c · n_s · 2^-(40 + log2 n_c + log2 n_s) = 2^-40` (union bound over pairs of
//!   pseudorandom tags). The same bound covers two client items with equal tags, which the
//!   client treats as a protocol error ([`crate::PeerError::RepeatedTag`]).
//! - **Group elements from the peer** are decompressed, which accepts only canonical
//!   encodings of points in the group, and the identity is refused: no honest party sends it.
//!   A chunk must hold between one element and what remains of the announced count, so a peer
//!   can send neither more nor fewer elements than its handshake said without an error.
//!
//! # Cost
//!
//! Each party hashes its own items once and performs one variable-base scalar multiplication
//! per item of each set (`n_c + n_s` in all). The client sends `32 n_c` bytes (plus 8 per match
//! when both learn) and the server sends `tag_bytes · n_c + 32 n_s` bytes, plus 5 bytes per frame
//! and the 26-byte handshake each way.

mod client;
pub mod messages;
mod server;

use obscura_math::sample::OsSampler;

use crate::core::Core;
use crate::exponent::{Exponent, Raiser, POINT_BYTES};
use crate::hash_to_group::HashToGroup;
use crate::hello::Hello;
use crate::shuffle::random_permutation;
use crate::wire::FrameKind;
use crate::{Progress, PsiError, Role};

/// Client to server: a chunk of the client's items, hashed and raised to its key.
pub const CLIENT_POINTS: FrameKind = FrameKind::new(2, "client-points");
/// Server to client: the tags of a chunk of the client's points, in the same order.
pub const CLIENT_TAGS: FrameKind = FrameKind::new(3, "client-tags");
/// Server to client: a chunk of the server's items, hashed and raised to its key.
pub const SERVER_POINTS: FrameKind = FrameKind::new(4, "server-points");

/// The statistical security of the tag comparison: a false match has probability ≤ 2^-40.
pub const STATISTICAL_SECURITY_BITS: u32 = 40;

/// Bytes of a tag for sets of `n_client` and `n_server` distinct items:
/// `⌈(40 + ⌈log2 n_client⌉ + ⌈log2 n_server⌉) / 8⌉`, with each size counted as at least 2 and
/// the result at most 32 (a whole encoding).
pub fn tag_bytes(n_client: u64, n_server: u64) -> usize {
    tag_bytes_with(n_client, n_server, STATISTICAL_SECURITY_BITS)
}

/// [`tag_bytes`] for `security` bits of statistical security in place of 40.
fn tag_bytes_with(n_client: u64, n_server: u64, security: u32) -> usize {
    let ceil_log2 = |n: u64| u64::BITS - (n.max(2) - 1).leading_zeros();
    let bits = security
        .saturating_add(ceil_log2(n_client))
        .saturating_add(ceil_log2(n_server));
    (bits.div_ceil(8) as usize).min(POINT_BYTES)
}

/// The code that raises points to the secret exponents on this CPU, in words: the multi-buffer
/// AVX-512 IFMA kernel where the CPU has IFMA, curve25519-dalek's single-point path elsewhere.
pub fn kernel() -> &'static str {
    match Raiser::selected() {
        Raiser::MultiBuffer(_) => "multi-buffer AVX-512 IFMA, 8 points per instruction stream",
        Raiser::SinglePoint => "curve25519-dalek, one point at a time",
    }
}

/// What both roles share during one session.
struct Session<'p> {
    hash: HashToGroup,
    exponent: Exponent,
    n_client: u64,
    n_server: u64,
    tag_bytes: usize,
    both_learn: bool,
    progress: Progress<'p>,
}

impl Session<'_> {
    /// The encodings of `H(item)^k` for `items`, 32 bytes each, in order.
    fn blind(&self, items: &[&[u8]]) -> Vec<u8> {
        let mut points = vec![0u8; items.len() * POINT_BYTES];
        self.exponent
            .raise_items_into(&self.hash, items, POINT_BYTES, &mut points);
        points
    }

    /// The tags of `P^k` for the peer's points `P` encoded in `payload` (a whole number of
    /// 32-byte encodings), in order; fails on any invalid encoding or identity point.
    fn tags_of(&self, payload: &[u8]) -> Result<Vec<u8>, PsiError> {
        let (points, _) = payload.as_chunks::<POINT_BYTES>();
        let mut tags = vec![0u8; points.len() * self.tag_bytes];
        self.exponent
            .raise_points_into(points, self.tag_bytes, &mut tags)?;
        Ok(tags)
    }
}

/// The party of ECDH-PSI for our distinct `values` after the handshake (`ours` and `peer` are
/// the two announcements; both sets are non-empty, the caller settles the other case).
pub(crate) fn core<'a>(
    values: &'a [&'a [u8]],
    ours: &Hello,
    peer: &Hello,
    progress: Progress<'a>,
) -> Result<Box<dyn Core + Send + 'a>, PsiError> {
    let (n_client, n_server) = ours.set_sizes(peer);
    let mut rng = OsSampler::new();
    let session = Session {
        hash: HashToGroup::psi(),
        exponent: Exponent::random(&mut rng)?,
        n_client,
        n_server,
        tag_bytes: tag_bytes(n_client, n_server),
        both_learn: ours.both_learn,
        progress,
    };
    Ok(match ours.role {
        Role::Client => Box::new(client::Client::new(session, values)),
        Role::Server => {
            let order = random_permutation(values.len(), &mut rng)?;
            Box::new(server::Server::new(session, values, order))
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::by_hand;

    /// The two cores run in one thread with no transport ([`by_hand::run`]): both learn the
    /// plain intersection, with more items than one chunk holds.
    #[test]
    fn the_cores_run_by_hand_without_a_transport() {
        let (client_items, server_items) = by_hand::sets();
        let (client_values, server_values) = (
            by_hand::slices(&client_items),
            by_hand::slices(&server_items),
        );
        let (n_client, n_server) = (client_values.len() as u64, server_values.len() as u64);
        let mut rng = OsSampler::new();
        let session = |rng: &mut OsSampler| Session {
            hash: HashToGroup::psi(),
            exponent: Exponent::random(rng).unwrap(),
            n_client,
            n_server,
            tag_bytes: tag_bytes(n_client, n_server),
            both_learn: true,
            progress: &|_, _, _| {},
        };
        let (client_session, server_session) = (session(&mut rng), session(&mut rng));
        let order = random_permutation(server_values.len(), &mut rng).unwrap();
        let client = client::Client::new(client_session, &client_values);
        let server = server::Server::new(server_session, &server_values, order);
        let (client_matched, server_matched) = by_hand::run(Box::new(client), Box::new(server));
        by_hand::assert_plain(&client_values, &server_values, &client_matched.unwrap());
        by_hand::assert_plain(&server_values, &client_values, &server_matched.unwrap());
    }

    #[test]
    fn tags_have_40_bits_plus_the_logs_of_both_sizes() {
        assert_eq!(tag_bytes(0, 0), 6); // 40 + 1 + 1 bits
        assert_eq!(tag_bytes(1, 1000), 7); // 40 + 1 + 10
        assert_eq!(tag_bytes(1 << 20, 1 << 20), 10); // 40 + 20 + 20
        assert_eq!(tag_bytes((1 << 20) + 1, 1 << 20), 11); // 40 + 21 + 20
        assert_eq!(tag_bytes(u64::MAX, u64::MAX), 21); // 40 + 64 + 64
    }
}
