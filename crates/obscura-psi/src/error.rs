//! The error types of a PSI session.

use obscura_math::sample::RngError;

use crate::protocol::{Protocol, Role};
use crate::wire::{FrameKind, TransportError};

/// Why a PSI session failed. Input from the peer never causes a panic or an unbounded wait: it
/// ends in one of these.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PsiError {
    /// The connection failed, timed out, or carried a frame that is not the one due.
    #[error(transparent)]
    Transport(#[from] TransportError),
    /// The two parties cannot run a session together (or the peer is not an Obscura PSI peer).
    /// The message includes the reason, so the reason is not also given as the error's source.
    #[error("handshake failed: {0}")]
    Hello(HelloError),
    /// The peer sent well-framed data that breaks the protocol (the message includes what).
    #[error("the peer broke the protocol: {0}")]
    Peer(PeerError),
    /// The OS random number generator failed.
    #[error(transparent)]
    Rng(#[from] RngError),
    /// A party's own input could not be read (a bucketed session's item source; the reason is
    /// the source).
    #[error("cannot read the input")]
    Input(#[source] Box<dyn std::error::Error + Send + Sync>),
    /// An item of a bucketed session's input is longer than a bucket file can hold.
    #[error("row {row}: an item of {len} bytes is longer than {max}")]
    ItemTooLong {
        /// The item's row, from 0.
        row: u64,
        /// Its length.
        len: usize,
        /// The longest item.
        max: usize,
    },
    /// A bucket file could not be written or read back.
    #[error("{}", path.display())]
    Io {
        /// The file or folder.
        path: std::path::PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// The OS could not start a thread (a bucketed session prepares the next bucket on one).
    #[error("cannot start a thread: {0}")]
    Thread(std::io::Error),
    /// A bucket holds more distinct items than the padded size both parties agreed on (each
    /// bucket does with probability at most 2^-40; retry, or choose larger buckets).
    #[error("bucket {bucket} holds {items} distinct items, more than its padded size {bound}")]
    BucketOverflow {
        /// The bucket.
        bucket: u64,
        /// Its distinct items.
        items: u64,
        /// The padded size.
        bound: u64,
    },
    /// KKRT: the client's items did not fit in the cuckoo table under any of the seeds tried
    /// (each seed fails with probability at most 2^-40).
    #[error(
        "could not place {items} items into {bins} cuckoo bins with {attempts} different seeds"
    )]
    CuckooFailed {
        /// The client's distinct items.
        items: usize,
        /// Bins of the table.
        bins: u32,
        /// Seeds tried.
        attempts: u32,
    },
    /// A message of the ECDH message API is malformed or does not fit the call (see
    /// [`crate::ecdh::messages`]).
    #[error(transparent)]
    Message(#[from] MessageError),
    /// KKRT or RR22: the client's set needs more cuckoo bins (KKRT) or OKVS words (RR22) than
    /// one session can number (2^32 - 1).
    #[error(
        "a client set of {items} items is too large for one {protocol} session; split it into buckets"
    )]
    TooManyItems {
        /// The protocol.
        protocol: Protocol,
        /// The client's distinct items.
        items: u64,
    },
    /// The options ask for something the protocol does not give.
    #[error("{protocol} does not offer {what}")]
    Unsupported {
        /// The protocol.
        protocol: Protocol,
        /// What it does not offer.
        what: &'static str,
    },
    /// RR22: the client's items could not be encoded into the OKVS under any of the seeds tried
    /// (each seed fails with probability at most 2^-40).
    #[error("could not encode the items into the OKVS with {attempts} different seeds")]
    Encoding {
        /// Seeds tried.
        attempts: u32,
    },
}

impl From<HelloError> for PsiError {
    fn from(error: HelloError) -> Self {
        Self::Hello(error)
    }
}

impl From<PeerError> for PsiError {
    fn from(error: PeerError) -> Self {
        Self::Peer(error)
    }
}

impl PsiError {
    /// An [`PsiError::Io`] for `path`.
    pub(crate) fn io(path: &std::path::Path, source: std::io::Error) -> Self {
        Self::Io {
            path: path.to_path_buf(),
            source,
        }
    }
}

/// What is wrong with the peer's handshake, or with the two parties' settings together.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum HelloError {
    /// The handshake does not have the length of this version's handshake.
    #[error("the handshake is {len} bytes; {expected} were due")]
    Length {
        /// Bytes received.
        len: usize,
        /// Bytes of a handshake of this version.
        expected: usize,
    },
    /// The handshake does not start with Obscura PSI's magic bytes.
    #[error("the peer is not an Obscura PSI peer (wrong magic bytes)")]
    Magic,
    /// The peer speaks another version of the wire format.
    #[error("the peer speaks PSI wire version {theirs}; this build speaks version {ours}")]
    Version {
        /// Our version.
        ours: u16,
        /// The peer's version.
        theirs: u16,
    },
    /// The peer names a protocol this build does not know.
    #[error("the peer asks for an unknown protocol (id {0})")]
    UnknownProtocol(u8),
    /// The peer names a role other than client or server.
    #[error("the peer names an unknown role (id {0})")]
    UnknownRole(u8),
    /// The peer sets option flags this build does not know.
    #[error("the peer sets unknown option flags {0:#04x}")]
    UnknownFlags(u8),
    /// The parties chose different protocols.
    #[error("the protocols differ: this party runs {ours}, the peer runs {theirs}")]
    ProtocolMismatch {
        /// Our protocol.
        ours: Protocol,
        /// The peer's protocol.
        theirs: Protocol,
    },
    /// Both parties chose the same role.
    #[error("both parties are the {0}: one must be the client and the other the server")]
    SameRole(Role),
    /// One party asked for both parties to learn the intersection and the other did not.
    #[error(
        "{} asks that both parties learn the intersection and {} does not",
        if *ours { "this party" } else { "the peer" },
        if *ours { "the peer" } else { "this party" }
    )]
    BothLearnMismatch {
        /// Our setting.
        ours: bool,
    },
    /// The parties of a bucketed session chose different bucket sizes.
    #[error("the bucket sizes differ: this party uses buckets of {ours} items, the peer {theirs}")]
    BucketSizeMismatch {
        /// Our bucket size.
        ours: u64,
        /// The peer's bucket size.
        theirs: u64,
    },
    /// One party streams its set through buckets and the other runs a plain session.
    #[error(
        "{} streams its set through buckets and {} does not",
        if *ours { "this party" } else { "the peer" },
        if *ours { "the peer" } else { "this party" }
    )]
    BucketingMismatch {
        /// Whether this party is the one that streams through buckets.
        ours: bool,
    },
}

/// Well-framed data from the peer that breaks the protocol.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum PeerError {
    /// A chunk frame is empty or not a whole number of elements.
    #[error(
        "a {kind} frame of {len} bytes does not hold a whole, non-zero number of {size}-byte elements"
    )]
    BadChunk {
        /// The frame's kind.
        kind: FrameKind,
        /// The frame's length.
        len: usize,
        /// The element size.
        size: usize,
    },
    /// A frame whose length is fixed by what came before has another length.
    #[error("a {kind} frame is {len} bytes; {expected} were due")]
    WrongLength {
        /// The frame's kind.
        kind: FrameKind,
        /// The frame's length.
        len: usize,
        /// The length due.
        expected: usize,
    },
    /// A group element is not the canonical encoding of a ristretto255 point.
    #[error("the peer sent an invalid ristretto255 point encoding")]
    InvalidPoint,
    /// A group element is the identity, which no honest peer sends.
    #[error("the peer sent the identity point")]
    IdentityPoint,
    /// Two of the tags the server returned for the client's distinct items are equal.
    #[error("the peer returned the same tag for two different items")]
    RepeatedTag,
    /// RR22 malicious: the client's OT extension is not consistent with one set of choice bits
    /// (its rows fail the check of [`crate::rr22`]'s malicious mode).
    #[error("the peer's OT extension failed its consistency check")]
    OtCheckFailed,
    /// RR22 malicious: the server's VOLE does not give the client consistent correlations (its
    /// GGM trees fail the check of [`crate::rr22`]'s malicious mode).
    #[error("the peer's VOLE failed its consistency check")]
    VoleCheckFailed,
    /// The client reports more matches than the smaller set holds.
    #[error("the peer reports {count} matches, more than the {most} possible")]
    TooManyMatches {
        /// Matches reported.
        count: u64,
        /// The most there can be.
        most: u64,
    },
    /// A match position is outside the server's sequence.
    #[error("match position {position} is out of range: the sequence has {len} items")]
    PositionOutOfRange {
        /// The position.
        position: u64,
        /// The sequence's length.
        len: u64,
    },
    /// In a bucketed session, the peer entered a bucket with another number of items than the
    /// padded size both parties derived from the plan.
    #[error("the peer entered bucket {bucket} with {items} items instead of {expected}")]
    BucketSize {
        /// The bucket.
        bucket: u64,
        /// The items the peer announced for it.
        items: u64,
        /// The padded size of the plan.
        expected: u64,
    },
    /// A match position was sent twice.
    #[error("match position {0} was sent twice")]
    RepeatedPosition(u64),
}

/// What is wrong with a message or a call of the message API.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum MessageError {
    /// The bytes are not a message of this format (the text says what is wrong).
    #[error("not a valid ECDH-PSI {expected}: {reason}")]
    Malformed {
        /// The message expected.
        expected: &'static str,
        /// What is wrong.
        reason: String,
    },
    /// The false-positive rate is not a number strictly between 0 and 1.
    #[error("the false-positive rate must be strictly between 0 and 1, not {0}")]
    InvalidFpr(String),
    /// The request holds more distinct items than the setup was made for.
    #[error(
        "the request has {items} distinct items but the setup message was made for at most {sized_for}: ask the server for a setup made for {items} client items"
    )]
    TooManyItems {
        /// Distinct items of the request.
        items: u64,
        /// The client items the setup was made for.
        sized_for: u64,
    },
    /// The client read a response before it made a request.
    #[error("no request was made: call create_request first")]
    NoRequest,
    /// The response answers another number of points than the last request sent.
    #[error("the response holds {response} points but the last request sent {request}")]
    CountMismatch {
        /// Points in the response.
        response: u64,
        /// Points in the request.
        request: u64,
    },
    /// The response is shuffled (the server reveals only the intersection's size) but the
    /// intersection itself was asked for.
    #[error("the server does not reveal the intersection (its response is shuffled): ask for the intersection's size")]
    SizeOnly,
}
