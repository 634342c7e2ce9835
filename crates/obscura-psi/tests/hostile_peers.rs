//! One table of hostile peers, played against every protocol in both roles and over both kinds
//! of link (a stream and a mailbox folder, by [`against_fake_peer`]): each case ends in its
//! typed error, never a hang or a panic. The protocol-specific cases are in the
//! `*malformed_peer` suites.

mod common;

use common::fake_peer::{against_fake_peer, FakePeer, TIMEOUT, WIRE_VERSION};
use common::PROTOCOLS;
use obscura_psi::kinds;
use obscura_psi::transport::{KindByte, TransportError};
use obscura_psi::{HelloError, PsiError, Role};

/// A hostile peer: what it sends, and whether the error it causes is the one due.
struct Case {
    name: &'static str,
    script: fn(&mut FakePeer, Role),
    expected: fn(&PsiError) -> bool,
}

/// The other role.
fn peer_of(role: Role) -> Role {
    match role {
        Role::Client => Role::Server,
        Role::Server => Role::Client,
    }
}

const CASES: &[Case] = &[
    Case {
        name: "says nothing and hangs up",
        script: |_, _| {},
        expected: |error| {
            matches!(
                error,
                PsiError::Transport(TransportError::Closed {
                    expected: kinds::HELLO
                })
            )
        },
    },
    Case {
        name: "sends half a frame header",
        script: |peer, _| {
            peer.raw(&[kinds::HELLO.byte(), 21]);
        },
        expected: |error| {
            matches!(
                error,
                PsiError::Transport(TransportError::Truncated {
                    expected: kinds::HELLO
                })
            )
        },
    },
    Case {
        name: "sends a frame of an unknown kind",
        script: |peer, _| {
            peer.frame_of_byte(200, b"hello?");
        },
        expected: |error| {
            matches!(
                error,
                PsiError::Transport(TransportError::WrongKind {
                    expected: kinds::HELLO,
                    got: KindByte(200)
                })
            )
        },
    },
    Case {
        name: "announces a 4 GiB handshake",
        script: |peer, _| {
            peer.raw(&[kinds::HELLO.byte(), 0xff, 0xff, 0xff, 0xff]);
        },
        expected: |error| {
            matches!(
                error,
                PsiError::Transport(TransportError::TooLong {
                    kind: kinds::HELLO,
                    len: 0xffff_ffff,
                    ..
                })
            )
        },
    },
    Case {
        name: "takes the same role",
        script: |peer, role| {
            peer.hello(role, 3, false);
        },
        expected: |error| matches!(error, PsiError::Hello(HelloError::SameRole(_))),
    },
    Case {
        name: "speaks another wire version",
        script: |peer, role| {
            peer.hello_of_version(WIRE_VERSION + 1, peer_of(role), 3);
        },
        expected: |error| matches!(error, PsiError::Hello(HelloError::Version { theirs, .. }) if *theirs == WIRE_VERSION + 1),
    },
    Case {
        name: "hangs up after a valid handshake",
        script: |peer, role| {
            peer.hello(peer_of(role), 3, false);
        },
        expected: |error| matches!(error, PsiError::Transport(TransportError::Closed { .. })),
    },
];

#[test]
fn every_hostile_peer_ends_every_protocol_in_its_error_over_both_links() {
    for case in CASES {
        for protocol in PROTOCOLS {
            for role in [Role::Client, Role::Server] {
                let items = ["a", "b", "c"];
                let script = |peer: &mut FakePeer| (case.script)(peer, role);
                let error = against_fake_peer(protocol, role, &items, false, TIMEOUT, script)
                    .expect_err(case.name);
                assert!(
                    (case.expected)(&error),
                    "{} ({protocol}, {role}): {error:?}",
                    case.name
                );
            }
        }
    }
}
