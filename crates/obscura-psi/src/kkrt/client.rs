//! The client's side of KKRT-PSI: the OPRF receiver, which learns the intersection.

use std::collections::hash_map::Entry;
use std::ops::Range;

use obscura_math::sample::{OsSampler, RngError};
use rayon::prelude::*;
use zeroize::Zeroize;

use crate::base_ot;
use super::code::{item_hashes, Row, CODE_WORDS};
use super::extension::{output, Receiver, BLOCK_BYTES, BLOCK_ROWS, CODE_BITS};
use super::{Session, FRAME_BLOCKS};
use crate::block::random_word;
use crate::chunk::{recv_chunk, recv_exact};
use crate::cuckoo::{self, CuckooTable, EMPTY, HASHES};
use crate::exponent::POINT_BYTES;
use crate::transport::{FrameKind, Transport};
use crate::unique::UniqueItems;
use crate::word_hash::WordMap;
use crate::{positions, PsiError, Stage};

/// Runs the client's steps; returns which distinct items are in the intersection.
pub(super) fn run<T: Transport + ?Sized>(
    session: &Session<'_>,
    transport: &mut T,
    unique: &UniqueItems<'_>,
    rng: &mut OsSampler,
) -> Result<Vec<bool>, PsiError> {
    let base = base_ot::Sender::new(rng)?;
    transport.send(FrameKind::BaseOtPoint, &base.message())?;
    let hashes = item_hashes(unique.values());
    let (seed, table) = cuckoo::place(&hashes, session.bins, rng)?;
    transport.send(FrameKind::CuckooSeed, &seed)?;
    let reply = recv_exact(transport, FrameKind::BaseOtChoices, CODE_BITS * POINT_BYTES)?;
    let mut seeds = base.seeds(&reply)?;
    let receiver = Receiver::new(&seeds);
    seeds.zeroize();
    let inputs = bin_inputs(&table, &hashes, rng)?;
    let own = send_extension(session, transport, &receiver, &inputs, table.slots())?;
    let (matched, matched_positions) = match_server_tags(session, transport, &own, unique.len())?;
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

/// Bytes `at .. at + N` of a tag, zero-padded past its end.
fn tag_bytes_at<const N: usize>(tag: &[u8], at: usize) -> [u8; N] {
    let mut bytes = [0u8; N];
    let part = &tag[at.min(tag.len())..tag.len().min(at + N)];
    bytes[..part.len()].copy_from_slice(part);
    bytes
}

/// Server items per parallel task when looking up their tags.
const MATCH_TASK_ITEMS: usize = 1024;

/// Bytes of a tag that the index holds itself: a hit on a tag no longer than this is confirmed
/// without reading the tag array (a random access per match).
const INDEXED_BYTES: usize = 12;

/// Our occupied bins by their tags: the map goes from the first 8 bytes of a tag to the bin and
/// the next 4 bytes; longer tags are confirmed on the tag array. Tags are pseudorandom (SHA-256
/// outputs of values the peer does not control), so their prefixes need no further hashing.
/// Two of our bins can share a prefix (or a whole tag: the tag length bounds false matches with
/// the server's tags, not collisions among ours when the server's set is much smaller); the
/// later ones are kept aside, so every bin is still found.
struct OwnTags<'a> {
    first: WordMap<u64, (u32, u32)>,
    more: Vec<(u64, u32)>,
    /// The tag of each bin, `tag_bytes` each (zeros for empty bins).
    tags: Vec<u8>,
    tag_bytes: usize,
    slots: &'a [u32],
}

impl<'a> OwnTags<'a> {
    /// An empty index for the bins `slots`, with room for their tags.
    fn new(tag_bytes: usize, slots: &'a [u32]) -> Self {
        let occupied = slots.iter().filter(|&&item| item != EMPTY).count();
        Self {
            first: WordMap::with_capacity_and_hasher(occupied, Default::default()),
            more: Vec::new(),
            tags: vec![0u8; slots.len() * tag_bytes],
            tag_bytes,
            slots,
        }
    }

    /// The tags of the bins `bins`, to be written.
    fn tags_mut(&mut self, bins: Range<usize>) -> &mut [u8] {
        &mut self.tags[bins.start * self.tag_bytes..bins.end * self.tag_bytes]
    }

    /// The tag of bin `bin`.
    fn tag(&self, bin: u32) -> &[u8] {
        &self.tags[bin as usize * self.tag_bytes..][..self.tag_bytes]
    }

    /// Indexes the occupied bins among `bins`, whose tags are written.
    fn index(&mut self, bins: Range<usize>) {
        let tags = self.tags[bins.start * self.tag_bytes..].chunks_exact(self.tag_bytes);
        for ((bin, tag), &item) in bins.clone().zip(tags).zip(&self.slots[bins]) {
            if item == EMPTY {
                continue;
            }
            let bin = bin as u32;
            match self.first.entry(u64::from_le_bytes(tag_bytes_at(tag, 0))) {
                Entry::Vacant(entry) => {
                    entry.insert((bin, u32::from_le_bytes(tag_bytes_at(tag, 8))));
                }
                Entry::Occupied(entry) => self.more.push((*entry.key(), bin)),
            }
        }
    }

    /// Calls `found` with every item whose tag is `tag`.
    fn find(&self, tag: &[u8], mut found: impl FnMut(u32)) {
        let key = u64::from_le_bytes(tag_bytes_at(tag, 0));
        let Some(&(bin, next)) = self.first.get(&key) else {
            return;
        };
        let rest_matches =
            tag.len() <= INDEXED_BYTES || self.tag(bin)[INDEXED_BYTES..] == tag[INDEXED_BYTES..];
        if next == u32::from_le_bytes(tag_bytes_at(tag, 8)) && rest_matches {
            found(self.slots[bin as usize]);
        }
        for &(_, bin) in self.more.iter().filter(|(other, _)| *other == key) {
            if self.tag(bin) == tag {
                found(self.slots[bin as usize]);
            }
        }
    }
}

/// Receives the server's tags (three per item, items in shuffled order) and looks them up;
/// returns which of our items matched and the positions of the server's items that did.
fn match_server_tags<T: Transport + ?Sized>(
    session: &Session<'_>,
    transport: &mut T,
    own: &OwnTags<'_>,
    items: usize,
) -> Result<(Vec<bool>, Vec<u64>), PsiError> {
    let item_bytes = HASHES * session.tag_bytes;
    let mut matched = vec![false; items];
    let mut matched_positions = Vec::new();
    let mut received = 0u64;
    while received < session.n_server {
        let payload = recv_chunk(
            transport,
            FrameKind::ServerTags,
            item_bytes,
            session.n_server - received,
        )?;
        // Looked up in parallel (the lookups are independent cache misses), hits in order.
        let hits: Vec<(u64, u32)> = payload
            .par_chunks(MATCH_TASK_ITEMS * item_bytes)
            .enumerate()
            .flat_map_iter(|(task, items)| {
                let first = received + (task * MATCH_TASK_ITEMS) as u64;
                let mut hits = Vec::new();
                for (position, tags) in (first..).zip(items.chunks_exact(item_bytes)) {
                    for tag in tags.chunks_exact(session.tag_bytes) {
                        own.find(tag, |item| hits.push((position, item)));
                    }
                }
                hits
            })
            .collect();
        for (position, item) in hits {
            matched[item as usize] = true;
            if matched_positions.last() != Some(&position) {
                matched_positions.push(position);
            }
        }
        received += (payload.len() / item_bytes) as u64;
        (session.progress)(Stage::PeerItems, received, session.n_server);
    }
    Ok((matched, matched_positions))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Finds every item with a tag, with short and long tags, shared prefixes and equal tags.
    #[test]
    fn own_tags_find_every_item_with_a_tag() {
        for tag_bytes in [6, 11, 12, 20] {
            let slots = [0, EMPTY, 1, 2, 3, 4];
            let mut own = OwnTags::new(tag_bytes, &slots);
            let tag = |byte: u8, tail: u8| {
                let mut tag = vec![byte; tag_bytes];
                *tag.last_mut().unwrap() = tail;
                tag
            };
            let written = [
                tag(1, 1),
                tag(9, 9),
                tag(2, 2),
                tag(2, 3),
                tag(1, 1),
                tag(3, 3),
            ];
            own.tags_mut(0..6).copy_from_slice(&written.concat());
            own.index(0..3);
            own.index(3..6);
            let found = |probe: &[u8]| {
                let mut items = Vec::new();
                own.find(probe, |item| items.push(item));
                items.sort_unstable();
                items
            };
            assert_eq!(found(&tag(1, 1)), [0, 3], "{tag_bytes}");
            assert_eq!(found(&tag(2, 2)), [1], "{tag_bytes}");
            assert_eq!(found(&tag(2, 3)), [2], "{tag_bytes}");
            assert_eq!(found(&tag(3, 3)), [4], "{tag_bytes}");
            assert!(found(&tag(9, 9)).is_empty(), "empty bins are not indexed");
            assert!(found(&tag(3, 4)).is_empty(), "{tag_bytes}");
        }
    }
}
