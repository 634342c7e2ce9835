//! The client's side of RR22-PSI, as a [`Core`]: the VOLE receiver, which encodes its items and
//! learns the intersection.
//!
//! 1. It sends the base-OT sender's point and the item and code seeds, then hashes and encodes
//!    its items while the server answers the base OTs.
//! 2. It sends the correlated-OT extension for its noise frame by frame (in the malicious mode
//!    answering the server's check of it), and takes the server's trees.
//! 3. It sends the OKVS seed (and the VOLE check's seed), then `A' = A ⊕ P` frame by frame,
//!    computing each frame's `A` and `C` while the earlier ones are on the wire (in the
//!    malicious mode, then the check value, and takes the server's reply and salt).
//! 4. It computes its own tags, looks the server's up as they come, and when both learn sends
//!    the matched positions.

use crate::kinds;
use std::collections::VecDeque;

use obscura_math::sample::{fill_random, OsSampler};
use rayon::prelude::*;
use subtle::ConstantTimeEq;
use zeroize::{Zeroize, Zeroizing};

use super::check::{self, Coefficients};
use super::{hash_items, tag, words_from_bytes, words_to_bytes, Session, ITEM_SEED_BYTES};
use super::{Seeds, OKVS_ATTEMPTS};
use crate::chunk::check_exact;
use crate::core::{Core, Expected, Message};
use crate::okvs::{self, Okvs};
use crate::ot::base::{self, REPLY_BYTES};
use crate::ot::iknp::{self, Receiver};
use crate::own_tags::{OwnTags, PeerTagMatch, PeerTags};
use crate::vole::ea_code::EaCode;
use crate::vole::{self, Noise};
use crate::{positions, PeerError, PsiError, Stage};

/// Blocks of 128 correlated OTs per frame of the OT extension (256 KiB).
pub const OT_FRAME_BLOCKS: usize = 128;
/// Words of the masked store per frame.
pub const STORE_FRAME_WORDS: usize = 1 << 16;

/// The client's state.
pub(super) struct Client<'a, 'p> {
    session: Session<'p>,
    values: &'a [&'a [u8]],
    rng: OsSampler,
    /// The item and code seeds.
    seeds: Seeds,
    /// Our items' keys, and the seed of the store that holds their values.
    keys: Vec<u128>,
    okvs_seed: [u8; okvs::SEED_BYTES],
    /// The VOLE's secret noise and our correlated-OT rows, kept until the VOLE check.
    noise: Option<Noise>,
    rows: Zeroizing<Vec<u128>>,
    phase: Phase<'p>,
    outbox: VecDeque<Message>,
}

/// Where the client is.
enum Phase<'p> {
    /// The base-OT point and the seeds are to be sent.
    Start(base::Sender),
    /// The seeds are sent; the items are encoded before the base-OT reply is read.
    Encode(base::Sender),
    /// The base-OT reply is due.
    BaseOts {
        base: base::Sender,
        store: Vec<u128>,
    },
    /// The OT extension goes out frame by frame.
    Extension {
        receiver: Box<Receiver>,
        choices: Zeroizing<Vec<u128>>,
        store: Vec<u128>,
    },
    /// Malicious mode: the server's seed for the check of the extension is due.
    OtCheck {
        choices: Zeroizing<Vec<u128>>,
        store: Vec<u128>,
    },
    /// The server's trees are due.
    Trees { store: Vec<u128> },
    /// `A'` goes out frame by frame; `store` becomes `C` as its words are sent.
    Store(Box<StoreFrames>),
    /// Malicious mode: the server's reply to the VOLE check is due.
    VoleCheck { c: Vec<u128>, sums: [u128; 2] },
    /// The server's tags are looked up as they come.
    Matching(PeerTagMatch<'p>),
    /// Only the positions in the outbox are left.
    Done(Vec<bool>),
    /// A step failed; the core is not used again.
    Failed,
}

/// The masked store being sent.
struct StoreFrames {
    vector: vole::ReceiverVector,
    code: EaCode,
    store: Vec<u128>,
    /// Words sent.
    sent: usize,
    /// The VOLE check's coefficients and `[Σ χ_i · A_i, Σ χ_i · C_i]` so far.
    check: Option<(Coefficients, [u128; 2])>,
    /// One frame's `(A, C)` pairs.
    pairs: Vec<[u128; 2]>,
}

impl<'a, 'p> Client<'a, 'p> {
    /// The client of `session` with its distinct `values`.
    pub(super) fn new(
        session: Session<'p>,
        values: &'a [&'a [u8]],
        mut rng: OsSampler,
    ) -> Result<Self, PsiError> {
        let base = base::Sender::new(&mut rng)?;
        let mut seeds = [0u8; ITEM_SEED_BYTES + vole::ea_code::SEED_BYTES];
        fill_random(&mut seeds)?;
        Ok(Self {
            session,
            values,
            rng,
            seeds,
            keys: Vec::new(),
            okvs_seed: [0; okvs::SEED_BYTES],
            noise: None,
            rows: Zeroizing::new(Vec::new()),
            phase: Phase::Start(base),
            outbox: VecDeque::new(),
        })
    }

    /// The code seed.
    fn code(&self) -> EaCode {
        let code_seed = self.seeds[ITEM_SEED_BYTES..].try_into().expect("split");
        EaCode::new(self.session.vole.leaves(), code_seed)
    }

    /// Hashes our items and encodes the store under a fresh seed, retrying on the rare seeds
    /// that fail; keeps the keys and the seed and returns the store.
    fn encode(&mut self) -> Result<Vec<u128>, PsiError> {
        let item_seed = self.seeds[..ITEM_SEED_BYTES].try_into().expect("split");
        let (keys, values) = hash_items(self.values, item_seed, self.session.ell());
        self.keys = keys;
        for _ in 0..OKVS_ATTEMPTS {
            fill_random(&mut self.okvs_seed)?;
            let okvs = Okvs::new(self.session.okvs, self.okvs_seed);
            if let Some(store) = okvs.encode(&self.keys, &values) {
                return Ok(store);
            }
        }
        Err(PsiError::Encoding {
            attempts: OKVS_ATTEMPTS,
        })
    }

    /// The next frame of the OT extension, or `None` once every block is sent.
    fn extension_frame(&mut self, receiver: &Receiver, choices: &[u128]) -> Option<Message> {
        let first = self.rows.len() / iknp::BLOCK_ROWS;
        let choices = choices.get(first..).filter(|rest| !rest.is_empty())?;
        let choices = &choices[..choices.len().min(OT_FRAME_BLOCKS)];
        let payload = receiver.extend(first as u64, choices, &mut self.rows);
        Some(Message {
            kind: kinds::OT_EXTENSION,
            payload,
        })
    }

    /// Takes the server's trees: computes our VOLE vectors, queues the OKVS seed (and the VOLE
    /// check's seed) and starts the masked store.
    fn take_trees(&mut self, payload: &[u8], store: Vec<u128>) -> Result<StoreFrames, PsiError> {
        let vole = &self.session.vole;
        check_exact(kinds::VOLE_TREES, payload, 16 * vole.message_words())?;
        let noise = self
            .noise
            .as_ref()
            .expect("the noise is drawn with the extension");
        let vector = vole::receive(vole, noise, &self.rows, &words_from_bytes(payload));
        self.outbox.push_back(Message {
            kind: kinds::OKVS_SEED,
            payload: self.okvs_seed.to_vec(),
        });
        let check = match self.session.malicious() {
            true => {
                let mut seed = [0u8; check::SEED_BYTES];
                fill_random(&mut seed)?;
                self.outbox.push_back(Message {
                    kind: kinds::VOLE_CHECK_SEED,
                    payload: seed.to_vec(),
                });
                Some((Coefficients::new(seed), [0; 2]))
            }
            false => None,
        };
        Ok(StoreFrames {
            vector,
            code: self.code(),
            store,
            sent: 0,
            check,
            pairs: vec![[0; 2]; STORE_FRAME_WORDS],
        })
    }

    /// Malicious mode: checks the server's reply against the hash of `Σ χ_i · C_i ⊕ c*`
    /// (`c_sum`); returns the tags' salt.
    fn take_vole_check(&self, payload: &[u8], c_sum: u128) -> Result<u128, PsiError> {
        check_exact(kinds::VOLE_CHECK_REPLY, payload, check::DIGEST_BYTES + 16)?;
        let (digest, salt) = payload.split_at(check::DIGEST_BYTES);
        let share = vole::check_mask_share(&self.session.vole, &self.rows);
        let expected = check::vole_digest(c_sum ^ share);
        // In constant time: how soon a mismatch is found must not tell the server how much of
        // its guess was right.
        if !bool::from(digest.ct_eq(&expected)) {
            return Err(PeerError::VoleCheckFailed.into());
        }
        Ok(u128::from_le_bytes(salt.try_into().expect("16 bytes")))
    }

    /// Our tags `H(Decode(C, k(x)))` (salted in the malicious mode), and the lookup of the
    /// server's in them.
    fn own_tags(&mut self, c: &[u128], salt: Option<u128>) -> PeerTagMatch<'p> {
        let session = self.session;
        self.rows.zeroize();
        self.noise = None;
        let keys = &self.keys;
        let mut own = OwnTags::new(session.tag_bytes, (0..keys.len() as u32).collect());
        let mut decoded = vec![0u128; keys.len()];
        Okvs::new(session.okvs, self.okvs_seed).decode(c, keys, &mut decoded);
        own.tags_mut(0..keys.len())
            .par_chunks_mut(session.tag_bytes)
            .zip(decoded.par_iter().zip(keys))
            .for_each(|(out, (&value, &key))| tag(value, key, salt, out));
        own.index(0..keys.len());
        let peer = PeerTags {
            items: session.n_server,
            tag_bytes: session.tag_bytes,
            per_item: 1,
        };
        PeerTagMatch::new(own, peer, keys.len(), session.progress)
    }
}

impl StoreFrames {
    /// The next frame of `A ⊕ P` (`width` bytes per word), turning the words it covers into
    /// `C` and folding them into the VOLE check; `None` once every word is sent.
    fn next(&mut self, width: usize) -> Option<Vec<u8>> {
        let first = self.sent;
        let words = (self.store.len() - first).min(STORE_FRAME_WORDS);
        if words == 0 {
            return None;
        }
        let store = &mut self.store[first..][..words];
        let pairs = &mut self.pairs[..store.len()];
        pairs.fill([0; 2]);
        self.vector.outputs(&self.code, first, pairs);
        if let Some((chi, sums)) = &mut self.check {
            let [a, c] = chi.combine(first, pairs);
            *sums = [sums[0] ^ a, sums[1] ^ c];
        }
        let mut frame = vec![0u8; store.len() * width];
        frame
            .par_chunks_mut(width)
            .zip(pairs.par_iter())
            .zip(store.par_iter_mut())
            .for_each(|((out, &[a, c]), p)| {
                out.copy_from_slice(&(a ^ *p).to_le_bytes()[..width]);
                *p = c;
            });
        self.sent += store.len();
        Some(frame)
    }
}

impl Core for Client<'_, '_> {
    fn poll_send(&mut self) -> Result<Option<Message>, PsiError> {
        if let Some(message) = self.outbox.pop_front() {
            return Ok(Some(message));
        }
        let session = self.session;
        match std::mem::replace(&mut self.phase, Phase::Failed) {
            Phase::Start(base) => {
                self.outbox.push_back(Message {
                    kind: kinds::VOLE_SEEDS,
                    payload: self.seeds.to_vec(),
                });
                let point = base.message().to_vec();
                self.phase = Phase::Encode(base);
                Ok(Some(Message {
                    kind: kinds::BASE_OT_POINT,
                    payload: point,
                }))
            }
            Phase::Encode(base) => {
                // Our items are encoded while the server answers the base OTs.
                let store = self.encode()?;
                self.phase = Phase::BaseOts { base, store };
                Ok(None)
            }
            Phase::Extension {
                receiver,
                choices,
                store,
            } => {
                if let Some(frame) = self.extension_frame(&receiver, &choices) {
                    self.phase = Phase::Extension {
                        receiver,
                        choices,
                        store,
                    };
                    return Ok(Some(frame));
                }
                self.phase = match session.malicious() {
                    true => Phase::OtCheck { choices, store },
                    false => Phase::Trees { store },
                };
                Ok(None)
            }
            Phase::Store(mut frames) => {
                if let Some(frame) = frames.next(session.word_bytes()) {
                    let total = frames.store.len() as u64;
                    (session.progress)(Stage::OwnItems, frames.sent as u64, total);
                    self.phase = Phase::Store(frames);
                    return Ok(Some(Message {
                        kind: kinds::MASKED_OKVS,
                        payload: frame,
                    }));
                }
                let StoreFrames { store, check, .. } = *frames;
                self.phase = match check {
                    Some((_, [a, c])) => {
                        let noise = self.noise.as_ref().expect("the noise is drawn");
                        let masked = a ^ noise.check_mask(&session.vole);
                        self.outbox.push_back(Message {
                            kind: kinds::VOLE_CHECK_VALUE,
                            payload: masked.to_le_bytes().to_vec(),
                        });
                        Phase::VoleCheck {
                            c: store,
                            sums: [a, c],
                        }
                    }
                    None => Phase::Matching(self.own_tags(&store, None)),
                };
                Ok(self.outbox.pop_front())
            }
            other => {
                self.phase = other;
                Ok(None)
            }
        }
    }

    fn expects(&self) -> Option<Expected> {
        let (kind, max_len) = match &self.phase {
            Phase::BaseOts { .. } => (kinds::BASE_OT_CHOICES, iknp::BASE_OTS * REPLY_BYTES),
            Phase::OtCheck { .. } => (kinds::OT_CHECK_SEED, check::SEED_BYTES),
            Phase::Trees { .. } => (kinds::VOLE_TREES, 16 * self.session.vole.message_words()),
            Phase::VoleCheck { .. } => (kinds::VOLE_CHECK_REPLY, check::DIGEST_BYTES + 16),
            Phase::Matching(lookup) => return lookup.expects(),
            _ => return None,
        };
        Some(Expected { kind, max_len })
    }

    fn take(&mut self, payload: Vec<u8>) -> Result<(), PsiError> {
        let session = self.session;
        self.phase = match std::mem::replace(&mut self.phase, Phase::Failed) {
            Phase::BaseOts { base, store } => {
                let len = iknp::BASE_OTS * REPLY_BYTES;
                check_exact(kinds::BASE_OT_CHOICES, &payload, len)?;
                let mut pairs = base.seeds(&payload)?;
                let receiver = Box::new(Receiver::new(&pairs));
                pairs.zeroize();
                let noise = Noise::random(&session.vole, &mut self.rng)?;
                let choices = Zeroizing::new(noise.choices(&session.vole));
                self.noise = Some(noise);
                self.rows = Zeroizing::new(Vec::with_capacity(choices.len() * iknp::BLOCK_ROWS));
                Phase::Extension {
                    receiver,
                    choices,
                    store,
                }
            }
            Phase::OtCheck { choices, store } => {
                check_exact(kinds::OT_CHECK_SEED, &payload, check::SEED_BYTES)?;
                let seed = payload.try_into().expect("length checked");
                let proof = check::prove_rows(seed, &choices, &self.rows);
                self.outbox.push_back(Message {
                    kind: kinds::OT_CHECK_REPLY,
                    payload: words_to_bytes(&proof),
                });
                Phase::Trees { store }
            }
            Phase::Trees { store } => Phase::Store(Box::new(self.take_trees(&payload, store)?)),
            Phase::VoleCheck { c, sums } => {
                let salt = self.take_vole_check(&payload, sums[1])?;
                Phase::Matching(self.own_tags(&c, Some(salt)))
            }
            Phase::Matching(mut lookup) => {
                lookup.take(&payload)?;
                match lookup.expects() {
                    Some(_) => Phase::Matching(lookup),
                    None => {
                        let (matched, matched_positions) = lookup.finish();
                        if session.both_learn {
                            self.outbox.extend(positions::messages(&matched_positions));
                        }
                        Phase::Done(matched)
                    }
                }
            }
            _ => unreachable!("take is called only for a message `expects` named"),
        };
        Ok(())
    }

    fn finish(self: Box<Self>) -> Result<Option<Vec<bool>>, PsiError> {
        match self.phase {
            Phase::Done(matched) => Ok(Some(matched)),
            _ => unreachable!("finish is called only once nothing is due"),
        }
    }
}
