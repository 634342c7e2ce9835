//! Framed messages between the two parties, over any byte stream.
//!
//! A frame is a kind byte, the payload length as a little-endian `u32`, and the payload. The
//! receiver names the kind it expects and the longest payload it accepts; both are checked on
//! the 5-byte header, before anything is allocated, so a peer cannot make us reserve more memory
//! than the protocol step allows. Protocols keep frames small (chunks of a few thousand
//! elements), so memory per frame stays bounded and the two parties' work overlaps.
//!
//! [`StreamTransport`] frames any pair of [`std::io::Read`] / [`std::io::Write`] halves and
//! counts the bytes each way; [`tcp`] builds one on a socket with read and write timeouts, and
//! [`memory`] one over in-process channels (for tests and benchmarks), and [`mailbox`] carries
//! each frame as a file in a folder both parties reach. A link with other
//! properties (a rate limit, say) is a `Read` or `Write` wrapper handed to
//! [`StreamTransport::new`].

mod frame;
pub mod limited;
pub mod mailbox;
pub mod memory;
mod stream;
pub mod tcp;

use std::time::Duration;

pub use crate::wire::{FrameKind, KindByte, TransportError};
pub use frame::HEADER_BYTES;
pub use limited::RateLimited;
pub use stream::StreamTransport;

/// The time a read waits for the peer before failing, unless the caller chooses another.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

/// A two-way link that carries whole frames and counts the bytes it moves. After an error the
/// link is out of step with the peer (a refused payload is left unread) and is not used again.
pub trait Transport: Send {
    /// Sends one frame of `kind` carrying `payload`.
    fn send(&mut self, kind: FrameKind, payload: &[u8]) -> Result<(), TransportError>;

    /// Receives the next frame, which must be of kind `expected` with a payload of at most
    /// `max_len` bytes (both checked before the payload is read), and returns its payload.
    fn recv(&mut self, expected: FrameKind, max_len: usize) -> Result<Vec<u8>, TransportError>;

    /// The frames that follow belong to bucket `index` of a bucketed session
    /// ([`crate::bucketed`]); a [`mailbox`] names its files by it, other links ignore it.
    fn bucket(&mut self, index: u64) {
        let _ = index;
    }

    /// Bytes sent so far, frame headers included.
    fn bytes_sent(&self) -> u64;

    /// Bytes received so far, frame headers included.
    fn bytes_received(&self) -> u64;
}
