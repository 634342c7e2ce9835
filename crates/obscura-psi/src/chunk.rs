//! Sets travel in chunks: bounded frames that let the two parties' work overlap.

use crate::core::Expected;
use crate::transport::{FrameKind, Transport};
use crate::{PeerError, PsiError};

/// Most elements in one frame (4096 points make a 128 KiB frame).
pub(crate) const CHUNK_ITEMS: usize = 4096;

/// The next chunk of `kind` due when `remaining` elements of `size` bytes are to come: at most
/// `min(CHUNK_ITEMS, remaining)` of them.
pub(crate) fn chunk_due(kind: FrameKind, size: usize, remaining: u64) -> Expected {
    let most = remaining.min(CHUNK_ITEMS as u64) as usize;
    Expected {
        kind,
        max_len: most * size,
    }
}

/// Whether `payload` (at most [`chunk_due`]'s length) is a chunk: a whole, non-zero number of
/// `size`-byte elements.
pub(crate) fn check_chunk(kind: FrameKind, payload: &[u8], size: usize) -> Result<(), PsiError> {
    if payload.is_empty() || !payload.len().is_multiple_of(size) {
        return Err(PeerError::BadChunk {
            kind,
            len: payload.len(),
            size,
        }
        .into());
    }
    Ok(())
}

/// Whether `payload` of `kind` is exactly `len` bytes.
pub(crate) fn check_exact(kind: FrameKind, payload: &[u8], len: usize) -> Result<(), PsiError> {
    if payload.len() != len {
        return Err(PeerError::WrongLength {
            kind,
            len: payload.len(),
            expected: len,
        }
        .into());
    }
    Ok(())
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
