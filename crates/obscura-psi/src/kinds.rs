//! Every kind of frame, declared by the module that sends it (the handshake, each protocol, the
//! primitives they share, the bucketed driver) and gathered here: the one place that knows
//! every wire byte, so that a received byte is named and no two kinds share one.

pub use crate::bucketed::{BUCKET_PLAN, BUCKET_ROWS};
pub use crate::ecdh::{CLIENT_POINTS, CLIENT_TAGS, SERVER_POINTS};
pub use crate::hello::HELLO;
pub use crate::kkrt::CUCKOO_SEED;
pub use crate::ot::base::{BASE_OT_CHOICES, BASE_OT_POINT};
pub use crate::ot::extension::OT_EXTENSION;
pub use crate::own_tags::SERVER_TAGS;
pub use crate::positions::{MATCH_COUNT, MATCH_POSITIONS};
pub use crate::rr22::{
    MASKED_OKVS, OKVS_SEED, OT_CHECK_REPLY, OT_CHECK_SEED, VOLE_CHECK_REPLY, VOLE_CHECK_SEED,
    VOLE_CHECK_VALUE, VOLE_SEEDS, VOLE_TREES,
};

use crate::wire::{FrameKind, KindByte};

/// Every kind, in the order of its byte.
pub const ALL: [FrameKind; 22] = [
    HELLO,
    CLIENT_POINTS,
    CLIENT_TAGS,
    SERVER_POINTS,
    MATCH_COUNT,
    MATCH_POSITIONS,
    BASE_OT_POINT,
    BASE_OT_CHOICES,
    CUCKOO_SEED,
    OT_EXTENSION,
    SERVER_TAGS,
    VOLE_SEEDS,
    VOLE_TREES,
    OKVS_SEED,
    MASKED_OKVS,
    OT_CHECK_SEED,
    OT_CHECK_REPLY,
    VOLE_CHECK_SEED,
    VOLE_CHECK_VALUE,
    VOLE_CHECK_REPLY,
    BUCKET_PLAN,
    BUCKET_ROWS,
];

/// The kind with wire byte `byte`, if there is one.
pub fn from_byte(byte: u8) -> Option<FrameKind> {
    ALL.into_iter().find(|kind| kind.byte() == byte)
}

impl std::fmt::Display for KindByte {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match from_byte(self.0) {
            Some(kind) => write!(f, "the {kind} frame"),
            None => write!(f, "a frame of unknown kind (byte {})", self.0),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn no_two_kinds_share_a_byte_or_a_name() {
        let bytes: HashSet<u8> = ALL.iter().map(|kind| kind.byte()).collect();
        let names: HashSet<&str> = ALL.iter().map(|kind| kind.name()).collect();
        assert_eq!((bytes.len(), names.len()), (ALL.len(), ALL.len()));
        assert_eq!(from_byte(9), Some(CUCKOO_SEED));
        assert_eq!(from_byte(0), None);
        assert_eq!(
            KindByte(200).to_string(),
            "a frame of unknown kind (byte 200)"
        );
        assert_eq!(KindByte(1).to_string(), "the hello frame");
    }
}
