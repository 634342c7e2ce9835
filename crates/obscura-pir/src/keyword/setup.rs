//! The keyword setup: the filter and row shape a client needs besides the index scheme's
//! setup, and its wire codec.

use super::fuse::{Arity, FuseShape, MAX_KEYS};
use super::index::KeywordIndex;
use super::row::{length_bytes, row_header};
use crate::scheme::SetupMessage;
use crate::wire::{self, Kind, Reader};
use crate::PirError;

/// What a client needs besides the index scheme's setup: the filter and the row shape.
#[derive(Clone, Debug, PartialEq)]
pub struct Setup<I: KeywordIndex> {
    pub(super) index: I::Setup,
    pub(super) shape: FuseShape,
    pub(super) seed: [u8; 32],
    pub(super) keys: u64,
    pub(super) max_value: u64,
    pub(super) length_bytes: u8,
}

impl<I: KeywordIndex> Setup<I> {
    /// The index scheme's public setup (queries and answers are the index scheme's).
    pub fn index(&self) -> &I::Setup {
        &self.index
    }

    /// The number of stored keys.
    pub fn keys(&self) -> u64 {
        self.keys
    }

    /// Slots per key.
    pub fn arity(&self) -> Arity {
        self.shape.arity()
    }

    /// The longest value, in bytes (values are padded to it).
    pub fn max_value(&self) -> u64 {
        self.max_value
    }

    pub(super) fn shape(&self) -> FuseShape {
        self.shape
    }

    /// Bytes of a row before the value: the check and the length.
    pub(super) fn row_header(&self) -> usize {
        row_header(self.length_bytes)
    }

    /// The encoded setup: the filter parameters, then the index scheme's setup.
    pub fn to_bytes(&self) -> Vec<u8> {
        let index = self.index.to_bytes();
        let mut out = Vec::with_capacity(SETUP_FIELD_BYTES as usize + index.len());
        wire::write_header(&mut out, Kind::KEYWORD_SETUP, self.index.digest());
        out.push(self.arity().get() as u8);
        out.extend_from_slice(&self.seed);
        out.extend_from_slice(&self.keys.to_le_bytes());
        out.extend_from_slice(&self.max_value.to_le_bytes());
        out.push(self.length_bytes);
        out.extend_from_slice(&index);
        out
    }

    /// Decodes and checks a setup: the filter's shape must match the index geometry.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, PirError> {
        let (mut reader, digest) = Reader::open(bytes, Kind::KEYWORD_SETUP)?;
        let count = reader.u8()?;
        let arity = Arity::from_count(usize::from(count))
            .ok_or_else(|| reader.error(format!("arity {count} is not 3 or 4")))?;
        let seed: [u8; 32] = reader.take(32)?.try_into().expect("32 bytes");
        let (keys, max_value, length_bytes) = (reader.u64()?, reader.u64()?, reader.u8()?);
        if length_bytes != 0 && length_bytes != self::length_bytes(max_value, false) {
            return Err(reader.error(format!(
                "{length_bytes}-byte lengths for values of up to {max_value} bytes"
            )));
        }
        let shape = FuseShape::new(keys, arity)
            .ok_or_else(|| reader.error(format!("{keys} keys is more than {MAX_KEYS}")))?;
        let index = I::Setup::from_bytes(reader.rest())?;
        if index.digest() != &digest {
            return Err(PirError::malformed(
                "keyword setup",
                "the digest does not match the index setup",
            ));
        }
        let setup = Self {
            index,
            shape,
            seed,
            keys,
            max_value,
            length_bytes,
        };
        let g = I::engine(&setup.index).geometry();
        let row_bytes = (setup.row_header() as u64).checked_add(max_value);
        if keys == 0
            || g.records() != setup.shape().size()
            || Some(g.record_bytes()) != row_bytes
            || g.per_column() != 1
        {
            return Err(PirError::malformed(
                "keyword setup",
                "the filter does not fit the database shape",
            ));
        }
        Ok(setup)
    }
}

/// Bytes of an encoded keyword setup before the index setup: a header, the arity, the filter seed,
/// the key count, the longest value and the length width.
pub(super) const SETUP_FIELD_BYTES: u64 = (wire::HEADER_BYTES + 1 + 32 + 8 + 8 + 1) as u64;
