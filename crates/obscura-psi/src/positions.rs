//! Both learn: the client tells the server which positions of the server's shuffled sequence
//! matched, and the server maps them back through its shuffle. The positions reveal nothing but
//! which server items are in the intersection, since the sequence was in a random order.

use crate::chunk::{recv_array, recv_chunk, CHUNK_ITEMS};
use crate::transport::{FrameKind, Transport};
use crate::{PeerError, PsiError};

/// Bytes of a match position.
const POSITION_BYTES: usize = 8;

/// Sends the count of matched positions, then the positions in chunks.
pub(crate) fn send<T: Transport + ?Sized>(
    transport: &mut T,
    positions: &[u64],
) -> Result<(), PsiError> {
    transport.send(
        FrameKind::MatchCount,
        &(positions.len() as u64).to_le_bytes(),
    )?;
    for chunk in positions.chunks(CHUNK_ITEMS) {
        let bytes: Vec<u8> = chunk.iter().flat_map(|p| p.to_le_bytes()).collect();
        transport.send(FrameKind::MatchPositions, &bytes)?;
    }
    Ok(())
}

/// The server's last step: when both learn, receives the client's matched positions (at most
/// as many as the smaller set has items) and returns which of the server's items matched;
/// otherwise `None`.
pub(crate) fn receive_if_both_learn<T: Transport + ?Sized>(
    both_learn: bool,
    transport: &mut T,
    n_client: u64,
    n_server: u64,
    order: &[usize],
) -> Result<Option<Vec<bool>>, PsiError> {
    if !both_learn {
        return Ok(None);
    }
    receive(transport, n_client.min(n_server), order).map(Some)
}

/// Receives the matched positions of the sequence whose position `p` holds item `order[p]`
/// (at most `most` of them, each in range and sent once); returns which items matched.
pub(crate) fn receive<T: Transport + ?Sized>(
    transport: &mut T,
    most: u64,
    order: &[usize],
) -> Result<Vec<bool>, PsiError> {
    let count = u64::from_le_bytes(recv_array(transport, FrameKind::MatchCount)?);
    if count > most {
        return Err(PeerError::TooManyMatches { count, most }.into());
    }
    let mut matched = vec![false; order.len()];
    let mut received = 0u64;
    while received < count {
        let payload = recv_chunk(
            transport,
            FrameKind::MatchPositions,
            POSITION_BYTES,
            count - received,
        )?;
        let (positions, _) = payload.as_chunks::<POSITION_BYTES>();
        for &bytes in positions {
            let position = u64::from_le_bytes(bytes);
            let item = usize::try_from(position)
                .ok()
                .and_then(|position| order.get(position))
                .ok_or(PeerError::PositionOutOfRange {
                    position,
                    len: order.len() as u64,
                })?;
            if std::mem::replace(&mut matched[*item], true) {
                return Err(PeerError::RepeatedPosition(position).into());
            }
        }
        received += positions.len() as u64;
    }
    Ok(matched)
}
