//! The server's side of ECDH-PSI, as a [`Core`]: it answers the client and, when both learn,
//! learns too.
//!
//! 1. It answers each chunk of the client's `H(x)^a` with the tags of `H(x)^{ab}`.
//! 2. It sends `H(y)^b` for its items in a random order, chunk by chunk.
//! 3. When both learn, it receives the positions of that order that matched.

use super::Session;
use crate::chunk::{check_chunk, chunk_due, CHUNK_ITEMS};
use crate::core::{Core, Expected, Message};
use crate::exponent::POINT_BYTES;
use crate::kinds;
use crate::positions;
use crate::{PsiError, Stage};

/// The server's state.
pub(super) struct Server<'a, 'p> {
    session: Session<'p>,
    /// Our distinct items in the random order they are sent in.
    shuffled: Vec<&'a [u8]>,
    /// The client's elements answered so far.
    answered: u64,
    /// The tags of the last chunk of the client's, to send.
    reply: Option<Vec<u8>>,
    /// Our elements sent so far.
    sent: usize,
    /// The random order our items are sent in.
    order: Vec<usize>,
    /// The client's matched positions, when both learn.
    positions: Option<positions::Receiver>,
}

impl<'a, 'p> Server<'a, 'p> {
    /// The server of `session` with its distinct `values`, sent in `order` (a random
    /// permutation of their indices).
    pub(super) fn new(session: Session<'p>, values: &'a [&'a [u8]], order: Vec<usize>) -> Self {
        let positions = session
            .both_learn
            .then(|| positions::Receiver::new(session.n_client.min(session.n_server), order.len()));
        Self {
            session,
            shuffled: order.iter().map(|&item| values[item]).collect(),
            answered: 0,
            reply: None,
            sent: 0,
            order,
            positions,
        }
    }

    /// Whether our elements are all sent.
    fn own_items_sent(&self) -> bool {
        self.sent == self.shuffled.len()
    }
}

impl Core for Server<'_, '_> {
    fn poll_send(&mut self) -> Result<Option<Message>, PsiError> {
        if let Some(tags) = self.reply.take() {
            return Ok(Some(Message {
                kind: kinds::CLIENT_TAGS,
                payload: tags,
            }));
        }
        if self.answered < self.session.n_client || self.own_items_sent() {
            return Ok(None);
        }
        let end = (self.sent + CHUNK_ITEMS).min(self.shuffled.len());
        let points = self.session.blind(&self.shuffled[self.sent..end]);
        self.sent = end;
        let total = self.shuffled.len() as u64;
        (self.session.progress)(Stage::OwnItems, self.sent as u64, total);
        Ok(Some(Message {
            kind: kinds::SERVER_POINTS,
            payload: points,
        }))
    }

    fn expects(&self) -> Option<Expected> {
        let session = &self.session;
        if self.answered < session.n_client {
            return Some(chunk_due(
                kinds::CLIENT_POINTS,
                POINT_BYTES,
                session.n_client - self.answered,
            ));
        }
        if !self.own_items_sent() {
            return None;
        }
        self.positions
            .as_ref()
            .and_then(positions::Receiver::expects)
    }

    fn take(&mut self, payload: Vec<u8>) -> Result<(), PsiError> {
        let session = &self.session;
        if self.answered < session.n_client {
            check_chunk(kinds::CLIENT_POINTS, &payload, POINT_BYTES)?;
            self.reply = Some(session.tags_of(&payload)?);
            self.answered += (payload.len() / POINT_BYTES) as u64;
            (session.progress)(Stage::PeerItems, self.answered, session.n_client);
            return Ok(());
        }
        self.positions
            .as_mut()
            .expect("positions are due only when both learn")
            .take(&payload, &self.order)
    }

    fn finish(self: Box<Self>) -> Result<Option<Vec<bool>>, PsiError> {
        Ok(self.positions.map(positions::Receiver::finish))
    }
}
