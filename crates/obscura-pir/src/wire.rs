//! The versioned binary envelope of every Obscura message and file.
//!
//! ```text
//! magic "OBSC" | version: u16 LE | kind: u16 LE | setup digest: 32 bytes | body
//! ```
//!
//! The digest names the setup (parameters, layout, shape and seed) a message belongs to, so a
//! message is never decoded against the wrong setup. Integers are little-endian; vectors of
//! `u32` are raw little-endian arrays. [`Reader`] checks every length against the bytes actually
//! present before anything is allocated.

use crate::PirError;

/// The first four bytes of every message.
pub const MAGIC: [u8; 4] = *b"OBSC";

/// The format version this build writes and reads.
pub const VERSION: u16 = 1;

/// Length of the envelope before the body.
pub const HEADER_BYTES: usize = 4 + 2 + 2 + 32;

/// A SHA-256 digest naming a setup.
pub type Digest = [u8; 32];

/// What a message is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u16)]
pub enum Kind {
    /// The public setup of the LWE engine (parameters, geometry, seed, hint).
    LwePublicSetup = 1,
    /// A query of the LWE engine.
    LweQuery = 2,
    /// An answer of the LWE engine.
    LweAnswer = 3,
    /// The public setup of a keyword database (filter parameters and the LWE setup).
    KeywordSetup = 4,
    /// A stored database file.
    DatabaseFile = 16,
}

impl Kind {
    /// The name used in error messages.
    pub fn describe(self) -> &'static str {
        match self {
            Self::LwePublicSetup => "public setup",
            Self::LweQuery => "query",
            Self::LweAnswer => "answer",
            Self::KeywordSetup => "keyword setup",
            Self::DatabaseFile => "database file",
        }
    }
}

/// Appends the envelope for `kind` and `digest` to `out`.
pub fn write_header(out: &mut Vec<u8>, kind: Kind, digest: &Digest) {
    out.extend_from_slice(&MAGIC);
    out.extend_from_slice(&VERSION.to_le_bytes());
    out.extend_from_slice(&(kind as u16).to_le_bytes());
    out.extend_from_slice(digest);
}

/// An unsigned integer stored little-endian in messages.
pub trait Word: Copy {
    /// Its size in bytes.
    const BYTES: usize;
    /// Appends its little-endian bytes.
    fn put(self, out: &mut Vec<u8>);
    /// Reads it from exactly [`Word::BYTES`] little-endian bytes.
    fn get(bytes: &[u8]) -> Self;
}

impl Word for u16 {
    const BYTES: usize = 2;
    fn put(self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.to_le_bytes());
    }
    fn get(bytes: &[u8]) -> Self {
        Self::from_le_bytes([bytes[0], bytes[1]])
    }
}

impl Word for u32 {
    const BYTES: usize = 4;
    fn put(self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.to_le_bytes());
    }
    fn get(bytes: &[u8]) -> Self {
        Self::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]])
    }
}

/// Appends a vector of words as its length (u64) followed by the raw little-endian entries.
pub fn write_words<W: Word>(out: &mut Vec<u8>, values: &[W]) {
    out.extend_from_slice(&(values.len() as u64).to_le_bytes());
    out.reserve(values.len() * W::BYTES);
    for &value in values {
        value.put(out);
    }
}

/// A bounds-checked cursor over untrusted bytes.
pub struct Reader<'a> {
    bytes: &'a [u8],
    what: &'static str,
}

impl<'a> Reader<'a> {
    /// Opens a message of `kind`: checks magic, version and kind and returns the reader
    /// positioned at the body together with the setup digest.
    pub fn open(bytes: &'a [u8], kind: Kind) -> Result<(Self, Digest), PirError> {
        let mut reader = Self {
            bytes,
            what: kind.describe(),
        };
        if bytes.len() < HEADER_BYTES {
            return Err(reader.error(format!(
                "{} bytes is shorter than the {HEADER_BYTES}-byte header",
                bytes.len()
            )));
        }
        if reader.take(4)? != MAGIC {
            return Err(reader.error("not an Obscura message (bad magic)"));
        }
        let version = reader.u16()?;
        if version != VERSION {
            return Err(reader.error(format!(
                "format version {version} is not supported (this build reads version {VERSION})"
            )));
        }
        let found = reader.u16()?;
        if found != kind as u16 {
            return Err(reader.error(format!("message kind {found} is not a {}", kind.describe())));
        }
        let digest = reader.take(32)?.try_into().expect("32 bytes");
        Ok((reader, digest))
    }

    /// A malformed-message error for this message.
    pub fn error(&self, reason: impl Into<String>) -> PirError {
        PirError::malformed(self.what, reason)
    }

    /// The next `len` bytes.
    pub fn take(&mut self, len: usize) -> Result<&'a [u8], PirError> {
        if self.bytes.len() < len {
            return Err(self.error(format!(
                "truncated: {len} more bytes expected, {} present",
                self.bytes.len()
            )));
        }
        let (head, rest) = self.bytes.split_at(len);
        self.bytes = rest;
        Ok(head)
    }

    /// The next byte.
    pub fn u8(&mut self) -> Result<u8, PirError> {
        Ok(self.take(1)?[0])
    }

    /// The next little-endian u16.
    pub fn u16(&mut self) -> Result<u16, PirError> {
        Ok(u16::from_le_bytes(
            self.take(2)?.try_into().expect("2 bytes"),
        ))
    }

    /// The next little-endian u64.
    pub fn u64(&mut self) -> Result<u64, PirError> {
        Ok(u64::from_le_bytes(
            self.take(8)?.try_into().expect("8 bytes"),
        ))
    }

    /// The next vector of words written by [`write_words`], which must hold exactly `expected`
    /// entries; the length is checked before allocating.
    pub fn words<W: Word>(&mut self, expected: usize) -> Result<Vec<W>, PirError> {
        let count = self.u64()?;
        if count != expected as u64 {
            return Err(self.error(format!("{count} entries where {expected} are expected")));
        }
        self.words_raw(expected)
    }

    /// The next `count` raw little-endian words (no length prefix); checked before allocating.
    pub fn words_raw<W: Word>(&mut self, count: usize) -> Result<Vec<W>, PirError> {
        let len = count
            .checked_mul(W::BYTES)
            .ok_or_else(|| self.error("length overflows"))?;
        let bytes = self.take(len)?;
        Ok(bytes.chunks_exact(W::BYTES).map(W::get).collect())
    }

    /// The bytes not read yet.
    pub fn rest(&self) -> &'a [u8] {
        self.bytes
    }

    /// Fails unless every byte was read.
    pub fn finish(self) -> Result<(), PirError> {
        if self.bytes.is_empty() {
            Ok(())
        } else {
            Err(self.error(format!("{} trailing bytes", self.bytes.len())))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_round_trip_and_checks() {
        let mut out = Vec::new();
        write_header(&mut out, Kind::LweQuery, &[7; 32]);
        write_words(&mut out, &[1u32, 2, 3]);
        write_words(&mut out, &[4u16, 5]);
        let (mut reader, digest) = Reader::open(&out, Kind::LweQuery).unwrap();
        assert_eq!(digest, [7; 32]);
        assert_eq!(reader.words::<u32>(3).unwrap(), vec![1, 2, 3]);
        assert_eq!(reader.words::<u16>(2).unwrap(), vec![4, 5]);
        reader.finish().unwrap();

        assert!(Reader::open(&out, Kind::LweAnswer).is_err());
        let (mut reader, _) = Reader::open(&out, Kind::LweQuery).unwrap();
        assert!(reader.words::<u32>(4).is_err());
        let mut bad = out.clone();
        bad[4] = 9;
        assert!(Reader::open(&bad, Kind::LweQuery).is_err());
        bad[0] = b'X';
        assert!(Reader::open(&bad, Kind::LweQuery).is_err());
        assert!(Reader::open(&out[..10], Kind::LweQuery).is_err());
    }

    #[test]
    fn huge_declared_length_is_refused_without_allocating() {
        let mut out = Vec::new();
        write_header(&mut out, Kind::LweAnswer, &[0; 32]);
        out.extend_from_slice(&u64::MAX.to_le_bytes());
        let (mut reader, _) = Reader::open(&out, Kind::LweAnswer).unwrap();
        assert!(reader.words::<u32>(usize::MAX / 2).is_err());
    }
}
