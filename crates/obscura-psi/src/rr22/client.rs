//! The client's side of RR22-PSI: the VOLE receiver, which encodes its items and learns the
//! intersection.

use obscura_math::sample::{fill_random, OsSampler};
use rayon::prelude::*;
use zeroize::Zeroize;

use super::ea_code::{self, EaCode};
use super::iknp::{self, Receiver};
use super::okvs::{self, Okvs};
use super::vole::{self, Noise};
use super::{hash_items, tag, Session, ITEM_SEED_BYTES, OKVS_ATTEMPTS};
use crate::base_ot;
use crate::chunk::recv_exact;
use crate::own_tags::{match_peer_tags, OwnTags, PeerTags};
use crate::transport::{FrameKind, Transport};
use crate::unique::UniqueItems;
use crate::{positions, PsiError, Stage};

/// Blocks of 128 correlated OTs per frame of the OT extension (256 KiB).
pub const OT_FRAME_BLOCKS: usize = 128;
/// Words of the masked store per frame.
pub const STORE_FRAME_WORDS: usize = 1 << 16;

/// Runs the client's steps; returns which distinct items are in the intersection.
pub(super) fn run<T: Transport + ?Sized>(
    session: &Session<'_>,
    transport: &mut T,
    unique: &UniqueItems<'_>,
    rng: &mut OsSampler,
) -> Result<Vec<bool>, PsiError> {
    let base = base_ot::Sender::new(rng)?;
    transport.send(FrameKind::BaseOtPoint, &base.message())?;
    let mut seeds = [0u8; ITEM_SEED_BYTES + ea_code::SEED_BYTES];
    fill_random(&mut seeds)?;
    transport.send(FrameKind::VoleSeeds, &seeds)?;
    let (item_seed, code_seed) = seeds.split_at(ITEM_SEED_BYTES);
    let (keys, values) = hash_items(
        unique.values(),
        item_seed.try_into().expect("split"),
        session.ell(),
    );
    let (okvs_seed, store) = encode(session, &keys, &values)?;
    let mut pairs = base.seeds_from(transport, iknp::BASE_OTS)?;
    let receiver = Receiver::new(&pairs);
    pairs.zeroize();
    let noise = Noise::random(&session.vole, rng)?;
    let rows = send_extension(transport, &receiver, &noise.choices(&session.vole))?;
    let trees = recv_words(
        transport,
        FrameKind::VoleTrees,
        session.vole.message_words(),
    )?;
    let code = EaCode::new(session.vole.leaves(), code_seed.try_into().expect("split"));
    let vector = vole::receive(&session.vole, &noise, &rows, &trees);
    drop(rows);
    transport.send(FrameKind::OkvsSeed, &okvs_seed)?;
    let c = send_masked_store(session, transport, &vector, &code, store)?;
    drop(vector);
    let slots: Vec<u32> = (0..unique.len() as u32).collect();
    let mut own = OwnTags::new(session.tag_bytes, &slots);
    let mut decoded = vec![0u128; keys.len()];
    Okvs::new(session.okvs, okvs_seed).decode(&c, &keys, &mut decoded);
    own.tags_mut(0..keys.len())
        .par_chunks_mut(session.tag_bytes)
        .zip(&decoded)
        .for_each(|(out, &value)| tag(value, out));
    own.index(0..keys.len());
    let peer = PeerTags {
        items: session.n_server,
        tag_bytes: session.tag_bytes,
        per_item: 1,
    };
    let (matched, matched_positions) =
        match_peer_tags(transport, &own, peer, unique.len(), session.progress)?;
    if session.both_learn {
        positions::send(transport, &matched_positions)?;
    }
    Ok(matched)
}

/// Encodes the store under a fresh seed, retrying on the rare seeds that fail.
fn encode(
    session: &Session<'_>,
    keys: &[u128],
    values: &[u128],
) -> Result<([u8; okvs::SEED_BYTES], Vec<u128>), PsiError> {
    for _ in 0..OKVS_ATTEMPTS {
        let mut seed = [0u8; okvs::SEED_BYTES];
        fill_random(&mut seed)?;
        if let Some(store) = Okvs::new(session.okvs, seed).encode(keys, values) {
            return Ok((seed, store));
        }
    }
    Err(PsiError::Encoding {
        attempts: OKVS_ATTEMPTS,
    })
}

/// Sends the correlated-OT extension for `choices` frame by frame; returns our rows.
fn send_extension<T: Transport + ?Sized>(
    transport: &mut T,
    receiver: &Receiver,
    choices: &[u128],
) -> Result<Vec<u128>, PsiError> {
    let mut rows = Vec::with_capacity(choices.len() * iknp::BLOCK_ROWS);
    for (frame, choices) in choices.chunks(OT_FRAME_BLOCKS).enumerate() {
        let first = (frame * OT_FRAME_BLOCKS) as u64;
        let message = receiver.extend(first, choices, &mut rows);
        transport.send(FrameKind::OtExtension, &message)?;
    }
    Ok(rows)
}

/// Receives a frame of exactly `words` 128-bit words.
fn recv_words<T: Transport + ?Sized>(
    transport: &mut T,
    kind: FrameKind,
    words: usize,
) -> Result<Vec<u128>, PsiError> {
    let bytes = recv_exact(transport, kind, words * 16)?;
    Ok(bytes
        .as_chunks::<16>()
        .0
        .iter()
        .map(|word| u128::from_le_bytes(*word))
        .collect())
}

/// Computes `A` and `C` frame by frame and sends `A ⊕ P`, `tag_bytes` bytes per word, each
/// frame while the earlier ones are on the wire; returns `C`.
fn send_masked_store<T: Transport + ?Sized>(
    session: &Session<'_>,
    transport: &mut T,
    vector: &vole::ReceiverVector,
    code: &EaCode,
    mut store: Vec<u128>,
) -> Result<Vec<u128>, PsiError> {
    let width = session.tag_bytes;
    let total = store.len() as u64;
    let mut frame = vec![0u8; STORE_FRAME_WORDS * width];
    let mut pairs = vec![[0u128; 2]; STORE_FRAME_WORDS];
    // `store` becomes `C` as its words are sent.
    for (index, store) in store.chunks_mut(STORE_FRAME_WORDS).enumerate() {
        let first = index * STORE_FRAME_WORDS;
        let pairs = &mut pairs[..store.len()];
        pairs.fill([0; 2]);
        vector.outputs(code, first, pairs);
        let frame = &mut frame[..store.len() * width];
        frame
            .par_chunks_mut(width)
            .zip(pairs.par_iter())
            .zip(store.par_iter_mut())
            .for_each(|((out, &[a, c]), p)| {
                out.copy_from_slice(&(a ^ *p).to_le_bytes()[..width]);
                *p = c;
            });
        transport.send(FrameKind::MaskedOkvs, frame)?;
        (session.progress)(Stage::OwnItems, (first + store.len()) as u64, total);
    }
    Ok(store)
}
