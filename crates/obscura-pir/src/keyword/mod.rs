//! Keyword PIR: fetch the value stored under a key, or learn that the key is absent, with one
//! query to the LWE engine.
//!
//! The store is a binary fuse filter ([`fuse`]) whose slots are whole rows: each key-value pair
//! becomes the row `check ‖ len ‖ value ‖ zero padding`, cut into plaintext digits, where `check`
//! is the first 128 bits of the key's digest and `len` is the value's length in the fewest bytes
//! that hold the longest one (no bytes at all when every value has the same length). The slots are filled (mod p) so that for every stored key the sum of its 3 or 4
//! slots plus a per-key pseudo-random mask is its row. The database matrix has one slot per
//! column (the one-per-column layout), so a lookup is an LWE query with Δ at the key's slots: the
//! answer decodes to the sum of those columns. A decoded row whose 128-bit check differs from the
//! key's (compared in constant time), or whose length or padding is wrong, means the key is
//! absent: an absent key is accepted with probability about 2^-128, never as a wrong value.
//!
//! Every row byte is a byte the server streams on each answer, so the row carries no more than
//! that: 16 check bytes and, for equal-length values, no length (1,040 bytes per 1 KiB value).
//!
//! The design and its sources are in `../shared/design/batch-and-keyword.md` §3. The rows here
//! are shorter than the note's `digest(32) ‖ len (u32 LE)` header: a 128-bit check meets the
//! 2^-128 false-accept bound, and a length is stored only when it carries information.

pub mod fuse;

use obscura_math::matrix::PlaintextMatrix;
use obscura_math::pack;
use rayon::prelude::*;
use sha2::{Digest as _, Sha256};

use crate::lwe::{
    self, Answer, Geometry, Layout, PublicSetup, Query, QueryState, RecordFormat, SetupOptions,
};
use crate::params::{MatrixKind, ParamSet};
use crate::wire::{self, Kind, Reader};
use crate::{PirError, PirServer};
use fuse::{Arity, FuseShape, MAX_KEYS};

/// Bytes of a key digest; the filter hash and the duplicate check use all of them.
pub const DIGEST_BYTES: usize = 32;

/// Bytes of the digest stored in each row and compared when decoding (128 bits).
pub const CHECK_BYTES: usize = 16;

/// Filter seeds tried before a build gives up (a failure is then astronomically unlikely).
const MAX_ATTEMPTS: usize = 100;

/// The fewest bytes that hold every length up to `max_value`, or none when every value is
/// `max_value` bytes long (the length is then implied).
fn length_bytes(max_value: u64, uniform: bool) -> u8 {
    if uniform {
        0
    } else {
        (u64::BITS - max_value.leading_zeros()).div_ceil(8).max(1) as u8
    }
}

/// The 32-byte digest of a key (SHA-256, domain-separated).
pub fn key_digest(key: &[u8]) -> [u8; DIGEST_BYTES] {
    let mut hash = Sha256::new();
    hash.update(b"obscura/keyword/key/v1");
    hash.update(key);
    hash.finalize().into()
}

/// MurmurHash3's 64-bit finalizer: a bijective mixer.
fn mix64(mut x: u64) -> u64 {
    x ^= x >> 33;
    x = x.wrapping_mul(0xff51_afd7_ed55_8ccd);
    x ^= x >> 33;
    x = x.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    x ^ (x >> 33)
}

fn words(bytes: &[u8; 32]) -> [u64; 4] {
    std::array::from_fn(|i| {
        u64::from_le_bytes(bytes[8 * i..8 * i + 8].try_into().expect("8 bytes"))
    })
}

/// The 64-bit filter hash of a key digest under a (public) filter seed: a fold of MurmurHash3's
/// finalizer over the digest and seed words.
pub fn filter_hash(seed: &[u8; 32], digest: &[u8; DIGEST_BYTES]) -> u64 {
    words(digest)
        .into_iter()
        .zip(words(seed))
        .fold(0u64, |acc, (w, s)| {
            mix64(acc.wrapping_add(mix64(w.wrapping_add(s))))
        })
}

/// Digit `j` of the per-key mask.
fn mask_digit(hash: u64, j: usize, log_p: u8) -> u8 {
    (mix64(hash.wrapping_add(j as u64)) & ((1u64 << log_p) - 1)) as u8
}

/// The index of a key whose digest another key shares, if any. Digests are sorted by their
/// first eight bytes (in parallel), whole digests deciding only between equal prefixes, so equal
/// digests end up side by side.
fn repeated_digest(digests: &[[u8; DIGEST_BYTES]]) -> Option<usize> {
    let prefix = |d: &[u8; DIGEST_BYTES]| u64::from_le_bytes(d[..8].try_into().expect("8 bytes"));
    let mut sorted: Vec<(u64, usize)> = digests
        .par_iter()
        .enumerate()
        .map(|(i, d)| (prefix(d), i))
        .collect();
    sorted.par_sort_unstable_by(|a, b| a.0.cmp(&b.0).then_with(|| digests[a.1].cmp(&digests[b.1])));
    sorted
        .windows(2)
        .find(|w| w[0].0 == w[1].0 && digests[w[0].1] == digests[w[1].1])
        .map(|w| w[0].1)
}

/// The widest digits worth encoding a store of `keys` pairs with: the largest `log_p` (above
/// `planned`, which fits any data) at which the expected row norm passes the correctness
/// bound. Each key fills one slot with a digit that its mask makes uniform, the other slots stay
/// zero, so a row's squared norm is about `keys·(p² + 2)/12` (the mean square of a uniform
/// centered digit). Trying this width first spares encodings that would fail; the measured
/// norm still decides.
fn likely_log_p(set: ParamSet, keys: u64, planned: u8) -> u8 {
    (planned + 1..=crate::params::MAX_LOG_P)
        .rev()
        .find(|&log_p| {
            let p = 1u64 << log_p;
            set.correct_for_row_norm(log_p, keys.saturating_mul(p * p + 2) / 12)
        })
        .unwrap_or(planned)
}

/// A filter seed, the keys' hashes under it, and their peeling order.
struct Peeled {
    seed: [u8; 32],
    hashes: Vec<u64>,
    order: Vec<(u32, u8)>,
}

/// Peels with each attempt's hashes in turn until one works (a failure is retried with the
/// next seed; seeds are public, so retries leak nothing).
fn peel_with_retries(
    shape: &FuseShape,
    attempts: impl Iterator<Item = Result<([u8; 32], Vec<u64>), PirError>>,
) -> Result<Peeled, PirError> {
    for attempt in attempts {
        let (seed, hashes) = attempt?;
        if let Some(order) = shape.peel(&hashes) {
            return Ok(Peeled {
                seed,
                hashes,
                order,
            });
        }
    }
    Err(PirError::InvalidParameters(format!(
        "the filter did not peel in {MAX_ATTEMPTS} attempts"
    )))
}

/// Choices made when building a keyword database.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct KeywordOptions {
    /// Slots per key; `None` picks 3 below 10^5 keys and 4 from there (fewer slots).
    pub arity: Option<Arity>,
    /// The LWE parameter set.
    pub params: ParamSet,
    /// How the public matrix is expanded; `None` picks the set's default.
    pub matrix: Option<MatrixKind>,
}

/// What a client needs besides the LWE setup: the filter and the row shape.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeywordSetup {
    lwe: PublicSetup,
    shape: FuseShape,
    seed: [u8; 32],
    keys: u64,
    max_value: u64,
    length_bytes: u8,
}

impl KeywordSetup {
    /// The LWE engine's public setup (queries and answers are the engine's).
    pub fn lwe(&self) -> &PublicSetup {
        &self.lwe
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

    fn shape(&self) -> FuseShape {
        self.shape
    }

    /// Bytes of a row before the value: the check and the length.
    fn row_header(&self) -> usize {
        CHECK_BYTES + usize::from(self.length_bytes)
    }

    /// The encoded setup: the filter parameters, then the LWE setup.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::new();
        wire::write_header(&mut out, Kind::KeywordSetup, self.lwe.digest());
        out.push(self.arity().get() as u8);
        out.extend_from_slice(&self.seed);
        out.extend_from_slice(&self.keys.to_le_bytes());
        out.extend_from_slice(&self.max_value.to_le_bytes());
        out.push(self.length_bytes);
        out.extend_from_slice(&self.lwe.to_bytes());
        out
    }

    /// Decodes and checks a setup: the filter's shape must match the LWE geometry.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, PirError> {
        let (mut reader, digest) = Reader::open(bytes, Kind::KeywordSetup)?;
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
        let lwe = PublicSetup::from_bytes(reader.rest())?;
        if lwe.digest() != &digest {
            return Err(PirError::malformed(
                "keyword setup",
                "the digest does not match the LWE setup",
            ));
        }
        let setup = Self {
            lwe,
            shape,
            seed,
            keys,
            max_value,
            length_bytes,
        };
        let g = setup.lwe.geometry();
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

/// The pairs of a keyword database and their peeled filter, ready to be encoded.
struct Filled<'a, K, V> {
    pairs: &'a [(K, V)],
    digests: &'a [[u8; DIGEST_BYTES]],
    hashes: &'a [u64],
    order: &'a [(u32, u8)],
    shape: &'a FuseShape,
    length_bytes: u8,
    row_bytes: usize,
}

impl<K: AsRef<[u8]>, V: AsRef<[u8]>> Filled<'_, K, V> {
    /// The database matrix of `geometry` (one slot per column), filled in reverse
    /// peeling order so that each key's slots and mask sum to its row.
    fn matrix(&self, geometry: &Geometry) -> PlaintextMatrix {
        let log_p = geometry.log_p();
        let width = u32::from(log_p);
        let p = 1u16 << width;
        let (rows, size) = (geometry.rows() as usize, geometry.cols() as usize);
        let arity = self.shape.arity().get();
        let header = CHECK_BYTES + usize::from(self.length_bytes);
        // Slot vectors, one per column.
        let mut slots = vec![0u8; size * rows];
        let mut row = vec![0u8; self.row_bytes];
        for &(key, t) in self.order.iter().rev() {
            let (key, t) = (key as usize, usize::from(t));
            let value = self.pairs[key].1.as_ref();
            row.fill(0);
            row[..CHECK_BYTES].copy_from_slice(&self.digests[key][..CHECK_BYTES]);
            row[CHECK_BYTES..header].copy_from_slice(
                &(value.len() as u64).to_le_bytes()[..usize::from(self.length_bytes)],
            );
            row[header..header + value.len()].copy_from_slice(value);
            let digits = pack::pack(&row, width);
            let positions = self.shape.positions(self.hashes[key]);
            let target = positions[t] as usize;
            for (j, &digit) in digits.iter().enumerate().take(rows) {
                let others = (0..arity).filter(|&u| u != t).fold(0u16, |sum, u| {
                    sum + u16::from(slots[positions[u] as usize * rows + j])
                });
                let mask = u16::from(mask_digit(self.hashes[key], j, log_p));
                // others + mask ≤ 4(p − 1) < 4p, so adding 4p keeps the difference positive.
                let wanted = u16::from(digit) + 4 * p - others - mask;
                slots[target * rows + j] = (wanted % p) as u8;
            }
        }
        // The matrix of centered digits.
        PlaintextMatrix::from_fn(rows, size, |r, first, digits| {
            for (c, entry) in digits.iter_mut().enumerate() {
                *entry = lwe::centered(slots[(first + c) * rows + r], width);
            }
        })
    }
}

/// The server side of a keyword database.
pub struct KeywordServer {
    lwe: lwe::Server,
    setup: KeywordSetup,
}

impl KeywordServer {
    /// Builds the database of `pairs` (keys of any length, values of any length, empty ones
    /// included). Duplicate keys are refused, naming the key.
    pub fn setup<K: AsRef<[u8]> + Sync, V: AsRef<[u8]> + Sync>(
        pairs: &[(K, V)],
        options: KeywordOptions,
        progress: &(dyn Fn(u64, u64) + Sync),
    ) -> Result<Self, PirError> {
        let invalid = |reason: String| Err(PirError::InvalidParameters(reason));
        if pairs.is_empty() {
            return invalid("the store has no keys".into());
        }
        let digests: Vec<[u8; DIGEST_BYTES]> = pairs
            .par_iter()
            .map(|(k, _)| key_digest(k.as_ref()))
            .collect();
        if let Some(repeated) = repeated_digest(&digests) {
            let key = String::from_utf8_lossy(pairs[repeated].0.as_ref());
            return invalid(format!("the key {key:?} appears more than once"));
        }
        let keys = pairs.len() as u64;
        let arity = options.arity.unwrap_or(if keys < 100_000 {
            Arity::Three
        } else {
            Arity::Four
        });
        let shape = FuseShape::new(keys, arity).ok_or_else(|| {
            PirError::InvalidParameters(format!(
                "{keys} keys is more than the {MAX_KEYS} supported"
            ))
        })?;
        let lengths = || pairs.iter().map(|(_, v)| v.as_ref().len());
        let max_value = lengths().max().unwrap_or(0);
        let length_bytes = length_bytes(max_value as u64, lengths().all(|l| l == max_value));
        let row_bytes = (CHECK_BYTES + usize::from(length_bytes) + max_value) as u64;
        let attempts = std::iter::repeat_with(|| {
            let mut seed = [0u8; 32];
            getrandom::getrandom(&mut seed).map_err(obscura_math::sample::RngError)?;
            let hashes: Vec<u64> = digests.par_iter().map(|d| filter_hash(&seed, d)).collect();
            Ok((seed, hashes))
        });
        let Peeled {
            seed,
            hashes,
            order,
        } = peel_with_retries(&shape, attempts.take(MAX_ATTEMPTS))?;
        let slots = shape.size();
        let planned = Geometry::plan(
            slots * row_bytes,
            row_bytes,
            Layout::OnePerColumn,
            options.params,
        )?;
        let filled = Filled {
            pairs,
            digests: &digests,
            hashes: &hashes,
            order: &order,
            shape: &shape,
            length_bytes,
            row_bytes: row_bytes as usize,
        };
        let largest = likely_log_p(options.params, keys, planned.log_p());
        let encoded = lwe::encode_with_largest_p(options.params, planned, largest, |log_p| {
            let geometry =
                Geometry::with_log_p(slots * row_bytes, row_bytes, Layout::OnePerColumn, log_p)?;
            let database = filled.matrix(&geometry);
            Ok((geometry, database))
        })?;
        let lwe_options = SetupOptions {
            params: options.params,
            layout: Layout::OnePerColumn,
            matrix: options.matrix,
        };
        let lwe = lwe::Server::with_database(encoded, RecordFormat::Raw, lwe_options, progress)?;
        let setup = KeywordSetup {
            lwe: lwe.public_setup().clone(),
            shape,
            seed,
            keys,
            max_value: max_value as u64,
            length_bytes,
        };
        Ok(Self { lwe, setup })
    }

    /// A server from a stored engine and keyword setup; checks that they belong together.
    pub fn from_parts(lwe: lwe::Server, setup: KeywordSetup) -> Result<Self, PirError> {
        if lwe.public_setup() != setup.lwe() {
            return Err(PirError::SetupMismatch {
                what: "keyword setup",
            });
        }
        Ok(Self { lwe, setup })
    }

    /// The public setup to hand to clients.
    pub fn public_setup(&self) -> &KeywordSetup {
        &self.setup
    }

    /// The LWE engine that answers the queries.
    pub fn engine(&self) -> &lwe::Server {
        &self.lwe
    }
}

impl PirServer for KeywordServer {
    type Query = Query;
    type Answer = Answer;

    fn answer(&self, query: &Query) -> Result<Answer, PirError> {
        self.lwe.answer(query)
    }

    fn answer_batch(&self, queries: &[Query]) -> Result<Vec<Answer>, PirError> {
        self.lwe.answer_batch(queries)
    }
}

/// The client of a keyword database.
pub struct KeywordClient {
    lwe: lwe::Client,
    setup: KeywordSetup,
}

/// The secret state of one lookup.
pub struct LookupState {
    lwe: QueryState,
    digest: [u8; DIGEST_BYTES],
    hash: u64,
}

impl KeywordClient {
    /// A client for the database described by `setup`.
    pub fn new(setup: KeywordSetup) -> Self {
        Self {
            lwe: lwe::Client::new(setup.lwe.clone()),
            setup,
        }
    }

    /// The public setup this client queries.
    pub fn setup(&self) -> &KeywordSetup {
        &self.setup
    }

    /// Prepares `count` queries ahead of time (see [`lwe::Client::preprocess`]).
    pub fn preprocess(&mut self, count: usize) -> Result<(), PirError> {
        self.lwe.preprocess(count)
    }

    /// A query for `key`: Δ at its filter slots. The server cannot tell keys apart.
    pub fn query(&mut self, key: &[u8]) -> Result<(Query, LookupState), PirError> {
        let digest = key_digest(key);
        let hash = filter_hash(&self.setup.seed, &digest);
        let positions = self.setup.shape().positions(hash);
        let (query, lwe) = self
            .lwe
            .query_columns(&positions[..self.setup.arity().get()])?;
        Ok((query, LookupState { lwe, digest, hash }))
    }

    /// The value stored under the key, or `None` when the key is absent.
    pub fn decode(&self, state: LookupState, answer: &Answer) -> Result<Option<Vec<u8>>, PirError> {
        let log_p = self.setup.lwe.params().log_p;
        let p_mask = (1u16 << log_p) - 1;
        let mut digits = self.lwe.decode_digits(state.lwe, answer)?;
        for (j, digit) in digits.iter_mut().enumerate() {
            *digit =
                ((u16::from(*digit) + u16::from(mask_digit(state.hash, j, log_p))) & p_mask) as u8;
        }
        let (header, max_value) = (self.setup.row_header(), self.setup.max_value);
        let row = pack::unpack(&digits, u32::from(log_p), header + max_value as usize);
        // Constant time in the check: OR of all byte differences.
        let difference = row[..CHECK_BYTES]
            .iter()
            .zip(&state.digest)
            .fold(0u8, |acc, (a, b)| acc | (a ^ b));
        let len = if header == CHECK_BYTES {
            max_value
        } else {
            let mut len = [0u8; 8];
            len[..header - CHECK_BYTES].copy_from_slice(&row[CHECK_BYTES..header]);
            u64::from_le_bytes(len)
        };
        if std::hint::black_box(difference) != 0 || len > max_value {
            return Ok(None);
        }
        let (value, padding) = row[header..].split_at(len as usize);
        if padding.iter().any(|&b| b != 0) {
            return Ok(None);
        }
        Ok(Some(value.to_vec()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failed_peels_are_retried_with_the_next_seed() {
        let shape = FuseShape::new(3, Arity::Three).unwrap();
        let attempts = vec![
            Ok(([1u8; 32], vec![5u64, 5, 9])), // two equal hashes: cannot peel
            Ok(([2u8; 32], vec![5u64, 6, 9])),
        ];
        let peeled = peel_with_retries(&shape, attempts.into_iter()).unwrap();
        assert_eq!(
            (peeled.seed, peeled.hashes, peeled.order.len()),
            ([2u8; 32], vec![5, 6, 9], 3)
        );
        let failing = vec![Ok(([1u8; 32], vec![5u64, 5, 9]))];
        assert!(peel_with_retries(&shape, failing.into_iter()).is_err());
    }
}
