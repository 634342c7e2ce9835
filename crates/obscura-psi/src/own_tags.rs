//! The client's index of its own OPRF tags, and the lookup of the server's tags in it (KKRT and
//! RR22).

use std::collections::hash_map::Entry;
use std::ops::Range;

use rayon::prelude::*;

use crate::chunk::{check_chunk, chunk_due};
use crate::core::Expected;
use crate::cuckoo::EMPTY;
use crate::transport::FrameKind;
use crate::word_hash::WordMap;
use crate::{Progress, PsiError, Stage};

/// Server to client: the tags of a chunk of the server's items, in its shuffled order.
pub const SERVER_TAGS: FrameKind = FrameKind::new(11, "server-tags");

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
pub(crate) struct OwnTags {
    first: WordMap<u64, (u32, u32)>,
    more: Vec<(u64, u32)>,
    /// The tag of each bin, `tag_bytes` each (zeros for empty bins).
    tags: Vec<u8>,
    tag_bytes: usize,
    slots: Vec<u32>,
}

impl OwnTags {
    /// An empty index for the bins `slots` (the item in each, or [`EMPTY`]), with room for
    /// their tags.
    pub(crate) fn new(tag_bytes: usize, slots: Vec<u32>) -> Self {
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
    pub(crate) fn tags_mut(&mut self, bins: Range<usize>) -> &mut [u8] {
        self.tags_and_slots_mut(bins).0
    }

    /// The tags of the bins `bins`, to be written, and the items in them.
    pub(crate) fn tags_and_slots_mut(&mut self, bins: Range<usize>) -> (&mut [u8], &[u32]) {
        let tags = &mut self.tags[bins.start * self.tag_bytes..bins.end * self.tag_bytes];
        (tags, &self.slots[bins])
    }

    /// The tag of bin `bin`.
    fn tag(&self, bin: u32) -> &[u8] {
        &self.tags[bin as usize * self.tag_bytes..][..self.tag_bytes]
    }

    /// Indexes the occupied bins among `bins`, whose tags are written.
    pub(crate) fn index(&mut self, bins: Range<usize>) {
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

/// What the peer sends: `items` items in shuffled order, `per_item` tags of `tag_bytes` each.
pub(crate) struct PeerTags {
    pub items: u64,
    pub tag_bytes: usize,
    pub per_item: usize,
}

/// The lookup of the peer's tags ([`SERVER_TAGS`] chunks) in our own, chunk by chunk:
/// which of our items matched and the positions of the peer's items that did.
pub(crate) struct PeerTagMatch<'p> {
    own: OwnTags,
    peer: PeerTags,
    received: u64,
    matched: Vec<bool>,
    matched_positions: Vec<u64>,
    progress: Progress<'p>,
}

impl<'p> PeerTagMatch<'p> {
    /// The lookup of `peer`'s tags in `own`, for our `items` items.
    pub(crate) fn new(own: OwnTags, peer: PeerTags, items: usize, progress: Progress<'p>) -> Self {
        Self {
            own,
            peer,
            received: 0,
            matched: vec![false; items],
            matched_positions: Vec::new(),
            progress,
        }
    }

    /// The chunk due next, or `None` once every item of the peer's arrived.
    pub(crate) fn expects(&self) -> Option<Expected> {
        let (items, item_bytes) = (self.peer.items, self.peer.per_item * self.peer.tag_bytes);
        (self.received < items).then(|| chunk_due(SERVER_TAGS, item_bytes, items - self.received))
    }

    /// Takes the chunk [`PeerTagMatch::expects`] named and looks its tags up.
    pub(crate) fn take(&mut self, payload: &[u8]) -> Result<(), PsiError> {
        let (peer, own) = (&self.peer, &self.own);
        let item_bytes = peer.per_item * peer.tag_bytes;
        check_chunk(SERVER_TAGS, payload, item_bytes)?;
        let received = self.received;
        // Looked up in parallel (the lookups are independent cache misses), hits in order.
        let hits: Vec<(u64, u32)> = payload
            .par_chunks(MATCH_TASK_ITEMS * item_bytes)
            .enumerate()
            .flat_map_iter(|(task, items)| {
                let first = received + (task * MATCH_TASK_ITEMS) as u64;
                let mut hits = Vec::new();
                for (position, tags) in (first..).zip(items.chunks_exact(item_bytes)) {
                    for tag in tags.chunks_exact(peer.tag_bytes) {
                        own.find(tag, |item| hits.push((position, item)));
                    }
                }
                hits
            })
            .collect();
        for (position, item) in hits {
            self.matched[item as usize] = true;
            if self.matched_positions.last() != Some(&position) {
                self.matched_positions.push(position);
            }
        }
        self.received += (payload.len() / item_bytes) as u64;
        (self.progress)(Stage::PeerItems, self.received, peer.items);
        Ok(())
    }

    /// Which of our items matched, and the positions of the peer's items that did.
    pub(crate) fn finish(self) -> (Vec<bool>, Vec<u64>) {
        (self.matched, self.matched_positions)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Finds every item with a tag, with short and long tags, shared prefixes and equal tags.
    #[test]
    fn own_tags_find_every_item_with_a_tag() {
        for tag_bytes in [6, 11, 12, 20] {
            let slots = [0, EMPTY, 1, 2, 3, 4];
            let mut own = OwnTags::new(tag_bytes, slots.to_vec());
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
