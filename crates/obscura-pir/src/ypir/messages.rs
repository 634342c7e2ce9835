//! YPIR queries and answers, and their binary encodings (compact envelope; lengths fixed by the
//! setup; values modulo `q` bit-packed to 56 bits, the answer's to 28 and 20).

use super::packed::{rounded_bound, KEY_POLYNOMIALS};
use super::params::{key_dropped_bits, BODY_BITS, DEGREE, GADGET_DIGITS, LEVELS, MASK_BITS};
use super::setup::PublicSetup;
use super::shape::Shape;
use crate::wire::{self, Digest, Kind, Reader};
use crate::PirError;

/// Bits of a value modulo the packed layer's `q` on the wire.
const VALUE_BITS: u32 = 56;

/// A query: for YPIR, one first-layer LWE query per digit of a record (each with its own
/// secret); then the packed layer's query vector and the packing keys' bodies (under one fresh
/// secret). Every vector is sent rounded, its low bits left out as the setup says
/// (its shape's `first_dropped` and `packed_dropped`, or `query_dropped`); the keys' as
/// [`key_dropped_bits`] says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Query {
    pub(super) digest: Digest,
    pub(super) first: Vec<u32>,
    pub(super) second: Vec<u64>,
    pub(super) keys: Vec<u64>,
    /// The low bits left out of the first-layer vectors and of the packed layer's vector.
    pub(super) dropped: [u32; 2],
}

/// The low bits a query for `setup` leaves out of its first-layer vectors and of its packed
/// layer's vector.
pub(super) fn dropped_bits(setup: &PublicSetup) -> [u32; 2] {
    match setup.shape() {
        Shape::YpirSp(s) => [0, s.query_dropped()],
        Shape::Ypir(s) => [s.first_dropped(), s.packed_dropped()],
    }
}

/// The wire width of each packing key body's values, polynomial by polynomial.
fn key_widths() -> impl Iterator<Item = u32> {
    (1..=LEVELS)
        .flat_map(|level| (0..GADGET_DIGITS).map(move |j| VALUE_BITS - key_dropped_bits(level, j)))
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
        Shape::YpirSp(s) => [0, s.columns(), keys],
        Shape::Ypir(s) => [s.digits() * s.columns(), s.rows(), keys],
    }
}

/// Ciphertexts of an answer for `setup`.
pub(super) fn answer_ciphertexts(setup: &PublicSetup) -> usize {
    match setup.shape() {
        Shape::YpirSp(s) => s.packing().ciphertexts,
        Shape::Ypir(_) => 1,
    }
}

/// Bytes of the entries of a query of these lengths, with `dropped` bits left out of the
/// vectors' entries.
fn query_bytes([first, second, keys]: [u64; 3], [first_dropped, second_dropped]: [u32; 2]) -> u64 {
    let packed = |count, width| wire::packed_len(count, width).unwrap_or(u64::MAX);
    let key_bits: u64 = key_widths().map(u64::from).sum::<u64>() * keys / (KEY_POLYNOMIALS as u64);
    packed(first, 32 - first_dropped)
        .saturating_add(packed(second, VALUE_BITS - second_dropped))
        .saturating_add(key_bits.div_ceil(8))
}

/// Bytes of the entries of an answer of `ciphertexts` ciphertexts.
fn answer_bytes(ciphertexts: usize) -> u64 {
    (ciphertexts * DEGREE) as u64 * u64::from(MASK_BITS + BODY_BITS) / 8
}

/// `count` values modulo `q` rounded by `dropped` bits, each checked to be one that rounding
/// gives.
fn rounded_values(
    reader: &mut Reader<'_>,
    count: usize,
    dropped: u32,
) -> Result<Vec<u64>, PirError> {
    let values = reader.packed(count, VALUE_BITS - dropped)?;
    let bound = rounded_bound(dropped);
    if values.iter().any(|&v| v > bound) {
        return Err(reader.error("a value is not below the modulus"));
    }
    Ok(values)
}

/// Whether the packing keys' bodies are values rounding gives, polynomial by polynomial.
fn keys_in_range(keys: &[u64]) -> bool {
    keys.chunks(DEGREE).zip(key_widths()).all(|(poly, width)| {
        let bound = rounded_bound(VALUE_BITS - width);
        poly.iter().all(|&v| v <= bound)
    })
}

impl Query {
    /// The digest of the setup this query belongs to.
    pub fn digest(&self) -> &Digest {
        &self.digest
    }

    /// The length of an encoded query for `setup`.
    pub fn encoded_len(setup: &PublicSetup) -> u64 {
        wire::COMPACT_HEADER_BYTES as u64 + query_bytes(query_lengths(setup), dropped_bits(setup))
    }

    /// Bytes of an encoded query's three parts for `setup`: the first-layer vectors, the
    /// packed layer's vector and the packing keys.
    pub fn part_bytes(setup: &PublicSetup) -> [u64; 3] {
        let [first, second, keys] = query_lengths(setup);
        let dropped = dropped_bits(setup);
        [
            query_bytes([first, 0, 0], dropped),
            query_bytes([0, second, 0], dropped),
            query_bytes([0, 0, keys], dropped),
        ]
    }

    /// The encoded query.
    pub fn to_bytes(&self) -> Vec<u8> {
        let lengths = [self.first.len(), self.second.len(), self.keys.len()].map(|l| l as u64);
        let len = query_bytes(lengths, self.dropped) as usize;
        let mut out = Vec::with_capacity(wire::COMPACT_HEADER_BYTES + len);
        wire::write_compact_header(&mut out, Kind::YPIR_QUERY, &self.digest);
        let [first_dropped, second_dropped] = self.dropped;
        let first = self.first.iter().map(|&w| u64::from(w));
        wire::write_packed(&mut out, first, 32 - first_dropped);
        let second = self.second.iter().copied();
        wire::write_packed(&mut out, second, VALUE_BITS - second_dropped);
        // Each key polynomial at its own width, one bit stream for all.
        let mut bits = BitStream::default();
        for (poly, width) in self.keys.chunks(DEGREE).zip(key_widths()) {
            poly.iter().for_each(|&v| bits.push(&mut out, v, width));
        }
        bits.finish(&mut out);
        out
    }

    /// Decodes a query that must belong to `setup`; every value is checked to be one that the
    /// rounding of a value modulo `q` gives.
    pub fn from_bytes(bytes: &[u8], setup: &PublicSetup) -> Result<Self, PirError> {
        let [first, second, keys] = query_lengths(setup);
        let dropped = dropped_bits(setup);
        let entries = query_bytes([first, second, keys], dropped);
        let len = wire::COMPACT_HEADER_BYTES as u64 + entries;
        let mut reader = Reader::open_compact_sized(bytes, Kind::YPIR_QUERY, setup.digest(), len)?;
        let first = reader
            .packed(first as usize, 32 - dropped[0])?
            .into_iter()
            .map(|w| w as u32)
            .collect();
        let second = rounded_values(&mut reader, second as usize, dropped[1])?;
        let key_bytes = reader.take(query_bytes([0, 0, keys], dropped) as usize)?;
        let keys = read_keys(key_bytes).ok_or_else(|| reader.error("malformed packing keys"))?;
        if !keys_in_range(&keys) {
            return Err(reader.error("a packing key value is not below the modulus"));
        }
        reader.finish()?;
        Ok(Self {
            digest: *setup.digest(),
            first,
            second,
            keys,
            dropped,
        })
    }

    /// Checks that an in-memory query belongs to `setup`, values included.
    pub(super) fn check(&self, setup: &PublicSetup) -> Result<(), PirError> {
        let lengths = [self.first.len(), self.second.len(), self.keys.len()];
        wire::check_parts(
            Kind::YPIR_QUERY,
            &self.digest,
            setup.digest(),
            lengths,
            query_lengths(setup),
        )?;
        let dropped = dropped_bits(setup);
        let second_bound = rounded_bound(dropped[1]);
        let fits = self.dropped == dropped
            && self
                .first
                .iter()
                .all(|&w| u64::from(w) >> (32 - dropped[0]) == 0)
            && self.second.iter().all(|&v| v <= second_bound)
            && keys_in_range(&self.keys);
        if !fits {
            return Err(PirError::malformed(
                Kind::YPIR_QUERY.describe(),
                "a value is not below the modulus",
            ));
        }
        Ok(())
    }
}

/// Values of several widths written as one bit stream, least significant bit first.
#[derive(Default)]
struct BitStream {
    buffer: u128,
    held: u32,
}

impl BitStream {
    /// Appends `value` (below `2^width`) and writes out the whole bytes.
    fn push(&mut self, out: &mut Vec<u8>, value: u64, width: u32) {
        self.buffer |= u128::from(value) << self.held;
        self.held += width;
        while self.held >= 8 {
            out.push(self.buffer as u8);
            self.buffer >>= 8;
            self.held -= 8;
        }
    }

    /// Writes the last, partial byte.
    fn finish(self, out: &mut Vec<u8>) {
        if self.held > 0 {
            out.push(self.buffer as u8);
        }
    }
}

/// The packing keys' bodies from exactly their bytes ([`Query::to_bytes`]' layout); `None` if
/// the padding bits are not zero.
fn read_keys(bytes: &[u8]) -> Option<Vec<u64>> {
    let mut keys = Vec::with_capacity(KEY_POLYNOMIALS * DEGREE);
    let (mut buffer, mut held) = (0u128, 0u32);
    let mut input = bytes.iter();
    for width in key_widths() {
        for _ in 0..DEGREE {
            while held < width {
                buffer |= u128::from(*input.next()?) << held;
                held += 8;
            }
            keys.push((buffer & ((1u128 << width) - 1)) as u64);
            buffer >>= width;
            held -= width;
        }
    }
    (buffer == 0 && input.next().is_none()).then_some(keys)
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
        let len = wire::COMPACT_HEADER_BYTES as u64 + answer_bytes(ciphertexts);
        let mut reader = Reader::open_compact_sized(bytes, Kind::YPIR_ANSWER, setup.digest(), len)?;
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
        wire::check_parts(
            Kind::YPIR_ANSWER,
            &self.digest,
            setup.digest(),
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
