//! What a PSI session reports to the caller.

use std::time::Duration;

/// The result of one PSI session for this party.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Outcome {
    /// The intersection, for a party that learns it (the client; the server too when both learn).
    pub intersection: Option<Intersection>,
    /// Items the caller gave (rows), duplicates included.
    pub rows: usize,
    /// Distinct items, the ones that entered the protocol.
    pub unique_items: usize,
    /// Rows dropped because an earlier row holds the same item.
    pub duplicates_dropped: usize,
    /// The peer's number of distinct items (every party learns the other's set size).
    pub peer_items: u64,
    /// Bytes this party sent, frame headers included.
    pub bytes_sent: u64,
    /// Bytes this party received, frame headers included.
    pub bytes_received: u64,
    /// Time from the start of the session to its end.
    pub elapsed: Duration,
}

/// The items both parties hold, as positions in the caller's input.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Intersection {
    /// Every row (index into the caller's input, ascending) whose item is in the intersection;
    /// all copies of a duplicated item are listed.
    pub rows: Vec<usize>,
    /// The number of distinct items in the intersection.
    pub size: usize,
}

/// The steps a progress callback reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stage {
    /// Work on this party's own items (ECDH: hashing them to the group and raising them to its
    /// key; KKRT: the client's OPRF outputs, the server's tags; RR22: the client's masked OKVS,
    /// the server's tags).
    OwnItems,
    /// Work on what the peer sent (ECDH: raising its points to this party's key; KKRT: the
    /// server's processing of the OT-extension matrix, the client's tag lookups; RR22: the
    /// server's processing of the masked OKVS, the client's tag lookups).
    PeerItems,
}

impl Stage {
    /// What a party does in this stage of `protocol`, as progress reports name it.
    pub fn label(self, protocol: crate::Protocol) -> &'static str {
        match (protocol, self) {
            (crate::Protocol::Ecdh, Self::OwnItems) => "blinding our items",
            (crate::Protocol::Ecdh, Self::PeerItems) => "blinding the peer's items",
            (_, Self::OwnItems) => "encoding our items",
            (_, Self::PeerItems) => "processing the peer's items",
        }
    }
}
