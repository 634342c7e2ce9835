//! A hand-driven fake peer sends RR22 messages that are malformed, truncated, oversized or
//! invalid, or nothing at all: every case ends in its typed error, never a hang or a panic.

mod common;

use common::fake_peer::{
    check_match_positions, check_silent_server, client_error, points, server_error, FakePeer,
};

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
        .frame(FrameKind::BaseOtChoices, &points(256))
        .frame(FrameKind::VoleTrees, &vec![5u8; sizes(n_server).tree_bytes])
}

/// A fake client with three items (both learn) up to its seeds.
fn client_start(peer: &mut FakePeer) -> &mut FakePeer {
    peer.hello(Role::Client, 3, true)
        .frame(FrameKind::BaseOtPoint, &points(1))
        .frame(FrameKind::VoleSeeds, &[7u8; 32])
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
        peer.frame(FrameKind::OtExtension, &u);
        sent += count;
    }
    peer
}

/// A fake client that sends everything up to the masked store, of the right length.
fn client_store(peer: &mut FakePeer) -> &mut FakePeer {
    let sizes = sizes(3);
    client_extension(client_start(peer))
        .frame(FrameKind::OkvsSeed, &[9u8; 16])
        .frame(
            FrameKind::MaskedOkvs,
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
            .frame(FrameKind::BaseOtChoices, &identity);
    });
    assert_peer_error(error, PeerError::IdentityPoint);
    let error = server(|peer| {
        peer.hello(Role::Client, 3, true)
            .frame(FrameKind::BaseOtPoint, &[0xffu8; 32]);
    });
    assert_peer_error(error, PeerError::InvalidPoint);
}

/// Every message of fixed length refuses a shorter and a longer one.
#[test]
fn wrong_lengths() {
    let error = client(|peer| {
        peer.hello(Role::Server, 3, false)
            .frame(FrameKind::BaseOtChoices, &points(255));
    });
    assert_peer_error(
        error,
        PeerError::WrongLength {
            kind: FrameKind::BaseOtChoices,
            len: 255 * 32,
            expected: 256 * 32,
        },
    );
    let trees = sizes(2).tree_bytes;
    for len in [trees - 16, 0] {
        let error = client(|peer| {
            peer.hello(Role::Server, 2, false)
                .frame(FrameKind::BaseOtChoices, &points(256))
                .frame(FrameKind::VoleTrees, &vec![0u8; len]);
        });
        assert_peer_error(
            error,
            PeerError::WrongLength {
                kind: FrameKind::VoleTrees,
                len,
                expected: trees,
            },
        );
    }
    let error = client(|peer| {
        peer.hello(Role::Server, 2, false)
            .frame(FrameKind::BaseOtChoices, &points(256))
            .frame(FrameKind::VoleTrees, &vec![0u8; trees + 16]);
    });
    assert_too_long(error, FrameKind::VoleTrees);
    let error = server(|peer| {
        peer.hello(Role::Client, 3, true)
            .frame(FrameKind::BaseOtPoint, &points(1))
            .frame(FrameKind::VoleSeeds, &[7u8; 31]);
    });
    assert_peer_error(
        error,
        PeerError::WrongLength {
            kind: FrameKind::VoleSeeds,
            len: 31,
            expected: 32,
        },
    );
    // A frame of the OT extension with one block where a full frame is due, then one too long.
    let error = server(|peer| {
        client_start(peer).frame(FrameKind::OtExtension, &vec![0u8; BLOCK_BYTES]);
    });
    assert_peer_error(
        error,
        PeerError::WrongLength {
            kind: FrameKind::OtExtension,
            len: BLOCK_BYTES,
            expected: OT_FRAME_BLOCKS * BLOCK_BYTES,
        },
    );
    let error = server(|peer| {
        client_start(peer).frame(
            FrameKind::OtExtension,
            &vec![0u8; (OT_FRAME_BLOCKS + 1) * BLOCK_BYTES],
        );
    });
    assert_too_long(error, FrameKind::OtExtension);
    let error = server(|peer| {
        client_extension(client_start(peer)).frame(FrameKind::OkvsSeed, &[9u8; 17]);
    });
    assert_too_long(error, FrameKind::OkvsSeed);
    // The masked store one byte short, and one word too long.
    let store = sizes(3).store_words * sizes(3).word_bytes;
    let error = server(|peer| {
        client_extension(client_start(peer))
            .frame(FrameKind::OkvsSeed, &[9u8; 16])
            .frame(FrameKind::MaskedOkvs, &vec![0u8; store - 1]);
    });
    assert_peer_error(
        error,
        PeerError::WrongLength {
            kind: FrameKind::MaskedOkvs,
            len: store - 1,
            expected: store,
        },
    );
    let error = server(|peer| {
        client_extension(client_start(peer))
            .frame(FrameKind::OkvsSeed, &[9u8; 16])
            .frame(
                FrameKind::MaskedOkvs,
                &vec![0u8; store + sizes(3).word_bytes],
            );
    });
    assert_too_long(error, FrameKind::MaskedOkvs);
}

#[test]
fn bad_tag_chunks() {
    let tag = rr22::tag_bytes(3, 2);
    let error = client(|peer| {
        server_start(peer, 2).frame(FrameKind::ServerTags, &vec![1u8; tag - 1]);
    });
    assert_peer_error(
        error,
        PeerError::BadChunk {
            kind: FrameKind::ServerTags,
            len: tag - 1,
            size: tag,
        },
    );
    // Three items' tags where the server announced two.
    let error = client(|peer| {
        server_start(peer, 2).frame(FrameKind::ServerTags, &vec![1u8; 3 * tag]);
    });
    assert_too_long(error, FrameKind::ServerTags);
}

/// A peer that stops in the middle of any message ends the session with the message named.
#[test]
fn truncated_and_closed() {
    let tag = rr22::tag_bytes(3, 2);
    // The server closes after one of its two items' tags.
    let error = client(|peer| {
        server_start(peer, 2).frame(FrameKind::ServerTags, &vec![1u8; tag]);
    });
    assert_closed(error, FrameKind::ServerTags);
    let error = client(|peer| {
        peer.hello(Role::Server, 2, false)
            .frame(FrameKind::BaseOtChoices, &points(256));
    });
    assert_closed(error, FrameKind::VoleTrees);
    let error = client(|peer| {
        peer.hello(Role::Server, 2, false)
            .frame(FrameKind::BaseOtChoices, &points(256))
            .raw(&[FrameKind::VoleTrees as u8, 0, 1, 0, 0])
            .raw(&[0u8; 100]);
    });
    assert!(matches!(
        error,
        PsiError::Transport(TransportError::Truncated {
            expected: FrameKind::VoleTrees
        })
    ));
    let error = server(|peer| {
        client_start(peer).frame(
            FrameKind::OtExtension,
            &vec![0u8; OT_FRAME_BLOCKS * BLOCK_BYTES],
        );
    });
    assert_closed(error, FrameKind::OtExtension);
    let error = server(|peer| {
        client_extension(client_start(peer));
    });
    assert_closed(error, FrameKind::OkvsSeed);
    let error = server(|peer| {
        client_extension(client_start(peer)).frame(FrameKind::OkvsSeed, &[9u8; 16]);
    });
    assert_closed(error, FrameKind::MaskedOkvs);
    let error = server(|peer| {
        client_store(peer);
    });
    assert_closed(error, FrameKind::MatchCount);
}

#[test]
fn wrong_kinds() {
    let error = client(|peer| {
        peer.hello(Role::Server, 3, false)
            .frame(FrameKind::BaseOtChoices, &points(256))
            .frame(FrameKind::ServerTags, &[0u8; 6]);
    });
    assert!(matches!(
        error,
        PsiError::Transport(TransportError::WrongKind {
            expected: FrameKind::VoleTrees,
            got: KindByte(11)
        })
    ));
    let error = server(|peer| {
        client_start(peer).frame(FrameKind::CuckooSeed, &[0u8; 16]);
    });
    assert!(matches!(
        error,
        PsiError::Transport(TransportError::WrongKind {
            expected: FrameKind::OtExtension,
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
        peer.frame(FrameKind::Hello, &hello);
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
            .frame(FrameKind::BaseOtChoices, &points(256));
    };
    check_silent_server(Protocol::Rr22, start, FrameKind::VoleTrees);
}
