//! Writing and reading one frame (kind byte, `u32` LE payload length, payload) on a byte stream.

use std::io::{ErrorKind, Read, Write};

use super::{FrameKind, KindByte, TransportError};

/// Bytes of a frame header: the kind byte and the payload length.
pub const HEADER_BYTES: usize = 5;

/// Writes one frame and flushes it; returns the bytes written.
pub(super) fn write_frame(
    writer: &mut impl Write,
    kind: FrameKind,
    payload: &[u8],
) -> Result<u64, TransportError> {
    let len = u32::try_from(payload.len()).map_err(|_| TransportError::PayloadTooLong {
        kind,
        len: payload.len(),
    })?;
    let mut header = [0u8; HEADER_BYTES];
    header[0] = kind.byte();
    header[1..].copy_from_slice(&len.to_le_bytes());
    let sent = writer
        .write_all(&header)
        .and_then(|()| writer.write_all(payload))
        .and_then(|()| writer.flush());
    match sent {
        Ok(()) => Ok((HEADER_BYTES + payload.len()) as u64),
        Err(error) if is_timeout(&error) => Err(TransportError::SendTimeout { kind }),
        Err(error) => Err(error.into()),
    }
}

/// Reads one frame that must be of kind `expected` with at most `max_len` payload bytes, both
/// checked on the header before the payload buffer is allocated; returns the payload.
pub(super) fn read_frame(
    reader: &mut impl Read,
    expected: FrameKind,
    max_len: usize,
) -> Result<Vec<u8>, TransportError> {
    let mut header = [0u8; HEADER_BYTES];
    match fill(reader, &mut header, expected)? {
        0 => return Err(TransportError::Closed { expected }),
        HEADER_BYTES => {}
        _ => return Err(TransportError::Truncated { expected }),
    }
    if header[0] != expected.byte() {
        return Err(TransportError::WrongKind {
            expected,
            got: KindByte(header[0]),
        });
    }
    let len = u32::from_le_bytes([header[1], header[2], header[3], header[4]]);
    let len = usize::try_from(len)
        .ok()
        .filter(|&len| len <= max_len)
        .ok_or(TransportError::TooLong {
            kind: expected,
            len: len.into(),
            max: max_len,
        })?;
    let mut payload = vec![0u8; len];
    if fill(reader, &mut payload, expected)? < len {
        return Err(TransportError::Truncated { expected });
    }
    Ok(payload)
}

/// Reads into `buf` until it is full or the stream ends; returns the bytes read.
fn fill(
    reader: &mut impl Read,
    buf: &mut [u8],
    expected: FrameKind,
) -> Result<usize, TransportError> {
    let mut filled = 0;
    while filled < buf.len() {
        match reader.read(&mut buf[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(error) if error.kind() == ErrorKind::Interrupted => {}
            Err(error) if is_timeout(&error) => return Err(TransportError::Timeout { expected }),
            Err(error) => return Err(error.into()),
        }
    }
    Ok(filled)
}

/// Whether an I/O error is a socket or channel time limit running out (`WouldBlock` is how
/// Unix sockets report an expired timeout).
fn is_timeout(error: &std::io::Error) -> bool {
    matches!(error.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut)
}
