//! Queries and answers, and their binary encodings.

use super::setup::PublicSetup;
use crate::wire::{self, Digest, Kind, Reader, Word as _};
use crate::PirError;

/// A query: `A·s + e + Δ·u_column`, one entry per matrix column, tagged with its setup digest.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Query {
    pub(super) digest: Digest,
    pub(super) values: Vec<u32>,
}

/// An answer: `D·query` modulus-switched to its top
/// [`ANSWER_BITS`](crate::params::ANSWER_BITS) bits, one entry per matrix
/// row, tagged with its setup digest.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Answer {
    pub(super) digest: Digest,
    pub(super) values: Vec<u16>,
}

/// The methods of a message that is one vector of words tagged with its setup's digest, its
/// length fixed by the setup.
macro_rules! vector_message {
    ($type:ident, $word:ty, $kind:expr, $setup:ty, $len:expr) => {
        impl $type {
            /// The digest of the setup this message belongs to.
            pub fn digest(&self) -> &Digest {
                &self.digest
            }

            /// The entries.
            pub fn values(&self) -> &[$word] {
                &self.values
            }

            /// The length of the encoded message for `setup`.
            pub fn encoded_len(setup: &$setup) -> u64 {
                let expected: u64 = $len(setup);
                wire::COMPACT_HEADER_BYTES as u64 + std::mem::size_of::<$word>() as u64 * expected
            }

            /// The encoded message, in the compact envelope: its length is fixed by the setup.
            pub fn to_bytes(&self) -> Vec<u8> {
                let mut out = Vec::with_capacity(
                    wire::COMPACT_HEADER_BYTES + std::mem::size_of::<$word>() * self.values.len(),
                );
                wire::write_compact_header(&mut out, $kind, &self.digest);
                for &value in &self.values {
                    value.put(&mut out);
                }
                out
            }

            /// Decodes a message that must belong to `setup`: the setup tag and the length are
            /// checked before the entries are allocated.
            pub fn from_bytes(bytes: &[u8], setup: &$setup) -> Result<Self, PirError> {
                let mut reader = Reader::open_compact_for(bytes, $kind, setup.digest())?;
                let expected: u64 = $len(setup);
                let values = reader.words_raw::<$word>(expected as usize)?;
                reader.finish()?;
                Ok(Self {
                    digest: *setup.digest(),
                    values,
                })
            }

            /// Checks that an in-memory message belongs to `setup`.
            pub(super) fn check(&self, setup: &$setup) -> Result<(), PirError> {
                if &self.digest != setup.digest() {
                    return Err(PirError::SetupMismatch {
                        what: $kind.describe(),
                    });
                }
                let expected: u64 = $len(setup);
                if self.values.len() as u64 != expected {
                    return Err(PirError::malformed(
                        $kind.describe(),
                        format!(
                            "{} entries where {expected} are expected",
                            self.values.len()
                        ),
                    ));
                }
                Ok(())
            }
        }
    };
}

vector_message!(
    Query,
    u32,
    Kind::LWE_QUERY,
    PublicSetup,
    |s: &PublicSetup| s.geometry().cols()
);
vector_message!(
    Answer,
    u16,
    Kind::LWE_ANSWER,
    PublicSetup,
    |s: &PublicSetup| s.geometry().rows()
);
