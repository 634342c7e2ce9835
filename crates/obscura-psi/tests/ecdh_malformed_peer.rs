//! A hand-driven fake peer sends ECDH messages that are malformed, truncated, oversized,
//! miscounted or invalid, or nothing at all: every case ends in its typed error, never a hang or
//! a panic.

mod common;

use obscura_psi::kinds;
use std::time::{Duration, Instant};

use common::fake_peer::{against_fake_peer, client_error, points, server_error, FakePeer};

use curve25519_dalek::ristretto::CompressedRistretto;
use obscura_psi::ecdh::tag_bytes;
use obscura_psi::transport::{KindByte, TransportError};
use obscura_psi::{run, HelloError, Options, PeerError, Protocol, PsiError, Role};

/// A client with three items against a fake server.
fn client(script: impl Fn(&mut FakePeer)) -> PsiError {
    client_error(Protocol::Ecdh, script)
}

/// A server with three items, both learning, against a fake client.
fn server(script: impl Fn(&mut FakePeer)) -> PsiError {
    server_error(Protocol::Ecdh, script)
}

/// A fake server that announces `n_server` items and answers the client's 3 items with
/// distinct tags.
fn honest_start(peer: &mut FakePeer, n_server: u64) -> &mut FakePeer {
    let tags: Vec<u8> = points(3)
        .chunks(32)
        .flat_map(|p| p[..tag_bytes(3, n_server)].to_vec())
        .collect();
    peer.hello(Role::Server, n_server, false)
        .frame(kinds::CLIENT_TAGS, &tags)
}

#[test]
fn truncated_frames() {
    let error = client(|peer| {
        peer.raw(&[kinds::HELLO.byte(), 21]);
    });
    assert!(matches!(
        error,
        PsiError::Transport(TransportError::Truncated {
            expected: kinds::HELLO
        })
    ));
    let error = client(|peer| {
        peer.raw(&[kinds::HELLO.byte(), 21, 0, 0, 0])
            .raw(b"OBSCPSI");
    });
    assert!(matches!(
        error,
        PsiError::Transport(TransportError::Truncated { .. })
    ));
    let error = client(|peer| {
        honest_start(peer, 2)
            .raw(&[kinds::SERVER_POINTS.byte(), 64, 0, 0, 0])
            .raw(&points(2)[..40]);
    });
    assert!(matches!(
        error,
        PsiError::Transport(TransportError::Truncated {
            expected: kinds::SERVER_POINTS
        })
    ));
    // A whole frame that holds part of a point.
    let error = client(|peer| {
        honest_start(peer, 2).frame(kinds::SERVER_POINTS, &points(2)[..40]);
    });
    assert!(matches!(
        error,
        PsiError::Peer(PeerError::BadChunk {
            kind: kinds::SERVER_POINTS,
            len: 40,
            size: 32
        })
    ));
}

#[test]
fn closed_connection() {
    let error = client(|peer| {
        honest_start(peer, 3).frame(kinds::SERVER_POINTS, &points(2));
    });
    // The fake peer closes after two of its three points.
    assert!(matches!(
        error,
        PsiError::Transport(TransportError::Closed {
            expected: kinds::SERVER_POINTS
        })
    ));
}

#[test]
fn oversized_lengths_are_refused_before_allocating() {
    let error = client(|peer| {
        peer.raw(&[kinds::HELLO.byte(), 0xff, 0xff, 0xff, 0xff]);
    });
    assert!(matches!(
        error,
        PsiError::Transport(TransportError::TooLong {
            kind: kinds::HELLO,
            len: 0xffff_ffff,
            max: 21
        })
    ));
    // More points in one frame than the server announced in all.
    let error = client(|peer| {
        honest_start(peer, 2).frame(kinds::SERVER_POINTS, &points(3));
    });
    assert!(matches!(
        error,
        PsiError::Transport(TransportError::TooLong {
            kind: kinds::SERVER_POINTS,
            len: 96,
            max: 64
        })
    ));
}

#[test]
fn wrong_kinds() {
    let error = client(|peer| {
        peer.frame(kinds::SERVER_POINTS, &points(1));
    });
    assert!(matches!(
        error,
        PsiError::Transport(TransportError::WrongKind {
            expected: kinds::HELLO,
            got: KindByte(4)
        })
    ));
    let error = client(|peer| {
        peer.hello(Role::Server, 2, false)
            .frame(kinds::SERVER_POINTS, &points(2));
    });
    assert!(matches!(
        error,
        PsiError::Transport(TransportError::WrongKind {
            expected: kinds::CLIENT_TAGS,
            got: KindByte(4)
        })
    ));
    let error = client(|peer| {
        peer.raw(&[200, 0, 0, 0, 0]);
    });
    assert_eq!(
        error.to_string(),
        "the peer sent a frame of unknown kind (byte 200) where the hello frame was due"
    );
}

#[test]
fn wrong_counts() {
    // Tags for two items where the client sent three.
    let error = client(|peer| {
        let tags = vec![7u8; 2 * tag_bytes(3, 5)];
        peer.hello(Role::Server, 5, false)
            .frame(kinds::CLIENT_TAGS, &tags);
    });
    assert!(matches!(
        error,
        PsiError::Peer(PeerError::WrongLength {
            kind: kinds::CLIENT_TAGS,
            ..
        })
    ));
    // An empty chunk.
    let error = client(|peer| {
        honest_start(peer, 2).frame(kinds::SERVER_POINTS, &[]);
    });
    assert!(matches!(
        error,
        PsiError::Peer(PeerError::BadChunk { len: 0, .. })
    ));
    // A server that returns one tag for two different items.
    let error = client(|peer| {
        let tags = vec![7u8; 3 * tag_bytes(3, 5)];
        peer.hello(Role::Server, 5, false)
            .frame(kinds::CLIENT_TAGS, &tags);
    });
    assert!(matches!(error, PsiError::Peer(PeerError::RepeatedTag)));
    // A client that sends more points than it announced.
    let error = server(|peer| {
        peer.hello(Role::Client, 2, true)
            .frame(kinds::CLIENT_POINTS, &points(3));
    });
    assert!(matches!(
        error,
        PsiError::Transport(TransportError::TooLong {
            kind: kinds::CLIENT_POINTS,
            ..
        })
    ));
}

#[test]
fn invalid_points() {
    let non_canonical = [0xffu8; 32]; // s >= p
    let negative = {
        let mut s = [0u8; 32];
        s[0] = 1; // s = 1 is "negative" (odd): not a canonical encoding
        s
    };
    // A canonical, non-negative field element that encodes no point.
    let off_curve = (1u8..128)
        .map(|v| {
            let mut s = [0u8; 32];
            s[0] = 2 * v;
            s
        })
        .find(|s| CompressedRistretto(*s).decompress().is_none())
        .expect("about half of all field elements encode no point");
    for bad in [non_canonical, negative, off_curve] {
        let error = client(|peer| {
            honest_start(peer, 1).frame(kinds::SERVER_POINTS, &bad);
        });
        assert!(
            matches!(error, PsiError::Peer(PeerError::InvalidPoint)),
            "{bad:?}"
        );
        let error = server(|peer| {
            peer.hello(Role::Client, 1, true)
                .frame(kinds::CLIENT_POINTS, &bad);
        });
        assert!(
            matches!(error, PsiError::Peer(PeerError::InvalidPoint)),
            "{bad:?}"
        );
    }
}

#[test]
fn identity_points() {
    let error = client(|peer| {
        honest_start(peer, 2).frame(kinds::SERVER_POINTS, &[points(1), vec![0u8; 32]].concat());
    });
    assert!(matches!(error, PsiError::Peer(PeerError::IdentityPoint)));
    let error = server(|peer| {
        peer.hello(Role::Client, 1, true)
            .frame(kinds::CLIENT_POINTS, &[0u8; 32]);
    });
    assert!(matches!(error, PsiError::Peer(PeerError::IdentityPoint)));
}

#[test]
fn bad_match_positions() {
    let start = |peer: &mut FakePeer| {
        peer.hello(Role::Client, 2, true)
            .frame(kinds::CLIENT_POINTS, &points(2));
    };
    let error = server(|peer| {
        start(peer);
        peer.frame(kinds::MATCH_COUNT, &3u64.to_le_bytes());
    });
    assert!(matches!(
        error,
        PsiError::Peer(PeerError::TooManyMatches { count: 3, most: 2 })
    ));
    let error = server(|peer| {
        start(peer);
        peer.frame(kinds::MATCH_COUNT, &[1, 0, 0]);
    });
    assert!(matches!(
        error,
        PsiError::Peer(PeerError::WrongLength {
            kind: kinds::MATCH_COUNT,
            len: 3,
            expected: 8
        })
    ));
    let error = server(|peer| {
        start(peer);
        peer.frame(kinds::MATCH_COUNT, &1u64.to_le_bytes())
            .frame(kinds::MATCH_POSITIONS, &3u64.to_le_bytes());
    });
    assert!(matches!(
        error,
        PsiError::Peer(PeerError::PositionOutOfRange {
            position: 3,
            len: 3
        })
    ));
    let error = server(|peer| {
        start(peer);
        peer.frame(kinds::MATCH_COUNT, &2u64.to_le_bytes()).frame(
            kinds::MATCH_POSITIONS,
            &[1u64.to_le_bytes(), 1u64.to_le_bytes()].concat(),
        );
    });
    assert!(matches!(
        error,
        PsiError::Peer(PeerError::RepeatedPosition(1))
    ));
    // Valid positions: the server learns that exactly two of its items matched.
    let outcome = against_fake_peer(
        Protocol::Ecdh,
        Role::Server,
        &["a", "b", "c"],
        true,
        Duration::from_secs(5),
        |peer| {
            start(peer);
            peer.frame(kinds::MATCH_COUNT, &2u64.to_le_bytes()).frame(
                kinds::MATCH_POSITIONS,
                &[2u64.to_le_bytes(), 0u64.to_le_bytes()].concat(),
            );
        },
    )
    .unwrap();
    assert_eq!(outcome.intersection.unwrap().size, 2);
}

#[test]
fn handshake_mismatches() {
    let error = client(|peer| {
        peer.hello(Role::Client, 3, false);
    });
    assert!(matches!(
        error,
        PsiError::Hello(HelloError::SameRole(Role::Client))
    ));
    let error = client(|peer| {
        peer.hello(Role::Server, 3, true);
    });
    assert!(matches!(
        error,
        PsiError::Hello(HelloError::BothLearnMismatch { ours: false })
    ));
    let error = client(|peer| {
        peer.raw(b"GET / HTTP/1.1\r\n\r\n");
    });
    assert!(matches!(
        error,
        PsiError::Transport(TransportError::WrongKind {
            got: KindByte(b'G'),
            ..
        })
    ));
    let error = client(|peer| {
        peer.frame(kinds::HELLO, b"GET / HTTP/1.1\r\nHost:");
    });
    assert!(matches!(error, PsiError::Hello(HelloError::Magic)));
}

/// A peer that keeps the connection open but sends nothing: the read times out.
#[test]
fn silent_peers_time_out() {
    let timeout = Duration::from_millis(200);
    let (peer, mut link) = FakePeer::new(Protocol::Ecdh, timeout);
    let options = Options {
        protocol: Protocol::Ecdh,
        role: Role::Client,
        both_learn: false,
    };
    let started = Instant::now();
    let error = run(&mut link, &["a"], options, &|_, _, _| {}).unwrap_err();
    assert!(matches!(
        error,
        PsiError::Transport(TransportError::Timeout {
            expected: kinds::HELLO
        })
    ));
    assert!(started.elapsed() < Duration::from_secs(5));
    drop(peer);

    // Silent after a valid start: the client waits for the server's points.
    let (mut peer, mut link) = FakePeer::new(Protocol::Ecdh, timeout);
    honest_start(&mut peer, 4);
    let error = run(&mut link, &["a", "b", "c"], options, &|_, _, _| {}).unwrap_err();
    assert!(matches!(
        error,
        PsiError::Transport(TransportError::Timeout {
            expected: kinds::SERVER_POINTS
        })
    ));
    drop(peer);
}
