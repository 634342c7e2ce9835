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

/// Receives the next frame of `kind`, whose payload must be exactly `len` bytes (a longer one is
/// refused before it is read).
pub(crate) fn recv_exact<T: Transport + ?Sized>(
    transport: &mut T,
    kind: FrameKind,
    len: usize,
) -> Result<Vec<u8>, PsiError> {
    let payload = transport.recv(kind, len)?;
    if payload.len() != len {
        return Err(PeerError::WrongLength {
            kind,
            len: payload.len(),
            expected: len,
        }
        .into());
    }
    Ok(payload)
}

/// Receives the next frame of `kind`, whose payload must be exactly `N` bytes, as an array.
pub(crate) fn recv_array<const N: usize, T: Transport + ?Sized>(
    transport: &mut T,
    kind: FrameKind,
) -> Result<[u8; N], PsiError> {
    let payload = transport.recv(kind, N)?;
    payload.as_slice().try_into().map_err(|_| {
        PeerError::WrongLength {
            kind,
            len: payload.len(),
            expected: N,
        }
        .into()
    })
}
