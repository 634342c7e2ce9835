//! What goes over the wire, below every protocol and transport: the kinds of frames and why a
//! frame could not be sent or received.

/// The kinds of frames of every PSI protocol.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum FrameKind {
    /// The handshake: magic, version, protocol, role, set size, options.
    Hello = 1,
    /// ECDH, client to server: a chunk of the client's items, hashed and raised to its key.
    ClientPoints = 2,
    /// ECDH, server to client: the tags of a chunk of the client's points, in the same order.
    ClientTags = 3,
    /// ECDH, server to client: a chunk of the server's items, hashed and raised to its key.
    ServerPoints = 4,
    /// Both learn, client to server: how many positions of the server's sequence matched.
    MatchCount = 5,
    /// Both learn, client to server: a chunk of matched positions.
    MatchPositions = 6,
    /// KKRT and RR22, client to server: the base-OT sender's point.
    BaseOtPoint = 7,
    /// KKRT and RR22, server to client: the base-OT receiver's points, one per OT.
    BaseOtChoices = 8,
    /// KKRT, client to server: the public seed of the cuckoo hash functions.
    CuckooSeed = 9,
    /// KKRT and RR22, client to server: a frame of blocks of the OT-extension matrix `U`.
    OtExtension = 10,
    /// KKRT and RR22, server to client: the OPRF tags of a chunk of the server's items (three
    /// per item in KKRT, one in RR22).
    ServerTags = 11,
    /// RR22, client to server: the public seeds of the item hash and of the VOLE's code.
    VoleSeeds = 12,
    /// RR22, server to client: the punctured-PRF side sums and corrections of the VOLE.
    VoleTrees = 13,
    /// RR22, client to server: the public seed of the OKVS rows.
    OkvsSeed = 14,
    /// RR22, client to server: a frame of the OKVS masked by the VOLE (`A ⊕ P`).
    MaskedOkvs = 15,
    /// RR22 malicious, server to client: the seed of the OT-extension check.
    OtCheckSeed = 16,
    /// RR22 malicious, client to server: the answer to the OT-extension check.
    OtCheckReply = 17,
    /// RR22 malicious, client to server: the seed of the VOLE check.
    VoleCheckSeed = 18,
    /// RR22 malicious, client to server: the masked combination of the VOLE check.
    VoleCheckValue = 19,
    /// RR22 malicious, server to client: the hash of the VOLE check's value and the tags' salt.
    VoleCheckReply = 20,
    /// Bucketed driver, both ways: the session's handshake, the bucket size and a key nonce
    /// (its kinds count from 32).
    BucketPlan = 32,
    /// Bucketed driver, both ways: the party's row count, once its input is read.
    BucketRows = 33,
}

impl FrameKind {
    const ALL: [Self; 22] = [
        Self::Hello,
        Self::ClientPoints,
        Self::ClientTags,
        Self::ServerPoints,
        Self::MatchCount,
        Self::MatchPositions,
        Self::BaseOtPoint,
        Self::BaseOtChoices,
        Self::CuckooSeed,
        Self::OtExtension,
        Self::ServerTags,
        Self::VoleSeeds,
        Self::VoleTrees,
        Self::OkvsSeed,
        Self::MaskedOkvs,
        Self::OtCheckSeed,
        Self::OtCheckReply,
        Self::VoleCheckSeed,
        Self::VoleCheckValue,
        Self::VoleCheckReply,
        Self::BucketPlan,
        Self::BucketRows,
    ];

    /// The kind with wire byte `byte`, if there is one.
    pub fn from_byte(byte: u8) -> Option<Self> {
        Self::ALL.into_iter().find(|kind| *kind as u8 == byte)
    }

    /// A human-readable name.
    pub fn name(self) -> &'static str {
        match self {
            Self::Hello => "hello",
            Self::ClientPoints => "client-points",
            Self::ClientTags => "client-tags",
            Self::ServerPoints => "server-points",
            Self::MatchCount => "match-count",
            Self::MatchPositions => "match-positions",
            Self::BaseOtPoint => "base-ot-point",
            Self::BaseOtChoices => "base-ot-choices",
            Self::CuckooSeed => "cuckoo-seed",
            Self::OtExtension => "ot-extension",
            Self::ServerTags => "server-tags",
            Self::VoleSeeds => "vole-seeds",
            Self::VoleTrees => "vole-trees",
            Self::OkvsSeed => "okvs-seed",
            Self::MaskedOkvs => "masked-okvs",
            Self::OtCheckSeed => "ot-check-seed",
            Self::OtCheckReply => "ot-check-reply",
            Self::VoleCheckSeed => "vole-check-seed",
            Self::VoleCheckValue => "vole-check-value",
            Self::VoleCheckReply => "vole-check-reply",
            Self::BucketPlan => "bucket-plan",
            Self::BucketRows => "bucket-rows",
        }
    }
}

impl std::fmt::Display for FrameKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// The kind byte of a received frame, named when it is a known kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KindByte(pub u8);

impl std::fmt::Display for KindByte {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match FrameKind::from_byte(self.0) {
            Some(kind) => write!(f, "the {kind} frame"),
            None => write!(f, "a frame of unknown kind (byte {})", self.0),
        }
    }
}

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
