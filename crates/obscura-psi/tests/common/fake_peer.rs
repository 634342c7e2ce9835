//! A hand-driven fake peer: the test writes raw frames to the party under test and ignores what
//! the party sends (keeping it, so that the party's writes succeed). [`against_fake_peer`] plays
//! each script over both kinds of link, an in-memory stream and a mailbox folder, and requires
//! the same result of both.

use obscura_psi::kinds;
use std::io::Write;
use std::path::Path;
use std::time::{Duration, Instant};

use obscura_psi::hash_to_group::HashToGroup;
use obscura_psi::transport::mailbox::MailboxTransport;
use obscura_psi::transport::memory::{self, PipeReader, PipeWriter};
use obscura_psi::transport::{FrameKind, StreamTransport, TransportError, HEADER_BYTES};
use obscura_psi::{run, Options, Outcome, PeerError, Protocol, PsiError, Role};

/// The wire version of the handshakes the fake peer sends.
pub const WIRE_VERSION: u16 = 3;

/// The party's end of a link to a [`FakePeer`].
pub type PartyLink = StreamTransport<PipeReader, PipeWriter>;

/// The peer end of a link to the party under test: a pipe it writes to at once, or (for a
/// mailbox) only the bytes it would write, delivered as files afterwards.
pub struct FakePeer {
    protocol: Protocol,
    to_party: Option<PipeWriter>,
    _from_party: Option<PipeReader>,
    written: Vec<u8>,
}

impl FakePeer {
    /// A fake peer speaking `protocol`, and the party's end of the link; reads and writes time
    /// out after `timeout`.
    pub fn new(protocol: Protocol, timeout: Duration) -> (Self, PartyLink) {
        let (to_party, party_reader) = memory::pipe(timeout);
        let (party_writer, from_party) = memory::pipe(timeout);
        let peer = Self {
            protocol,
            to_party: Some(to_party),
            _from_party: Some(from_party),
            written: Vec::new(),
        };
        (peer, StreamTransport::new(party_reader, party_writer))
    }

    /// A fake peer that only records what it sends, for [`FakePeer::post`].
    fn recording(protocol: Protocol) -> Self {
        Self {
            protocol,
            to_party: None,
            _from_party: None,
            written: Vec::new(),
        }
    }

    /// Sends raw bytes.
    pub fn raw(&mut self, bytes: &[u8]) -> &mut Self {
        if let Some(to_party) = &mut self.to_party {
            to_party.write_all(bytes).unwrap();
            to_party.flush().unwrap();
        }
        self.written.extend_from_slice(bytes);
        self
    }

    /// Posts what was sent into `folder` as a mailbox peer of `role` would have, frame by frame
    /// as a stream reader splits them (a last, incomplete frame as a shorter file).
    fn post(&self, folder: &Path, role: Role) {
        let direction = match role {
            Role::Client => "client-to-server",
            Role::Server => "server-to-client",
        };
        let mut rest = &self.written[..];
        let mut round = 0;
        while !rest.is_empty() {
            let len = match rest.get(1..HEADER_BYTES) {
                Some(len) => u32::from_le_bytes(len.try_into().unwrap()) as usize,
                None => rest.len(),
            };
            let frame = rest.len().min(HEADER_BYTES.saturating_add(len));
            let name = format!("fake.a1.b000000.r{round:06}.{direction}");
            std::fs::write(folder.join(name), &rest[..frame]).unwrap();
            rest = &rest[frame..];
            round += 1;
        }
    }

    /// Sends one frame.
    pub fn frame(&mut self, kind: FrameKind, payload: &[u8]) -> &mut Self {
        self.frame_of_byte(kind.byte(), payload)
    }

    /// Sends one frame whose kind byte is `kind`, known or not.
    pub fn frame_of_byte(&mut self, kind: u8, payload: &[u8]) -> &mut Self {
        let mut bytes = vec![kind];
        bytes.extend_from_slice(&(payload.len() as u32).to_le_bytes());
        bytes.extend_from_slice(payload);
        self.raw(&bytes)
    }

    /// A handshake as the documented layout has it.
    pub fn hello(&mut self, role: Role, items: u64, both_learn: bool) -> &mut Self {
        self.hello_with(WIRE_VERSION, role, items, both_learn)
    }

    /// A handshake of wire version `version`, for `items` items, not both learning.
    pub fn hello_of_version(&mut self, version: u16, role: Role, items: u64) -> &mut Self {
        self.hello_with(version, role, items, false)
    }

    /// A handshake of wire version `version`.
    fn hello_with(&mut self, version: u16, role: Role, items: u64, both_learn: bool) -> &mut Self {
        let mut hello = b"OBSCPSI\0".to_vec();
        hello.extend_from_slice(&version.to_le_bytes());
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
        self.frame(kinds::HELLO, &hello)
    }
}

/// Runs the party under test (`protocol`, `role`, `items`) against a fake peer that `script`
/// drives before the party starts and that closes its side when the script is done (so a party
/// that waits for more sees the connection end); reads time out after `timeout`. The script
/// runs again through a mailbox folder, where the peer's frames are files written before the
/// party starts: that run must end the same way, a connection closed on the stream being a
/// read that times out in the mailbox.
pub fn against_fake_peer(
    protocol: Protocol,
    role: Role,
    items: &[&str],
    both_learn: bool,
    timeout: Duration,
    script: impl Fn(&mut FakePeer),
) -> Result<Outcome, PsiError> {
    let options = Options {
        protocol,
        role,
        both_learn,
    };
    let (mut peer, mut link) = FakePeer::new(protocol, timeout);
    script(&mut peer);
    let FakePeer {
        to_party,
        _from_party: from_party,
        ..
    } = peer;
    drop(to_party);
    let streamed = run(&mut link, items, options, &|_, _, _| {});
    drop(from_party);

    let folder = tempfile::tempdir().unwrap();
    let mut peer = FakePeer::recording(protocol);
    script(&mut peer);
    let peer_role = match role {
        Role::Client => Role::Server,
        Role::Server => Role::Client,
    };
    peer.post(folder.path(), peer_role);
    // Every frame the peer sends is there already: a short wait ends the run once it needs one
    // more.
    let wait = Duration::from_millis(100);
    let mut mailbox = MailboxTransport::open(folder.path(), "fake", 1, role, wait).unwrap();
    let posted = run(&mut mailbox, items, options, &|_, _, _| {});
    match (&streamed, &posted) {
        (Ok(streamed), Ok(posted)) => {
            // Which rows a fake peer's positions name depends on the party's secret order of
            // its items, drawn anew each run: the sizes must agree.
            let size = |outcome: &Outcome| outcome.intersection.as_ref().map(|i| i.size);
            assert_eq!(size(streamed), size(posted), "mailbox run");
            assert_eq!(streamed.peer_items, posted.peer_items, "mailbox run");
        }
        (Err(streamed), Err(posted)) => {
            let streamed = format!("{streamed:?}").replace("Closed {", "Timeout {");
            assert_eq!(streamed, format!("{posted:?}"), "mailbox run");
        }
        _ => panic!("over a stream: {streamed:?}; through a mailbox: {posted:?}"),
    }
    streamed
}

/// Valid, distinct point encodings.
pub fn points(count: usize) -> Vec<u8> {
    let hash = HashToGroup::psi();
    (0..count)
        .flat_map(|i| hash.hash(&i.to_le_bytes()).compress().to_bytes())
        .collect()
}

/// The error of a client with three items (`a`, `b`, `c`) against a fake server.
pub fn client_error(protocol: Protocol, script: impl Fn(&mut FakePeer)) -> PsiError {
    let items = ["a", "b", "c"];
    against_fake_peer(protocol, Role::Client, &items, false, TIMEOUT, script).unwrap_err()
}

/// The error of a server with three items (`a`, `b`, `c`), both learning, against a fake
/// client.
pub fn server_error(protocol: Protocol, script: impl Fn(&mut FakePeer)) -> PsiError {
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
        start(peer).frame(kinds::MATCH_COUNT, &4u64.to_le_bytes());
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
            .frame(kinds::MATCH_COUNT, &1u64.to_le_bytes())
            .frame(kinds::MATCH_POSITIONS, &3u64.to_le_bytes());
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
            .frame(kinds::MATCH_COUNT, &2u64.to_le_bytes())
            .frame(kinds::MATCH_POSITIONS, &positions([0, 0]));
    });
    assert!(
        matches!(error, PsiError::Peer(PeerError::RepeatedPosition(0))),
        "{error:?}"
    );
    let items = ["a", "b", "c"];
    let outcome = against_fake_peer(protocol, Role::Server, &items, true, TIMEOUT, |peer| {
        start(peer)
            .frame(kinds::MATCH_COUNT, &2u64.to_le_bytes())
            .frame(kinds::MATCH_POSITIONS, &positions([2, 0]));
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
