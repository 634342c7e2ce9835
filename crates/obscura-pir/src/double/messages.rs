//! DoublePIR queries and answers, and their binary encodings (compact envelope; lengths fixed
//! by the setup).

use super::setup::PublicSetup;
use crate::wire::{self, Digest, Kind, Reader, Word};
use crate::PirError;

/// A query: the first layer's `A1·s1 + e1 + Δ1·u_column` (one entry per column of the
/// database), then [`PublicSetup::rows_per_query`] second-layer queries
/// `A2·s2 + e2 + Δ2·u_row` (one entry per row of the database each), with fresh secrets.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Query {
    pub(super) digest: Digest,
    pub(super) first: Vec<u32>,
    pub(super) second: Vec<u32>,
}

/// An answer: `D'·A2` (the digits `D'` of the first layer's answer times the second layer's
/// public matrix, κ x n words, what the client removes with its second-layer secrets), then
/// for each second-layer query the rounded products of the second layer's database and of
/// `D'` with it ([`PublicSetup::second_answer_rows`] entries of 16 bits each).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Answer {
    pub(super) digest: Digest,
    pub(super) hint: Vec<u32>,
    pub(super) values: Vec<u16>,
}

/// Entries of a query's two parts for `setup`.
fn query_lengths(setup: &PublicSetup) -> [u64; 2] {
    let first = setup.first().geometry();
    [first.cols(), setup.rows_per_query() * first.rows()]
}

/// Entries of an answer's two parts for `setup`.
fn answer_lengths(setup: &PublicSetup) -> [u64; 2] {
    let hint = setup.answer_geometry().rows() * setup.second().params().n() as u64;
    [hint, setup.rows_per_query() * setup.second_answer_rows()]
}

/// Bytes of a message of two word vectors of these lengths.
fn encoded_len<A, B>([a, b]: [u64; 2]) -> u64 {
    let words = a * std::mem::size_of::<A>() as u64 + b * std::mem::size_of::<B>() as u64;
    wire::COMPACT_HEADER_BYTES as u64 + words
}

/// The compact envelope, then two word vectors.
fn encode<A: Word, B: Word>(kind: Kind, digest: &Digest, a: &[A], b: &[B]) -> Vec<u8> {
    let len = encoded_len::<A, B>([a.len() as u64, b.len() as u64]);
    let mut out = Vec::with_capacity(len as usize);
    wire::write_compact_header(&mut out, kind, digest);
    a.iter().for_each(|&word| word.put(&mut out));
    b.iter().for_each(|&word| word.put(&mut out));
    out
}

/// Decodes two word vectors of the lengths `setup` fixes, after the compact envelope of `kind`
/// for `setup`; lengths are checked before anything is allocated.
fn decode<A: Word, B: Word>(
    bytes: &[u8],
    kind: Kind,
    setup: &PublicSetup,
    [a, b]: [u64; 2],
) -> Result<(Vec<A>, Vec<B>), PirError> {
    let len = encoded_len::<A, B>([a, b]);
    let mut reader = Reader::open_compact_sized(bytes, kind, setup.digest(), len)?;
    let first = reader.words_raw::<A>(a as usize)?;
    let second = reader.words_raw::<B>(b as usize)?;
    reader.finish()?;
    Ok((first, second))
}

impl Query {
    /// The digest of the setup this query belongs to.
    pub fn digest(&self) -> &Digest {
        &self.digest
    }

    /// The length of an encoded query for `setup`.
    pub fn encoded_len(setup: &PublicSetup) -> u64 {
        encoded_len::<u32, u32>(query_lengths(setup))
    }

    /// The encoded query.
    pub fn to_bytes(&self) -> Vec<u8> {
        encode(Kind::DOUBLE_QUERY, &self.digest, &self.first, &self.second)
    }

    /// Decodes a query that must belong to `setup`.
    pub fn from_bytes(bytes: &[u8], setup: &PublicSetup) -> Result<Self, PirError> {
        let (first, second) = decode(bytes, Kind::DOUBLE_QUERY, setup, query_lengths(setup))?;
        Ok(Self {
            digest: *setup.digest(),
            first,
            second,
        })
    }

    /// Checks that an in-memory query belongs to `setup`.
    pub(super) fn check(&self, setup: &PublicSetup) -> Result<(), PirError> {
        let lengths = [self.first.len(), self.second.len()];
        wire::check_parts(
            Kind::DOUBLE_QUERY,
            &self.digest,
            setup.digest(),
            lengths,
            query_lengths(setup),
        )
    }
}

impl Answer {
    /// The digest of the setup this answer belongs to.
    pub fn digest(&self) -> &Digest {
        &self.digest
    }

    /// The length of an encoded answer for `setup`.
    pub fn encoded_len(setup: &PublicSetup) -> u64 {
        encoded_len::<u32, u16>(answer_lengths(setup))
    }

    /// The encoded answer.
    pub fn to_bytes(&self) -> Vec<u8> {
        encode(Kind::DOUBLE_ANSWER, &self.digest, &self.hint, &self.values)
    }

    /// Decodes an answer that must belong to `setup`.
    pub fn from_bytes(bytes: &[u8], setup: &PublicSetup) -> Result<Self, PirError> {
        let (hint, values) = decode(bytes, Kind::DOUBLE_ANSWER, setup, answer_lengths(setup))?;
        Ok(Self {
            digest: *setup.digest(),
            hint,
            values,
        })
    }

    /// Checks that an in-memory answer belongs to `setup`.
    pub(super) fn check(&self, setup: &PublicSetup) -> Result<(), PirError> {
        let lengths = [self.hint.len(), self.values.len()];
        wire::check_parts(
            Kind::DOUBLE_ANSWER,
            &self.digest,
            setup.digest(),
            lengths,
            answer_lengths(setup),
        )
    }
}
