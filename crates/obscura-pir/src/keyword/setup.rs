//! The keyword setup: a main table and, between compactions, a delta table of recent changes,
//! each a filter and row shape on an index scheme's setup; and their wire codec.

use sha2::{Digest as _, Sha256};

use super::fuse::{Arity, FuseShape, MAX_KEYS};
use super::index::KeywordIndex;
use obscura_math::pack;

use super::row::{length_bytes, mask_digits, row_check, row_header, CHECK_BYTES, DIGEST_BYTES};
use crate::scheme::SetupMessage;
use crate::wire::{self, Digest, Kind, Reader};
use crate::PirError;

/// One table of rows: a binary fuse filter over an index scheme's database, one slot per column.
#[derive(Clone, Debug, PartialEq)]
pub struct Table<I: KeywordIndex> {
    pub(super) index: I::Setup,
    pub(super) shape: FuseShape,
    pub(super) seed: [u8; 32],
    pub(super) keys: u64,
    pub(super) max_value: u64,
    pub(super) length_bytes: u8,
}

impl<I: KeywordIndex> Table<I> {
    /// The index scheme's public setup (each table is queried with its own index query).
    pub fn index(&self) -> &I::Setup {
        &self.index
    }

    /// The number of keys the table's filter holds.
    pub fn keys(&self) -> u64 {
        self.keys
    }

    /// Slots per key.
    pub fn arity(&self) -> Arity {
        self.shape.arity()
    }

    /// The longest row value, in bytes (values are padded to it).
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

    /// The value in the row whose digits, summed over a key's slots, are `digits` (one per
    /// matrix row; the key's mask is added to them in place), if it is the row of the key with
    /// digest `digest` and filter hash `hash`:
    /// the key's mask is added, the check recomputed over the key, the length and the value
    /// and compared in constant time, the length and padding checked. Anything else reads as
    /// absent (a row of another key, or one altered on the way).
    pub(super) fn read_row(
        &self,
        digits: &mut [u8],
        digest: &[u8; DIGEST_BYTES],
        hash: u64,
    ) -> Option<Vec<u8>> {
        let log_p = I::engine(&self.index).params().log_p;
        let p_mask = ((1u16 << log_p) - 1) as u8;
        let mut mask = vec![0u8; digits.len()];
        mask_digits(hash, 0, log_p, &mut mask);
        for (digit, mask) in digits.iter_mut().zip(mask) {
            *digit = digit.wrapping_add(mask) & p_mask;
        }
        let (header, max_value) = (self.row_header(), self.max_value);
        let row = pack::unpack(digits, u32::from(log_p), header + max_value as usize);
        let len = if header == CHECK_BYTES {
            max_value
        } else {
            let mut len = [0u8; 8];
            len[..header - CHECK_BYTES].copy_from_slice(&row[CHECK_BYTES..header]);
            u64::from_le_bytes(len)
        };
        // A length past the longest value is checked over the whole value area, then refused.
        let (value, padding) = row[header..].split_at(len.min(max_value) as usize);
        let expected = row_check(digest, value);
        // Constant time in the check: OR of all byte differences.
        let difference = row[..CHECK_BYTES]
            .iter()
            .zip(&expected)
            .fold(0u8, |acc, (a, b)| acc | (a ^ b));
        if std::hint::black_box(difference) != 0
            || len > max_value
            || padding.iter().any(|&b| b != 0)
        {
            return None;
        }
        Some(value.to_vec())
    }

    /// Appends the table's encoding: its fields, then its index setup with its length.
    pub(super) fn write(&self, out: &mut Vec<u8>) {
        let index = self.index.to_bytes();
        out.push(self.arity().get() as u8);
        out.extend_from_slice(&self.seed);
        out.extend_from_slice(&self.keys.to_le_bytes());
        out.extend_from_slice(&self.max_value.to_le_bytes());
        out.push(self.length_bytes);
        out.extend_from_slice(&(index.len() as u64).to_le_bytes());
        out.extend_from_slice(&index);
    }

    /// What of the table the setup's digest covers: its fields and its index setup's digest.
    fn hash_into(&self, hash: &mut Sha256) {
        hash.update([self.arity().get() as u8]);
        hash.update(self.seed);
        hash.update(self.keys.to_le_bytes());
        hash.update(self.max_value.to_le_bytes());
        hash.update([self.length_bytes]);
        hash.update(self.index.digest());
    }

    /// Decodes a table, checking that the filter fits the index geometry.
    pub(super) fn read(reader: &mut Reader<'_>) -> Result<Self, PirError> {
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
        let len = reader.u64()?;
        let len = usize::try_from(len)
            .map_err(|_| reader.error(format!("an index setup of {len} bytes")))?;
        let index = I::Setup::from_bytes(reader.take(len)?)?;
        let table = Self {
            index,
            shape,
            seed,
            keys,
            max_value,
            length_bytes,
        };
        let g = I::engine(&table.index).geometry();
        let row_bytes = (table.row_header() as u64).checked_add(max_value);
        if keys == 0
            || g.records() != table.shape.size()
            || Some(g.record_bytes()) != row_bytes
            || g.per_column() != 1
        {
            return Err(PirError::malformed(
                "keyword setup",
                "the filter does not fit the database shape",
            ));
        }
        Ok(table)
    }
}

/// All a client needs: the main table and, between compactions, the delta table that holds
/// the keys changed since (each value flagged present or deleted), queried together.
#[derive(Clone, Debug, PartialEq)]
pub struct Setup<I: KeywordIndex> {
    pub(super) main: Table<I>,
    pub(super) delta: Option<Table<I>>,
    keys: u64,
    version: u64,
    digest: Digest,
}

impl<I: KeywordIndex> Setup<I> {
    /// The setup of `main` and `delta` holding `keys` keys at `version`; its digest covers all
    /// of them.
    pub(super) fn new(main: Table<I>, delta: Option<Table<I>>, keys: u64, version: u64) -> Self {
        let mut hash = Sha256::new();
        hash.update(b"obscura/keyword/setup/v2");
        hash.update(keys.to_le_bytes());
        hash.update(version.to_le_bytes());
        for table in std::iter::once(&main).chain(&delta) {
            table.hash_into(&mut hash);
        }
        Self {
            main,
            delta,
            keys,
            version,
            digest: hash.finalize().into(),
        }
    }

    /// The main table.
    pub fn main(&self) -> &Table<I> {
        &self.main
    }

    /// The delta table of keys changed since the last compaction, if any.
    pub fn delta(&self) -> Option<&Table<I>> {
        self.delta.as_ref()
    }

    /// The tables a lookup queries, in request order: the main table, then the delta.
    pub fn tables(&self) -> impl Iterator<Item = &Table<I>> {
        std::iter::once(&self.main).chain(&self.delta)
    }

    /// The number of keys present.
    pub fn keys(&self) -> u64 {
        self.keys
    }

    /// The database's version: 0 as built, one more for each batch of changes.
    pub fn version(&self) -> u64 {
        self.version
    }

    /// The digest that names this setup.
    pub fn digest(&self) -> &Digest {
        &self.digest
    }

    /// The longest value present in any table, in bytes.
    pub fn max_value(&self) -> u64 {
        let delta = self
            .delta
            .as_ref()
            .map_or(0, |d| d.max_value.saturating_sub(1));
        self.main.max_value.max(delta)
    }

    /// The encoded setup: the key count, the version, then each table (its filter fields and
    /// its index scheme's setup, with its length).
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(SETUP_FIELD_BYTES as usize);
        wire::write_header(&mut out, Kind::KEYWORD_SETUP, &self.digest);
        out.extend_from_slice(&self.keys.to_le_bytes());
        out.extend_from_slice(&self.version.to_le_bytes());
        out.push(self.tables().count() as u8);
        for table in self.tables() {
            table.write(&mut out);
        }
        out
    }

    /// Decodes and checks a setup: each filter's shape must match its index geometry, and the
    /// digest everything.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, PirError> {
        let (mut reader, digest) = Reader::open(bytes, Kind::KEYWORD_SETUP)?;
        let (keys, version, count) = (reader.u64()?, reader.u64()?, reader.u8()?);
        if !(1..=2).contains(&count) {
            return Err(reader.error(format!("{count} tables (a main table and at most a delta)")));
        }
        let main = Table::read(&mut reader)?;
        let delta = if count == 2 {
            Some(Table::read(&mut reader)?)
        } else {
            None
        };
        reader.finish()?;
        let setup = Self::new(main, delta, keys, version);
        if setup.digest != digest {
            return Err(PirError::malformed(
                "keyword setup",
                "the digest does not match the tables",
            ));
        }
        Ok(setup)
    }
}

/// Bytes of an encoded keyword setup of one table besides its index setup: a header, the key
/// count, the version, the table count and the table's fields.
pub(super) const SETUP_FIELD_BYTES: u64 =
    (wire::HEADER_BYTES + 8 + 8 + 1) as u64 + TABLE_FIELD_BYTES;

/// Bytes of a table's encoding before its index setup: arity, filter seed, key count, longest
/// value, length width and the index setup's length.
const TABLE_FIELD_BYTES: u64 = 1 + 32 + 8 + 8 + 1 + 8;
