//! A hand-driven fake peer sends RR22 messages that are malformed, truncated, oversized or
//! invalid, or nothing at all: every case ends in its typed error, never a hang or a panic.

mod common;

use common::fake_peer::{
    check_match_positions, check_silent_server, client_error, points, server_error, FakePeer,
};
use obscura_psi::kinds;

use obscura_psi::rr22::{self, MessageSizes, OT_FRAME_BLOCKS};
use obscura_psi::transport::{FrameKind, KindByte, TransportError};
use obscura_psi::{PeerError, Protocol, PsiError, Role};

/// Bytes of one block of 128 correlated OTs.
const BLOCK_BYTES: usize = 128 * 16;

/// A client with three items against a fake server.
fn client(script: impl Fn(&mut FakePeer)) -> PsiError {
    client_error(Protocol::Rr22, script)
}

/// A server with three items, both learning, against a fake client.
fn server(script: impl Fn(&mut FakePeer)) -> PsiError {
    server_error(Protocol::Rr22, script)
}

/// The sizes of a session of three client items against `n_server`.
fn sizes(n_server: u64) -> MessageSizes {
    rr22::message_sizes(3, n_server, false).unwrap()
}

/// A fake server that announces `n_server` items, answers the base OTs with valid points and
/// sends trees of the right length.
fn server_start(peer: &mut FakePeer, n_server: u64) -> &mut FakePeer {
    peer.hello(Role::Server, n_server, false)
        .frame(kinds::BASE_OT_CHOICES, &points(256))
        .frame(kinds::VOLE_TREES, &vec![5u8; sizes(n_server).tree_bytes])
}

/// A fake client with three items (both learn) up to its seeds.
fn client_start(peer: &mut FakePeer) -> &mut FakePeer {
    peer.hello(Role::Client, 3, true)
        .frame(kinds::BASE_OT_POINT, &points(1))
        .frame(kinds::VOLE_SEEDS, &[7u8; 32])
}

/// A fake client that sends the whole OT extension (random-looking bytes) for three items.
fn client_extension(peer: &mut FakePeer) -> &mut FakePeer {
    let blocks = sizes(3).ot_blocks;
    let mut sent = 0;
    while sent < blocks {
        let count = (blocks - sent).min(OT_FRAME_BLOCKS);
        let u: Vec<u8> = (0..count * BLOCK_BYTES)
            .map(|i| (i * 31 + 7) as u8)
            .collect();
        peer.frame(kinds::OT_EXTENSION, &u);
        sent += count;
    }
    peer
}

/// A fake client that sends everything up to the masked store, of the right length.
fn client_store(peer: &mut FakePeer) -> &mut FakePeer {
    let sizes = sizes(3);
    client_extension(client_start(peer))
        .frame(kinds::OKVS_SEED, &[9u8; 16])
        .frame(
            kinds::MASKED_OKVS,
            &vec![3u8; sizes.store_words * sizes.word_bytes],
        )
}

fn assert_peer_error(error: PsiError, expected: PeerError) {
    match error {
        PsiError::Peer(error) => assert_eq!(error, expected),
        other => panic!("expected {expected:?}, got {other:?}"),
    }
}

fn assert_too_long(error: PsiError, expected: FrameKind) {
    assert!(
        matches!(error, PsiError::Transport(TransportError::TooLong { kind, .. }) if kind == expected),
        "{error:?}"
    );
}

fn assert_closed(error: PsiError, expected_kind: FrameKind) {
    assert!(
        matches!(error, PsiError::Transport(TransportError::Closed { expected }) if expected == expected_kind),
        "{error:?}"
    );
}

#[test]
fn bad_base_ot_points() {
    let mut identity = points(256);
    identity[32 * 100..32 * 101].fill(0);
    let error = client(|peer| {
        peer.hello(Role::Server, 3, false)
            .frame(kinds::BASE_OT_CHOICES, &identity);
    });
    assert_peer_error(error, PeerError::IdentityPoint);
    let error = server(|peer| {
        peer.hello(Role::Client, 3, true)
            .frame(kinds::BASE_OT_POINT, &[0xffu8; 32]);
    });
    assert_peer_error(error, PeerError::InvalidPoint);
}

/// Every message of fixed length refuses a shorter and a longer one.
#[test]
fn wrong_lengths() {
    let error = client(|peer| {
        peer.hello(Role::Server, 3, false)
            .frame(kinds::BASE_OT_CHOICES, &points(255));
    });
    assert_peer_error(
        error,
        PeerError::WrongLength {
            kind: kinds::BASE_OT_CHOICES,
            len: 255 * 32,
            expected: 256 * 32,
        },
    );
    let trees = sizes(2).tree_bytes;
    for len in [trees - 16, 0] {
        let error = client(|peer| {
            peer.hello(Role::Server, 2, false)
                .frame(kinds::BASE_OT_CHOICES, &points(256))
                .frame(kinds::VOLE_TREES, &vec![0u8; len]);
        });
        assert_peer_error(
            error,
            PeerError::WrongLength {
                kind: kinds::VOLE_TREES,
                len,
                expected: trees,
            },
        );
    }
    let error = client(|peer| {
        peer.hello(Role::Server, 2, false)
            .frame(kinds::BASE_OT_CHOICES, &points(256))
            .frame(kinds::VOLE_TREES, &vec![0u8; trees + 16]);
    });
    assert_too_long(error, kinds::VOLE_TREES);
    let error = server(|peer| {
        peer.hello(Role::Client, 3, true)
            .frame(kinds::BASE_OT_POINT, &points(1))
            .frame(kinds::VOLE_SEEDS, &[7u8; 31]);
    });
    assert_peer_error(
        error,
        PeerError::WrongLength {
            kind: kinds::VOLE_SEEDS,
            len: 31,
            expected: 32,
        },
    );
    // A frame of the OT extension with one block where a full frame is due, then one too long.
    let error = server(|peer| {
        client_start(peer).frame(kinds::OT_EXTENSION, &vec![0u8; BLOCK_BYTES]);
    });
    assert_peer_error(
        error,
        PeerError::WrongLength {
            kind: kinds::OT_EXTENSION,
            len: BLOCK_BYTES,
            expected: OT_FRAME_BLOCKS * BLOCK_BYTES,
        },
    );
    let error = server(|peer| {
        client_start(peer).frame(
            kinds::OT_EXTENSION,
            &vec![0u8; (OT_FRAME_BLOCKS + 1) * BLOCK_BYTES],
        );
    });
    assert_too_long(error, kinds::OT_EXTENSION);
    let error = server(|peer| {
        client_extension(client_start(peer)).frame(kinds::OKVS_SEED, &[9u8; 17]);
    });
    assert_too_long(error, kinds::OKVS_SEED);
    // The masked store one byte short, and one word too long.
    let store = sizes(3).store_words * sizes(3).word_bytes;
    let error = server(|peer| {
        client_extension(client_start(peer))
            .frame(kinds::OKVS_SEED, &[9u8; 16])
            .frame(kinds::MASKED_OKVS, &vec![0u8; store - 1]);
    });
    assert_peer_error(
        error,
        PeerError::WrongLength {
            kind: kinds::MASKED_OKVS,
            len: store - 1,
            expected: store,
        },
    );
    let error = server(|peer| {
        client_extension(client_start(peer))
            .frame(kinds::OKVS_SEED, &[9u8; 16])
            .frame(kinds::MASKED_OKVS, &vec![0u8; store + sizes(3).word_bytes]);
    });
    assert_too_long(error, kinds::MASKED_OKVS);
}

#[test]
fn bad_tag_chunks() {
    let tag = rr22::tag_bytes(3, 2);
    let error = client(|peer| {
        server_start(peer, 2).frame(kinds::SERVER_TAGS, &vec![1u8; tag - 1]);
    });
    assert_peer_error(
        error,
        PeerError::BadChunk {
            kind: kinds::SERVER_TAGS,
            len: tag - 1,
            size: tag,
        },
    );
    // Three items' tags where the server announced two.
    let error = client(|peer| {
        server_start(peer, 2).frame(kinds::SERVER_TAGS, &vec![1u8; 3 * tag]);
    });
    assert_too_long(error, kinds::SERVER_TAGS);
}

/// A peer that stops in the middle of any message ends the session with the message named.
#[test]
fn truncated_and_closed() {
    let tag = rr22::tag_bytes(3, 2);
    // The server closes after one of its two items' tags.
    let error = client(|peer| {
        server_start(peer, 2).frame(kinds::SERVER_TAGS, &vec![1u8; tag]);
    });
    assert_closed(error, kinds::SERVER_TAGS);
    let error = client(|peer| {
        peer.hello(Role::Server, 2, false)
            .frame(kinds::BASE_OT_CHOICES, &points(256));
    });
    assert_closed(error, kinds::VOLE_TREES);
    let error = client(|peer| {
        peer.hello(Role::Server, 2, false)
            .frame(kinds::BASE_OT_CHOICES, &points(256))
            .raw(&[kinds::VOLE_TREES.byte(), 0, 1, 0, 0])
            .raw(&[0u8; 100]);
    });
    assert!(matches!(
        error,
        PsiError::Transport(TransportError::Truncated {
            expected: kinds::VOLE_TREES
        })
    ));
    let error = server(|peer| {
        client_start(peer).frame(
            kinds::OT_EXTENSION,
            &vec![0u8; OT_FRAME_BLOCKS * BLOCK_BYTES],
        );
    });
    assert_closed(error, kinds::OT_EXTENSION);
    let error = server(|peer| {
        client_extension(client_start(peer));
    });
    assert_closed(error, kinds::OKVS_SEED);
    let error = server(|peer| {
        client_extension(client_start(peer)).frame(kinds::OKVS_SEED, &[9u8; 16]);
    });
    assert_closed(error, kinds::MASKED_OKVS);
    let error = server(|peer| {
        client_store(peer);
    });
    assert_closed(error, kinds::MATCH_COUNT);
}

#[test]
fn wrong_kinds() {
    let error = client(|peer| {
        peer.hello(Role::Server, 3, false)
            .frame(kinds::BASE_OT_CHOICES, &points(256))
            .frame(kinds::SERVER_TAGS, &[0u8; 6]);
    });
    assert!(matches!(
        error,
        PsiError::Transport(TransportError::WrongKind {
            expected: kinds::VOLE_TREES,
            got: KindByte(11)
        })
    ));
    let error = server(|peer| {
        client_start(peer).frame(kinds::CUCKOO_SEED, &[0u8; 16]);
    });
    assert!(matches!(
        error,
        PsiError::Transport(TransportError::WrongKind {
            expected: kinds::OT_EXTENSION,
            got: KindByte(9)
        })
    ));
    // A KKRT peer is refused at the handshake.
    let error = client(|peer| {
        let mut hello = b"OBSCPSI\0".to_vec();
        hello.extend_from_slice(&common::fake_peer::WIRE_VERSION.to_le_bytes());
        hello.extend_from_slice(&[2, 1]);
        hello.extend_from_slice(&3u64.to_le_bytes());
        hello.push(0);
        peer.frame(kinds::HELLO, &hello);
    });
    assert!(matches!(
        error,
        PsiError::Hello(obscura_psi::HelloError::ProtocolMismatch {
            ours: Protocol::Rr22,
            theirs: Protocol::Kkrt
        })
    ));
}

#[test]
fn bad_match_positions() {
    check_match_positions(Protocol::Rr22, client_store);
}

/// A client that announces more items than one session holds is refused before the server
/// expands anything for them.
#[test]
fn oversized_announced_sets() {
    let items = rr22::MAX_CLIENT_ITEMS + 1;
    let error = server(|peer| {
        peer.hello(Role::Client, items, true);
    });
    assert!(matches!(
        error,
        PsiError::TooManyItems { protocol: Protocol::Rr22, items: refused } if refused == items
    ));
    assert!(rr22::message_sizes(items, 3, false).is_none());
}

/// A peer that keeps the connection open but sends nothing: the read times out.
#[test]
fn silent_peers_time_out() {
    let start = |peer: &mut FakePeer| {
        peer.hello(Role::Server, 4, false)
            .frame(kinds::BASE_OT_CHOICES, &points(256));
    };
    check_silent_server(Protocol::Rr22, start, kinds::VOLE_TREES);
}
