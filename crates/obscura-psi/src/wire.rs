//! What goes over the wire, below every protocol and transport: the kinds of frames and why a
//! frame could not be sent or received.

/// A kind of frame: its byte on the wire and its name. Each module that sends frames declares
/// its kinds; [`crate::kinds`] lists them all.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FrameKind {
    byte: u8,
    name: &'static str,
}

impl FrameKind {
    /// The kind sent as `byte`, named `name` in messages.
    pub(crate) const fn new(byte: u8, name: &'static str) -> Self {
        Self { byte, name }
    }

    /// The byte that stands for the kind on the wire.
    pub const fn byte(self) -> u8 {
        self.byte
    }

    /// A human-readable name.
    pub const fn name(self) -> &'static str {
        self.name
    }
}

impl std::fmt::Display for FrameKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name)
    }
}

/// The kind byte of a received frame, named when it is a known kind (see [`crate::kinds`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KindByte(pub u8);

/// Why a frame could not be sent or received.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TransportError {
    /// The peer sent a frame of another kind than the one due.
    #[error("the peer sent {got} where the {expected} frame was due")]
    WrongKind {
        /// The kind due.
        expected: FrameKind,
        /// The kind received.
        got: KindByte,
    },
    /// The peer announced a payload longer than this step allows.
    #[error("the peer announced a {kind} frame of {len} bytes; at most {max} are allowed here")]
    TooLong {
        /// The frame's kind.
        kind: FrameKind,
        /// The announced length.
        len: u64,
        /// The longest payload allowed.
        max: usize,
    },
    /// The connection ended in the middle of a frame.
    #[error("the connection ended in the middle of a frame (the {expected} frame was due)")]
    Truncated {
        /// The kind due.
        expected: FrameKind,
    },
    /// The connection ended cleanly where a frame was due.
    #[error("the peer closed the connection (the {expected} frame was due)")]
    Closed {
        /// The kind due.
        expected: FrameKind,
    },
    /// The peer sent nothing for the read time limit.
    #[error("the peer sent nothing within the time limit (the {expected} frame was due)")]
    Timeout {
        /// The kind due.
        expected: FrameKind,
    },
    /// A frame could not be sent within the write time limit (the peer stopped reading).
    #[error("the peer stopped reading: a {kind} frame could not be sent within the time limit")]
    SendTimeout {
        /// The frame's kind.
        kind: FrameKind,
    },
    /// A payload too long for the length field (a bug of the sender, never the peer's doing).
    #[error("a {kind} payload of {len} bytes does not fit in one frame")]
    PayloadTooLong {
        /// The frame's kind.
        kind: FrameKind,
        /// The payload's length.
        len: usize,
    },
    /// A frame's file holds bytes past the frame (a [`mailbox`](crate::transport::mailbox) frame
    /// not written by a peer of this format).
    #[error("the {kind} frame's file holds bytes past the frame")]
    TrailingBytes {
        /// The frame's kind.
        kind: FrameKind,
    },
    /// The connection failed.
    #[error("connection error")]
    Io(#[from] std::io::Error),
}
