//! A hand-driven fake peer sends KKRT messages that are malformed, truncated, oversized,
//! miscounted or invalid, or nothing at all: every case ends in its typed error, never a hang or
//! a panic.

mod common;

use common::fake_peer::{
    check_match_positions, check_silent_server, client_error, points, server_error, FakePeer,
};
use obscura_psi::kinds;

use obscura_psi::kkrt;
use obscura_psi::transport::{KindByte, TransportError};
use obscura_psi::{PeerError, Protocol, PsiError, Role};

/// Bytes of one block of 128 rows of the OT-extension matrix.
const BLOCK_BYTES: usize = 512 * 16;

/// A client with three items against a fake server.
fn client(script: impl Fn(&mut FakePeer)) -> PsiError {
    client_error(Protocol::Kkrt, script)
}

/// A server with three items, both learning, against a fake client.
fn server(script: impl Fn(&mut FakePeer)) -> PsiError {
    server_error(Protocol::Kkrt, script)
}

/// A fake server that announces `n_server` items and answers the base OTs with valid points.
fn server_start(peer: &mut FakePeer, n_server: u64) -> &mut FakePeer {
    peer.hello(Role::Server, n_server, false)
        .frame(kinds::BASE_OT_CHOICES, &points(1024))
}

/// A fake client with three items (both learn) up to the cuckoo seed.
fn client_start(peer: &mut FakePeer) -> &mut FakePeer {
    peer.hello(Role::Client, 3, true)
        .frame(kinds::BASE_OT_POINT, &points(1))
        .frame(kinds::CUCKOO_SEED, &[7u8; 16])
}

/// A fake client that sends all of `U` (random-looking bytes) for three items.
fn client_extension(peer: &mut FakePeer) -> &mut FakePeer {
    let blocks = kkrt::bins(3).unwrap() as usize / 128;
    let mut sent = 0;
    while sent < blocks {
        let count = (blocks - sent).min(kkrt::FRAME_BLOCKS);
        let u: Vec<u8> = (0..count * BLOCK_BYTES)
            .map(|i| (i * 31 + 7) as u8)
            .collect();
        peer.frame(kinds::OT_EXTENSION, &u);
        sent += count;
    }
    peer
}

fn assert_peer_error(error: PsiError, expected: PeerError) {
    match error {
        PsiError::Peer(error) => assert_eq!(error, expected),
        other => panic!("expected {expected:?}, got {other:?}"),
    }
}

#[test]
fn bad_base_ot_points() {
    let mut identity = points(1024);
    identity[32 * 100..32 * 101].fill(0);
    let error = client(|peer| {
        peer.hello(Role::Server, 3, false)
            .frame(kinds::BASE_OT_CHOICES, &identity);
    });
    assert_peer_error(error, PeerError::IdentityPoint);
    let mut invalid = points(1024);
    invalid[32 * 511..].fill(0xff);
    let error = client(|peer| {
        peer.hello(Role::Server, 3, false)
            .frame(kinds::BASE_OT_CHOICES, &invalid);
    });
    assert_peer_error(error, PeerError::InvalidPoint);
    let error = server(|peer| {
        peer.hello(Role::Client, 3, true)
            .frame(kinds::BASE_OT_POINT, &[0u8; 32]);
    });
    assert_peer_error(error, PeerError::IdentityPoint);
    let error = server(|peer| {
        peer.hello(Role::Client, 3, true)
            .frame(kinds::BASE_OT_POINT, &[0xffu8; 32]);
    });
    assert_peer_error(error, PeerError::InvalidPoint);
}

#[test]
fn wrong_lengths() {
    let error = client(|peer| {
        peer.hello(Role::Server, 3, false)
            .frame(kinds::BASE_OT_CHOICES, &points(1023));
    });
    assert_peer_error(
        error,
        PeerError::WrongLength {
            kind: kinds::BASE_OT_CHOICES,
            len: 1023 * 32,
            expected: 1024 * 32,
        },
    );
    let error = client(|peer| {
        peer.hello(Role::Server, 3, false)
            .frame(kinds::BASE_OT_CHOICES, &points(1025));
    });
    assert!(matches!(
        error,
        PsiError::Transport(TransportError::TooLong {
            kind: kinds::BASE_OT_CHOICES,
            len: 32800,
            max: 32768
        })
    ));
    let error = server(|peer| {
        peer.hello(Role::Client, 3, true)
            .frame(kinds::BASE_OT_POINT, &points(1)[..31]);
    });
    assert_peer_error(
        error,
        PeerError::WrongLength {
            kind: kinds::BASE_OT_POINT,
            len: 31,
            expected: 32,
        },
    );
    let error = server(|peer| {
        peer.hello(Role::Client, 3, true)
            .frame(kinds::BASE_OT_POINT, &points(1))
            .frame(kinds::CUCKOO_SEED, &[1u8; 15]);
    });
    assert_peer_error(
        error,
        PeerError::WrongLength {
            kind: kinds::CUCKOO_SEED,
            len: 15,
            expected: 16,
        },
    );
    // A frame of U with one block where 32 are due, then one with 33.
    let error = server(|peer| {
        client_start(peer).frame(kinds::OT_EXTENSION, &vec![0u8; BLOCK_BYTES]);
    });
    assert_peer_error(
        error,
        PeerError::WrongLength {
            kind: kinds::OT_EXTENSION,
            len: BLOCK_BYTES,
            expected: 32 * BLOCK_BYTES,
        },
    );
    let error = server(|peer| {
        client_start(peer).frame(kinds::OT_EXTENSION, &vec![0u8; 33 * BLOCK_BYTES]);
    });
    assert!(matches!(
        error,
        PsiError::Transport(TransportError::TooLong {
            kind: kinds::OT_EXTENSION,
            max,
            ..
        }) if max == 32 * BLOCK_BYTES
    ));
}

#[test]
fn bad_tag_chunks() {
    let tag = kkrt::tag_bytes(3, 2);
    let error = client(|peer| {
        server_start(peer, 2).frame(kinds::SERVER_TAGS, &vec![1u8; 3 * tag - 1]);
    });
    assert_peer_error(
        error,
        PeerError::BadChunk {
            kind: kinds::SERVER_TAGS,
            len: 3 * tag - 1,
            size: 3 * tag,
        },
    );
    // Three items' tags where the server announced two.
    let error = client(|peer| {
        server_start(peer, 2).frame(kinds::SERVER_TAGS, &vec![1u8; 9 * tag]);
    });
    assert!(matches!(
        error,
        PsiError::Transport(TransportError::TooLong {
            kind: kinds::SERVER_TAGS,
            ..
        })
    ));
    let error = client(|peer| {
        server_start(peer, 2).frame(kinds::SERVER_TAGS, &[]);
    });
    assert_peer_error(
        error,
        PeerError::BadChunk {
            kind: kinds::SERVER_TAGS,
            len: 0,
            size: 3 * tag,
        },
    );
}

#[test]
fn truncated_and_closed() {
    let tag = kkrt::tag_bytes(3, 2);
    // The server closes after one of its two items.
    let error = client(|peer| {
        server_start(peer, 2).frame(kinds::SERVER_TAGS, &vec![1u8; 3 * tag]);
    });
    assert!(matches!(
        error,
        PsiError::Transport(TransportError::Closed {
            expected: kinds::SERVER_TAGS
        })
    ));
    let error = client(|peer| {
        peer.hello(Role::Server, 3, false)
            .raw(&[kinds::BASE_OT_CHOICES.byte(), 0, 0x80, 0, 0])
            .raw(&points(100));
    });
    assert!(matches!(
        error,
        PsiError::Transport(TransportError::Truncated {
            expected: kinds::BASE_OT_CHOICES
        })
    ));
    // The client stops in the middle of U.
    let error = server(|peer| {
        client_start(peer).frame(kinds::OT_EXTENSION, &vec![0u8; 32 * BLOCK_BYTES]);
    });
    assert!(matches!(
        error,
        PsiError::Transport(TransportError::Closed {
            expected: kinds::OT_EXTENSION
        })
    ));
}

#[test]
fn wrong_kinds() {
    let error = client(|peer| {
        peer.hello(Role::Server, 3, false)
            .frame(kinds::SERVER_TAGS, &[0u8; 33]);
    });
    assert!(matches!(
        error,
        PsiError::Transport(TransportError::WrongKind {
            expected: kinds::BASE_OT_CHOICES,
            got: KindByte(11)
        })
    ));
    let error = server(|peer| {
        client_start(peer).frame(kinds::CLIENT_POINTS, &points(1));
    });
    assert!(matches!(
        error,
        PsiError::Transport(TransportError::WrongKind {
            expected: kinds::OT_EXTENSION,
            got: KindByte(2)
        })
    ));
    // An ECDH peer is refused at the handshake.
    let error = client(|peer| {
        let mut hello = b"OBSCPSI\0".to_vec();
        hello.extend_from_slice(&common::fake_peer::WIRE_VERSION.to_le_bytes());
        hello.extend_from_slice(&[1, 1]);
        hello.extend_from_slice(&3u64.to_le_bytes());
        hello.push(0);
        peer.frame(kinds::HELLO, &hello);
    });
    assert!(matches!(
        error,
        PsiError::Hello(obscura_psi::HelloError::ProtocolMismatch {
            ours: Protocol::Kkrt,
            theirs: Protocol::Ecdh
        })
    ));
}

#[test]
fn bad_match_positions() {
    check_match_positions(Protocol::Kkrt, |peer| client_extension(client_start(peer)));
}

/// A client that announces more items than one session can hold is refused before anything
/// is allocated for them.
#[test]
fn oversized_announced_sets() {
    let error = server(|peer| {
        peer.hello(Role::Client, 1 << 40, true);
    });
    assert!(matches!(
        error,
        PsiError::TooManyItems { items, .. } if items == 1 << 40
    ));
}

/// A peer that keeps the connection open but sends nothing: the read times out.
#[test]
fn silent_peers_time_out() {
    let start = |peer: &mut FakePeer| {
        server_start(peer, 4);
    };
    check_silent_server(Protocol::Kkrt, start, kinds::SERVER_TAGS);
}
