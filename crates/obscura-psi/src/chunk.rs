//! Sets travel in chunks: bounded frames that let the two parties' work overlap.

use crate::transport::{FrameKind, Transport};
use crate::{PeerError, PsiError};

/// Most elements in one frame (4096 points make a 128 KiB frame).
pub(crate) const CHUNK_ITEMS: usize = 4096;

/// Receives the next chunk of `kind`: between 1 and `min(CHUNK_ITEMS, remaining)` elements of
/// `size` bytes each, so a peer can send neither more elements than it announced nor a frame
/// larger than a chunk.
pub(crate) fn recv_chunk<T: Transport + ?Sized>(
    transport: &mut T,
    kind: FrameKind,
    size: usize,
    remaining: u64,
) -> Result<Vec<u8>, PsiError> {
    let most = remaining.min(CHUNK_ITEMS as u64) as usize;
    let payload = transport.recv(kind, most * size)?;
    if payload.is_empty() || payload.len() % size != 0 {
        return Err(PeerError::BadChunk {
            kind,
            len: payload.len(),
            size,
        }
        .into());
    }
    Ok(payload)
}
