//! The client's side of KKRT-PSI, as a [`Core`]: the OPRF receiver, which learns the
//! intersection.
//!
//! 1. It sends the base-OT sender's point, places its items into cuckoo bins while the server
//!    answers, sends the cuckoo seed and takes the server's base-OT reply: both seeds of each
//!    of the 512 OTs.
//! 2. It sends `U` frame by frame, computing each frame's OPRF outputs (its tags) while the
//!    server decodes the frame.
//! 3. It looks the server's tags up in its own, and when both learn sends the matched
//!    positions.

use crate::kinds;
use std::collections::VecDeque;
use std::ops::Range;

use obscura_math::sample::{OsSampler, RngError};
use rayon::prelude::*;
use zeroize::Zeroize;

use super::{Session, FRAME_BLOCKS};
use crate::block::random_word;
use crate::chunk::check_exact;
use crate::core::{Core, Expected, Message};
use crate::cuckoo::{self, CuckooTable, EMPTY, HASHES};
use crate::ot::base::{self, REPLY_BYTES};
use crate::ot::code::{item_hashes, Row, CODE_WORDS};
use crate::ot::kkrt::{output, Receiver, BLOCK_BYTES, BLOCK_ROWS, CODE_BITS};
use crate::own_tags::{OwnTags, PeerTagMatch, PeerTags};
use crate::{positions, PsiError, Stage};

/// The client's state, phase by phase.
pub(super) struct Client<'a, 'p> {
    session: Session<'p>,
    values: &'a [&'a [u8]],
    rng: OsSampler,
    phase: Phase<'p>,
    outbox: VecDeque<Message>,
}

/// Where the client is.
enum Phase<'p> {
    /// The base-OT point is to be sent.
    Start(base::Sender),
    /// The items are to be placed into bins and the cuckoo seed sent.
    Place(base::Sender),
    /// The seed is sent; the base-OT reply is due.
    BaseOts {
        base: base::Sender,
        hashes: Vec<u128>,
        table: CuckooTable,
    },
    /// `U` goes out frame by frame.
    Extension {
        /// The extension's receiver (boxed: its 512 key schedules are most of the state).
        receiver: Box<Receiver>,
        inputs: Vec<u128>,
        own: OwnTags,
        /// Frames sent.
        sent: usize,
        /// The rows of the frame last sent, whose tags are still to compute.
        pending: Option<(Range<usize>, Vec<Row>)>,
    },
    /// The server's tags are looked up as they come.
    Matching(PeerTagMatch<'p>),
    /// Only the positions in the outbox are left.
    Done(Vec<bool>),
    /// A step failed; the core is not used again.
    Failed,
}

impl<'a, 'p> Client<'a, 'p> {
    /// The client of `session` with its distinct `values`.
    pub(super) fn new(
        session: Session<'p>,
        values: &'a [&'a [u8]],
        mut rng: OsSampler,
    ) -> Result<Self, PsiError> {
        let base = base::Sender::new(&mut rng)?;
        Ok(Self {
            session,
            values,
            rng,
            phase: Phase::Start(base),
            outbox: VecDeque::new(),
        })
    }

    /// Rows of `U` per frame.
    const FRAME_ROWS: usize = FRAME_BLOCKS * BLOCK_ROWS;

    /// Frames of `U`: one row per bin.
    fn frames(&self) -> usize {
        (self.session.bins as usize).div_ceil(Self::FRAME_ROWS)
    }
}

impl Core for Client<'_, '_> {
    fn poll_send(&mut self) -> Result<Option<Message>, PsiError> {
        if let Some(message) = self.outbox.pop_front() {
            return Ok(Some(message));
        }
        let session = self.session;
        let frames = self.frames();
        match std::mem::replace(&mut self.phase, Phase::Failed) {
            Phase::Start(base) => {
                let point = base.message().to_vec();
                self.phase = Phase::Place(base);
                Ok(Some(Message {
                    kind: kinds::BASE_OT_POINT,
                    payload: point,
                }))
            }
            Phase::Place(base) => {
                // The items are placed while the server answers the base OTs.
                let hashes = item_hashes(self.values);
                let (seed, table) = cuckoo::place(&hashes, session.bins, &mut self.rng)?;
                self.phase = Phase::BaseOts {
                    base,
                    hashes,
                    table,
                };
                Ok(Some(Message {
                    kind: kinds::CUCKOO_SEED,
                    payload: seed.to_vec(),
                }))
            }
            Phase::Extension {
                receiver,
                inputs,
                mut own,
                sent,
                pending,
            } => {
                if let Some((bins, rows)) = pending {
                    // The tags of the frame sent, while the server decodes it.
                    let (tags, slots) = own.tags_and_slots_mut(bins.clone());
                    tags.par_chunks_mut(session.tag_bytes)
                        .zip(rows.par_iter())
                        .zip(slots.par_iter())
                        .enumerate()
                        .filter(|(_, (_, &item))| item != EMPTY)
                        .for_each(|(j, ((tag, row), _))| output((bins.start + j) as u64, row, tag));
                    own.index(bins.clone());
                    (session.progress)(Stage::OwnItems, bins.end as u64, u64::from(session.bins));
                }
                if sent == frames {
                    let peer = PeerTags {
                        items: session.n_server,
                        tag_bytes: session.tag_bytes,
                        per_item: HASHES,
                    };
                    let lookup = PeerTagMatch::new(own, peer, self.values.len(), session.progress);
                    self.phase = Phase::Matching(lookup);
                    return Ok(None);
                }
                let first_bin = sent * Self::FRAME_ROWS;
                let bins = first_bin..(first_bin + Self::FRAME_ROWS).min(inputs.len());
                let mut u = vec![0u8; bins.len() / BLOCK_ROWS * BLOCK_BYTES];
                let mut rows: Vec<Row> = vec![[0; CODE_WORDS]; bins.len()];
                receiver.encode(
                    (sent * FRAME_BLOCKS) as u64,
                    &inputs[bins.clone()],
                    &mut u,
                    &mut rows,
                );
                self.phase = Phase::Extension {
                    receiver,
                    inputs,
                    own,
                    sent: sent + 1,
                    pending: Some((bins, rows)),
                };
                Ok(Some(Message {
                    kind: kinds::OT_EXTENSION,
                    payload: u,
                }))
            }
            other => {
                self.phase = other;
                Ok(None)
            }
        }
    }

    fn expects(&self) -> Option<Expected> {
        match &self.phase {
            Phase::BaseOts { .. } => Some(Expected {
                kind: kinds::BASE_OT_CHOICES,
                max_len: CODE_BITS * REPLY_BYTES,
            }),
            Phase::Matching(lookup) => lookup.expects(),
            _ => None,
        }
    }

    fn take(&mut self, payload: Vec<u8>) -> Result<(), PsiError> {
        let session = self.session;
        match std::mem::replace(&mut self.phase, Phase::Failed) {
            Phase::BaseOts {
                base,
                hashes,
                table,
            } => {
                check_exact(kinds::BASE_OT_CHOICES, &payload, CODE_BITS * REPLY_BYTES)?;
                let mut seeds = base.seeds(&payload)?;
                let receiver = Box::new(Receiver::new(&seeds));
                seeds.zeroize();
                let inputs = bin_inputs(&table, &hashes, &mut self.rng)?;
                self.phase = Phase::Extension {
                    receiver,
                    inputs,
                    own: OwnTags::new(session.tag_bytes, table.into_slots()),
                    sent: 0,
                    pending: None,
                };
                Ok(())
            }
            Phase::Matching(mut lookup) => {
                lookup.take(&payload)?;
                self.phase = match lookup.expects() {
                    Some(_) => Phase::Matching(lookup),
                    None => {
                        let (matched, matched_positions) = lookup.finish();
                        if session.both_learn {
                            self.outbox.extend(positions::messages(&matched_positions));
                        }
                        Phase::Done(matched)
                    }
                };
                Ok(())
            }
            _ => unreachable!("take is called only for a message `expects` named"),
        }
    }

    fn finish(self: Box<Self>) -> Result<Option<Vec<bool>>, PsiError> {
        match self.phase {
            Phase::Done(matched) => Ok(Some(matched)),
            _ => unreachable!("finish is called only once nothing is due"),
        }
    }
}

/// The OPRF input of each bin: the hash of the item it holds, or a random dummy if empty.
fn bin_inputs(
    table: &CuckooTable,
    hashes: &[u128],
    rng: &mut OsSampler,
) -> Result<Vec<u128>, RngError> {
    let slots = table.slots();
    let mut inputs: Vec<u128> = slots
        .par_iter()
        .map(|&item| match item {
            EMPTY => 0,
            item => hashes[item as usize],
        })
        .collect();
    for (input, _) in inputs
        .iter_mut()
        .zip(slots)
        .filter(|(_, &item)| item == EMPTY)
    {
        *input = random_word(rng)?;
    }
    Ok(inputs)
}
