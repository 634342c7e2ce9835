//! The client's side of KKRT-PSI: the OPRF receiver, which learns the intersection.

use obscura_math::sample::{OsSampler, RngError};
use rayon::prelude::*;
use zeroize::Zeroize;

use super::{Session, FRAME_BLOCKS};
use crate::block::random_word;
use crate::cuckoo::{self, CuckooTable, EMPTY, HASHES};
use crate::ot::code::{item_hashes, Row, CODE_WORDS};
use crate::ot::kkrt::{output, Receiver, BLOCK_BYTES, BLOCK_ROWS, CODE_BITS};
use crate::own_tags::{match_peer_tags, OwnTags, PeerTags};
use crate::transport::{FrameKind, Transport};
use crate::unique::UniqueItems;
use crate::{positions, PsiError, Stage};

/// Runs the client's steps; returns which distinct items are in the intersection.
pub(super) fn run<T: Transport + ?Sized>(
    session: &Session<'_>,
    transport: &mut T,
    unique: &UniqueItems<'_>,
    rng: &mut OsSampler,
) -> Result<Vec<bool>, PsiError> {
    let base = crate::ot::base::Sender::new(rng)?;
    transport.send(FrameKind::BaseOtPoint, &base.message())?;
    let hashes = item_hashes(unique.values());
    let (seed, table) = cuckoo::place(&hashes, session.bins, rng)?;
    transport.send(FrameKind::CuckooSeed, &seed)?;
    let mut seeds = base.seeds_from(transport, CODE_BITS)?;
    let receiver = Receiver::new(&seeds);
    seeds.zeroize();
    let inputs = bin_inputs(&table, &hashes, rng)?;
    let own = send_extension(session, transport, &receiver, &inputs, table.slots())?;
    let (matched, matched_positions) = match_peer_tags(
        transport,
        &own,
        PeerTags {
            items: session.n_server,
            tag_bytes: session.tag_bytes,
            per_item: HASHES,
        },
        unique.len(),
        session.progress,
    )?;
    if session.both_learn {
        positions::send(transport, &matched_positions)?;
    }
    Ok(matched)
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

/// Sends `U` frame by frame and computes and indexes our OPRF outputs, each frame's while the
/// server works on the frame.
fn send_extension<'a, T: Transport + ?Sized>(
    session: &Session<'_>,
    transport: &mut T,
    receiver: &Receiver,
    inputs: &[u128],
    slots: &'a [u32],
) -> Result<OwnTags<'a>, PsiError> {
    let frame_rows = FRAME_BLOCKS * BLOCK_ROWS;
    let mut own = OwnTags::new(session.tag_bytes, slots);
    let mut u = vec![0u8; FRAME_BLOCKS * BLOCK_BYTES];
    let mut rows: Vec<Row> = vec![[0; CODE_WORDS]; frame_rows];
    for (frame, inputs) in inputs.chunks(frame_rows).enumerate() {
        let first_bin = frame * frame_rows;
        let bins = first_bin..first_bin + inputs.len();
        let u = &mut u[..inputs.len() / BLOCK_ROWS * BLOCK_BYTES];
        let rows = &mut rows[..inputs.len()];
        receiver.encode((frame * FRAME_BLOCKS) as u64, inputs, u, rows);
        transport.send(FrameKind::OtExtension, u)?;
        own.tags_mut(bins.clone())
            .par_chunks_mut(session.tag_bytes)
            .zip(rows.par_iter())
            .zip(slots[bins.clone()].par_iter())
            .enumerate()
            .filter(|(_, (_, &item))| item != EMPTY)
            .for_each(|(j, ((tag, row), _))| output((first_bin + j) as u64, row, tag));
        own.index(bins.clone());
        (session.progress)(Stage::OwnItems, bins.end as u64, u64::from(session.bins));
    }
    Ok(own)
}
