//! [`StreamTransport`]: frames over a reader and a writer, with byte counters.

use std::io::{Read, Write};

use super::frame::{read_frame, write_frame, HEADER_BYTES};
use super::{FrameKind, Transport, TransportError};

/// A [`Transport`] over a byte stream given as its reading and writing halves. Time limits are
/// the halves' own (a socket's timeouts, a channel's wait): a read or write that exceeds them
/// fails with [`TransportError::Timeout`] or [`TransportError::SendTimeout`].
pub struct StreamTransport<R, W> {
    reader: R,
    writer: W,
    sent: u64,
    received: u64,
}

impl<R: Read, W: Write> StreamTransport<R, W> {
    /// A transport that reads frames from `reader` and writes them to `writer`. Give the writer a
    /// buffer (`BufWriter`) if it is a raw socket: each frame is flushed once, whole.
    pub fn new(reader: R, writer: W) -> Self {
        Self {
            reader,
            writer,
            sent: 0,
            received: 0,
        }
    }
}

impl<R: Read + Send, W: Write + Send> Transport for StreamTransport<R, W> {
    fn send(&mut self, kind: FrameKind, payload: &[u8]) -> Result<(), TransportError> {
        self.sent += write_frame(&mut self.writer, kind, payload)?;
        Ok(())
    }

    fn recv(&mut self, expected: FrameKind, max_len: usize) -> Result<Vec<u8>, TransportError> {
        let payload = read_frame(&mut self.reader, expected, max_len)?;
        self.received += (HEADER_BYTES + payload.len()) as u64;
        Ok(payload)
    }

    fn bytes_sent(&self) -> u64 {
        self.sent
    }

    fn bytes_received(&self) -> u64 {
        self.received
    }
}
