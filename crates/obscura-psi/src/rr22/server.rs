//! The server's side of RR22-PSI: the VOLE sender (holder of `Δ`); it learns the intersection
//! only when both learn.

use obscura_math::sample::OsSampler;
use rayon::prelude::*;
use zeroize::Zeroize;

use super::check::{self, Coefficients};
use super::client::{recv_words, words_to_bytes, OT_FRAME_BLOCKS, STORE_FRAME_WORDS};
use super::{hash_items, tag, Session, ITEM_SEED_BYTES};
use crate::block::random_word;
use crate::chunk::{recv_array, recv_exact, CHUNK_ITEMS};
use crate::gf128::mul;
use crate::okvs::{self, Okvs};
use crate::ot::iknp::{self, Sender};
use crate::shuffle::random_permutation;
use crate::transport::{FrameKind, Transport};
use crate::unique::UniqueItems;
use crate::vole;
use crate::vole::ea_code::{self, EaCode};
use crate::{positions, PeerError, PsiError, Stage};
use obscura_math::sample::fill_random;

/// Runs the server's steps; with both learn, returns which distinct items are in the
/// intersection.
pub(super) fn run<T: Transport + ?Sized>(
    session: &Session<'_>,
    transport: &mut T,
    unique: &UniqueItems<'_>,
    rng: &mut OsSampler,
) -> Result<Option<Vec<bool>>, PsiError> {
    let mut delta = random_word(rng)?;
    // `Δ` is wiped whichever way the session ends.
    let result = run_with_delta(session, transport, unique, rng, delta);
    delta.zeroize();
    result
}

/// The server's steps with its secret `delta`.
fn run_with_delta<T: Transport + ?Sized>(
    session: &Session<'_>,
    transport: &mut T,
    unique: &UniqueItems<'_>,
    rng: &mut OsSampler,
    delta: u128,
) -> Result<Option<Vec<bool>>, PsiError> {
    let mut chosen = crate::ot::base::receive_over(transport, &[delta], rng)?;
    let sender = Sender::new(delta, &chosen);
    chosen.zeroize();
    let seeds: [u8; ITEM_SEED_BYTES + ea_code::SEED_BYTES] =
        recv_array(transport, FrameKind::VoleSeeds)?;
    let (item_seed, code_seed) = seeds.split_at(ITEM_SEED_BYTES);
    // Our own work first, while the client encodes its items.
    let (keys, values) = hash_items(
        unique.values(),
        item_seed.try_into().expect("split"),
        session.ell(),
    );
    let order = random_permutation(unique.len(), rng)?;
    let rows = receive_extension(session, transport, &sender)?;
    if session.malicious() {
        let mut seed = [0u8; check::SEED_BYTES];
        fill_random(&mut seed)?;
        transport.send(FrameKind::OtCheckSeed, &seed)?;
        let reply = recv_words(transport, FrameKind::OtCheckReply, 2)?;
        if !check::verify_rows(seed, &rows, delta, [reply[0], reply[1]]) {
            return Err(PeerError::OtCheckFailed.into());
        }
    }
    let code = EaCode::new(session.vole.leaves(), code_seed.try_into().expect("split"));
    let (trees, leaves) = vole::send_trees(&session.vole, delta, &rows, rng)?;
    let mask_share = session
        .malicious()
        .then(|| vole::check_mask_share(&session.vole, &rows));
    drop(rows);
    transport.send(FrameKind::VoleTrees, &words_to_bytes(&trees))?;
    let vector = vole::SenderVector::new(leaves);
    let okvs_seed: [u8; okvs::SEED_BYTES] = recv_array(transport, FrameKind::OkvsSeed)?;
    let check = match session.malicious() {
        true => Some(Coefficients::new(recv_array(
            transport,
            FrameKind::VoleCheckSeed,
        )?)),
        false => None,
    };
    let (store, sum) = receive_masked_store(session, transport, &vector, &code, delta, check)?;
    drop(vector);
    let salt = match (sum, mask_share) {
        (Some(sum), Some(share)) => Some(answer_vole_check(transport, delta, sum ^ share, rng)?),
        _ => None,
    };
    let okvs = Okvs::new(session.okvs, okvs_seed);
    send_tags(
        session,
        transport,
        &okvs,
        &store,
        (delta, salt),
        (&keys, &values),
        &order,
    )?;
    positions::receive_if_both_learn(
        session.both_learn,
        transport,
        session.n_client,
        session.n_server,
        &order,
    )
}

/// Receives the correlated-OT extension (each frame exactly the blocks due) and returns our
/// rows.
fn receive_extension<T: Transport + ?Sized>(
    session: &Session<'_>,
    transport: &mut T,
    sender: &Sender,
) -> Result<Vec<u128>, PsiError> {
    let blocks = session.vole.ot_blocks();
    let mut rows = Vec::new();
    let mut received = 0;
    while received < blocks {
        let count = (blocks - received).min(OT_FRAME_BLOCKS);
        let message = recv_exact(transport, FrameKind::OtExtension, count * iknp::BLOCK_BYTES)?;
        sender.extend(received as u64, &message, &mut rows);
        received += count;
    }
    Ok(rows)
}

/// Malicious mode: from the client's `x'` and `sum = Σ χ_i · B_i ⊕ b*`, sends the hash of
/// `V = sum ⊕ x' · Δ` (never `V`: see module `check`) and a fresh salt for the tags, which it
/// returns.
fn answer_vole_check<T: Transport + ?Sized>(
    transport: &mut T,
    delta: u128,
    sum: u128,
    rng: &mut OsSampler,
) -> Result<u128, PsiError> {
    let masked = u128::from_le_bytes(recv_array(transport, FrameKind::VoleCheckValue)?);
    let salt = random_word(rng)?;
    let mut reply = [0u8; check::DIGEST_BYTES + 16];
    reply[..check::DIGEST_BYTES].copy_from_slice(&check::vole_digest(sum ^ mul(masked, delta)));
    reply[check::DIGEST_BYTES..].copy_from_slice(&salt.to_le_bytes());
    transport.send(FrameKind::VoleCheckReply, &reply)?;
    Ok(salt)
}

/// Receives `A' = A ⊕ P` frame by frame and returns `B' = B ⊕ A' · Δ`, computing each frame's
/// `B` as the frame arrives; with the VOLE check's coefficients, also `Σ χ_i · B_i`.
fn receive_masked_store<T: Transport + ?Sized>(
    session: &Session<'_>,
    transport: &mut T,
    vector: &vole::SenderVector,
    code: &EaCode,
    delta: u128,
    check: Option<Coefficients>,
) -> Result<(Vec<u128>, Option<u128>), PsiError> {
    let width = session.word_bytes();
    let mut sum = 0;
    let total = session.vole.outputs;
    // Bounded by the session's item bound (see `MAX_CLIENT_ITEMS`).
    let mut store = Vec::with_capacity(total);
    while store.len() < total {
        let first = store.len();
        let words = (total - first).min(STORE_FRAME_WORDS);
        let masked = recv_exact(transport, FrameKind::MaskedOkvs, words * width)?;
        store.resize(first + words, 0);
        let b = &mut store[first..];
        vector.outputs(code, first, b);
        if let Some(chi) = &check {
            sum ^= chi.combine(first, b.as_chunks::<1>().0)[0];
        }
        b.par_iter_mut()
            .zip(masked.par_chunks(width))
            .for_each(|(b, masked)| {
                let mut word = [0u8; 16];
                word[..width].copy_from_slice(masked);
                *b ^= mul(u128::from_le_bytes(word), delta);
            });
        (session.progress)(Stage::PeerItems, store.len() as u64, total as u64);
    }
    Ok((store, check.map(|_| sum)))
}

/// Sends, for our items in the shuffled `order`, the tags of `Decode(B', k(y)) ⊕ Δ · h(y)`
/// (salted in the malicious mode), chunk by chunk.
fn send_tags<T: Transport + ?Sized>(
    session: &Session<'_>,
    transport: &mut T,
    okvs: &Okvs,
    store: &[u128],
    (delta, salt): (u128, Option<u128>),
    (keys, values): (&[u128], &[u128]),
    order: &[usize],
) -> Result<(), PsiError> {
    let width = session.tag_bytes;
    let shuffled_keys: Vec<u128> = order.iter().map(|&item| keys[item]).collect();
    let mut decoded = vec![0u128; order.len()];
    okvs.decode(store, &shuffled_keys, &mut decoded);
    // `Decode(B', k(y)) ⊕ Δ · h(y)`, in shuffled order.
    decoded
        .par_iter_mut()
        .zip(order.par_iter())
        .for_each(|(value, &item)| *value ^= mul(values[item], delta));
    let mut sent = 0u64;
    for (decoded, keys) in decoded
        .chunks(CHUNK_ITEMS)
        .zip(shuffled_keys.chunks(CHUNK_ITEMS))
    {
        let mut tags = vec![0u8; decoded.len() * width];
        tags.par_chunks_mut(width)
            .zip(decoded.par_iter().zip(keys))
            .for_each(|(out, (&value, &key))| tag(value, key, salt, out));
        transport.send(FrameKind::ServerTags, &tags)?;
        sent += decoded.len() as u64;
        (session.progress)(Stage::OwnItems, sent, session.n_server);
    }
    Ok(())
}
