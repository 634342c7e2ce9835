//! The server's side of KKRT-PSI, as a [`Core`]: the OPRF sender; it learns the intersection
//! only when both learn.
//!
//! 1. It answers the client's base-OT point with its reply for 512 secret choice bits, and
//!    hashes and shuffles its items while the client places its own.
//! 2. It takes the cuckoo seed, then `U` frame by frame (each exactly the blocks due), decoding
//!    the rows of `Q`.
//! 3. It sends, for its items in the shuffled order, the tags of each item's three bins, chunk
//!    by chunk, and when both learn takes the matched positions.

use crate::kinds;
use std::collections::VecDeque;

use obscura_math::sample::OsSampler;
use rayon::prelude::*;
use zeroize::Zeroize;

use super::{Session, FRAME_BLOCKS};
use crate::block::random_word;
use crate::chunk::{check_exact, CHUNK_ITEMS};
use crate::core::{Core, Expected, Message};
use crate::cuckoo::{BinHasher, HASHES, SEED_BYTES};
use crate::exponent::POINT_BYTES;
use crate::ot::base;
use crate::ot::code::{item_hashes, Row, CODE_WORDS};
use crate::ot::kkrt::{Sender, BLOCK_BYTES, BLOCK_ROWS};
use crate::positions;
use crate::shuffle::random_permutation;
use crate::{PsiError, Stage};

/// Items per parallel task when computing tags.
const TASK_ITEMS: usize = 512;
/// Rows of `Q` reserved before the client's frames arrive (more are added as they come, so an
/// announced set size alone cannot make the server reserve memory).
const RESERVED_ROWS: usize = 1 << 21;

/// The server's state.
pub(super) struct Server<'a, 'p> {
    session: Session<'p>,
    values: &'a [&'a [u8]],
    rng: OsSampler,
    /// The base-OT choice bits, until the base OTs are done.
    choices: Option<Row>,
    sender: Option<Sender>,
    /// Our items' hashes and the random order they are sent in, computed while the client
    /// places its items.
    hashes: Vec<u128>,
    order: Vec<usize>,
    hasher: Option<BinHasher>,
    /// The rows of `Q` decoded so far.
    rows: Vec<Row>,
    /// Our items sent so far.
    sent: usize,
    /// The client's matched positions, when both learn.
    positions: Option<positions::Receiver>,
    outbox: VecDeque<Message>,
}

impl<'a, 'p> Server<'a, 'p> {
    /// The server of `session` with its distinct `values`.
    pub(super) fn new(
        session: Session<'p>,
        values: &'a [&'a [u8]],
        mut rng: OsSampler,
    ) -> Result<Self, PsiError> {
        let mut choices: Row = [0; CODE_WORDS];
        for word in &mut choices {
            *word = random_word(&mut rng)?;
        }
        Ok(Self {
            session,
            values,
            rng,
            choices: Some(choices),
            sender: None,
            hashes: Vec::new(),
            order: Vec::new(),
            hasher: None,
            rows: Vec::new(),
            sent: 0,
            positions: None,
            outbox: VecDeque::new(),
        })
    }

    /// Blocks of `U`: one row per bin, 128 rows a block.
    fn blocks(&self) -> usize {
        self.session.bins as usize / BLOCK_ROWS
    }

    /// Whether every row of `Q` is decoded.
    fn rows_done(&self) -> bool {
        self.rows.len() == self.blocks() * BLOCK_ROWS
    }

    /// The tags `F(h_t(y), y)` of each of the three bins of our items `chunk` (indices into
    /// `values`).
    fn tags(&self, chunk: &[usize]) -> Vec<u8> {
        let (sender, hasher) = (
            self.sender.as_ref().expect("the base OTs are done"),
            self.hasher.as_ref().expect("the seed arrived"),
        );
        let tag_bytes = self.session.tag_bytes;
        let item_bytes = HASHES * tag_bytes;
        let mut tags = vec![0u8; chunk.len() * item_bytes];
        chunk
            .par_chunks(TASK_ITEMS)
            .zip(tags.par_chunks_mut(TASK_ITEMS * item_bytes))
            .for_each(|(items, tags)| {
                let hashes: Vec<u128> = items.iter().map(|&item| self.hashes[item]).collect();
                let mut codes = vec![[0; CODE_WORDS]; items.len()];
                sender.encode_items(&hashes, &mut codes);
                let mut bins = vec![[0; HASHES]; items.len()];
                hasher.bins_of(&hashes, &mut bins);
                // Gathered first, in a loop of independent loads, so that the cache misses of
                // these random rows overlap instead of each stalling a hash computation.
                let q: Vec<Row> = bins
                    .iter()
                    .flatten()
                    .map(|&bin| self.rows[bin as usize])
                    .collect();
                let items = codes.iter().zip(&bins).zip(q.chunks(HASHES));
                for (((code, bins), q), tags) in items.zip(tags.chunks_mut(item_bytes)) {
                    for ((&bin, q), tag) in bins.iter().zip(q).zip(tags.chunks_mut(tag_bytes)) {
                        sender.evaluate(u64::from(bin), q, code, tag);
                    }
                }
            });
        tags
    }
}

impl Core for Server<'_, '_> {
    fn poll_send(&mut self) -> Result<Option<Message>, PsiError> {
        if let Some(message) = self.outbox.pop_front() {
            return Ok(Some(message));
        }
        if self.sender.is_some() && self.order.is_empty() {
            // Our own work, while the client places its items.
            self.hashes = item_hashes(self.values);
            self.order = random_permutation(self.values.len(), &mut self.rng)?;
            return Ok(None);
        }
        if !self.rows_done() || self.sent == self.order.len() {
            return Ok(None);
        }
        let end = (self.sent + CHUNK_ITEMS).min(self.order.len());
        let tags = self.tags(&self.order[self.sent..end]);
        self.sent = end;
        let session = self.session;
        (session.progress)(Stage::OwnItems, self.sent as u64, session.n_server);
        Ok(Some(Message {
            kind: kinds::SERVER_TAGS,
            payload: tags,
        }))
    }

    fn expects(&self) -> Option<Expected> {
        if self.choices.is_some() {
            return Some(Expected {
                kind: kinds::BASE_OT_POINT,
                max_len: POINT_BYTES,
            });
        }
        if self.hasher.is_none() {
            return Some(Expected {
                kind: kinds::CUCKOO_SEED,
                max_len: SEED_BYTES,
            });
        }
        if !self.rows_done() {
            let count = (self.blocks() - self.rows.len() / BLOCK_ROWS).min(FRAME_BLOCKS);
            return Some(Expected {
                kind: kinds::OT_EXTENSION,
                max_len: count * BLOCK_BYTES,
            });
        }
        if self.sent < self.order.len() {
            return None;
        }
        self.positions
            .as_ref()
            .and_then(positions::Receiver::expects)
    }

    fn take(&mut self, payload: Vec<u8>) -> Result<(), PsiError> {
        let session = self.session;
        if let Some(mut choices) = self.choices.take() {
            check_exact(kinds::BASE_OT_POINT, &payload, POINT_BYTES)?;
            let message: [u8; POINT_BYTES] = payload.try_into().expect("length checked");
            let (reply, mut seeds) = base::receive_words(&choices, &message, &mut self.rng)?;
            self.sender = Some(Sender::new(choices, &seeds));
            seeds.zeroize();
            choices.zeroize();
            self.outbox.push_back(Message {
                kind: kinds::BASE_OT_CHOICES,
                payload: reply,
            });
            return Ok(());
        }
        if self.hasher.is_none() {
            check_exact(kinds::CUCKOO_SEED, &payload, SEED_BYTES)?;
            let seed: [u8; SEED_BYTES] = payload.try_into().expect("length checked");
            self.hasher = Some(BinHasher::new(&seed, session.bins));
            self.rows = Vec::with_capacity((session.bins as usize).min(RESERVED_ROWS));
            return Ok(());
        }
        if !self.rows_done() {
            let received = self.rows.len() / BLOCK_ROWS;
            let count = (self.blocks() - received).min(FRAME_BLOCKS);
            check_exact(kinds::OT_EXTENSION, &payload, count * BLOCK_BYTES)?;
            self.rows
                .resize((received + count) * BLOCK_ROWS, [0; CODE_WORDS]);
            let sender = self.sender.as_ref().expect("the base OTs are done");
            sender.decode(
                received as u64,
                &payload,
                &mut self.rows[received * BLOCK_ROWS..],
            );
            let bins = u64::from(session.bins);
            (session.progress)(Stage::PeerItems, self.rows.len() as u64, bins);
            if self.rows_done() && session.both_learn {
                let most = session.n_client.min(session.n_server);
                self.positions = Some(positions::Receiver::new(most, self.values.len()));
            }
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
