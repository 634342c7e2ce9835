//! The client's side of RR22-PSI: the VOLE receiver, which encodes its items and learns the
//! intersection.

use obscura_math::sample::{fill_random, OsSampler};
use rayon::prelude::*;
use subtle::ConstantTimeEq;
use zeroize::Zeroize;

use super::check::{self, Coefficients};
use super::{hash_items, tag, Session, ITEM_SEED_BYTES, OKVS_ATTEMPTS};
use crate::chunk::{recv_array, recv_exact};
use crate::okvs::{self, Okvs};
use crate::ot::iknp::{self, Receiver};
use crate::own_tags::{match_peer_tags, OwnTags, PeerTags};
use crate::transport::{FrameKind, Transport};
use crate::unique::UniqueItems;
use crate::vole::ea_code::{self, EaCode};
use crate::vole::{self, Noise};
use crate::{positions, PeerError, PsiError, Stage};

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
    let base = crate::ot::base::Sender::new(rng)?;
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
    let mut choices = noise.choices(&session.vole);
    let mut rows = send_extension(transport, &receiver, &choices)?;
    if session.malicious() {
        let seed = recv_array(transport, FrameKind::OtCheckSeed)?;
        let [x, t] = check::prove_rows(seed, &choices, &rows);
        transport.send(FrameKind::OtCheckReply, &words_to_bytes(&[x, t]))?;
    }
    choices.zeroize();
    let trees = recv_words(
        transport,
        FrameKind::VoleTrees,
        session.vole.message_words(),
    )?;
    let code = EaCode::new(session.vole.leaves(), code_seed.try_into().expect("split"));
    let vector = vole::receive(&session.vole, &noise, &rows, &trees);
    transport.send(FrameKind::OkvsSeed, &okvs_seed)?;
    let check_seed = match session.malicious() {
        true => {
            let mut seed = [0u8; check::SEED_BYTES];
            fill_random(&mut seed)?;
            transport.send(FrameKind::VoleCheckSeed, &seed)?;
            Some(Coefficients::new(seed))
        }
        false => None,
    };
    let (c, sums) = send_masked_store(session, transport, &vector, &code, store, check_seed)?;
    drop(vector);
    let salt = match sums {
        Some(sums) => Some(finish_vole_check(session, transport, &noise, &rows, sums)?),
        None => None,
    };
    rows.zeroize();
    let slots: Vec<u32> = (0..unique.len() as u32).collect();
    let mut own = OwnTags::new(session.tag_bytes, slots);
    let mut decoded = vec![0u128; keys.len()];
    Okvs::new(session.okvs, okvs_seed).decode(&c, &keys, &mut decoded);
    own.tags_mut(0..keys.len())
        .par_chunks_mut(session.tag_bytes)
        .zip(decoded.par_iter().zip(&keys))
        .for_each(|(out, (&value, &key))| tag(value, key, salt, out));
    own.index(0..keys.len());
    let peer = PeerTags {
        items: session.n_server,
        tag_bytes: session.tag_bytes,
        per_item: 1,
    };
    let (matched, matched_positions) =
        match_peer_tags(transport, own, peer, unique.len(), session.progress)?;
    if session.both_learn {
        positions::send(transport, &matched_positions)?;
    }
    Ok(matched)
}

/// Malicious mode: sends `x' = Σ χ_i · A_i ⊕ y*` and checks the server's reply against the
/// hash of `Σ χ_i · C_i ⊕ c*` (`sums` = `[Σ χ_i · A_i, Σ χ_i · C_i]`); returns the tags' salt.
fn finish_vole_check<T: Transport + ?Sized>(
    session: &Session<'_>,
    transport: &mut T,
    noise: &Noise,
    rows: &[u128],
    [a, c]: [u128; 2],
) -> Result<u128, PsiError> {
    let masked = a ^ noise.check_mask(&session.vole);
    transport.send(FrameKind::VoleCheckValue, &masked.to_le_bytes())?;
    let reply: [u8; check::DIGEST_BYTES + 16] = recv_array(transport, FrameKind::VoleCheckReply)?;
    let (digest, salt) = reply.split_at(check::DIGEST_BYTES);
    let expected = check::vole_digest(c ^ vole::check_mask_share(&session.vole, rows));
    // In constant time: how soon a mismatch is found must not tell the server how much of its
    // guess was right.
    if !bool::from(digest.ct_eq(&expected)) {
        return Err(PeerError::VoleCheckFailed.into());
    }
    Ok(u128::from_le_bytes(salt.try_into().expect("16 bytes")))
}

/// Little-endian bytes of `words`.
pub(super) fn words_to_bytes(words: &[u128]) -> Vec<u8> {
    words.iter().flat_map(|word| word.to_le_bytes()).collect()
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
pub(super) fn recv_words<T: Transport + ?Sized>(
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

/// Computes `A` and `C` frame by frame and sends `A ⊕ P`, `ℓ / 8` bytes per word, each frame
/// while the earlier ones are on the wire; returns `C` and, with the VOLE check's coefficients,
/// `[Σ χ_i · A_i, Σ χ_i · C_i]`.
fn send_masked_store<T: Transport + ?Sized>(
    session: &Session<'_>,
    transport: &mut T,
    vector: &vole::ReceiverVector,
    code: &EaCode,
    mut store: Vec<u128>,
    check: Option<Coefficients>,
) -> Result<(Vec<u128>, Option<[u128; 2]>), PsiError> {
    let width = session.word_bytes();
    let mut sums = [0u128; 2];
    let total = store.len() as u64;
    let mut frame = vec![0u8; STORE_FRAME_WORDS * width];
    let mut pairs = vec![[0u128; 2]; STORE_FRAME_WORDS];
    // `store` becomes `C` as its words are sent.
    for (index, store) in store.chunks_mut(STORE_FRAME_WORDS).enumerate() {
        let first = index * STORE_FRAME_WORDS;
        let pairs = &mut pairs[..store.len()];
        pairs.fill([0; 2]);
        vector.outputs(code, first, pairs);
        if let Some(chi) = &check {
            let [a, c] = chi.combine(first, pairs);
            sums = [sums[0] ^ a, sums[1] ^ c];
        }
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
    Ok((store, check.map(|_| sums)))
}
