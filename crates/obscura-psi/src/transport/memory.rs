//! In-process links: byte pipes over channels, and a connected pair of transports on them.
//!
//! A pipe behaves like one direction of a buffered socket: writes never block, the bytes written
//! are delivered together at each flush (so a frame, flushed once, arrives whole, and a peer that
//! hangs up after reading it cannot fail the writer half way through), a read waits at most the
//! pipe's timeout for data, and the stream ends when the writer is dropped. Tests use the raw
//! pipe ends to play a peer that sends arbitrary bytes.

use std::io::{self, Read, Write};
use std::sync::mpsc::{channel, Receiver, RecvTimeoutError, Sender};
use std::time::Duration;

use super::StreamTransport;

/// A [`StreamTransport`] over two in-process pipes.
pub type MemoryTransport = StreamTransport<PipeReader, PipeWriter>;

/// The writing end of a pipe: the bytes written are delivered at the next flush, or when the
/// writer is dropped.
pub struct PipeWriter {
    sender: Sender<Vec<u8>>,
    unflushed: Vec<u8>,
}

/// The reading end of a pipe: reads wait at most the pipe's timeout for data and return end of
/// stream once the writer is gone and everything written has been read.
pub struct PipeReader {
    receiver: Receiver<Vec<u8>>,
    timeout: Duration,
    pending: Vec<u8>,
    read: usize,
}

/// A one-way byte pipe whose reads wait at most `timeout`.
pub fn pipe(timeout: Duration) -> (PipeWriter, PipeReader) {
    let (sender, receiver) = channel();
    (
        PipeWriter {
            sender,
            unflushed: Vec::new(),
        },
        PipeReader {
            receiver,
            timeout,
            pending: Vec::new(),
            read: 0,
        },
    )
}

/// Two transports connected to each other; reads on either wait at most `timeout`.
pub fn pair(timeout: Duration) -> (MemoryTransport, MemoryTransport) {
    let (a_writer, b_reader) = pipe(timeout);
    let (b_writer, a_reader) = pipe(timeout);
    (
        StreamTransport::new(a_reader, a_writer),
        StreamTransport::new(b_reader, b_writer),
    )
}

impl Write for PipeWriter {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.unflushed.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        if self.unflushed.is_empty() {
            return Ok(());
        }
        self.sender
            .send(std::mem::take(&mut self.unflushed))
            .map_err(|_| io::Error::new(io::ErrorKind::BrokenPipe, "the pipe's reader is gone"))
    }
}

impl Drop for PipeWriter {
    fn drop(&mut self) {
        // A reader that is already gone has nothing left to receive.
        let _ = self.flush();
    }
}

impl Read for PipeReader {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        while self.read == self.pending.len() {
            match self.receiver.recv_timeout(self.timeout) {
                Ok(bytes) => {
                    self.pending = bytes;
                    self.read = 0;
                }
                Err(RecvTimeoutError::Timeout) => return Err(io::ErrorKind::TimedOut.into()),
                Err(RecvTimeoutError::Disconnected) => return Ok(0),
            }
        }
        let n = buf.len().min(self.pending.len() - self.read);
        buf[..n].copy_from_slice(&self.pending[self.read..self.read + n]);
        self.read += n;
        Ok(n)
    }
}
