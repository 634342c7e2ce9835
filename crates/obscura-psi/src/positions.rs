//! Both learn: the client tells the server which positions of the server's shuffled sequence
//! matched, and the server maps them back through its shuffle. The positions reveal nothing but
//! which server items are in the intersection, since the sequence was in a random order.

use crate::chunk::{check_chunk, check_exact, chunk_due, CHUNK_ITEMS};
use crate::core::{Expected, Message};
use crate::transport::FrameKind;
use crate::{PeerError, PsiError};

/// Client to server: how many positions of the server's sequence matched.
pub const MATCH_COUNT: FrameKind = FrameKind::new(5, "match-count");
/// Client to server: a chunk of matched positions.
pub const MATCH_POSITIONS: FrameKind = FrameKind::new(6, "match-positions");

/// Bytes of a match position.
const POSITION_BYTES: usize = 8;

/// The client's messages: the count of matched positions, then the positions in chunks.
pub(crate) fn messages(positions: &[u64]) -> Vec<Message> {
    let count = Message {
        kind: MATCH_COUNT,
        payload: (positions.len() as u64).to_le_bytes().to_vec(),
    };
    let chunks = positions.chunks(CHUNK_ITEMS).map(|chunk| Message {
        kind: MATCH_POSITIONS,
        payload: chunk.iter().flat_map(|p| p.to_le_bytes()).collect(),
    });
    std::iter::once(count).chain(chunks).collect()
}

/// The server's side: the matched positions of the sequence whose position `p` holds item
/// `order[p]` (at most `most` of them, each in range and sent once), taken message by message.
pub(crate) struct Receiver {
    most: u64,
    count: Option<u64>,
    received: u64,
    matched: Vec<bool>,
}

impl Receiver {
    /// A receiver of at most `most` positions of a sequence of `items` items.
    pub(crate) fn new(most: u64, items: usize) -> Self {
        Self {
            most,
            count: None,
            received: 0,
            matched: vec![false; items],
        }
    }

    /// The message due next, or `None` once every position arrived.
    pub(crate) fn expects(&self) -> Option<Expected> {
        match self.count {
            None => Some(Expected {
                kind: MATCH_COUNT,
                max_len: POSITION_BYTES,
            }),
            Some(count) if self.received < count => Some(chunk_due(
                MATCH_POSITIONS,
                POSITION_BYTES,
                count - self.received,
            )),
            Some(_) => None,
        }
    }

    /// Takes the message [`Receiver::expects`] named, the sequence being in `order`.
    pub(crate) fn take(&mut self, payload: &[u8], order: &[usize]) -> Result<(), PsiError> {
        let Some(count) = self.count else {
            check_exact(MATCH_COUNT, payload, POSITION_BYTES)?;
            let count = u64::from_le_bytes(payload.try_into().expect("length checked"));
            if count > self.most {
                return Err(PeerError::TooManyMatches {
                    count,
                    most: self.most,
                }
                .into());
            }
            self.count = Some(count);
            return Ok(());
        };
        debug_assert!(self.received < count);
        check_chunk(MATCH_POSITIONS, payload, POSITION_BYTES)?;
        let (positions, _) = payload.as_chunks::<POSITION_BYTES>();
        for &bytes in positions {
            let position = u64::from_le_bytes(bytes);
            let item = usize::try_from(position)
                .ok()
                .and_then(|position| order.get(position))
                .ok_or(PeerError::PositionOutOfRange {
                    position,
                    len: order.len() as u64,
                })?;
            if std::mem::replace(&mut self.matched[*item], true) {
                return Err(PeerError::RepeatedPosition(position).into());
            }
        }
        self.received += positions.len() as u64;
        Ok(())
    }

    /// Which items matched.
    pub(crate) fn finish(self) -> Vec<bool> {
        self.matched
    }
}
