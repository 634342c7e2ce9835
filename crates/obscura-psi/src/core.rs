//! A party of a PSI protocol as a state machine over messages, with no I/O inside: it gives
//! the messages it has to send, names the one it waits for (its kind and longest payload, so a
//! driver checks both before reading it), takes it, and ends with its result. A
//! [`Party`](crate::Party) runs the handshake and then one of these.

use crate::wire::FrameKind;
use crate::PsiError;

/// A message to send: its kind and payload.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Message {
    /// The kind.
    pub kind: FrameKind,
    /// The payload.
    pub payload: Vec<u8>,
}

/// The message a party waits for: its kind and the longest payload it accepts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Expected {
    /// The kind due.
    pub kind: FrameKind,
    /// The longest payload accepted.
    pub max_len: usize,
}

/// One party's side of a protocol after the handshake.
pub(crate) trait Core {
    /// The next message to send, if one is ready; `None` once the party waits for the peer (a
    /// call that returns `None` may first do the work that overlaps the peer's).
    fn poll_send(&mut self) -> Result<Option<Message>, PsiError>;

    /// The message the party waits for, or `None` once it needs nothing more.
    fn expects(&self) -> Option<Expected>;

    /// Takes the peer's next message, of the kind and at most the length [`Core::expects`]
    /// named.
    fn take(&mut self, payload: Vec<u8>) -> Result<(), PsiError>;

    /// The result, once nothing is left to send or to take: for a party that learns the
    /// intersection, which of its distinct items are in it.
    fn finish(self: Box<Self>) -> Result<Option<Vec<bool>>, PsiError>;
}

/// Two cores run against each other in one thread, for the protocols' unit tests.
#[cfg(test)]
pub(crate) mod by_hand {
    use std::collections::{HashSet, VecDeque};

    use super::{Core, Message};

    /// The client's and the server's items: 9000 even numbers and 5000 multiples of three, as
    /// 4-byte strings (more than one chunk, frame or bin block of every protocol).
    pub(crate) fn sets() -> (Vec<Vec<u8>>, Vec<Vec<u8>>) {
        let numbers = |count: u32, step: u32| -> Vec<Vec<u8>> {
            (0..count)
                .map(|i| (step * i).to_le_bytes().to_vec())
                .collect()
        };
        (numbers(9000, 2), numbers(5000, 3))
    }

    /// Each item as a slice, as the cores take them.
    pub(crate) fn slices(items: &[Vec<u8>]) -> Vec<&[u8]> {
        items.iter().map(Vec::as_slice).collect()
    }

    /// Runs `a` against `b` as two drivers of a [`Party`](crate::Party) would, handing each
    /// message from one to the other and checking it is of the kind and within the length the
    /// receiver named; returns both results.
    pub(crate) fn run(
        a: Box<dyn Core + '_>,
        b: Box<dyn Core + '_>,
    ) -> (Option<Vec<bool>>, Option<Vec<bool>>) {
        let (mut a, mut b) = (Party::Running(a), Party::Running(b));
        let (mut to_b, mut to_a) = (VecDeque::new(), VecDeque::new());
        loop {
            let a_moved = a.turn(&mut to_a, &mut to_b);
            let b_moved = b.turn(&mut to_b, &mut to_a);
            match (a, b) {
                (Party::Finished(a), Party::Finished(b)) => return (a, b),
                (running_a, running_b) => {
                    assert!(a_moved || b_moved, "both parties wait for each other");
                    (a, b) = (running_a, running_b);
                }
            }
        }
    }

    /// A core in progress, or its result.
    enum Party<'a> {
        Running(Box<dyn Core + 'a>),
        Finished(Option<Vec<bool>>),
    }

    impl Party<'_> {
        /// One step of a driver: sends what the core has, then finishes it if it waits for
        /// nothing, or hands it the next message from `inbox`; whether anything moved.
        fn turn(&mut self, inbox: &mut VecDeque<Message>, outbox: &mut VecDeque<Message>) -> bool {
            let Party::Running(core) = self else {
                assert!(inbox.is_empty(), "a message sent to a finished party");
                return false;
            };
            let mut moved = false;
            while let Some(message) = core.poll_send().unwrap() {
                outbox.push_back(message);
                moved = true;
            }
            let Some(expected) = core.expects() else {
                assert!(inbox.is_empty(), "a message sent where nothing is due");
                let Party::Running(core) = std::mem::replace(self, Party::Finished(None)) else {
                    unreachable!("running")
                };
                *self = Party::Finished(core.finish().unwrap());
                return true;
            };
            let Some(message) = inbox.pop_front() else {
                return moved;
            };
            assert_eq!(message.kind, expected.kind);
            assert!(message.payload.len() <= expected.max_len);
            core.take(message.payload).unwrap();
            true
        }
    }

    /// Asserts that `matched` marks exactly the items of `ours` that `theirs` holds.
    pub(crate) fn assert_plain(ours: &[&[u8]], theirs: &[&[u8]], matched: &[bool]) {
        let theirs: HashSet<&[u8]> = theirs.iter().copied().collect();
        assert_eq!(matched.len(), ours.len());
        for (item, &matched) in ours.iter().zip(matched) {
            assert_eq!(matched, theirs.contains(item), "{item:?}");
        }
    }
}
