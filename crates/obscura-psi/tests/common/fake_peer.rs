//! A hand-driven fake peer: the test writes raw frames to the party under test and ignores what
//! the party sends (keeping it, so that the party's writes succeed).

use std::io::Write;
use std::time::{Duration, Instant};

use obscura_psi::hash_to_group::HashToGroup;
use obscura_psi::transport::memory::{self, PipeReader, PipeWriter};
use obscura_psi::transport::{FrameKind, StreamTransport, TransportError};
use obscura_psi::{run, Options, Outcome, PeerError, Protocol, PsiError, Role};

/// The wire version of the handshakes the fake peer sends.
pub const WIRE_VERSION: u16 = 3;

/// The party's end of a link to a [`FakePeer`].
pub type PartyLink = StreamTransport<PipeReader, PipeWriter>;

/// The peer end of a link to the party under test.
pub struct FakePeer {
    protocol: Protocol,
    to_party: PipeWriter,
    _from_party: PipeReader,
}

impl FakePeer {
    /// A fake peer speaking `protocol`, and the party's end of the link; reads and writes time
    /// out after `timeout`.
    pub fn new(protocol: Protocol, timeout: Duration) -> (Self, PartyLink) {
        let (to_party, party_reader) = memory::pipe(timeout);
        let (party_writer, from_party) = memory::pipe(timeout);
        let peer = Self {
            protocol,
            to_party,
            _from_party: from_party,
        };
        (peer, StreamTransport::new(party_reader, party_writer))
    }

    /// Sends raw bytes.
    pub fn raw(&mut self, bytes: &[u8]) -> &mut Self {
        self.to_party.write_all(bytes).unwrap();
        self.to_party.flush().unwrap();
        self
    }

    /// Sends one frame.
    pub fn frame(&mut self, kind: FrameKind, payload: &[u8]) -> &mut Self {
        let mut bytes = vec![kind as u8];
        bytes.extend_from_slice(&(payload.len() as u32).to_le_bytes());
        bytes.extend_from_slice(payload);
        self.raw(&bytes)
    }

    /// A handshake as the documented layout has it.
    pub fn hello(&mut self, role: Role, items: u64, both_learn: bool) -> &mut Self {
        let mut hello = b"OBSCPSI\0".to_vec();
        hello.extend_from_slice(&WIRE_VERSION.to_le_bytes());
        hello.push(match self.protocol {
            Protocol::Ecdh => 1,
            Protocol::Kkrt => 2,
            Protocol::Rr22 => 3,
            _ => 4,
        });
        hello.push(match role {
            Role::Client => 0,
            Role::Server => 1,
        });
        hello.extend_from_slice(&items.to_le_bytes());
        hello.push(both_learn as u8);
        self.frame(FrameKind::Hello, &hello)
    }
}

/// Runs the party under test (`protocol`, `role`, `items`) against a fake peer that `script`
/// drives before the party starts and that closes its side when the script is done (so a party
/// that waits for more sees the connection end); reads time out after `timeout`.
pub fn against_fake_peer(
    protocol: Protocol,
    role: Role,
    items: &[&str],
    both_learn: bool,
    timeout: Duration,
    script: impl FnOnce(&mut FakePeer),
) -> Result<Outcome, PsiError> {
    let (mut peer, mut link) = FakePeer::new(protocol, timeout);
    script(&mut peer);
    let FakePeer {
        to_party,
        _from_party: from_party,
        ..
    } = peer;
    drop(to_party);
    let options = Options {
        protocol,
        role,
        both_learn,
    };
    let result = run(&mut link, items, options, &|_, _, _| {});
    drop(from_party);
    result
}

/// Valid, distinct point encodings.
pub fn points(count: usize) -> Vec<u8> {
    let hash = HashToGroup::psi();
    (0..count)
        .flat_map(|i| hash.hash(&i.to_le_bytes()).compress().to_bytes())
        .collect()
}

/// The error of a client with three items (`a`, `b`, `c`) against a fake server.
pub fn client_error(protocol: Protocol, script: impl FnOnce(&mut FakePeer)) -> PsiError {
    let items = ["a", "b", "c"];
    against_fake_peer(protocol, Role::Client, &items, false, TIMEOUT, script).unwrap_err()
}

/// The error of a server with three items (`a`, `b`, `c`), both learning, against a fake
/// client.
pub fn server_error(protocol: Protocol, script: impl FnOnce(&mut FakePeer)) -> PsiError {
    let items = ["a", "b", "c"];
    against_fake_peer(protocol, Role::Server, &items, true, TIMEOUT, script).unwrap_err()
}

/// How long a party under test waits for a fake peer that says nothing more.
pub const TIMEOUT: Duration = Duration::from_secs(5);

/// A server with three items (`a`, `b`, `c`), both learning, checks the client's match positions
/// after `start` (a fake client's messages up to them): too many matches, a position out of
/// range and a repeated one are refused, and valid positions tell the server its matches.
pub fn check_match_positions(protocol: Protocol, start: fn(&mut FakePeer) -> &mut FakePeer) {
    let error = server_error(protocol, |peer| {
        start(peer).frame(FrameKind::MatchCount, &4u64.to_le_bytes());
    });
    assert!(
        matches!(
            error,
            PsiError::Peer(PeerError::TooManyMatches { count: 4, most: 3 })
        ),
        "{error:?}"
    );
    let error = server_error(protocol, |peer| {
        start(peer)
            .frame(FrameKind::MatchCount, &1u64.to_le_bytes())
            .frame(FrameKind::MatchPositions, &3u64.to_le_bytes());
    });
    assert!(
        matches!(
            error,
            PsiError::Peer(PeerError::PositionOutOfRange {
                position: 3,
                len: 3
            })
        ),
        "{error:?}"
    );
    let positions = |list: [u64; 2]| [list[0].to_le_bytes(), list[1].to_le_bytes()].concat();
    let error = server_error(protocol, |peer| {
        start(peer)
            .frame(FrameKind::MatchCount, &2u64.to_le_bytes())
            .frame(FrameKind::MatchPositions, &positions([0, 0]));
    });
    assert!(
        matches!(error, PsiError::Peer(PeerError::RepeatedPosition(0))),
        "{error:?}"
    );
    let items = ["a", "b", "c"];
    let outcome = against_fake_peer(protocol, Role::Server, &items, true, TIMEOUT, |peer| {
        start(peer)
            .frame(FrameKind::MatchCount, &2u64.to_le_bytes())
            .frame(FrameKind::MatchPositions, &positions([2, 0]));
    })
    .unwrap();
    assert_eq!(outcome.intersection.unwrap().size, 2);
}

/// A client with three items against a fake server that plays `start` and then keeps the
/// connection open without a word: the read of `expected` times out, quickly.
pub fn check_silent_server(
    protocol: Protocol,
    start: impl FnOnce(&mut FakePeer),
    expected: FrameKind,
) {
    let (mut peer, mut link) = FakePeer::new(protocol, Duration::from_millis(200));
    start(&mut peer);
    let options = Options {
        protocol,
        role: Role::Client,
        both_learn: false,
    };
    let started = Instant::now();
    let error = run(&mut link, &["a", "b", "c"], options, &|_, _, _| {}).unwrap_err();
    assert!(
        matches!(error, PsiError::Transport(TransportError::Timeout { expected: kind }) if kind == expected),
        "{error:?}"
    );
    assert!(started.elapsed() < Duration::from_secs(5));
    drop(peer);
}
