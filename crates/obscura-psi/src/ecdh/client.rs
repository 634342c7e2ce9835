//! The client's side of ECDH-PSI, as a [`Core`]: it learns the intersection.
//!
//! 1. It sends `H(x)^a` chunk by chunk and keeps the server's tags of `H(x)^{ab}` as a map from
//!    tag to item; the next chunk is blinded while the server answers the current one.
//! 2. It receives the server's `H(y)^b` chunk by chunk, raises them to `a` and looks their tags
//!    up.
//! 3. When both learn, it sends the positions of the server's elements that matched.

use crate::kinds;
use std::collections::HashMap;

use super::Session;
use crate::chunk::{check_chunk, check_exact, chunk_due, CHUNK_ITEMS};
use crate::core::{Core, Expected, Message};
use crate::exponent::POINT_BYTES;
use crate::{positions, PeerError, PsiError, Stage};

/// A tag as a map key: its bytes, zero-padded to a whole encoding.
type TagKey = [u8; POINT_BYTES];

fn tag_key(tag: &[u8]) -> TagKey {
    let mut key = [0u8; POINT_BYTES];
    key[..tag.len()].copy_from_slice(tag);
    key
}

/// The client's state.
pub(super) struct Client<'a, 'p> {
    session: Session<'p>,
    values: &'a [&'a [u8]],
    /// Chunks of our items sent so far.
    sent: usize,
    /// The next chunk's points, blinded ahead.
    ready: Option<Vec<u8>>,
    /// The points of the chunk whose tags are due.
    awaiting: Option<usize>,
    own_tags: HashMap<TagKey, usize>,
    /// The server's elements received so far.
    received: u64,
    matched: Vec<bool>,
    matched_positions: Vec<u64>,
    /// The positions' messages still to send, once the server's elements are all in.
    outbox: Option<std::vec::IntoIter<Message>>,
}

impl<'a, 'p> Client<'a, 'p> {
    /// The client of `session` with its distinct `values`.
    pub(super) fn new(session: Session<'p>, values: &'a [&'a [u8]]) -> Self {
        Self {
            session,
            values,
            sent: 0,
            ready: None,
            awaiting: None,
            own_tags: HashMap::with_capacity(values.len()),
            received: 0,
            matched: vec![false; values.len()],
            matched_positions: Vec::new(),
            outbox: None,
        }
    }

    /// Chunks of our items.
    fn chunks(&self) -> usize {
        self.values.len().div_ceil(CHUNK_ITEMS)
    }

    /// The points of chunk `index` of our items.
    fn blind(&self, index: usize) -> Vec<u8> {
        let start = index * CHUNK_ITEMS;
        let end = (start + CHUNK_ITEMS).min(self.values.len());
        self.session.blind(&self.values[start..end])
    }

    /// Whether every chunk of ours has its tags.
    fn own_items_done(&self) -> bool {
        self.sent == self.chunks() && self.awaiting.is_none()
    }
}

impl Core for Client<'_, '_> {
    fn poll_send(&mut self) -> Result<Option<Message>, PsiError> {
        if let Some(outbox) = &mut self.outbox {
            return Ok(outbox.next());
        }
        if self.sent == self.chunks() {
            return Ok(None);
        }
        if self.awaiting.is_some() {
            // The server works on the chunk sent: blind the next one meanwhile.
            if self.ready.is_none() {
                self.ready = Some(self.blind(self.sent));
            }
            return Ok(None);
        }
        let points = match self.ready.take() {
            Some(points) => points,
            None => self.blind(self.sent),
        };
        self.sent += 1;
        self.awaiting = Some(points.len() / POINT_BYTES);
        Ok(Some(Message {
            kind: kinds::CLIENT_POINTS,
            payload: points,
        }))
    }

    fn expects(&self) -> Option<Expected> {
        if let Some(points) = self.awaiting {
            return Some(Expected {
                kind: kinds::CLIENT_TAGS,
                max_len: points * self.session.tag_bytes,
            });
        }
        (self.own_items_done() && self.received < self.session.n_server).then(|| {
            chunk_due(
                kinds::SERVER_POINTS,
                POINT_BYTES,
                self.session.n_server - self.received,
            )
        })
    }

    fn take(&mut self, payload: Vec<u8>) -> Result<(), PsiError> {
        let session = &self.session;
        if let Some(points) = self.awaiting.take() {
            check_exact(kinds::CLIENT_TAGS, &payload, points * session.tag_bytes)?;
            for tag in payload.chunks_exact(session.tag_bytes) {
                let item = self.own_tags.len();
                if self.own_tags.insert(tag_key(tag), item).is_some() {
                    return Err(PeerError::RepeatedTag.into());
                }
            }
            let done = self.own_tags.len() as u64;
            (session.progress)(Stage::OwnItems, done, self.values.len() as u64);
            return Ok(());
        }
        check_chunk(kinds::SERVER_POINTS, &payload, POINT_BYTES)?;
        let tags = session.tags_of(&payload)?;
        for (position, tag) in (self.received..).zip(tags.chunks_exact(session.tag_bytes)) {
            if let Some(&item) = self.own_tags.get(&tag_key(tag)) {
                self.matched[item] = true;
                self.matched_positions.push(position);
            }
        }
        self.received += (payload.len() / POINT_BYTES) as u64;
        (session.progress)(Stage::PeerItems, self.received, session.n_server);
        if self.received == session.n_server {
            let messages = if session.both_learn {
                positions::messages(&self.matched_positions)
            } else {
                Vec::new()
            };
            self.outbox = Some(messages.into_iter());
        }
        Ok(())
    }

    fn finish(self: Box<Self>) -> Result<Option<Vec<bool>>, PsiError> {
        Ok(Some(self.matched))
    }
}
