//! One party of a PSI session as a state machine over messages, with no I/O inside: the
//! handshake, then the chosen protocol's core. A caller that moves messages its own way (files
//! exchanged by two batch jobs, a queue, a test) drives it with four calls; [`crate::run`]
//! drives one over a [`Transport`].
//!
//! ```
//! use obscura_psi::{Items, Options, Party, Protocol, Role};
//!
//! let options = |role| Options { protocol: Protocol::Rr22, role, both_learn: false };
//! let (ours, theirs) = (["alice", "bob", "carol"], ["carol", "dave", "alice"]);
//! let (our_items, their_items) = (Items::new(&ours), Items::new(&theirs));
//! let mut parties = [
//!     Party::new(&our_items, options(Role::Client), &|_, _, _| {})?,
//!     Party::new(&their_items, options(Role::Server), &|_, _, _| {})?,
//! ];
//! // Each party sends what it has, then takes what it waits for, until neither waits.
//! while parties.iter().any(|party| party.expects().is_some()) {
//!     for turn in [0, 1] {
//!         while let Some(message) = parties[turn].poll_send()? {
//!             let peer = &mut parties[1 - turn];
//!             let expected = peer.expects().expect("the peer waits for a message");
//!             assert_eq!(message.kind, expected.kind);
//!             peer.take(message.payload)?;
//!         }
//!     }
//! }
//! let [client, server] = parties;
//! let intersection = client.finish()?.intersection.expect("the client learns it");
//! assert_eq!(intersection.rows, [0, 2]);
//! assert!(server.finish()?.intersection.is_none());
//! # Ok::<(), obscura_psi::PsiError>(())
//! ```

use std::time::Instant;

use crate::core::{Core, Expected, Message};
use crate::hello::{self, Hello, HELLO};
use crate::transport::Transport;
use crate::unique::UniqueItems;
use crate::{ecdh, kkrt, rr22, Intersection, Options, Outcome, Progress, Protocol, PsiError, Role};

/// A party's items, de-duplicated: each distinct item enters the protocol once (equal items
/// would tell the peer their multiplicity), and results name rows of the caller's list.
pub struct Items<'r>(UniqueItems<'r>);

impl<'r> Items<'r> {
    /// The items of `rows` (byte strings, duplicates allowed), de-duplicated in parallel on the
    /// current rayon pool.
    pub fn new<I: AsRef<[u8]> + Sync>(rows: &'r [I]) -> Self {
        Self(UniqueItems::new(rows))
    }

    /// Rows of the caller's list, duplicates included.
    pub fn rows(&self) -> usize {
        self.0.rows()
    }

    /// Distinct items.
    pub fn distinct(&self) -> usize {
        self.0.len()
    }
}

/// One party of a PSI session: the messages it has to send ([`Party::poll_send`]), the one it
/// waits for ([`Party::expects`]: its kind and longest payload, to check before reading it),
/// taking it ([`Party::take`]), and, once it waits for nothing, its [`Outcome`]
/// ([`Party::finish`]).
///
/// The heavy steps run on the current rayon pool, inside these calls; a call that returns no
/// message may first do work that overlaps the peer's. Anything malformed from the peer is a
/// typed error, after which the party is not used again.
pub struct Party<'a> {
    items: &'a UniqueItems<'a>,
    options: Options,
    progress: Progress<'a>,
    ours: Hello,
    hello_sent: bool,
    step: Step<'a>,
    bytes_sent: u64,
    bytes_received: u64,
    started: Instant,
}

/// Where a party is.
enum Step<'a> {
    /// The peer's handshake is due.
    Handshake,
    /// The protocol runs.
    Protocol {
        peer: Hello,
        core: Box<dyn Core + Send + 'a>,
    },
    /// The handshake showed an empty set: nothing more to exchange.
    Empty { peer: Hello },
    /// A step failed.
    Failed,
}

impl<'a> Party<'a> {
    /// The party with `items` that runs a session as `options` say (checked now: see
    /// [`Options::check`]), reporting progress to `progress`.
    pub fn new(
        items: &'a Items<'a>,
        options: Options,
        progress: Progress<'a>,
    ) -> Result<Self, PsiError> {
        Self::of_unique(&items.0, options, progress)
    }

    /// [`Party::new`] on items already de-duplicated.
    pub(crate) fn of_unique(
        items: &'a UniqueItems<'a>,
        options: Options,
        progress: Progress<'a>,
    ) -> Result<Self, PsiError> {
        options.check()?;
        Ok(Self {
            items,
            options,
            progress,
            ours: Hello {
                protocol: options.protocol,
                role: options.role,
                items: items.len() as u64,
                both_learn: options.both_learn,
            },
            hello_sent: false,
            step: Step::Handshake,
            bytes_sent: 0,
            bytes_received: 0,
            started: Instant::now(),
        })
    }

    /// The next message to send, if one is ready; `None` once the party waits for the peer.
    pub fn poll_send(&mut self) -> Result<Option<Message>, PsiError> {
        let message = if !self.hello_sent {
            self.hello_sent = true;
            Some(Message {
                kind: HELLO,
                payload: self.ours.encode().to_vec(),
            })
        } else if let Step::Protocol { core, .. } = &mut self.step {
            core.poll_send()?
        } else {
            None
        };
        if let Some(message) = &message {
            self.bytes_sent += message.payload.len() as u64;
        }
        Ok(message)
    }

    /// The message the party waits for, or `None` once it needs nothing more (call
    /// [`Party::poll_send`] until it returns `None` first: a party may have messages left to
    /// send when it waits for nothing).
    pub fn expects(&self) -> Option<Expected> {
        match &self.step {
            Step::Handshake => Some(Expected {
                kind: HELLO,
                max_len: hello::LEN,
            }),
            Step::Protocol { core, .. } => core.expects(),
            Step::Empty { .. } | Step::Failed => None,
        }
    }

    /// Takes the peer's next message, of the kind and at most the length [`Party::expects`]
    /// named.
    ///
    /// # Panics
    /// If the party waits for no message ([`Party::expects`] is `None`), or a step before
    /// failed: both are mistakes of the driver, not of the peer.
    pub fn take(&mut self, payload: Vec<u8>) -> Result<(), PsiError> {
        self.bytes_received += payload.len() as u64;
        self.step = match std::mem::replace(&mut self.step, Step::Failed) {
            Step::Handshake => self.start(&payload)?,
            Step::Protocol { peer, mut core } => {
                core.take(payload)?;
                Step::Protocol { peer, core }
            }
            Step::Empty { .. } | Step::Failed => {
                unreachable!("take is called only for a message `expects` named")
            }
        };
        Ok(())
    }

    /// Checks the peer's handshake against ours and starts the protocol, unless a set is empty.
    fn start(&self, payload: &[u8]) -> Result<Step<'a>, PsiError> {
        let peer = Hello::decode(payload)?;
        self.ours.check_peer(&peer)?;
        let (n_client, n_server) = self.ours.set_sizes(&peer);
        if n_client == 0 || n_server == 0 {
            // Both parties know from the handshake that the intersection is empty.
            return Ok(Step::Empty { peer });
        }
        let (items, ours, progress) = (self.items, &self.ours, self.progress);
        let values = items.values();
        let core = match self.options.protocol {
            Protocol::Ecdh => ecdh::core(values, ours, &peer, progress)?,
            Protocol::Kkrt => kkrt::core(values, ours, &peer, progress)?,
            Protocol::Rr22 | Protocol::Rr22Malicious => rr22::core(values, ours, &peer, progress)?,
        };
        Ok(Step::Protocol { peer, core })
    }

    /// The outcome, once the party waits for nothing and has nothing left to send. Its byte
    /// counts are of payloads ([`run`](crate::run) reports the transport's, frame headers
    /// included).
    ///
    /// # Panics
    /// If the party still waits for the peer's handshake, or a step failed (mistakes of the
    /// driver).
    pub fn finish(self) -> Result<Outcome, PsiError> {
        let learns = self.options.role == Role::Client || self.options.both_learn;
        let (peer, matched) = match self.step {
            Step::Protocol { peer, core } => (peer, core.finish()?),
            Step::Empty { peer } => (peer, learns.then(|| vec![false; self.items.len()])),
            Step::Handshake | Step::Failed => {
                unreachable!("finish is called only once nothing is due")
            }
        };
        let items = self.items;
        Ok(Outcome {
            intersection: matched.map(|matched| Intersection {
                size: matched.iter().filter(|&&m| m).count(),
                rows: items.rows_matching(&matched),
            }),
            rows: items.rows(),
            unique_items: items.len(),
            duplicates_dropped: items.duplicates(),
            peer_items: peer.items,
            bytes_sent: self.bytes_sent,
            bytes_received: self.bytes_received,
            elapsed: self.started.elapsed(),
        })
    }

    /// Runs the party over `transport`: sends what it has, reads what it waits for, until it is
    /// done. The outcome's byte counts are the transport's.
    pub(crate) fn run_over<T: Transport + ?Sized>(
        mut self,
        transport: &mut T,
    ) -> Result<Outcome, PsiError> {
        let (sent_before, received_before) = (transport.bytes_sent(), transport.bytes_received());
        loop {
            while let Some(message) = self.poll_send()? {
                transport.send(message.kind, &message.payload)?;
            }
            let Some(expected) = self.expects() else {
                break;
            };
            let payload = transport
                .recv(expected.kind, expected.max_len)
                .map_err(|error| hello::opening_error(expected.kind, error))?;
            self.take(payload)?;
        }
        let mut outcome = self.finish()?;
        outcome.bytes_sent = transport.bytes_sent() - sent_before;
        outcome.bytes_received = transport.bytes_received() - received_before;
        Ok(outcome)
    }
}
