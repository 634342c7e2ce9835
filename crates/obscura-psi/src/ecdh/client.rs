//! The client's side of ECDH-PSI: it learns the intersection.

use std::collections::HashMap;

use super::Session;
use crate::chunk::{recv_chunk, recv_exact, CHUNK_ITEMS};
use crate::exponent::POINT_BYTES;
use crate::transport::{FrameKind, Transport};
use crate::unique::UniqueItems;
use crate::{positions, PeerError, PsiError, Stage};

/// A tag as a map key: its bytes, zero-padded to a whole encoding.
type TagKey = [u8; POINT_BYTES];

fn tag_key(tag: &[u8]) -> TagKey {
    let mut key = [0u8; POINT_BYTES];
    key[..tag.len()].copy_from_slice(tag);
    key
}

/// Runs the client's three steps; returns which distinct items are in the intersection.
pub(super) fn run<T: Transport + ?Sized>(
    session: &Session<'_>,
    transport: &mut T,
    unique: &UniqueItems<'_>,
) -> Result<Vec<bool>, PsiError> {
    let own_tags = exchange_own_items(session, transport, unique.values())?;
    let (matched, matched_positions) =
        match_server_items(session, transport, &own_tags, unique.len())?;
    if session.both_learn {
        positions::send(transport, &matched_positions)?;
    }
    Ok(matched)
}

/// Step 1: sends `H(x)^a` chunk by chunk and collects the server's tags of `H(x)^{ab}`; returns
/// the map from tag to item. The next chunk is blinded while the server answers the current one.
fn exchange_own_items<T: Transport + ?Sized>(
    session: &Session<'_>,
    transport: &mut T,
    values: &[&[u8]],
) -> Result<HashMap<TagKey, usize>, PsiError> {
    let mut tags = HashMap::with_capacity(values.len());
    let mut chunks = values.chunks(CHUNK_ITEMS);
    let mut next = chunks.next().map(|chunk| session.blind(chunk));
    while let Some(points) = next {
        transport.send(FrameKind::ClientPoints, &points)?;
        next = chunks.next().map(|chunk| session.blind(chunk));
        let expected = points.len() / POINT_BYTES * session.tag_bytes;
        let answer = recv_exact(transport, FrameKind::ClientTags, expected)?;
        for tag in answer.chunks_exact(session.tag_bytes) {
            let item = tags.len();
            if tags.insert(tag_key(tag), item).is_some() {
                return Err(PeerError::RepeatedTag.into());
            }
        }
        (session.progress)(Stage::OwnItems, tags.len() as u64, values.len() as u64);
    }
    Ok(tags)
}

/// Step 2: receives the server's `H(y)^b` chunk by chunk and raises them to `a`; returns which
/// of our items matched and the positions of the server's elements that did.
fn match_server_items<T: Transport + ?Sized>(
    session: &Session<'_>,
    transport: &mut T,
    own_tags: &HashMap<TagKey, usize>,
    items: usize,
) -> Result<(Vec<bool>, Vec<u64>), PsiError> {
    let mut matched = vec![false; items];
    let mut positions = Vec::new();
    let mut received = 0u64;
    while received < session.n_server {
        let payload = recv_chunk(
            transport,
            FrameKind::ServerPoints,
            POINT_BYTES,
            session.n_server - received,
        )?;
        let tags = session.tags_of(&payload)?;
        for (position, tag) in (received..).zip(tags.chunks_exact(session.tag_bytes)) {
            if let Some(&item) = own_tags.get(&tag_key(tag)) {
                matched[item] = true;
                positions.push(position);
            }
        }
        received += (payload.len() / POINT_BYTES) as u64;
        (session.progress)(Stage::PeerItems, received, session.n_server);
    }
    Ok((matched, positions))
}
