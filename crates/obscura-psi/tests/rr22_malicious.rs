//! RR22's malicious mode: exact intersections, its traffic, and its two consistency checks
//! catching a party that deviates (a client whose OT extension does not follow one set of
//! choice bits, a server whose GGM trees are inconsistent), where the semi-honest mode goes on
//! with a wrong result. Malformed check messages end in typed errors.

mod common;

use obscura_psi::kinds;
use std::time::Duration;

use common::fake_peer::{against_fake_peer, points, FakePeer, TIMEOUT};
use common::{check, items, options, plain_intersection};
use obscura_psi::rr22::{self, OT_FRAME_BLOCKS};
use obscura_psi::transport::{memory, FrameKind, TransportError};
use obscura_psi::{run, Outcome, PeerError, Protocol, PsiError, Role, Transport};

/// 2^16 items per side, half shared, and unbalanced sets.
#[test]
fn exact_intersections() {
    let client = items("item", 0..1 << 16);
    let server = items("item", 1 << 15..3 << 15);
    let outcome = check(Protocol::Rr22Malicious, &client, &server, false);
    assert_eq!(outcome.intersection.unwrap().size, 1 << 15);
    let many = items("user-", 0..100_000);
    for (one, expected) in [(items("user-", 99_999..100_000), 1), (items("x", 0..1), 0)] {
        check(Protocol::Rr22Malicious, &one, &many, false);
        let outcome = check(Protocol::Rr22Malicious, &many, &one, false);
        assert_eq!(outcome.intersection.unwrap().size, expected);
    }
}

/// The traffic is what the message sizes say: 128-bit words of masked store, the OT extension
/// with its check rows, the checks' 16- and 32-byte messages.
#[test]
fn traffic_matches_the_cost_model() {
    let n = 1 << 14;
    let (client, server) = (items("a", 0..n), items("b", 0..n));
    let outcome = check(Protocol::Rr22Malicious, &client, &server, false);
    let sizes = rr22::message_sizes(n as u64, n as u64, true).unwrap();
    assert_eq!(sizes.word_bytes, 16);
    let frames = |count: usize, per_frame: usize| 5 * count.div_ceil(per_frame) as u64;
    let (store, header) = (sizes.store_words * 16, 5);
    // Hello, base-OT point, seeds, OT extension, its check, OKVS seed, VOLE check seed, masked
    // store, VOLE check value.
    let client_sent = (header + 21)
        + (header + 32)
        + (header + 32)
        + 2048 * sizes.ot_blocks as u64
        + frames(sizes.ot_blocks, OT_FRAME_BLOCKS)
        + (header + 32)
        + (header + 16)
        + (header + 16)
        + store as u64
        + frames(sizes.store_words, rr22::STORE_FRAME_WORDS)
        + (header + 16);
    assert_eq!(outcome.bytes_sent, client_sent);
    // Hello, base-OT choices, OT check seed, trees, VOLE check reply (a hash and the salt), tags (10 bytes at 2^14 a
    // side, one frame per 4096).
    let tag_bytes = rr22::tag_bytes(n as u64, n as u64) as u64;
    let server_sent = (header + 21)
        + (header + 128 * 64)
        + (header + 16)
        + (header + sizes.tree_bytes as u64)
        + (header + 48)
        + tag_bytes * n as u64
        + frames(n, 4096);
    assert_eq!(outcome.bytes_received, server_sent);
}

/// A transport that rewrites the first outgoing frame of one kind.
struct Tamper<T> {
    inner: T,
    kind: FrameKind,
    edit: fn(&mut [u8]),
    done: bool,
}

impl<T: Transport> Transport for Tamper<T> {
    fn send(&mut self, kind: FrameKind, payload: &[u8]) -> Result<(), TransportError> {
        if kind != self.kind || self.done {
            return self.inner.send(kind, payload);
        }
        self.done = true;
        let mut edited = payload.to_vec();
        (self.edit)(&mut edited);
        self.inner.send(kind, &edited)
    }

    fn recv(&mut self, expected: FrameKind, max_len: usize) -> Result<Vec<u8>, TransportError> {
        self.inner.recv(expected, max_len)
    }

    fn bucket(&mut self, index: u64) {
        self.inner.bucket(index)
    }

    fn bytes_sent(&self) -> u64 {
        self.inner.bytes_sent()
    }

    fn bytes_received(&self) -> u64 {
        self.inner.bytes_received()
    }
}

/// A session in which `cheater`'s first frame of `kind` is rewritten by `edit`: the client's and
/// the server's results.
fn tampered_session(
    protocol: Protocol,
    cheater: Role,
    kind: FrameKind,
    edit: fn(&mut [u8]),
) -> [Result<Outcome, PsiError>; 2] {
    let (client_items, server_items) = (items("v", 0..3000), items("v", 1000..4000));
    let (client_link, server_link) = memory::pair(Duration::from_secs(10));
    let tamper = |link, role| Tamper {
        inner: link,
        kind,
        edit,
        done: role != cheater,
    };
    let (mut client_link, mut server_link) = (
        tamper(client_link, Role::Client),
        tamper(server_link, Role::Server),
    );
    std::thread::scope(|scope| {
        let server = scope.spawn(move || {
            let options = options(protocol, Role::Server, false);
            run(&mut server_link, &server_items, options, &|_, _, _| {})
        });
        let options = options(protocol, Role::Client, false);
        let client = run(&mut client_link, &client_items, options, &|_, _, _| {});
        drop(client_link);
        [client, server.join().unwrap()]
    })
}

/// Flips row 3's bit in the first 64 columns of the first block: the rows of those columns
/// follow another choice bit than the others'.
fn split_choice(frame: &mut [u8]) {
    for column in 0..64 {
        frame[16 * column] ^= 1 << 3;
    }
}

#[test]
fn the_server_refuses_an_inconsistent_ot_extension() {
    let [_, server] = tampered_session(
        Protocol::Rr22Malicious,
        Role::Client,
        kinds::OT_EXTENSION,
        split_choice,
    );
    assert!(
        matches!(server, Err(PsiError::Peer(PeerError::OtCheckFailed))),
        "{server:?}"
    );
    // The semi-honest mode has no such check: the session runs to its end.
    let [client, server] = tampered_session(
        Protocol::Rr22,
        Role::Client,
        kinds::OT_EXTENSION,
        split_choice,
    );
    assert!(client.is_ok() && server.is_ok());
}

/// Flips a bit of both side sums of the first tree's first level: whichever side the
/// receiver's path leaves, half of that tree's leaves come out wrong.
fn bad_first_level(frame: &mut [u8]) {
    frame[0] ^= 1;
    frame[16] ^= 1;
}

#[test]
fn the_client_refuses_inconsistent_trees() {
    let [client, _] = tampered_session(
        Protocol::Rr22Malicious,
        Role::Server,
        kinds::VOLE_TREES,
        bad_first_level,
    );
    assert!(
        matches!(client, Err(PsiError::Peer(PeerError::VoleCheckFailed))),
        "{client:?}"
    );
    // The semi-honest mode cannot tell: the client's correlations are off and it misses
    // matches.
    let [client, _] = tampered_session(
        Protocol::Rr22,
        Role::Server,
        kinds::VOLE_TREES,
        bad_first_level,
    );
    let expected = plain_intersection(&items("v", 0..3000), &items("v", 1000..4000));
    assert!(client.unwrap().intersection.unwrap().size < expected.size);
}

/// A client that sends another combination than its own (`x' ⊕ e`) fails the check itself: the
/// server answers only a hash of its value, which for `x' ⊕ e` would be `W ⊕ e · Δ`.
#[test]
fn a_false_combination_gets_only_a_refusal() {
    let [client, _] = tampered_session(
        Protocol::Rr22Malicious,
        Role::Client,
        kinds::VOLE_CHECK_VALUE,
        |frame| frame[0] ^= 1,
    );
    assert!(
        matches!(client, Err(PsiError::Peer(PeerError::VoleCheckFailed))),
        "{client:?}"
    );
}

#[test]
fn both_learn_is_refused() {
    // Before any byte is sent (checked for each role by `both_learn_offered`).
    assert!(!common::both_learn_offered(Protocol::Rr22Malicious));
    assert!(Protocol::Rr22.offers_both_learn());
}

fn malicious_party(role: Role, script: impl Fn(&mut FakePeer)) -> PsiError {
    let items = ["a", "b", "c"];
    let protocol = Protocol::Rr22Malicious;
    against_fake_peer(protocol, role, &items, false, TIMEOUT, script).unwrap_err()
}

fn assert_wrong_length(error: PsiError, expected_kind: FrameKind, expected_len: usize) {
    assert!(
        matches!(error, PsiError::Peer(PeerError::WrongLength { kind, expected, .. }) if kind == expected_kind && expected == expected_len),
        "{error:?}"
    );
}

/// A fake server up to its trees, for a client with three items, and the length of its
/// OT-check seed.
fn fake_server(peer: &mut FakePeer, seed_len: usize) -> &mut FakePeer {
    let sizes = rr22::message_sizes(3, 3, true).unwrap();
    peer.hello(Role::Server, 3, false)
        .frame(kinds::BASE_OT_CHOICES, &points(256))
        .frame(kinds::OT_CHECK_SEED, &vec![1u8; seed_len])
        .frame(kinds::VOLE_TREES, &vec![5u8; sizes.tree_bytes])
}

#[test]
fn a_client_refuses_malformed_or_false_checks() {
    let error = malicious_party(Role::Client, |peer| {
        fake_server(peer, 15);
    });
    assert_wrong_length(error, kinds::OT_CHECK_SEED, 16);
    let error = malicious_party(Role::Client, |peer| {
        fake_server(peer, 16).frame(kinds::VOLE_CHECK_REPLY, &[0u8; 47]);
    });
    assert_wrong_length(error, kinds::VOLE_CHECK_REPLY, 48);
    // Trees of a fixed pattern and an arbitrary check value.
    let error = malicious_party(Role::Client, |peer| {
        fake_server(peer, 16).frame(kinds::VOLE_CHECK_REPLY, &[7u8; 48]);
    });
    assert!(
        matches!(error, PsiError::Peer(PeerError::VoleCheckFailed)),
        "{error:?}"
    );
}

/// A fake client up to its OT extension (a fixed byte pattern), for a server with three items.
fn fake_client(peer: &mut FakePeer) -> &mut FakePeer {
    let blocks = rr22::message_sizes(3, 3, true).unwrap().ot_blocks;
    peer.hello(Role::Client, 3, false)
        .frame(kinds::BASE_OT_POINT, &points(1))
        .frame(kinds::VOLE_SEEDS, &[7u8; 32]);
    for first in (0..blocks).step_by(OT_FRAME_BLOCKS) {
        let count = (blocks - first).min(OT_FRAME_BLOCKS);
        peer.frame(kinds::OT_EXTENSION, &vec![9u8; count * 128 * 16]);
    }
    peer
}

#[test]
fn a_server_refuses_malformed_or_false_checks() {
    let error = malicious_party(Role::Server, |peer| {
        fake_client(peer).frame(kinds::OT_CHECK_REPLY, &[0u8; 31]);
    });
    assert_wrong_length(error, kinds::OT_CHECK_REPLY, 32);
    let error = malicious_party(Role::Server, |peer| {
        fake_client(peer).frame(kinds::OT_CHECK_REPLY, &[0u8; 32]);
    });
    assert!(
        matches!(error, PsiError::Peer(PeerError::OtCheckFailed)),
        "{error:?}"
    );
}
