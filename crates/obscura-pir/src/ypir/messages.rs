//! YPIR queries and answers, and their binary encodings (compact envelope; lengths fixed by the
//! setup; values modulo `q` bit-packed to 56 bits, the answer's to 28 and 20).

use super::packed::KEY_POLYNOMIALS;
use super::params::{BODY_BITS, DEGREE, MASK_BITS};
use super::setup::PublicSetup;
use super::shape::Shape;
use crate::wire::{self, Digest, Kind, Reader, Word};
use crate::PirError;

/// Bits of a value modulo the packed layer's `q` on the wire.
const VALUE_BITS: u32 = 56;

/// A query: for YPIR, one first-layer LWE query per digit of a record (each with its own
/// secret); then the packed layer's query vector and the packing keys' bodies (under one fresh
/// secret).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Query {
    pub(super) digest: Digest,
    pub(super) first: Vec<u32>,
    pub(super) second: Vec<u64>,
    pub(super) keys: Vec<u64>,
}

/// An answer: packed ciphertexts, their masks modulo 2^28 then their bodies modulo 2^20.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Answer {
    pub(super) digest: Digest,
    pub(super) masks: Vec<u32>,
    pub(super) bodies: Vec<u32>,
}

/// Entries of a query's three parts for `setup`.
fn query_lengths(setup: &PublicSetup) -> [u64; 3] {
    let keys = (KEY_POLYNOMIALS * DEGREE) as u64;
    match setup.shape() {
        Shape::Simple(s) => [0, s.columns(), keys],
        Shape::Double(s) => [s.digits() * s.columns(), s.rows(), keys],
    }
}

/// Ciphertexts of an answer for `setup`.
pub(super) fn answer_ciphertexts(setup: &PublicSetup) -> usize {
    match setup.shape() {
        Shape::Simple(s) => s.packing().ciphertexts,
        Shape::Double(_) => 1,
    }
}

/// Bytes of the entries of a query of these lengths.
fn query_bytes([first, second, keys]: [u64; 3]) -> u64 {
    let packed = |count| wire::packed_len(count, VALUE_BITS).unwrap_or(u64::MAX);
    (first * 4)
        .saturating_add(packed(second))
        .saturating_add(packed(keys))
}

/// Bytes of the entries of an answer of `ciphertexts` ciphertexts.
fn answer_bytes(ciphertexts: usize) -> u64 {
    (ciphertexts * DEGREE) as u64 * u64::from(MASK_BITS + BODY_BITS) / 8
}

/// Opens a message of `kind` for `setup` and checks its length.
fn open<'a>(
    bytes: &'a [u8],
    kind: Kind,
    setup: &PublicSetup,
    entries: u64,
) -> Result<Reader<'a>, PirError> {
    let (reader, tag) = Reader::open_compact(bytes, kind)?;
    if tag != wire::tag_of(setup.digest()) {
        return Err(PirError::SetupMismatch {
            what: kind.describe(),
        });
    }
    let expected = wire::COMPACT_HEADER_BYTES as u64 + entries;
    if bytes.len() as u64 != expected {
        return Err(reader.error(format!(
            "{} bytes where {expected} are expected",
            bytes.len()
        )));
    }
    Ok(reader)
}

/// Checks that an in-memory message's digest and lengths belong to `setup`.
fn check<const N: usize>(
    kind: Kind,
    digest: &Digest,
    setup: &PublicSetup,
    lengths: [usize; N],
    expected: [u64; N],
) -> Result<(), PirError> {
    if digest != setup.digest() {
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

/// `count` values modulo `q`, each checked to be below it.
fn values_below(reader: &mut Reader<'_>, count: u64, q: u64) -> Result<Vec<u64>, PirError> {
    let values = reader.packed(count as usize, VALUE_BITS)?;
    if values.iter().any(|&v| v >= q) {
        return Err(reader.error("a value is not below the modulus"));
    }
    Ok(values)
}

impl Query {
    /// The digest of the setup this query belongs to.
    pub fn digest(&self) -> &Digest {
        &self.digest
    }

    /// The length of an encoded query for `setup`.
    pub fn encoded_len(setup: &PublicSetup) -> u64 {
        wire::COMPACT_HEADER_BYTES as u64 + query_bytes(query_lengths(setup))
    }

    /// Bytes of an encoded query's three parts for `setup`: the first-layer vectors, the
    /// packed layer's vector and the packing keys.
    pub fn part_bytes(setup: &PublicSetup) -> [u64; 3] {
        let [first, second, keys] = query_lengths(setup);
        [
            query_bytes([first, 0, 0]),
            query_bytes([0, second, 0]),
            query_bytes([0, 0, keys]),
        ]
    }

    /// The encoded query.
    pub fn to_bytes(&self) -> Vec<u8> {
        let lengths = [self.first.len(), self.second.len(), self.keys.len()].map(|l| l as u64);
        let mut out =
            Vec::with_capacity(wire::COMPACT_HEADER_BYTES + query_bytes(lengths) as usize);
        wire::write_compact_header(&mut out, Kind::YPIR_QUERY, &self.digest);
        self.first.iter().for_each(|&word| word.put(&mut out));
        wire::write_packed(&mut out, self.second.iter().copied(), VALUE_BITS);
        wire::write_packed(&mut out, self.keys.iter().copied(), VALUE_BITS);
        out
    }

    /// Decodes a query that must belong to `setup`; every value modulo `q` is checked.
    pub fn from_bytes(bytes: &[u8], setup: &PublicSetup) -> Result<Self, PirError> {
        let [first, second, keys] = query_lengths(setup);
        let mut reader = open(
            bytes,
            Kind::YPIR_QUERY,
            setup,
            query_bytes([first, second, keys]),
        )?;
        let q = obscura_math::ring::Ring::ypir().modulus();
        let first = reader.words_raw::<u32>(first as usize)?;
        let second = values_below(&mut reader, second, q)?;
        let keys = values_below(&mut reader, keys, q)?;
        reader.finish()?;
        Ok(Self {
            digest: *setup.digest(),
            first,
            second,
            keys,
        })
    }

    /// Checks that an in-memory query belongs to `setup`, values included.
    pub(super) fn check(&self, setup: &PublicSetup) -> Result<(), PirError> {
        let lengths = [self.first.len(), self.second.len(), self.keys.len()];
        check(
            Kind::YPIR_QUERY,
            &self.digest,
            setup,
            lengths,
            query_lengths(setup),
        )?;
        let q = obscura_math::ring::Ring::ypir().modulus();
        if self.second.iter().chain(&self.keys).any(|&v| v >= q) {
            return Err(PirError::malformed(
                Kind::YPIR_QUERY.describe(),
                "a value is not below the modulus",
            ));
        }
        Ok(())
    }
}

impl Answer {
    /// The digest of the setup this answer belongs to.
    pub fn digest(&self) -> &Digest {
        &self.digest
    }

    /// The length of an encoded answer for `setup`.
    pub fn encoded_len(setup: &PublicSetup) -> u64 {
        wire::COMPACT_HEADER_BYTES as u64 + answer_bytes(answer_ciphertexts(setup))
    }

    /// The encoded answer.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(
            wire::COMPACT_HEADER_BYTES + answer_bytes(self.masks.len() / DEGREE) as usize,
        );
        wire::write_compact_header(&mut out, Kind::YPIR_ANSWER, &self.digest);
        wire::write_packed(
            &mut out,
            self.masks.iter().map(|&x| u64::from(x)),
            MASK_BITS,
        );
        wire::write_packed(
            &mut out,
            self.bodies.iter().map(|&x| u64::from(x)),
            BODY_BITS,
        );
        out
    }

    /// Decodes an answer that must belong to `setup`.
    pub fn from_bytes(bytes: &[u8], setup: &PublicSetup) -> Result<Self, PirError> {
        let ciphertexts = answer_ciphertexts(setup);
        let mut reader = open(bytes, Kind::YPIR_ANSWER, setup, answer_bytes(ciphertexts))?;
        let count = ciphertexts * DEGREE;
        let narrow = |values: Vec<u64>| values.into_iter().map(|x| x as u32).collect();
        let masks = narrow(reader.packed(count, MASK_BITS)?);
        let bodies = narrow(reader.packed(count, BODY_BITS)?);
        reader.finish()?;
        Ok(Self {
            digest: *setup.digest(),
            masks,
            bodies,
        })
    }

    /// Checks that an in-memory answer belongs to `setup`, values included.
    pub(super) fn check(&self, setup: &PublicSetup) -> Result<(), PirError> {
        let count = (answer_ciphertexts(setup) * DEGREE) as u64;
        check(
            Kind::YPIR_ANSWER,
            &self.digest,
            setup,
            [self.masks.len(), self.bodies.len()],
            [count, count],
        )?;
        let fits = self.masks.iter().all(|&x| x >> MASK_BITS == 0)
            && self.bodies.iter().all(|&x| x >> BODY_BITS == 0);
        if !fits {
            return Err(PirError::malformed(
                Kind::YPIR_ANSWER.describe(),
                "a value is wider than its modulus",
            ));
        }
        Ok(())
    }
}
