//! The handshake: each party announces its protocol, role, set size and options, and checks the
//! peer's announcement against its own before any set element is sent.
//!
//! Layout (21 bytes): magic `OBSCPSI\0`, wire version (`u16` LE), protocol id, role (0 client,
//! 1 server), distinct item count (`u64` LE), option flags (bit 0: both learn).

use crate::kinds;
use crate::transport::{FrameKind, KindByte, Transport, TransportError};
use crate::{HelloError, Protocol, PsiError, Role};

/// The handshake: magic, version, protocol, role, set size, options.
pub const HELLO: FrameKind = FrameKind::new(1, "hello");

const MAGIC: [u8; 8] = *b"OBSCPSI\0";
/// The wire version this build speaks.
const VERSION: u16 = 3;
/// Bytes of a handshake.
pub(crate) const LEN: usize = 21;
const BOTH_LEARN: u8 = 1;
/// Every protocol this build speaks.
const PROTOCOLS: [Protocol; 4] = [
    Protocol::Ecdh,
    Protocol::Kkrt,
    Protocol::Rr22,
    Protocol::Rr22Malicious,
];

/// One party's announcement.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Hello {
    /// The protocol it runs.
    pub protocol: Protocol,
    /// Its role.
    pub role: Role,
    /// Its number of distinct items.
    pub items: u64,
    /// Whether it asks that both parties learn the intersection.
    pub both_learn: bool,
}

impl Hello {
    /// The handshake's bytes.
    pub(crate) fn encode(&self) -> [u8; LEN] {
        let mut bytes = [0u8; LEN];
        bytes[..8].copy_from_slice(&MAGIC);
        bytes[8..10].copy_from_slice(&VERSION.to_le_bytes());
        bytes[10] = protocol_id(self.protocol);
        bytes[11] = match self.role {
            Role::Client => 0,
            Role::Server => 1,
        };
        bytes[12..20].copy_from_slice(&self.items.to_le_bytes());
        bytes[20] = if self.both_learn { BOTH_LEARN } else { 0 };
        bytes
    }

    /// Reads a handshake, refusing any other version, protocol, role or flag.
    pub(crate) fn decode(bytes: &[u8]) -> Result<Self, HelloError> {
        let bytes: &[u8; LEN] = bytes.try_into().map_err(|_| HelloError::Length {
            len: bytes.len(),
            expected: LEN,
        })?;
        if bytes[..8] != MAGIC {
            return Err(HelloError::Magic);
        }
        let version = u16::from_le_bytes([bytes[8], bytes[9]]);
        if version != VERSION {
            return Err(HelloError::Version {
                ours: VERSION,
                theirs: version,
            });
        }
        let protocol = PROTOCOLS
            .into_iter()
            .find(|&protocol| protocol_id(protocol) == bytes[10])
            .ok_or(HelloError::UnknownProtocol(bytes[10]))?;
        let role = match bytes[11] {
            0 => Role::Client,
            1 => Role::Server,
            id => return Err(HelloError::UnknownRole(id)),
        };
        let mut items = [0u8; 8];
        items.copy_from_slice(&bytes[12..20]);
        let flags = bytes[20];
        if flags & !BOTH_LEARN != 0 {
            return Err(HelloError::UnknownFlags(flags));
        }
        Ok(Self {
            protocol,
            role,
            items: u64::from_le_bytes(items),
            both_learn: flags & BOTH_LEARN != 0,
        })
    }

    /// The distinct-item counts of the client and of the server, this announcement being ours
    /// and `peer` the other party's.
    pub(crate) fn set_sizes(&self, peer: &Self) -> (u64, u64) {
        match self.role {
            Role::Client => (self.items, peer.items),
            Role::Server => (peer.items, self.items),
        }
    }

    /// Whether the two announcements make one session: same protocol and options, opposite roles.
    pub(crate) fn check_peer(&self, peer: &Self) -> Result<(), HelloError> {
        if peer.protocol != self.protocol {
            return Err(HelloError::ProtocolMismatch {
                ours: self.protocol,
                theirs: peer.protocol,
            });
        }
        if peer.role == self.role {
            return Err(HelloError::SameRole(self.role));
        }
        if peer.both_learn != self.both_learn {
            return Err(HelloError::BothLearnMismatch {
                ours: self.both_learn,
            });
        }
        Ok(())
    }
}

/// The id of `protocol` on the wire.
fn protocol_id(protocol: Protocol) -> u8 {
    match protocol {
        Protocol::Ecdh => 1,
        Protocol::Kkrt => 2,
        Protocol::Rr22 => 3,
        Protocol::Rr22Malicious => 4,
    }
}

/// Receives the first frame of a session, `expected` (a plain session opens with a [`HELLO`], a
/// bucketed one with a [`BUCKET_PLAN`](crate::kinds::BUCKET_PLAN)); see [`opening_error`].
pub(crate) fn recv_opening<T: Transport + ?Sized>(
    transport: &mut T,
    expected: FrameKind,
    max_len: usize,
) -> Result<Vec<u8>, PsiError> {
    transport
        .recv(expected, max_len)
        .map_err(|error| opening_error(expected, error))
}

/// `error`, met where `expected` was due: when the peer sent the other opening (one party
/// streams through buckets and the other does not), that is said as such.
pub(crate) fn opening_error(expected: FrameKind, error: TransportError) -> PsiError {
    let other = match expected {
        HELLO => kinds::BUCKET_PLAN,
        kinds::BUCKET_PLAN => HELLO,
        _ => return error.into(),
    };
    match error {
        TransportError::WrongKind { got, .. } if got == KindByte(other.byte()) => {
            HelloError::BucketingMismatch {
                ours: expected == kinds::BUCKET_PLAN,
            }
            .into()
        }
        error => error.into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hello(role: Role, both_learn: bool) -> Hello {
        Hello {
            protocol: Protocol::Ecdh,
            role,
            items: 1 << 40,
            both_learn,
        }
    }

    #[test]
    fn encoding_round_trips() {
        for protocol in PROTOCOLS {
            for role in [Role::Client, Role::Server] {
                for both_learn in [false, true] {
                    let ours = Hello {
                        protocol,
                        ..hello(role, both_learn)
                    };
                    assert_eq!(Hello::decode(&ours.encode()), Ok(ours));
                }
            }
        }
    }

    #[test]
    fn malformed_announcements_are_named() {
        let good = hello(Role::Client, false).encode();
        let with = |at: usize, byte: u8| {
            let mut bytes = good;
            bytes[at] = byte;
            Hello::decode(&bytes)
        };
        assert_eq!(
            Hello::decode(&good[..20]),
            Err(HelloError::Length {
                len: 20,
                expected: 21
            })
        );
        assert_eq!(with(0, b'X'), Err(HelloError::Magic));
        assert_eq!(with(8, 1), Err(HelloError::Version { ours: 3, theirs: 1 }));
        assert_eq!(with(10, 9), Err(HelloError::UnknownProtocol(9)));
        assert_eq!(with(11, 2), Err(HelloError::UnknownRole(2)));
        assert_eq!(with(20, 3), Err(HelloError::UnknownFlags(3)));
    }

    #[test]
    fn sessions_need_opposite_roles_and_equal_options() {
        let client = hello(Role::Client, false);
        assert_eq!(client.check_peer(&hello(Role::Server, false)), Ok(()));
        let kkrt = Hello {
            protocol: Protocol::Kkrt,
            ..hello(Role::Server, false)
        };
        assert_eq!(
            client.check_peer(&kkrt),
            Err(HelloError::ProtocolMismatch {
                ours: Protocol::Ecdh,
                theirs: Protocol::Kkrt
            })
        );
        assert_eq!(
            client.check_peer(&hello(Role::Client, false)),
            Err(HelloError::SameRole(Role::Client))
        );
        assert_eq!(
            client.check_peer(&hello(Role::Server, true)),
            Err(HelloError::BothLearnMismatch { ours: false })
        );
    }
}
