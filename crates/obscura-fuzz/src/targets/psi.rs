//! Targets of the PSI peer: one party runs a whole session against a byte stream that plays
//! the other party, so the handshake, every frame and every message decoder of the protocol
//! read what a hostile peer could send.
//!
//! An input is one byte of options (bit 0: both parties learn; bit 1: we are the server) and
//! then the peer's byte stream (frames: kind byte, `u32` LE length, payload).

use std::io::Cursor;
use std::time::Duration;

use obscura_psi::bucketed::{run_bucketed, BucketOptions};
use obscura_psi::transport::{memory, FrameKind, StreamTransport, Transport, TransportError};
use obscura_psi::{run, Options, Protocol, Role};

use super::{outcome, SeedsEnd, Target, Verdict};

/// Our items.
const OURS: [&str; 4] = ["alice", "bob", "carol", "dave"];
/// The honest peer's items (in the seeds).
const THEIRS: [&str; 3] = ["carol", "erin", "alice"];
/// Distinct items per bucket in the bucketed sessions.
const BUCKET_ITEMS: u64 = 4;

/// What one session runs.
#[derive(Clone, Copy)]
enum Session {
    /// A plain session of this protocol.
    Plain(Protocol),
    /// A bucketed session of this protocol.
    Bucketed(Protocol),
}

/// The PSI targets.
pub(super) fn targets() -> Vec<Target> {
    vec![
        Target {
            name: "psi_ecdh",
            about: "an ECDH-PSI session against a hostile peer's byte stream",
            seeds_end: SeedsEnd::Accepted,
            run: |input| session(Session::Plain(Protocol::Ecdh), input),
            seeds: || seeds(Session::Plain(Protocol::Ecdh)),
        },
        Target {
            name: "psi_kkrt",
            about: "a KKRT-PSI session against a hostile peer's byte stream",
            seeds_end: SeedsEnd::Accepted,
            run: |input| session(Session::Plain(Protocol::Kkrt), input),
            seeds: || seeds(Session::Plain(Protocol::Kkrt)),
        },
        Target {
            name: "psi_rr22",
            about: "an RR22-PSI session against a hostile peer's byte stream",
            seeds_end: SeedsEnd::Accepted,
            run: |input| session(Session::Plain(Protocol::Rr22), input),
            seeds: || seeds(Session::Plain(Protocol::Rr22)),
        },
        Target {
            name: "psi_rr22_malicious",
            about: "a malicious-mode RR22-PSI session against a hostile peer's byte stream",
            seeds_end: SeedsEnd::ConsistencyCheck,
            run: |input| session(Session::Plain(Protocol::Rr22Malicious), input),
            seeds: || seeds(Session::Plain(Protocol::Rr22Malicious)),
        },
        Target {
            name: "psi_bucketed",
            about: "a bucketed ECDH-PSI session (bucket plan, then buckets) against a hostile peer",
            seeds_end: SeedsEnd::Accepted,
            run: |input| session(Session::Bucketed(Protocol::Ecdh), input),
            seeds: || seeds(Session::Bucketed(Protocol::Ecdh)),
        },
    ]
}

/// The options an input's first byte selects.
fn options(protocol: Protocol, flags: u8) -> Options {
    Options {
        protocol,
        role: if flags & 2 == 0 {
            Role::Client
        } else {
            Role::Server
        },
        both_learn: flags & 1 != 0,
    }
}

/// Runs `session` as one party over `transport` with `items`.
fn run_session<T: Transport>(
    session: Session,
    transport: &mut T,
    items: &[&str],
    flags: u8,
) -> Result<(), String> {
    let done = match session {
        Session::Plain(protocol) => {
            run(transport, items, options(protocol, flags), &|_, _, _| {}).map(drop)
        }
        Session::Bucketed(protocol) => {
            let folder = tempfile::tempdir().map_err(|e| format!("scratch folder: {e}"))?;
            let options = BucketOptions {
                session: options(protocol, flags),
                bucket_items: BUCKET_ITEMS,
            };
            run_bucketed(
                transport,
                items,
                options,
                folder.path(),
                &|_, _, _, _, _| {},
            )
            .map(drop)
        }
    };
    done.map_err(|e| e.to_string())
}

fn session(session: Session, input: &[u8]) -> Verdict {
    let Some((&flags, stream)) = input.split_first() else {
        return Ok("empty".into());
    };
    let mut transport = StreamTransport::new(Cursor::new(stream), std::io::sink());
    outcome(&run_session(session, &mut transport, &OURS, flags))
}

/// A transport that keeps the frames it receives, as the byte stream that carried them.
struct Recorder<T> {
    inner: T,
    stream: Vec<u8>,
}

impl<T: Transport> Transport for Recorder<T> {
    fn send(&mut self, kind: FrameKind, payload: &[u8]) -> Result<(), TransportError> {
        self.inner.send(kind, payload)
    }

    fn recv(&mut self, expected: FrameKind, max_len: usize) -> Result<Vec<u8>, TransportError> {
        let payload = self.inner.recv(expected, max_len)?;
        self.stream.push(expected.byte());
        self.stream
            .extend_from_slice(&(payload.len() as u32).to_le_bytes());
        self.stream.extend_from_slice(&payload);
        Ok(payload)
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

/// The streams an honest peer sends, for every choice of options the protocol offers.
fn seeds(session: Session) -> Vec<Vec<u8>> {
    let (Session::Plain(protocol) | Session::Bucketed(protocol)) = session;
    (0..4u8)
        .filter(|flags| flags & 1 == 0 || protocol.offers_both_learn())
        .map(|flags| {
            let (ours, mut theirs) = memory::pair(Duration::from_secs(30));
            let peer = std::thread::spawn(move || {
                run_session(session, &mut theirs, &THEIRS, flags ^ 2).expect("the honest peer")
            });
            let mut recorder = Recorder {
                inner: ours,
                stream: Vec::new(),
            };
            run_session(session, &mut recorder, &OURS, flags).expect("an honest session");
            peer.join().expect("the honest peer's thread");
            [vec![flags], recorder.stream].concat()
        })
        .collect()
}
