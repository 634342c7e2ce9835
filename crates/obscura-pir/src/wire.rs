//! The versioned binary envelopes of every Obscura message and file.
//!
//! Setups and files carry the full envelope:
//!
//! ```text
//! magic "OBSC" | version: u16 LE | kind: u16 LE | setup digest: 32 bytes | body
//! ```
//!
//! The digest names the setup (parameters, layout, shape and seed) a message belongs to, so a
//! message is never decoded against the wrong setup. Queries and answers, the messages sent on
//! every lookup, carry an 8-byte compact envelope instead, since their length is fixed by the
//! setup they belong to:
//!
//! ```text
//! magic "O" | version: u8 | kind: u8 | setup tag: the digest's first 5 bytes | raw entries
//! ```
//!
//! The 40-bit tag catches a message meant for another setup (a client whose copy of the setup
//! went stale when the database was rebuilt) except with probability 2^-40; like the digest, it
//! is a consistency check, not an authenticator. Integers are little-endian; vectors of `u32` are
//! raw little-endian arrays. [`Reader`] checks every length against the bytes actually present
//! before anything is allocated.

use rayon::prelude::*;

use crate::PirError;

/// The first four bytes of every message.
pub const MAGIC: [u8; 4] = *b"OBSC";

/// The format version this build writes and reads (12: an LWE setup's hint hash is the
/// SHA-256 of its pieces' SHA-256, hashed in parallel; 11: a YPIR database keeps its first hint's
/// residues beside its chunks; 10: a keyword setup carries its version and
/// a delta table beside its main table; 9: a TreePIR setup carries its height and version; 8: an LWE layer carries its capacity; 7: an LWE setup carries its version and its
/// hint's SHA-256, both in its digest; 5: a keyword row's check covers its value as
/// well as its key, see [`crate::keyword::row_check`]; 4: database matrices are stored in column
/// panels of row groups of tiles, see `obscura_math::layout`).
pub const VERSION: u16 = 12;

/// Length of the envelope before the body.
pub const HEADER_BYTES: usize = 4 + 2 + 2 + 32;

// The compact envelope stores the version in one byte.
const _: () = assert!(VERSION <= u8::MAX as u16);

/// The first byte of every query and answer.
pub const COMPACT_MAGIC: u8 = b'O';

/// Bytes of the setup digest a compact envelope carries.
pub const TAG_BYTES: usize = 5;

/// Length of the compact envelope of queries and answers.
pub const COMPACT_HEADER_BYTES: usize = 3 + TAG_BYTES;

/// The setup tag of a compact envelope: the first bytes of the setup digest.
pub type Tag = [u8; TAG_BYTES];

/// The tag that names the setup with `digest` in compact envelopes.
pub fn tag_of(digest: &Digest) -> Tag {
    digest[..TAG_BYTES].try_into().expect("tag bytes")
}

/// A SHA-256 digest naming a setup.
pub type Digest = [u8; 32];

/// What a message is: the kind field of its envelope. Every scheme names its public setup,
/// queries and answers with kinds of its own, and a setup's kind names its scheme (see
/// [`crate::scheme::Scheme::KIND`]).
///
/// The kinds of this crate are the associated constants; codes from 0xE0 to 0xFF are left for
/// schemes defined outside it (tests, experiments), through [`Kind::external`]. Every code fits
/// the one byte of the compact envelope.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Kind(u8);

impl Kind {
    /// The public setup of the LWE engine (parameters, geometry, seed, hint).
    pub const LWE_PUBLIC_SETUP: Self = Self(1);
    /// A query of the LWE engine.
    pub const LWE_QUERY: Self = Self(2);
    /// An answer of the LWE engine.
    pub const LWE_ANSWER: Self = Self(3);
    /// The public setup of a keyword database (filter parameters and the LWE setup).
    pub const KEYWORD_SETUP: Self = Self(4);
    /// The public setup of a TreePIR database (tree size, root and one LWE setup per colour).
    pub const TREEPIR_SETUP: Self = Self(5);
    /// The public setup of a batch-code (PBC) database (placement and one LWE setup per bucket).
    pub const PBC_SETUP: Self = Self(6);
    /// One LWE query per sub-database (TreePIR colour classes, PBC buckets), framed.
    pub const SHARD_QUERIES: Self = Self(7);
    /// One LWE answer per sub-database, framed.
    pub const SHARD_ANSWERS: Self = Self(8);
    /// The public setup of a DoublePIR database (the first layer, and the second layer's LWE
    /// setup with its hint).
    pub const DOUBLE_SETUP: Self = Self(9);
    /// A DoublePIR query: the first layer's query and one second-layer query per row.
    pub const DOUBLE_QUERY: Self = Self(10);
    /// A DoublePIR answer: the second layer's answers and the hint of the first answer's digits.
    pub const DOUBLE_ANSWER: Self = Self(11);
    /// The public setup of a YPIR database (variant, shape and seed; no hint).
    pub const YPIR_SETUP: Self = Self(12);
    /// A YPIR query: first-layer queries, the packed layer's query and the packing keys.
    pub const YPIR_QUERY: Self = Self(13);
    /// A YPIR answer: packed ciphertexts.
    pub const YPIR_ANSWER: Self = Self(14);
    /// A stored database file.
    pub const DATABASE_FILE: Self = Self(16);
    /// A patch of an LWE engine's public setup: the next version's layer and the entries of
    /// the database that changed, from which a client makes the next setup itself.
    pub const LWE_SETUP_PATCH: Self = Self(17);
    /// The patches a database file keeps beside it for clients of its earlier versions.
    pub const KEPT_PATCHES: Self = Self(18);
    /// A patch of a TreePIR setup: the grown tree's size and root, and the patches of the
    /// sub-databases whose entries changed.
    pub const TREEPIR_SETUP_PATCH: Self = Self(19);
    /// A patch of a keyword setup: the next version's key count and delta table.
    pub const KEYWORD_SETUP_PATCH: Self = Self(20);
    /// A database file's change log: the batches of changes committed since the file was
    /// written.
    pub const CHANGE_LOG: Self = Self(21);
    /// The public setup of one shard of an LWE database ([`crate::lwe::ShardSetup`]).
    pub const LWE_SHARD_SETUP: Self = Self(22);
    /// A shard's part of a query ([`crate::lwe::ShardQuery`]).
    pub const LWE_SHARD_QUERY: Self = Self(23);
    /// A shard's answer, in full words ([`crate::lwe::ShardAnswer`]).
    pub const LWE_SHARD_ANSWER: Self = Self(24);

    /// The first code left for schemes defined outside this crate.
    pub const FIRST_EXTERNAL: u8 = 0xE0;

    /// The kind with `code`, for a scheme defined outside this crate: `None` below
    /// [`Kind::FIRST_EXTERNAL`], whose codes belong to this crate.
    pub const fn external(code: u8) -> Option<Self> {
        if code >= Self::FIRST_EXTERNAL {
            Some(Self(code))
        } else {
            None
        }
    }

    /// The code the envelope carries.
    pub const fn code(self) -> u8 {
        self.0
    }

    /// The name used in error messages.
    pub fn describe(self) -> &'static str {
        match self {
            Self::LWE_PUBLIC_SETUP => "public setup",
            Self::LWE_QUERY => "query",
            Self::LWE_ANSWER => "answer",
            Self::KEYWORD_SETUP => "keyword setup",
            Self::TREEPIR_SETUP => "TreePIR setup",
            Self::PBC_SETUP => "batch-code setup",
            Self::SHARD_QUERIES => "request of one query per sub-database",
            Self::SHARD_ANSWERS => "reply of one answer per sub-database",
            Self::DOUBLE_SETUP => "DoublePIR setup",
            Self::DOUBLE_QUERY => "DoublePIR query",
            Self::DOUBLE_ANSWER => "DoublePIR answer",
            Self::YPIR_SETUP => "YPIR setup",
            Self::YPIR_QUERY => "YPIR query",
            Self::YPIR_ANSWER => "YPIR answer",
            Self::DATABASE_FILE => "database file",
            Self::LWE_SETUP_PATCH => "setup patch",
            Self::KEPT_PATCHES => "file of kept patches",
            Self::TREEPIR_SETUP_PATCH => "TreePIR setup patch",
            Self::KEYWORD_SETUP_PATCH => "keyword setup patch",
            Self::CHANGE_LOG => "change log",
            Self::LWE_SHARD_SETUP => "shard setup",
            Self::LWE_SHARD_QUERY => "shard query",
            Self::LWE_SHARD_ANSWER => "shard answer",
            _ => "message",
        }
    }
}

/// Appends the envelope for `kind` and `digest` to `out`.
pub fn write_header(out: &mut Vec<u8>, kind: Kind, digest: &Digest) {
    out.extend_from_slice(&MAGIC);
    out.extend_from_slice(&VERSION.to_le_bytes());
    out.extend_from_slice(&u16::from(kind.0).to_le_bytes());
    out.extend_from_slice(digest);
}

/// Appends the compact envelope for `kind` and the setup with `digest` to `out`.
pub fn write_compact_header(out: &mut Vec<u8>, kind: Kind, digest: &Digest) {
    out.extend_from_slice(&[COMPACT_MAGIC, VERSION as u8, kind.0]);
    out.extend_from_slice(&tag_of(digest));
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

/// Bytes of `count` values of `width` bits packed end to end; `None` on overflow.
pub fn packed_len(count: u64, width: u32) -> Option<u64> {
    Some(count.checked_mul(u64::from(width))?.div_ceil(8))
}

/// Appends `values` of `width` bits (1 to 64; higher bits must be zero) packed end to end,
/// least significant bit first, the last byte padded with zero bits.
pub fn write_packed(out: &mut Vec<u8>, values: impl IntoIterator<Item = u64>, width: u32) {
    debug_assert!((1..=64).contains(&width));
    let (mut buffer, mut held) = (0u128, 0u32);
    for value in values {
        debug_assert!(
            width == 64 || value >> width == 0,
            "a value wider than its field"
        );
        buffer |= u128::from(value) << held;
        held += width;
        while held >= 8 {
            out.push(buffer as u8);
            buffer >>= 8;
            held -= 8;
        }
    }
    if held > 0 {
        out.push(buffer as u8);
    }
}

/// `words` as their little-endian bytes: on a little-endian machine the words' own memory, read
/// in place (a hint is 128 MiB at 1 GiB); elsewhere a converted copy.
pub fn le_bytes(words: &[u32]) -> std::borrow::Cow<'_, [u8]> {
    #[cfg(target_endian = "little")]
    return std::borrow::Cow::Borrowed(bytemuck::cast_slice(words));
    #[cfg(not(target_endian = "little"))]
    return std::borrow::Cow::Owned(words.iter().flat_map(|w| w.to_le_bytes()).collect());
}

/// Bytes one task of [`extend_parallel`] copies at least.
const PARALLEL_BYTES: usize = 1 << 18;

/// Appends `bytes` to `out`, copied on the rayon pool: a hint of a hundred megabytes is copied
/// by every core, each also taking the first touches of its part of the new memory.
pub fn extend_parallel(out: &mut Vec<u8>, bytes: &[u8]) {
    out.par_extend(bytes.par_iter().copied().with_min_len(PARALLEL_BYTES));
}

/// Appends `value` as an unsigned LEB128 varint (seven bits a byte, low bits first).
pub fn write_varint(out: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        out.push(value as u8 | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

/// Checks that an in-memory message of `kind` names the setup with `setup_digest` and that its
/// parts have the `expected` numbers of entries.
pub(crate) fn check_parts<const N: usize>(
    kind: Kind,
    digest: &Digest,
    setup_digest: &Digest,
    lengths: [usize; N],
    expected: [u64; N],
) -> Result<(), PirError> {
    if digest != setup_digest {
        return Err(PirError::SetupMismatch {
            what: kind.describe(),
        });
    }
    if lengths.map(|l| l as u64) != expected {
        return Err(PirError::malformed(
            kind.describe(),
            format!("parts of {lengths:?} entries where {expected:?} are expected"),
        ));
    }
    Ok(())
}

/// A bounds-checked cursor over untrusted bytes.
pub struct Reader<'a> {
    bytes: &'a [u8],
    what: &'static str,
}

impl<'a> Reader<'a> {
    /// A reader of `bytes` that carry no envelope (a part of a message or file already
    /// opened); its errors name `kind`.
    pub fn new(bytes: &'a [u8], kind: Kind) -> Self {
        Self {
            bytes,
            what: kind.describe(),
        }
    }

    /// Opens a message of `kind`: checks magic, version and kind and returns the reader
    /// positioned at the body together with the setup digest.
    pub fn open(bytes: &'a [u8], kind: Kind) -> Result<(Self, Digest), PirError> {
        let (mut reader, magic, version, found) = Self::read_header(bytes, kind.describe())?;
        reader.check_envelope(magic, version, found, kind)?;
        let digest = reader.take(32)?.try_into().expect("32 bytes");
        Ok((reader, digest))
    }

    /// Reads the full envelope up to its kind, once its length is checked: the reader, whether
    /// the magic matched, the version and the kind found.
    fn read_header(
        bytes: &'a [u8],
        what: &'static str,
    ) -> Result<(Self, bool, u16, u16), PirError> {
        let mut reader = Self { bytes, what };
        if bytes.len() < HEADER_BYTES {
            return Err(reader.error(format!(
                "{} bytes is shorter than the {HEADER_BYTES}-byte header",
                bytes.len()
            )));
        }
        let magic = reader.take(4)? == MAGIC;
        let (version, found) = (reader.u16()?, reader.u16()?);
        Ok((reader, magic, version, found))
    }

    /// The kind a message in the full envelope says it is, once its magic and version are
    /// checked: what picks the decoder of a message whose kind is not known in advance.
    pub fn envelope_kind(bytes: &'a [u8]) -> Result<Kind, PirError> {
        let (reader, magic, version, found) = Self::read_header(bytes, "message")?;
        let kind = u8::try_from(found)
            .map(Kind)
            .map_err(|_| reader.error(format!("message kind {found} does not exist")))?;
        reader.check_envelope(magic, version, found, kind)?;
        Ok(kind)
    }

    /// Opens a message of `kind` in the compact envelope: checks magic, version and kind and
    /// returns the reader positioned at the entries together with the setup tag.
    pub fn open_compact(bytes: &'a [u8], kind: Kind) -> Result<(Self, Tag), PirError> {
        let mut reader = Self {
            bytes,
            what: kind.describe(),
        };
        if bytes.len() < COMPACT_HEADER_BYTES {
            return Err(reader.error(format!(
                "{} bytes is shorter than the {COMPACT_HEADER_BYTES}-byte header",
                bytes.len()
            )));
        }
        let [magic, version, found] = reader.take(3)?.try_into().expect("3 bytes");
        let magic = magic == COMPACT_MAGIC;
        reader.check_envelope(magic, version.into(), found.into(), kind)?;
        let tag = reader.take(TAG_BYTES)?.try_into().expect("tag bytes");
        Ok((reader, tag))
    }

    /// Opens a message of `kind` in the compact envelope that must belong to the setup with
    /// `digest`: a message for another setup is a [`PirError::SetupMismatch`].
    pub fn open_compact_for(
        bytes: &'a [u8],
        kind: Kind,
        digest: &Digest,
    ) -> Result<Self, PirError> {
        let (reader, tag) = Self::open_compact(bytes, kind)?;
        if tag != tag_of(digest) {
            return Err(PirError::SetupMismatch {
                what: kind.describe(),
            });
        }
        Ok(reader)
    }

    /// [`Reader::open_compact_for`] of a message that must be exactly `len` bytes long, checked
    /// before anything is read.
    pub fn open_compact_sized(
        bytes: &'a [u8],
        kind: Kind,
        digest: &Digest,
        len: u64,
    ) -> Result<Self, PirError> {
        let reader = Self::open_compact_for(bytes, kind, digest)?;
        if bytes.len() as u64 != len {
            return Err(reader.error(format!("{} bytes where {len} are expected", bytes.len())));
        }
        Ok(reader)
    }

    /// Refuses an envelope with a wrong magic, another format version or another kind.
    fn check_envelope(
        &self,
        magic: bool,
        version: u16,
        found: u16,
        kind: Kind,
    ) -> Result<(), PirError> {
        if !magic {
            return Err(self.error("not an Obscura message (bad magic)"));
        }
        if version != VERSION {
            return Err(self.error(format!(
                "format version {version} is not supported (this build reads version {VERSION})"
            )));
        }
        if found != u16::from(kind.0) {
            return Err(self.error(format!("message kind {found} is not a {}", kind.describe())));
        }
        Ok(())
    }

    /// A malformed-message error for this message.
    pub fn error(&self, reason: impl Into<String>) -> PirError {
        PirError::malformed(self.what, reason)
    }

    /// This message's fields do not fit together, as `source` says.
    pub fn inconsistent(&self, source: PirError) -> PirError {
        PirError::inconsistent(self.what, source)
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

    /// The next `count` raw little-endian words (no length prefix); checked before allocating.
    pub fn words_raw<W: Word>(&mut self, count: usize) -> Result<Vec<W>, PirError> {
        let len = count
            .checked_mul(W::BYTES)
            .ok_or_else(|| self.error("length overflows"))?;
        let bytes = self.take(len)?;
        Ok(bytes.chunks_exact(W::BYTES).map(W::get).collect())
    }

    /// The next `count` values of `width` bits (1 to 64) packed LSB-first ([`write_packed`]);
    /// the bits that pad the last byte must be zero, so that every value list has one encoding.
    pub fn packed(&mut self, count: usize, width: u32) -> Result<Vec<u64>, PirError> {
        let len = packed_len(count as u64, width)
            .and_then(|len| usize::try_from(len).ok())
            .ok_or_else(|| self.error("length overflows"))?;
        let bytes = self.take(len)?;
        let mask = if width == 64 {
            u64::MAX
        } else {
            (1u64 << width) - 1
        };
        let (mut buffer, mut held) = (0u128, 0u32);
        let mut input = bytes.iter();
        let mut values = Vec::with_capacity(count);
        for _ in 0..count {
            while held < width {
                let byte = input.next().expect("a length checked above");
                buffer |= u128::from(*byte) << held;
                held += 8;
            }
            values.push(buffer as u64 & mask);
            buffer >>= width;
            held -= width;
        }
        if buffer != 0 {
            return Err(self.error("nonzero padding bits after packed values"));
        }
        Ok(values)
    }

    /// The next unsigned LEB128 varint ([`write_varint`]), in its shortest encoding.
    pub fn varint(&mut self) -> Result<u64, PirError> {
        let mut value = 0u64;
        for shift in (0..64).step_by(7) {
            let byte = self.u8()?;
            let bits = u64::from(byte & 0x7f);
            if shift == 63 && bits > 1 {
                return Err(self.error("a varint overflows 64 bits"));
            }
            value |= bits << shift;
            if byte & 0x80 == 0 {
                if byte == 0 && shift > 0 {
                    return Err(self.error("a varint is not in its shortest encoding"));
                }
                return Ok(value);
            }
        }
        Err(self.error("a varint overflows 64 bits"))
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
    use proptest::prelude::*;

    /// A reader over `bytes`, with no envelope.
    fn reader(bytes: &[u8]) -> Reader<'_> {
        Reader {
            bytes,
            what: "test",
        }
    }

    proptest! {
        /// Every value reads back; overlong encodings and overflows are refused.
        #[test]
        fn varints_round_trip(value in any::<u64>(), shift in 0u32..64) {
            for value in [value, value >> shift] {
                let mut out = Vec::new();
                write_varint(&mut out, value);
                let mut read = reader(&out);
                prop_assert_eq!(read.varint().unwrap(), value);
                prop_assert!(read.finish().is_ok());
                let mut longer = out.clone();
                *longer.last_mut().unwrap() |= 0x80;
                longer.push(0);
                prop_assert!(reader(&longer).varint().is_err());
            }
        }
    }

    #[test]
    fn varints_past_64_bits_are_refused() {
        let mut too_long = vec![0xff; 9];
        too_long.push(0x02);
        assert!(reader(&too_long).varint().is_err());
        assert!(reader(&[0x80; 11]).varint().is_err());
        assert!(reader(&[0x80]).varint().is_err());
    }

    #[test]
    fn packed_values_round_trip_and_padding_is_checked() {
        for width in [1u32, 13, 20, 28, 56, 64] {
            let mask = if width == 64 {
                u64::MAX
            } else {
                (1 << width) - 1
            };
            let values: Vec<u64> = (0..37u64)
                .map(|i| i.wrapping_mul(0x9E37_79B9_7F4A_7C15) & mask)
                .collect();
            let mut out = Vec::new();
            write_packed(&mut out, values.iter().copied(), width);
            assert_eq!(out.len() as u64, packed_len(37, width).unwrap());
            let mut reader = Reader {
                bytes: &out,
                what: "test",
            };
            assert_eq!(reader.packed(37, width).unwrap(), values);
            reader.finish().unwrap();
        }
        // 3 values of 5 bits leave a padding bit; setting it is refused.
        let mut out = Vec::new();
        write_packed(&mut out, [1, 2, 3], 5);
        out[1] |= 0x80;
        assert!(Reader {
            bytes: &out,
            what: "test"
        }
        .packed(3, 5)
        .is_err());
        assert!(Reader {
            bytes: &out[..1],
            what: "test"
        }
        .packed(3, 5)
        .is_err());
    }

    #[test]
    fn the_envelope_names_its_kind() {
        let mut out = Vec::new();
        write_header(&mut out, Kind::TREEPIR_SETUP, &[3; 32]);
        assert_eq!(Reader::envelope_kind(&out).unwrap(), Kind::TREEPIR_SETUP);
        let external = Kind::external(0xE5).unwrap();
        let mut other = Vec::new();
        write_header(&mut other, external, &[3; 32]);
        assert_eq!(Reader::envelope_kind(&other).unwrap(), external);
        assert_eq!(Kind::external(0x10), None);
        let mut wide = out.clone();
        wide[6..8].copy_from_slice(&300u16.to_le_bytes());
        assert!(Reader::envelope_kind(&wide).is_err());
        let mut bad = out.clone();
        bad[0] ^= 1;
        assert!(Reader::envelope_kind(&bad).is_err());
        assert!(Reader::envelope_kind(&out[..HEADER_BYTES - 1]).is_err());
    }

    #[test]
    fn header_round_trip_and_checks() {
        let mut out = Vec::new();
        write_header(&mut out, Kind::LWE_QUERY, &[7; 32]);
        for value in [1u32, 2, 3] {
            value.put(&mut out);
        }
        for value in [4u16, 5] {
            value.put(&mut out);
        }
        let (mut reader, digest) = Reader::open(&out, Kind::LWE_QUERY).unwrap();
        assert_eq!(digest, [7; 32]);
        assert_eq!(reader.words_raw::<u32>(3).unwrap(), vec![1, 2, 3]);
        assert_eq!(reader.words_raw::<u16>(2).unwrap(), vec![4, 5]);
        reader.finish().unwrap();

        assert!(Reader::open(&out, Kind::LWE_ANSWER).is_err());
        let (mut reader, _) = Reader::open(&out, Kind::LWE_QUERY).unwrap();
        assert!(reader.words_raw::<u32>(6).is_err());
        let mut bad = out.clone();
        bad[4] = VERSION as u8 + 1;
        assert!(Reader::open(&bad, Kind::LWE_QUERY).is_err());
        bad[0] = b'X';
        assert!(Reader::open(&bad, Kind::LWE_QUERY).is_err());
        assert!(Reader::open(&out[..10], Kind::LWE_QUERY).is_err());
    }

    #[test]
    fn compact_header_round_trip_and_checks() {
        let digest: Digest = std::array::from_fn(|i| i as u8);
        let mut out = Vec::new();
        write_compact_header(&mut out, Kind::LWE_ANSWER, &digest);
        assert_eq!(out.len(), COMPACT_HEADER_BYTES);
        out.extend_from_slice(&[9, 0, 8, 0]);
        let (mut reader, tag) = Reader::open_compact(&out, Kind::LWE_ANSWER).unwrap();
        assert_eq!(tag, tag_of(&digest));
        assert_eq!(reader.words_raw::<u16>(2).unwrap(), vec![9, 8]);
        reader.finish().unwrap();

        assert!(Reader::open_compact(&out, Kind::LWE_QUERY).is_err());
        for (at, byte) in [(0, b'X'), (1, 1)] {
            let mut bad = out.clone();
            bad[at] = byte;
            assert!(Reader::open_compact(&bad, Kind::LWE_ANSWER).is_err());
        }
        assert!(Reader::open_compact(&out[..7], Kind::LWE_ANSWER).is_err());
    }

    #[test]
    fn huge_expected_length_is_refused_without_allocating() {
        let mut out = Vec::new();
        write_compact_header(&mut out, Kind::LWE_ANSWER, &[0; 32]);
        out.extend_from_slice(&[0; 16]);
        let (mut reader, _) = Reader::open_compact(&out, Kind::LWE_ANSWER).unwrap();
        assert!(reader.words_raw::<u32>(usize::MAX / 2).is_err());
        assert!(reader.words_raw::<u32>(usize::MAX / 4 + 1).is_err());
    }
}
