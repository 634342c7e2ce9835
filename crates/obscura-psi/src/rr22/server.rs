//! The server's side of RR22-PSI, as a [`Core`]: the VOLE sender (holder of `Δ`); it learns the
//! intersection only when both learn.
//!
//! 1. It answers the client's base-OT point with its reply for the 128 bits of `Δ`, takes the
//!    seeds, and hashes and shuffles its items while the client encodes its own.
//! 2. It takes the correlated-OT extension frame by frame (in the malicious mode checking it),
//!    and sends its trees.
//! 3. It takes the OKVS seed (and the VOLE check's seed), then `A'` frame by frame, computing
//!    `B' = B ⊕ A' · Δ` as the frames arrive (in the malicious mode, then takes the check value
//!    and answers with the hash of `V` and the tags' salt).
//! 4. It sends, for its items in the shuffled order, their tags chunk by chunk, and when both
//!    learn takes the matched positions.

use crate::kinds;
use std::collections::VecDeque;

use obscura_math::memory::LargeSlice;
use obscura_math::sample::{fill_random, OsSampler};
use rayon::prelude::*;
use zeroize::{Zeroize, Zeroizing};

use super::check::{self, Coefficients};
use super::client::{OT_FRAME_BLOCKS, STORE_FRAME_WORDS};
use super::{hash_items, tag, words_from_bytes, words_to_bytes, Seeds, Session, ITEM_SEED_BYTES};
use crate::block::random_word;
use crate::chunk::{check_exact, CHUNK_ITEMS};
use crate::core::{Core, Expected, Message};
use crate::exponent::POINT_BYTES;
use crate::gf128::mul;
use crate::okvs::{self, Okvs};
use crate::ot::base;
use crate::ot::iknp::{self, Sender};
use crate::shuffle::random_permutation;
use crate::vole::ea_code::EaCode;
use crate::vole::{self, SenderVector};
use crate::{positions, PeerError, PsiError, Stage};

/// The server's state.
pub(super) struct Server<'a, 'p> {
    session: Session<'p>,
    values: &'a [&'a [u8]],
    rng: OsSampler,
    /// `Δ`, wiped whichever way the session ends.
    delta: Zeroizing<u128>,
    phase: Phase,
    outbox: VecDeque<Message>,
}

/// Where the server is.
enum Phase {
    /// The client's base-OT point is due.
    BaseOts,
    /// The seeds are due.
    Seeds(Box<Sender>),
    /// Our items are to be hashed and shuffled.
    Hash { sender: Box<Sender>, seeds: Seeds },
    /// The OT extension arrives frame by frame.
    Extension {
        sender: Box<Sender>,
        items: Items,
        rows: Zeroizing<Vec<u128>>,
    },
    /// Malicious mode: the client's answer to the check of the extension is due.
    OtCheck {
        seed: [u8; check::SEED_BYTES],
        items: Items,
        rows: Zeroizing<Vec<u128>>,
    },
    /// The trees are to be computed and sent.
    Trees {
        items: Items,
        rows: Zeroizing<Vec<u128>>,
    },
    /// The trees are sent; our side of the VOLE is to be accumulated.
    Accumulate {
        items: Items,
        leaves: LargeSlice<u128>,
        /// Malicious mode: our share of the check's mask correlation (`b*`).
        mask_share: Option<u128>,
    },
    /// The OKVS seed is due.
    OkvsSeed(Box<Store>),
    /// Malicious mode: the VOLE check's seed is due.
    VoleCheckSeed(Box<Store>),
    /// `A'` arrives frame by frame.
    Store(Box<Store>),
    /// Malicious mode: the client's check value is due.
    VoleCheckValue(Box<Store>),
    /// `B'` is complete: it is to be decoded at our items' keys (with the salt of the
    /// malicious mode).
    Decode {
        store: Box<Store>,
        salt: Option<u128>,
    },
    /// Our tags go out chunk by chunk.
    Tags(Box<Tags>),
    /// The client's matched positions arrive, when both learn.
    Positions {
        order: Vec<usize>,
        receiver: positions::Receiver,
    },
    /// Nothing is left.
    Done(Option<Vec<bool>>),
    /// A step failed; the core is not used again.
    Failed,
}

/// Our items, hashed, and the random order their tags are sent in.
struct Items {
    keys: Vec<u128>,
    values: Vec<u128>,
    order: Vec<usize>,
    code: EaCode,
}

/// `B'` as it is built from the client's frames.
struct Store {
    items: Items,
    vector: SenderVector,
    okvs_seed: [u8; okvs::SEED_BYTES],
    /// `B'` so far.
    store: Vec<u128>,
    /// Malicious mode: our share of the check's mask correlation (`b*`), and the coefficients
    /// with `Σ χ_i · B_i` so far once the seed arrived.
    check: Option<(u128, Option<(Coefficients, u128)>)>,
}

/// Our tags being sent.
struct Tags {
    items: Items,
    /// `Decode(B', k(y)) ⊕ Δ · h(y)` and `k(y)` for our items, in the shuffled order.
    decoded: Vec<u128>,
    keys: Vec<u128>,
    salt: Option<u128>,
    /// Items whose tags are sent.
    sent: usize,
}

impl<'a, 'p> Server<'a, 'p> {
    /// The server of `session` with its distinct `values`.
    pub(super) fn new(
        session: Session<'p>,
        values: &'a [&'a [u8]],
        mut rng: OsSampler,
    ) -> Result<Self, PsiError> {
        let delta = Zeroizing::new(random_word(&mut rng)?);
        Ok(Self {
            session,
            values,
            rng,
            delta,
            phase: Phase::BaseOts,
            outbox: VecDeque::new(),
        })
    }

    /// Takes the base-OT point: queues the reply for the bits of `Δ` and returns the extension's
    /// sender.
    fn take_point(&mut self, payload: Vec<u8>) -> Result<Sender, PsiError> {
        check_exact(kinds::BASE_OT_POINT, &payload, POINT_BYTES)?;
        let point = payload.try_into().expect("length checked");
        let (reply, mut chosen) = base::receive_words(&[*self.delta], &point, &mut self.rng)?;
        let sender = Sender::new(*self.delta, &chosen);
        chosen.zeroize();
        self.outbox.push_back(Message {
            kind: kinds::BASE_OT_CHOICES,
            payload: reply,
        });
        Ok(sender)
    }

    /// Our items' keys and values and their random order.
    fn hash(&mut self, seeds: &Seeds) -> Result<Items, PsiError> {
        let (item_seed, code_seed) = seeds.split_at(ITEM_SEED_BYTES);
        let session = self.session;
        let (keys, values) = hash_items(
            self.values,
            item_seed.try_into().expect("split"),
            session.ell(),
        );
        Ok(Items {
            keys,
            values,
            order: random_permutation(self.values.len(), &mut self.rng)?,
            code: EaCode::new(session.vole.leaves(), code_seed.try_into().expect("split")),
        })
    }

    /// Blocks of the extension still due in its next frame (0 once all arrived).
    fn extension_due(&self, rows: &[u128]) -> usize {
        let remaining = self.session.vole.ot_blocks() - rows.len() / iknp::BLOCK_ROWS;
        remaining.min(OT_FRAME_BLOCKS)
    }

    /// The extension is complete: checks it in the malicious mode, or goes on to the trees.
    fn after_extension(
        &mut self,
        items: Items,
        rows: Zeroizing<Vec<u128>>,
    ) -> Result<Phase, PsiError> {
        if !self.session.malicious() {
            return Ok(Phase::Trees { items, rows });
        }
        let mut seed = [0u8; check::SEED_BYTES];
        fill_random(&mut seed)?;
        self.outbox.push_back(Message {
            kind: kinds::OT_CHECK_SEED,
            payload: seed.to_vec(),
        });
        Ok(Phase::OtCheck { seed, items, rows })
    }

    /// Words of `A'` due in the client's next frame.
    fn store_due(&self, store: &Store) -> usize {
        (self.session.vole.outputs - store.store.len()).min(STORE_FRAME_WORDS)
    }

    /// Takes a frame of `A'`: appends `B ⊕ A' · Δ` for its words and folds `B` into the check.
    fn take_store_frame(&self, store: &mut Store, masked: &[u8]) -> Result<(), PsiError> {
        let (session, delta) = (self.session, *self.delta);
        let width = session.word_bytes();
        let words = self.store_due(store);
        check_exact(kinds::MASKED_OKVS, masked, words * width)?;
        let first = store.store.len();
        store.store.resize(first + words, 0);
        let b = &mut store.store[first..];
        store.vector.outputs(&store.items.code, first, b);
        if let Some((_, Some((chi, sum)))) = &mut store.check {
            *sum ^= chi.combine(first, b.as_chunks::<1>().0)[0];
        }
        b.par_iter_mut()
            .zip(masked.par_chunks(width))
            .for_each(|(b, masked)| {
                let mut word = [0u8; 16];
                word[..width].copy_from_slice(masked);
                *b ^= mul(u128::from_le_bytes(word), delta);
            });
        let total = session.vole.outputs as u64;
        (session.progress)(Stage::PeerItems, store.store.len() as u64, total);
        Ok(())
    }

    /// Malicious mode: from the client's `x'` and `sum = Σ χ_i · B_i ⊕ b*`, queues the hash of
    /// `V = sum ⊕ x' · Δ` (never `V`: see module `check`) and a fresh salt for the tags, which it
    /// returns.
    fn answer_vole_check(&mut self, payload: &[u8], sum: u128) -> Result<u128, PsiError> {
        check_exact(kinds::VOLE_CHECK_VALUE, payload, 16)?;
        let masked = u128::from_le_bytes(payload.try_into().expect("length checked"));
        let salt = random_word(&mut self.rng)?;
        let mut reply = check::vole_digest(sum ^ mul(masked, *self.delta)).to_vec();
        reply.extend_from_slice(&salt.to_le_bytes());
        self.outbox.push_back(Message {
            kind: kinds::VOLE_CHECK_REPLY,
            payload: reply,
        });
        Ok(salt)
    }

    /// `Decode(B', k(y)) ⊕ Δ · h(y)` for our items in the shuffled order, ready to be tagged.
    fn decode(&self, store: Store, salt: Option<u128>) -> Tags {
        let Store {
            items,
            okvs_seed,
            store,
            ..
        } = store;
        let keys: Vec<u128> = items.order.iter().map(|&item| items.keys[item]).collect();
        let mut decoded = vec![0u128; keys.len()];
        Okvs::new(self.session.okvs, okvs_seed).decode(&store, &keys, &mut decoded);
        let delta = *self.delta;
        decoded
            .par_iter_mut()
            .zip(items.order.par_iter())
            .for_each(|(value, &item)| *value ^= mul(items.values[item], delta));
        Tags {
            items,
            decoded,
            keys,
            salt,
            sent: 0,
        }
    }
}

impl Tags {
    /// The next chunk of tags (`width` bytes each), or `None` once all are sent.
    fn next(&mut self, width: usize) -> Option<Vec<u8>> {
        let decoded = self
            .decoded
            .get(self.sent..)
            .filter(|rest| !rest.is_empty())?;
        let decoded = &decoded[..decoded.len().min(CHUNK_ITEMS)];
        let keys = &self.keys[self.sent..][..decoded.len()];
        let mut tags = vec![0u8; decoded.len() * width];
        tags.par_chunks_mut(width)
            .zip(decoded.par_iter().zip(keys))
            .for_each(|(out, (&value, &key))| tag(value, key, self.salt, out));
        self.sent += decoded.len();
        Some(tags)
    }
}

impl Core for Server<'_, '_> {
    fn poll_send(&mut self) -> Result<Option<Message>, PsiError> {
        if let Some(message) = self.outbox.pop_front() {
            return Ok(Some(message));
        }
        let session = self.session;
        match std::mem::replace(&mut self.phase, Phase::Failed) {
            Phase::Hash { sender, seeds } => {
                // Our own work, while the client encodes its items.
                let items = self.hash(&seeds)?;
                let blocks = session.vole.ot_blocks();
                // Grown as the frames arrive.
                let rows = Vec::with_capacity(blocks.min(OT_FRAME_BLOCKS) * iknp::BLOCK_ROWS);
                self.phase = Phase::Extension {
                    sender,
                    items,
                    rows: Zeroizing::new(rows),
                };
                Ok(None)
            }
            Phase::Trees { items, rows } => {
                let vole = &session.vole;
                let (trees, leaves) = vole::send_trees(vole, *self.delta, &rows, &mut self.rng)?;
                let mask_share = session
                    .malicious()
                    .then(|| vole::check_mask_share(vole, &rows));
                drop(rows);
                self.phase = Phase::Accumulate {
                    items,
                    leaves,
                    mask_share,
                };
                Ok(Some(Message {
                    kind: kinds::VOLE_TREES,
                    payload: words_to_bytes(&trees),
                }))
            }
            Phase::Accumulate {
                items,
                leaves,
                mask_share,
            } => {
                // While the client expands its side of the trees.
                self.phase = Phase::OkvsSeed(Box::new(Store {
                    items,
                    vector: SenderVector::new(leaves),
                    okvs_seed: [0; okvs::SEED_BYTES],
                    // Bounded by the session's item bound (see `MAX_CLIENT_ITEMS`).
                    store: Vec::with_capacity(session.vole.outputs),
                    check: mask_share.map(|share| (share, None)),
                }));
                Ok(None)
            }
            Phase::Decode { store, salt } => {
                // After the reply to the VOLE check has gone out.
                let mut tags = Box::new(self.decode(*store, salt));
                let chunk = tags.next(session.tag_bytes);
                (session.progress)(Stage::OwnItems, tags.sent as u64, session.n_server);
                self.phase = Phase::Tags(tags);
                Ok(chunk.map(|payload| Message {
                    kind: kinds::SERVER_TAGS,
                    payload,
                }))
            }
            Phase::Tags(mut tags) => {
                if let Some(chunk) = tags.next(session.tag_bytes) {
                    (session.progress)(Stage::OwnItems, tags.sent as u64, session.n_server);
                    self.phase = Phase::Tags(tags);
                    return Ok(Some(Message {
                        kind: kinds::SERVER_TAGS,
                        payload: chunk,
                    }));
                }
                self.phase = match session.both_learn {
                    true => Phase::Positions {
                        order: tags.items.order,
                        receiver: positions::Receiver::new(
                            session.n_client.min(session.n_server),
                            self.values.len(),
                        ),
                    },
                    false => Phase::Done(None),
                };
                Ok(None)
            }
            other => {
                self.phase = other;
                Ok(None)
            }
        }
    }

    fn expects(&self) -> Option<Expected> {
        let (kind, max_len) = match &self.phase {
            Phase::BaseOts => (kinds::BASE_OT_POINT, POINT_BYTES),
            Phase::Seeds(_) => (kinds::VOLE_SEEDS, std::mem::size_of::<Seeds>()),
            Phase::Extension { rows, .. } => (
                kinds::OT_EXTENSION,
                self.extension_due(rows) * iknp::BLOCK_BYTES,
            ),
            Phase::OtCheck { .. } => (kinds::OT_CHECK_REPLY, check::PROOF_BYTES),
            Phase::OkvsSeed(_) => (kinds::OKVS_SEED, okvs::SEED_BYTES),
            Phase::VoleCheckSeed(_) => (kinds::VOLE_CHECK_SEED, check::SEED_BYTES),
            Phase::Store(store) => (
                kinds::MASKED_OKVS,
                self.store_due(store) * self.session.word_bytes(),
            ),
            Phase::VoleCheckValue(_) => (kinds::VOLE_CHECK_VALUE, 16),
            Phase::Positions { receiver, .. } => return receiver.expects(),
            _ => return None,
        };
        Some(Expected { kind, max_len })
    }

    fn take(&mut self, payload: Vec<u8>) -> Result<(), PsiError> {
        let session = self.session;
        self.phase = match std::mem::replace(&mut self.phase, Phase::Failed) {
            Phase::BaseOts => Phase::Seeds(Box::new(self.take_point(payload)?)),
            Phase::Seeds(sender) => {
                check_exact(kinds::VOLE_SEEDS, &payload, std::mem::size_of::<Seeds>())?;
                let seeds = payload.try_into().expect("length checked");
                Phase::Hash { sender, seeds }
            }
            Phase::Extension {
                sender,
                items,
                mut rows,
            } => {
                let blocks = self.extension_due(&rows);
                check_exact(kinds::OT_EXTENSION, &payload, blocks * iknp::BLOCK_BYTES)?;
                sender.extend((rows.len() / iknp::BLOCK_ROWS) as u64, &payload, &mut rows);
                match self.extension_due(&rows) {
                    0 => self.after_extension(items, rows)?,
                    _ => Phase::Extension {
                        sender,
                        items,
                        rows,
                    },
                }
            }
            Phase::OtCheck { seed, items, rows } => {
                check_exact(kinds::OT_CHECK_REPLY, &payload, check::PROOF_BYTES)?;
                let reply = words_from_bytes(&payload);
                if !check::verify_rows(seed, &rows, *self.delta, [reply[0], reply[1]]) {
                    return Err(PeerError::OtCheckFailed.into());
                }
                Phase::Trees { items, rows }
            }
            Phase::OkvsSeed(mut store) => {
                check_exact(kinds::OKVS_SEED, &payload, okvs::SEED_BYTES)?;
                store.okvs_seed = payload.try_into().expect("length checked");
                match session.malicious() {
                    true => Phase::VoleCheckSeed(store),
                    false => Phase::Store(store),
                }
            }
            Phase::VoleCheckSeed(mut store) => {
                check_exact(kinds::VOLE_CHECK_SEED, &payload, check::SEED_BYTES)?;
                let seed = payload.try_into().expect("length checked");
                if let Some((_, coefficients)) = &mut store.check {
                    *coefficients = Some((Coefficients::new(seed), 0));
                }
                Phase::Store(store)
            }
            Phase::Store(mut store) => {
                self.take_store_frame(&mut store, &payload)?;
                match (self.store_due(&store), &store.check) {
                    (0, Some(_)) => Phase::VoleCheckValue(store),
                    (0, None) => Phase::Decode { store, salt: None },
                    _ => Phase::Store(store),
                }
            }
            Phase::VoleCheckValue(store) => {
                let Some((share, Some((_, sum)))) = store.check else {
                    unreachable!("the check value is due only after the check's seed")
                };
                let salt = self.answer_vole_check(&payload, sum ^ share)?;
                Phase::Decode {
                    store,
                    salt: Some(salt),
                }
            }
            Phase::Positions {
                order,
                mut receiver,
            } => {
                receiver.take(&payload, &order)?;
                match receiver.expects() {
                    Some(_) => Phase::Positions { order, receiver },
                    None => Phase::Done(Some(receiver.finish())),
                }
            }
            _ => unreachable!("take is called only for a message `expects` named"),
        };
        Ok(())
    }

    fn finish(self: Box<Self>) -> Result<Option<Vec<bool>>, PsiError> {
        match self.phase {
            Phase::Done(matched) => Ok(matched),
            _ => unreachable!("finish is called only once nothing is due"),
        }
    }
}
