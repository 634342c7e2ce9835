//! KKRT-PSI: the OPRF-based protocol of Kolesnikov, Kumaresan, Rosulek and Trieu ("Efficient
//! batched oblivious PRF with applications to private set intersection", CCS 2016), in the
//! semi-honest model.
//!
//! # Protocol
//!
//! After the handshake (which fixes both set sizes `n_c`, `n_s`), with `m` cuckoo bins for the
//! client's items (module `cuckoo`) and the OPRF of module `kkrt::extension`:
//!
//! 1. **Base OTs** (client → server, then back): 512 Masny-Rindal OTs (module `base_ot`) with
//!    the client as OT *sender* (it ends with both seeds of each OT) and the server as
//!    *receiver* with secret choice bits `s`; one point from the client, two points per OT in one
//!    frame back.
//! 2. **Cuckoo hashing** (client → server): the client hashes its items to 128 bits, places
//!    them into `m` bins with three hash functions of a fresh public seed, and sends the seed.
//!    Empty bins get a random dummy input.
//! 3. **OT extension** (client → server): the client sends the matrix `U` in frames of
//!    [`FRAME_BLOCKS`] blocks of 128 bins; the server recovers `Q`, which gives it the OPRF key.
//!    The client computes its outputs `F(j, x)` for the bins `j` it fills.
//! 4. **Tags** (server → client): for each of its items `y`, in an OS-CSPRNG shuffled order,
//!    the server sends the three tags `F(h_1(y), y)`, `F(h_2(y), y)`, `F(h_3(y), y)` (the bin
//!    number is an input of the OPRF, and an item's three bins are distinct, so its three tags
//!    are unrelated values). A client item `x` in bin `j` is in the intersection exactly when
//!    its tag is among them: then `x = y` and `j` is one of the bins of `y`.
//! 5. **Both learn** (option, client → server): the client sends the positions, in the
//!    shuffled sequence of *items*, of the server items that matched,
//!    and the server maps them back through its shuffle.
//!
//! If either set is empty, both parties know from the handshake that the intersection is empty
//! and the session ends there.
//!
//! Progress: the client reports [`crate::Stage::OwnItems`] over its bins while it sends `U`
//! and [`crate::Stage::PeerItems`] over the server's items while it matches their tags; the
//! server reports `PeerItems` over the client's bins while it receives `U` and `OwnItems` over
//! its items while it sends their tags.
//!
//! # Parameters
//!
//! - **Code width 512 bits** (four AES blocks, module `kkrt::code`): KKRT's proof needs the codewords of
//!   any two distinct inputs of a session to differ in at least κ = 128 positions, so that
//!   `(C(x) ⊕ C(x')) ∧ s` keeps 128 bits of the server's secret, except with probability
//!   2^-40; for a random code their parameter table asks for at least 448 bits at PSI set
//!   sizes. At 512 bits one pair is closer than 128 positions with probability
//!   `P[Bin(512, 1/2) < 128] < 2^-102`, so even 2^62 pairs stay below 2^-40; and a multiple of
//!   128 keeps rows in whole AES blocks and whole 128 x 128 transposes.
//! - **Base OTs: 512** 128-bit seeds, one per code bit (κ = 128 computational security).
//! - **Bins:** three hash functions, `m = ⌈1.27 · max(n_c, 2^12)⌉` rounded up to a multiple of
//!   128 (see module `cuckoo`).
//! - **Tags:** [`tag_bytes`]`(n_c, n_s)` bytes, derived below.
//!
//! # Tag length
//!
//! The client compares each of its `n_c` outputs with the `3 n_s` tags of the server. A
//! server tag for an input other than the client's (another item, or the same item in another
//! bin) is the output of `H` on a value the client cannot predict, so it equals a given client
//! output with probability `2^-ℓ` for `ℓ`-bit tags. By the union bound over the `n_c · 3 n_s`
//! pairs, a false match has probability at most `n_c · 3 n_s · 2^-ℓ`, which is at most 2^-40 for
//! `ℓ = 40 + ⌈log2 n_c⌉ + ⌈log2 3 n_s⌉`, rounded up to whole bytes. That is exactly
//! [`crate::ecdh::tag_bytes`]`(n_c, 3 n_s)`, at most 32 bytes (one SHA-256 output). For 2^20
//! items on each side: 40 + 20 + 22 = 82 bits, 11 bytes.
//!
//! # Security
//!
//! - **Assumptions.** CDH in ristretto255 for the base OTs, AES-128 as a pseudorandom
//!   permutation (the PRG `G` of the OT extension and the code), SHA-256 as a random oracle
//!   (the base-OT KDF, the item hash and the OPRF output `H`); the KKRT proof then gives
//!   security against semi-honest parties, not against malicious ones.
//! - **What the client learns:** `n_s` and the intersection. The server's tags for items not
//!   in the intersection are outputs of the OPRF at points the client did not query, which look
//!   random; the shuffle hides the server's input order.
//! - **What the server learns:** `n_c` (through `m`) and, with both learn, the intersection.
//!   `U` is masked column by column by the expansion of a seed the server does not hold, and
//!   the cuckoo seed is public randomness independent of the client's set except for the
//!   negligible (≤ 2^-40 per seed) case of a retried placement. Match positions name items,
//!   not tags, so the server does not learn which of its bins (hence which hash function) the
//!   client used for a matching item, which depends on the client's other items.
//! - **Duplicates** are removed before the protocol; the [`crate::Outcome`] reports them.
//! - **Peer data** is bounded and checked at every step: the base-OT points are decoded and the
//!   identity refused, every frame has an exact expected length (seed, points, each frame of
//!   `U`) or holds a whole number of items up to what remains of the announced count (tags).
//!   The server adds rows of `Q` only as the client's frames arrive, so an announced set size
//!   alone does not make it allocate.
//!
//! # Cost
//!
//! The client sends `64 m + 48` bytes (about `1.27 · 512 = 650` bits per item), the server
//! `16384 + 3 · tag_bytes · n_s` bytes (264 bits per item at 2^20), plus 5 bytes per frame,
//! the handshake, and 8 bytes per match when both learn. Work is AES-NI for the expansion and
//! the code, SHA-256 for the outputs (`m + 3 n_s` evaluations), bit transposes, cuckoo
//! insertion and a hash table of the client's tags, in parallel on the caller's rayon pool
//! except the insertion and the lookups.

mod client;
mod server;

use obscura_math::sample::OsSampler;

use crate::core::Core;
use crate::cuckoo::{self, HASHES};
use crate::hello::Hello;
use crate::wire::FrameKind;
use crate::{ecdh, Progress, PsiError, Role};

/// Client to server: the public seed of the cuckoo hash functions.
pub const CUCKOO_SEED: FrameKind = FrameKind::new(9, "cuckoo-seed");

/// Blocks of 128 bins per frame of the OT-extension matrix `U` (256 KiB).
pub const FRAME_BLOCKS: usize = 32;

/// Bytes of a tag for `n_client` and `n_server` distinct items:
/// `⌈(40 + ⌈log2 n_client⌉ + ⌈log2 3 n_server⌉) / 8⌉` (each size counted as at least 2), at most
/// 32. See the module documentation for the derivation.
pub fn tag_bytes(n_client: u64, n_server: u64) -> usize {
    ecdh::tag_bytes(n_client, n_server.saturating_mul(HASHES as u64))
}

/// The number of cuckoo bins (rows of the OT extension) for a client with `n_client` distinct
/// items, a multiple of 128; `None` for a set too large for one session (more than `2^32 - 1`
/// bins).
pub fn bins(n_client: u64) -> Option<u32> {
    cuckoo::bin_count(n_client, crate::ot::kkrt::BLOCK_ROWS as u64)
}

/// What both roles share during one session.
#[derive(Clone, Copy)]
struct Session<'p> {
    n_client: u64,
    n_server: u64,
    bins: u32,
    tag_bytes: usize,
    both_learn: bool,
    progress: Progress<'p>,
}

/// The party of KKRT-PSI for our distinct `values` after the handshake (`ours` and `peer` are
/// the two announcements; both sets are non-empty, the caller settles the other case).
pub(crate) fn core<'a>(
    values: &'a [&'a [u8]],
    ours: &Hello,
    peer: &Hello,
    progress: Progress<'a>,
) -> Result<Box<dyn Core + Send + 'a>, PsiError> {
    let (n_client, n_server) = ours.set_sizes(peer);
    let session = Session {
        n_client,
        n_server,
        bins: bins(n_client).ok_or(PsiError::TooManyItems {
            protocol: crate::Protocol::Kkrt,
            items: n_client,
        })?,
        tag_bytes: tag_bytes(n_client, n_server),
        both_learn: ours.both_learn,
        progress,
    };
    let rng = OsSampler::new();
    Ok(match ours.role {
        Role::Client => Box::new(client::Client::new(session, values, rng)?),
        Role::Server => Box::new(server::Server::new(session, values, rng)?),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::by_hand;

    #[test]
    fn tags_cover_three_server_tags_per_item() {
        assert_eq!(tag_bytes(1 << 20, 1 << 20), 11); // 40 + 20 + 22
        assert_eq!(tag_bytes(1, 1), 6); // 40 + 1 + 2
        assert_eq!(tag_bytes(u64::MAX, u64::MAX), 21);
        assert_eq!(bins(1 << 20), Some(1_331_712));
        assert_eq!(bins(1 << 40), None);
    }

    /// The two cores run in one thread with no transport ([`by_hand::run`]): both learn the
    /// plain intersection, over more than one frame of `U` and one chunk of tags.
    #[test]
    fn the_cores_run_by_hand_without_a_transport() {
        let (client_items, server_items) = by_hand::sets();
        let (client_values, server_values) = (
            by_hand::slices(&client_items),
            by_hand::slices(&server_items),
        );
        let (n_client, n_server) = (client_values.len() as u64, server_values.len() as u64);
        let session = Session {
            n_client,
            n_server,
            bins: bins(n_client).unwrap(),
            tag_bytes: tag_bytes(n_client, n_server),
            both_learn: true,
            progress: &|_, _, _| {},
        };
        assert!(session.bins as usize > FRAME_BLOCKS * crate::ot::kkrt::BLOCK_ROWS);
        let client = client::Client::new(session, &client_values, OsSampler::new()).unwrap();
        let server = server::Server::new(session, &server_values, OsSampler::new()).unwrap();
        let (client_matched, server_matched) = by_hand::run(Box::new(client), Box::new(server));
        by_hand::assert_plain(&client_values, &server_values, &client_matched.unwrap());
        by_hand::assert_plain(&server_values, &client_values, &server_matched.unwrap());
    }
}
