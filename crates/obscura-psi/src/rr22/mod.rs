//! RR22 VOLE-PSI: the semi-honest protocol of Raghuraman and Rindal ("Blazing fast PSI from
//! improved OKVS and subfield VOLE", CCS 2022, figure 4) in its low-communication form, and its
//! malicious mode ([`crate::Protocol::Rr22Malicious`]; see "Malicious mode" below).
//!
//! # Protocol
//!
//! After the handshake (which fixes both set sizes `n_c`, `n_s`), with `ℓ = 8 ·`
//! [`tag_bytes`]`(n_c, n_s)` bits, `V` the `ℓ`-bit words (a GF(2)-subspace of GF(2^128)), the
//! store of module `okvs` for `n_c` keys (`m` words) and the VOLE of module `vole` for `m`
//! correlations:
//!
//! 1. **Base OTs and seeds** (client → server, then back): 128 Masny-Rindal OTs (module
//!    `base_ot`) with the server as receiver, its secret choice bits forming `Δ ∈ GF(2^128)`;
//!    the client sends two public seeds from the OS CSPRNG: the item seed and the code seed.
//! 2. **Items.** Each party hashes each item `x` to `SHA-256("obscura-psi rr22 item v1\0" ‖
//!    item seed ‖ x)`: the first 16 bytes are its key `k(x)`, the last 16, cut to `ℓ` bits, its
//!    value `h(x) ∈ V`. The client encodes the store `P` with `Decode(P, k(x)) = h(x)` for its
//!    items (retrying with a fresh OKVS seed in the ≤ 2^-40 case of failure, up to
//!    [`OKVS_ATTEMPTS`] times).
//! 3. **VOLE** (client → server, then back): the client sends the correlated-OT extension
//!    matrix for its noise ([`kinds::OT_EXTENSION`](crate::kinds::OT_EXTENSION) frames), the server its punctured-PRF sums
//!    ([`VOLE_TREES`]); the client ends with `A ∈ V^m`, `C`, the server with `B`, and
//!    `C = B ⊕ A · Δ`.
//! 4. **Masked store** (client → server): the OKVS seed, then `A' = A ⊕ P` (`ℓ` bits per
//!    word, in [`MASKED_OKVS`] frames). The server sets `B' = B ⊕ A' · Δ`, so
//!    `B' = C ⊕ P · Δ`.
//! 5. **Tags** (server → client): for each of its items `y`, in an OS-CSPRNG shuffled order,
//!    `H(Decode(B', k(y)) ⊕ Δ · h(y))`, with `H(v)` the first [`tag_bytes`] bytes of
//!    `SHA-256("obscura-psi rr22 tag v1\0" ‖ v)`. By linearity `Decode(B', k) = Decode(C, k) ⊕
//!    Decode(P, k) · Δ`, so for `y = x` in the client's set the tag is `H(Decode(C, k(x)))`,
//!    which the client computes for each of its items and looks up.
//! 6. **Both learn** (option, client → server): the positions of the matched tags, as in
//!    [`crate::kkrt`].
//!
//! # Parameters and correctness
//!
//! - **Tags and `ℓ`:** `tag_bytes(n_c, n_s) = ⌈(40 + ⌈log2 n_c⌉ + ⌈log2 n_s⌉) / 8⌉` (at
//!   2^20 each: 10 bytes, `ℓ` = 80). A server tag for `y` not in the client's set equals a given
//!   client tag only by a collision of `H` (probability `2^-8·tag_bytes` per pair, `n_c · n_s`
//!   pairs) or when `Decode(P, k(y)) = h(y)` (probability `2^-ℓ` per item, `h` being a random
//!   oracle independent of `P`'s rows): a false match has probability below `2^-40`.
//! - **OKVS:** weight 3, binary dense columns, ≤ 2^-40 encoding failure (module `okvs`).
//! - **VOLE:** dual LPN with the expand-accumulate code, 128-bit security (module `vole`).
//!
//! # Security (semi-honest)
//!
//! - **Assumptions:** CDH in ristretto255 (base OTs), AES-128 as a PRF and ideal cipher (OT
//!   extension, GGM trees, OKVS rows and code), dual LPN for the expand-accumulate code, SHA-256
//!   as a random oracle (item hash, OT pads, tags).
//! - **What the server learns:** `n_c` (through `m`) and, with both learn, the intersection.
//!   `A'` is `P` masked by `A`, pseudorandom in `V^m` by dual LPN; the seeds are public
//!   randomness chosen by the client (the OKVS seed is retried only with probability ≤ 2^-40).
//! - **What the client learns:** `n_s` and the intersection. For `y` not in its set, the tag's
//!   input is `Decode(C, k(y)) ⊕ Δ · (h(y) ⊕ Decode(P, k(y)))`: with the factor of `Δ` nonzero
//!   (see above) and `Δ` uniform and hidden by the base OTs, it is unpredictable, so the tag
//!   looks random; the shuffle hides the server's input order.
//! - **Peer data** is bounded and checked at every step: exact lengths for the seeds, the base-OT
//!   points (decoded, identity refused), each frame of the OT extension, the VOLE sums and each
//!   frame of `A'`; whole numbers of tags up to the announced count. Every length follows from
//!   the announced set sizes. The server's VOLE vector (about 100 bytes per client item) is
//!   expanded once the client's OT extension has arrived; sessions are bounded to
//!   [`MAX_CLIENT_ITEMS`] client items so that an announcement alone cannot make it allocate
//!   more than about 430 MB; `B'` grows as the client's frames arrive.
//!
//! # Cost
//!
//! The client sends `m · ℓ / 8` bytes of masked store (`m ≈ 1.267 n_c` at 2^20) and `16 · 128`
//! bytes per block of 128 correlated OTs (`trees · (depth + ℓ)` OTs, about 0.5 MB); the server
//! sends `tag_bytes · n_s` bytes of tags and `16 · trees · (2 · depth + 1)` bytes of trees
//! (about 0.2 MB). At 2^20 items each: 101 + 80 + 4 ≈ 185 bits per item, both directions.
//!
//! # Malicious mode
//!
//! RR22 obtains malicious security by running the malicious VOLE-PSI of Rindal and Schoppmann
//! ("VOLE-PSI: fast OPRF and circuit-PSI from vector-OLE", Eurocrypt 2021, figure 4) with its
//! OKVS. This module does so on the steps above, with these changes:
//!
//! - **Full field.** `ℓ = 128`: `V` is all of GF(2^128), the item values `h(x)` are 128 bits
//!   and the masked store carries 16 bytes per word. A client can then make `Decode(P, k(y)) =
//!   h(y)` hold for at most about `m` items `y` it has queried `h` on, and a simulator reads its
//!   set off `A' ⊕ A` and those queries; with ℓ-bit values it could cover about `2^{128−ℓ}`
//!   times more.
//! - **Checked OT extension** (protects `Δ`): the VOLE's correlated OTs end with at least 384
//!   with random choice bits; after the extension the server sends a fresh seed
//!   ([`OT_CHECK_SEED`]) and the client answers the KOS check of module `check`
//!   ([`OT_CHECK_REPLY`]). The server sends its trees only if it passes, so a client
//!   whose rows follow different choice bits in different columns (which would let it test bits
//!   of `Δ`) is refused with [`PeerError::OtCheckFailed`].
//! - **Trees of `2^depth` leaves**, at least 400 of them (module `vole`): every path a client can
//!   choose ends at a leaf, so it always lacks exactly one leaf of each tree (with a partial
//!   tree, a path past the last leaf would give it every leaf and, through the correction `τ`,
//!   `β · Δ`).
//! - **Checked VOLE** (protects the client's noise): after the trees the client sends a fresh
//!   seed ([`VOLE_CHECK_SEED`]); while streaming `A'` both fold the outputs into the
//!   check of module `check`; the client sends `x' = Σ χ_i · A_i ⊕ y*`
//!   ([`VOLE_CHECK_VALUE`]) after the last frame of `A'`, and the server answers the hash
//!   of `V` with its salt `w` ([`VOLE_CHECK_REPLY`]). A client that finds the hash wrong
//!   stops with
//!   [`PeerError::VoleCheckFailed`] before reading any tag. (`A' = A ⊕ P` does not depend on the
//!   trees, so it can go out before the check ends.)
//! - **Salted, keyed tags**: `H'(v ⊕ w, k)` for the value `v` decoded at key `k` (see `tag`),
//!   with `w` drawn by the server from the OS CSPRNG once all of `A'` has arrived: no tag can be
//!   computed before the client is bound to its store, and a tag names the key it is for, so a
//!   simulator reads a malicious server's set off its queries of `H'`.
//! - **Base OTs** secure against malicious parties (module `base_ot`, in both modes); `Δ` is the
//!   server's choice bits, extractable from them.
//! - **One output.** Only the client learns the intersection: a server cannot check the
//!   positions a malicious client would report, so both learn is refused
//!   ([`crate::Options::check`]).
//!
//! What a malicious party can still do, as in the papers: choose its own set — a client any set
//! of up to `m` items (the store's words, [`MessageSizes::store_words`], about `1.27 · n_c`: its
//! store can decode to `h(y)` at that many keys whatever count it announced; the papers'
//! functionality allows the same), a server any set of up to `n_s`; a client can abort, and a server can make the client abort after the VOLE check
//! — the abort tells it whether one guess about the client's noise positions was right, the
//! selective-failure leakage that dual-LPN parameters tolerate (as in Wolverine and Ferret). A
//! server that deviates elsewhere (tags not of its items, a bad `V`) changes only what the client
//! sees as the server's set or makes it stop with an error.
//!
//! **Cost:** at 2^20 items each, the masked store is `128 · m` bits (162 bits per item), the
//! tags stay `8 · tag_bytes`, and the VOLE (406 trees of 2^14 leaves, 14 + 128 OTs each) about
//! 1.1 MB in all: 251 bits per item both directions, against 188 semi-honest.

mod check;
mod client;

pub use client::{OT_FRAME_BLOCKS, STORE_FRAME_WORDS};
mod server;

use obscura_math::sample::OsSampler;
use rayon::prelude::*;
use sha2::{Digest, Sha256};

use crate::core::Core;
use crate::hello::Hello;
use crate::wire::FrameKind;
#[cfg(doc)]
use crate::PeerError;
use crate::{ecdh, Progress, PsiError, Role};
use crate::{okvs, vole};

/// Client to server: the public seeds of the item hash and of the VOLE's code.
pub const VOLE_SEEDS: FrameKind = FrameKind::new(12, "vole-seeds");
/// Server to client: the punctured-PRF side sums and corrections of the VOLE.
pub const VOLE_TREES: FrameKind = FrameKind::new(13, "vole-trees");
/// Client to server: the public seed of the OKVS rows.
pub const OKVS_SEED: FrameKind = FrameKind::new(14, "okvs-seed");
/// Client to server: a frame of the OKVS masked by the VOLE (`A ⊕ P`).
pub const MASKED_OKVS: FrameKind = FrameKind::new(15, "masked-okvs");
/// Malicious mode, server to client: the seed of the OT-extension check.
pub const OT_CHECK_SEED: FrameKind = FrameKind::new(16, "ot-check-seed");
/// Malicious mode, client to server: the answer to the OT-extension check.
pub const OT_CHECK_REPLY: FrameKind = FrameKind::new(17, "ot-check-reply");
/// Malicious mode, client to server: the seed of the VOLE check.
pub const VOLE_CHECK_SEED: FrameKind = FrameKind::new(18, "vole-check-seed");
/// Malicious mode, client to server: the masked combination of the VOLE check.
pub const VOLE_CHECK_VALUE: FrameKind = FrameKind::new(19, "vole-check-value");
/// Malicious mode, server to client: the hash of the VOLE check's value and the tags' salt.
pub const VOLE_CHECK_REPLY: FrameKind = FrameKind::new(20, "vole-check-reply");

/// OKVS seeds the client tries before giving up (each fails with probability ≤ 2^-40).
pub const OKVS_ATTEMPTS: u32 = 4;

/// The most distinct client items of one session. The server expands its VOLE locally, about
/// 100 bytes per client item, before the client has sent data in proportion; this bound keeps
/// what an announcement alone makes it allocate under half a gigabyte. Larger sets go through
/// buckets ([`crate::bucketed`]).
pub const MAX_CLIENT_ITEMS: u64 = 1 << 22;

const ITEM_DOMAIN: &[u8] = b"obscura-psi rr22 item v1\0";
const TAG_DOMAIN: &[u8] = b"obscura-psi rr22 tag v1\0";
/// Short enough that a keyed tag's input fits in one SHA-256 block.
const KEYED_TAG_DOMAIN: &[u8] = b"obscura rr22m tag\0";
/// Bytes of the item seed.
const ITEM_SEED_BYTES: usize = 16;
/// Items per parallel task when hashing.
const TASK_ITEMS: usize = 4096;

/// Bytes of a tag (and of a masked-store word) for `n_client` and `n_server` distinct items:
/// `⌈(40 + ⌈log2 n_client⌉ + ⌈log2 n_server⌉) / 8⌉` (each size counted as at least 2), at most
/// 16. See the module documentation.
pub fn tag_bytes(n_client: u64, n_server: u64) -> usize {
    ecdh::tag_bytes(n_client, n_server).min(16)
}

/// The sizes of one session's messages, which both parties derive from the set sizes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MessageSizes {
    /// Bytes of a tag and of a word of the masked store (`ℓ / 8`).
    pub word_bytes: usize,
    /// Words of the masked store: the client's OKVS (what its progress counts while it sends
    /// them), sent in frames of [`STORE_FRAME_WORDS`].
    pub store_words: usize,
    /// Blocks of 128 correlated OTs (2 KiB each) of the client's OT extension, sent in frames of
    /// [`OT_FRAME_BLOCKS`].
    pub ot_blocks: usize,
    /// Bytes of the server's punctured-PRF message.
    pub tree_bytes: usize,
}

/// The message sizes of a session with `n_client` and `n_server` distinct items, in the
/// malicious mode if `malicious`, or `None` if the client's set is too large for one session
/// (see [`MAX_CLIENT_ITEMS`]).
pub fn message_sizes(n_client: u64, n_server: u64, malicious: bool) -> Option<MessageSizes> {
    let okvs = okvs::Params::new(n_client).filter(|_| n_client <= MAX_CLIENT_ITEMS)?;
    let vole = vole_params(okvs.size(), tag_bytes(n_client, n_server), malicious);
    Some(MessageSizes {
        word_bytes: vole.ell as usize / 8,
        store_words: okvs.size(),
        ot_blocks: vole.ot_blocks(),
        tree_bytes: 16 * vole.message_words(),
    })
}

/// The VOLE of a session: over `ℓ = 8 · tag_bytes` bits, or over all of GF(2^128) in the
/// malicious mode.
fn vole_params(outputs: usize, tag_bytes: usize, malicious: bool) -> vole::VoleParams {
    match malicious {
        true => vole::VoleParams::malicious(outputs),
        false => vole::VoleParams::new(outputs, 8 * tag_bytes as u32),
    }
}

/// What both roles share during one session.
#[derive(Clone, Copy)]
struct Session<'p> {
    n_client: u64,
    n_server: u64,
    /// Bytes of a tag and of a word of `V`.
    tag_bytes: usize,
    okvs: okvs::Params,
    vole: vole::VoleParams,
    both_learn: bool,
    progress: Progress<'p>,
}

impl<'p> Session<'p> {
    /// The session of `n_client` and `n_server` distinct items, or `None` if the client's set
    /// is too large for one session (see [`MAX_CLIENT_ITEMS`]).
    fn new(
        n_client: u64,
        n_server: u64,
        malicious: bool,
        both_learn: bool,
        progress: Progress<'p>,
    ) -> Option<Self> {
        let okvs = okvs::Params::new(n_client).filter(|_| n_client <= MAX_CLIENT_ITEMS)?;
        let tag_bytes = tag_bytes(n_client, n_server);
        Some(Self {
            n_client,
            n_server,
            tag_bytes,
            okvs,
            vole: vole_params(okvs.size(), tag_bytes, malicious),
            both_learn,
            progress,
        })
    }

    /// `ℓ`: bits of `V`.
    fn ell(&self) -> u32 {
        self.vole.ell
    }

    /// Whether this is the malicious mode (its VOLE is checked).
    fn malicious(&self) -> bool {
        self.vole.malicious
    }

    /// Bytes of a word of the masked store.
    fn word_bytes(&self) -> usize {
        self.vole.ell as usize / 8
    }
}

/// Each item's key and value (`ℓ` bits), in parallel.
fn hash_items(items: &[&[u8]], seed: &[u8; ITEM_SEED_BYTES], ell: u32) -> (Vec<u128>, Vec<u128>) {
    let mask = u128::MAX >> (128 - ell);
    items
        .par_iter()
        .with_min_len(TASK_ITEMS)
        .map(|item| {
            let digest = Sha256::new()
                .chain_update(ITEM_DOMAIN)
                .chain_update(seed)
                .chain_update(item)
                .finalize();
            let word = |half: usize| {
                u128::from_le_bytes(digest[16 * half..][..16].try_into().expect("16 bytes"))
            };
            (word(0), word(1) & mask)
        })
        .unzip()
}

/// The tag of the value `value` decoded at key `key`, into `out` (at most 16 bytes): `H(v)`, or
/// in the malicious mode, with the server's salt `w`, `H'(v ⊕ w, k)` (`H'` the first bytes of
/// `SHA-256("obscura rr22m tag\0" ‖ v ⊕ w ‖ k)`).
fn tag(value: u128, key: u128, salt: Option<u128>, out: &mut [u8]) {
    let digest = match salt {
        None => Sha256::new()
            .chain_update(TAG_DOMAIN)
            .chain_update(value.to_le_bytes()),
        Some(w) => Sha256::new()
            .chain_update(KEYED_TAG_DOMAIN)
            .chain_update((value ^ w).to_le_bytes())
            .chain_update(key.to_le_bytes()),
    }
    .finalize();
    out.copy_from_slice(&digest[..out.len()]);
}

/// The party of RR22-PSI (either mode) for our distinct `values` after the handshake (`ours` and
/// `peer` are the two announcements; both sets are non-empty, the caller settles the other
/// case).
pub(crate) fn core<'a>(
    values: &'a [&'a [u8]],
    ours: &Hello,
    peer: &Hello,
    progress: Progress<'a>,
) -> Result<Box<dyn Core + Send + 'a>, PsiError> {
    let (n_client, n_server) = ours.set_sizes(peer);
    let malicious = ours.protocol == crate::Protocol::Rr22Malicious;
    let session = Session::new(n_client, n_server, malicious, ours.both_learn, progress).ok_or(
        PsiError::TooManyItems {
            protocol: ours.protocol,
            items: n_client,
        },
    )?;
    let rng = OsSampler::new();
    Ok(match ours.role {
        Role::Client => Box::new(client::Client::new(session, values, rng)?),
        Role::Server => Box::new(server::Server::new(session, values, rng)?),
    })
}

/// The item seed and the code seed, which the client draws and sends.
type Seeds = [u8; ITEM_SEED_BYTES + vole::ea_code::SEED_BYTES];

/// Little-endian bytes of `words`.
fn words_to_bytes(words: &[u128]) -> Vec<u8> {
    words.iter().flat_map(|word| word.to_le_bytes()).collect()
}

/// The little-endian 128-bit words of `bytes` (a trailing partial word is ignored; callers
/// check the length).
fn words_from_bytes(bytes: &[u8]) -> Vec<u128> {
    let (words, _) = bytes.as_chunks::<16>();
    words
        .iter()
        .map(|word| u128::from_le_bytes(*word))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::by_hand;

    /// The two cores of each mode run in one thread with no transport ([`by_hand::run`]): the
    /// client learns the plain intersection (and the server too when both learn), over more
    /// than one frame of the extension and more than one chunk of tags.
    #[test]
    fn the_cores_run_by_hand_without_a_transport() {
        let (client_items, server_items) = by_hand::sets();
        let (client_values, server_values) = (
            by_hand::slices(&client_items),
            by_hand::slices(&server_items),
        );
        let (n_client, n_server) = (client_values.len() as u64, server_values.len() as u64);
        for malicious in [false, true] {
            let progress = &|_, _, _| {};
            let session =
                Session::new(n_client, n_server, malicious, !malicious, progress).unwrap();
            assert!(session.vole.ot_blocks() > client::OT_FRAME_BLOCKS);
            let client = client::Client::new(session, &client_values, OsSampler::new()).unwrap();
            let server = server::Server::new(session, &server_values, OsSampler::new()).unwrap();
            let (client_matched, server_matched) = by_hand::run(Box::new(client), Box::new(server));
            by_hand::assert_plain(&client_values, &server_values, &client_matched.unwrap());
            match malicious {
                false => {
                    let server_matched = server_matched.unwrap();
                    by_hand::assert_plain(&server_values, &client_values, &server_matched);
                }
                true => assert!(server_matched.is_none()),
            }
        }
    }

    #[test]
    fn tags_are_forty_bits_past_the_pairs() {
        assert_eq!(tag_bytes(1 << 20, 1 << 20), 10);
        assert_eq!(tag_bytes(1, 1), 6);
        assert_eq!(tag_bytes(u64::MAX, u64::MAX), 16);
    }

    #[test]
    fn values_lie_in_the_subspace() {
        let items: [&[u8]; 3] = [b"a", b"b", b""];
        let (keys, values) = hash_items(&items, &[1; 16], 41);
        assert!(values.iter().all(|v| v >> 41 == 0));
        let (other_keys, _) = hash_items(&items, &[2; 16], 41);
        assert_ne!(keys, other_keys, "the seed changes every key");
        assert_ne!(keys[0], keys[1]);
    }
}
