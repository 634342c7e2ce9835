//! Keyword PIR: fetch the value stored under a key, or learn that the key is absent, with one
//! query to the LWE engine.
//!
//! The store is a binary fuse filter ([`fuse`]) whose slots are whole rows: each key-value pair
//! becomes the row `check ‖ len ‖ value ‖ zero padding`, cut into plaintext digits, where `len`
//! is the value's length in the fewest bytes that hold the longest one (no bytes at all when
//! every value has the same length) and `check` authenticates the whole row: the first 128 bits
//! of SHA-256 over a domain-separation string, the key's digest, the value's length (u64 LE) and
//! the value ([`row_check`]). The slots are filled (mod p) so that for every stored key the sum of
//! its 3 or 4 slots plus a per-key pseudo-random mask is its row. The database matrix has one
//! slot per column (the one-per-column layout), so a lookup is an LWE query with Δ at the key's
//! slots: the answer decodes to the sum of those columns.
//!
//! The client recomputes the check over the key it asked for and the length and value it
//! decoded, and compares it with the row's in constant time. A mismatch, or a wrong length or
//! padding, reads as "absent". So an absent key is accepted with probability about 2^-128, and an
//! answer corrupted on the way (or by the server) makes a present key read as absent, never as a
//! wrong value, except with the same probability.
//!
//! Every row byte is a byte the server streams on each answer, so the row carries no more than
//! that: 16 check bytes and, for equal-length values, no length (1,040 bytes per 1 KiB value).
//!
//! The row header is shorter than a full `digest(32) ‖ len (u32 LE)`: a 128-bit check meets the
//! 2^-128 false-accept bound, and a length is stored only when it carries information.

pub mod fuse;

use std::ops::Range;
use std::sync::Mutex;

use obscura_math::layout::GROUP_ROWS;
use obscura_math::matrix::PlaintextMatrix;
use obscura_math::memory::{prefetch, LargeBuffer};
use obscura_math::pack;
use rayon::prelude::*;
use sha2::{Digest as _, Sha256};

use crate::lwe::{
    self, Answer, Footprint, Geometry, Layout, PublicSetup, Query, QueryState, RecordFormat,
    SetupOptions,
};
use crate::params::{MatrixKind, ParamSet};
use crate::wire::{self, Kind, Reader};
use crate::{PirError, PirServer};
use fuse::{Arity, FuseShape, MAX_KEYS};

/// Bytes of a key digest; the filter hash and the duplicate check use all of them.
pub const DIGEST_BYTES: usize = 32;

/// Bytes of the check stored in each row and compared when decoding (128 bits).
pub const CHECK_BYTES: usize = 16;

/// The domain-separation string the row check's hash starts with.
const ROW_CHECK_DOMAIN: &[u8] = b"obscura/keyword/row/v1";

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

/// Bytes of a row before the value: the check, then a length of `length_bytes` bytes.
fn row_header(length_bytes: u8) -> usize {
    CHECK_BYTES + usize::from(length_bytes)
}

/// The 32-byte digest of a key (SHA-256, domain-separated).
pub fn key_digest(key: &[u8]) -> [u8; DIGEST_BYTES] {
    let mut hash = Sha256::new();
    hash.update(b"obscura/keyword/key/v1");
    hash.update(key);
    hash.finalize().into()
}

/// The check a row stores: the first [`CHECK_BYTES`] of SHA-256 over a domain-separation
/// string, the key's digest, the value's length (u64 LE) and the value. It binds the value to the
/// key, so a decoded row whose value was altered fails the check like a row of another key.
pub fn row_check(digest: &[u8; DIGEST_BYTES], value: &[u8]) -> [u8; CHECK_BYTES] {
    let mut hash = Sha256::new();
    hash.update(ROW_CHECK_DOMAIN);
    hash.update(digest);
    hash.update((value.len() as u64).to_le_bytes());
    hash.update(value);
    hash.finalize()[..CHECK_BYTES]
        .try_into()
        .expect("check bytes")
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
        row_header(self.length_bytes)
    }

    /// The encoded setup: the filter parameters, then the LWE setup.
    pub fn to_bytes(&self) -> Vec<u8> {
        let lwe = self.lwe.to_bytes();
        let mut out = Vec::with_capacity(SETUP_FIELD_BYTES as usize + lwe.len());
        wire::write_header(&mut out, Kind::KeywordSetup, self.lwe.digest());
        out.push(self.arity().get() as u8);
        out.extend_from_slice(&self.seed);
        out.extend_from_slice(&self.keys.to_le_bytes());
        out.extend_from_slice(&self.max_value.to_le_bytes());
        out.push(self.length_bytes);
        out.extend_from_slice(&lwe);
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

/// Bytes of an encoded keyword setup before the LWE setup: a header, the arity, the filter seed,
/// the key count, the longest value and the length width.
const SETUP_FIELD_BYTES: u64 = (wire::HEADER_BYTES + 1 + 32 + 8 + 8 + 1) as u64;

/// The shape of a store, from the key count and the values' lengths alone: the filter, the row
/// and the geometry planned for any data.
struct StorePlan {
    shape: FuseShape,
    length_bytes: u8,
    row_bytes: u64,
    planned: Geometry,
}

impl StorePlan {
    /// The plan for `keys` keys whose longest value has `max_value` bytes (`uniform`: every
    /// value that long); 3 slots per key below 10^5 keys and 4 from there unless `options` say.
    fn new(
        keys: u64,
        max_value: u64,
        uniform: bool,
        options: &KeywordOptions,
    ) -> Result<Self, PirError> {
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
        let length_bytes = length_bytes(max_value, uniform);
        let row_bytes = (row_header(length_bytes) as u64).saturating_add(max_value);
        let data_bytes = shape.size().checked_mul(row_bytes).ok_or_else(|| {
            PirError::InvalidParameters(format!("{keys} rows of {row_bytes} bytes are too many"))
        })?;
        let planned = Geometry::plan(data_bytes, row_bytes, Layout::OnePerColumn, options.params)?;
        Ok(Self {
            shape,
            length_bytes,
            row_bytes,
            planned,
        })
    }
}

/// The pairs of a keyword database and their peeled filter, ready to be encoded.
struct Filled<'a, K, V> {
    pairs: &'a [(K, V)],
    checks: &'a [[u8; CHECK_BYTES]],
    hashes: &'a [u64],
    order: &'a [(u32, u8)],
    shape: &'a FuseShape,
    length_bytes: u8,
    row_bytes: usize,
}

/// The most digit rows per block of the fill (see [`Filled::matrix`]), the number a build uses:
/// each block reads every key's pair again, from anywhere in memory, so fewer and larger blocks
/// cost less (smaller ones measured slower even where they gave each thread more blocks).
const MAX_FILL_BLOCK_ROWS: usize = 64;
const _: () = assert!(MAX_FILL_BLOCK_ROWS.is_multiple_of(GROUP_ROWS));

/// How many keys ahead the fill starts loading a key's slots.
const PREFETCH_KEYS: usize = 16;

/// Keys a fill block goes through between progress reports.
const PROGRESS_KEYS: usize = 1 << 16;

impl<K: AsRef<[u8]> + Sync, V: AsRef<[u8]> + Sync> Filled<'_, K, V> {
    /// The database matrix of `geometry` (one slot per column), filled in reverse
    /// peeling order so that each key's slots and mask sum to its row.
    ///
    /// Digit rows are independent of each other, so they are cut into blocks of `block_rows`
    /// (whole groups of the matrix's storage order, so that a group is read from one block; at
    /// most [`MAX_FILL_BLOCK_ROWS`]), each filled by one task as a slot-major array of its rows.
    ///
    /// `progress(done, total)` counts the keys filled in every block (`total` is the key count).
    fn matrix(
        &self,
        geometry: &Geometry,
        block_rows: usize,
        progress: &(dyn Fn(u64, u64) + Sync),
    ) -> PlaintextMatrix {
        assert!(
            block_rows.is_multiple_of(GROUP_ROWS)
                && (1..=MAX_FILL_BLOCK_ROWS).contains(&block_rows),
            "fill block"
        );
        let width = u32::from(geometry.log_p());
        let (rows, size) = (geometry.rows() as usize, geometry.cols() as usize);
        // Progress counts keys (keys times blocks done, over the blocks), the same total at
        // every digit width; reports are serialized so that they only grow.
        let (keys, blocks_count) = (self.order.len() as u64, rows.div_ceil(block_rows) as u64);
        let filled = Mutex::new(0u64);
        // Large buffers (on huge pages where the system has them): keys write all over them.
        let mut blocks: Vec<LargeBuffer> = (0..rows)
            .step_by(block_rows)
            .map(|first| LargeBuffer::zeroed(size * (rows - first).min(block_rows)))
            .collect();
        blocks.par_iter_mut().enumerate().for_each(|(b, slots)| {
            self.fill_block(b * block_rows, width, slots, &|done_here| {
                let mut done = filled
                    .lock()
                    .unwrap_or_else(|poisoned| poisoned.into_inner());
                *done += done_here;
                progress(*done / blocks_count, keys);
            });
        });
        // The matrix of centered digits.
        PlaintextMatrix::from_group_fn(rows, size, |r, first, width_cols, digits| {
            // A group's rows lie in one block, next to each other in each slot's run.
            let block = &blocks[r / block_rows];
            let (stride, j) = (block.len() / size, r % block_rows);
            let group_rows = digits.len() / width_cols;
            for c in 0..width_cols {
                let run = &block[(first + c) * stride + j..][..group_rows];
                for (i, &digit) in run.iter().enumerate() {
                    digits[i * width_cols + c] = lwe::centered(digit, width);
                }
            }
        })
    }

    /// Fills digit rows `first ..` of every slot (`slots` is slot-major, one run of the block's
    /// rows per slot), key by key in reverse peeling order, telling `filled` how many keys it
    /// has done every [`PROGRESS_KEYS`] keys and at the end.
    fn fill_block(&self, first: usize, width: u32, slots: &mut [u8], filled: &dyn Fn(u64)) {
        let count = slots.len() / self.shape.size() as usize;
        let arity = self.shape.arity().get();
        // p divides 256, so digits are computed with wrapping byte arithmetic, then reduced.
        let reduce = ((1u16 << width) - 1) as u8;
        // The row bytes that hold this block's digits, and the stream's end in those bytes.
        let bytes = first * width as usize / 8
            ..((first + count) * width as usize)
                .div_ceil(8)
                .min(self.row_bytes);
        let limit = 8 * (self.row_bytes - bytes.start) as u64;
        let mut window = vec![0u8; bytes.len()];
        let mut wanted = [0u8; MAX_FILL_BLOCK_ROWS];
        let slot_runs = |key: u32| {
            let positions = self.shape.positions(self.hashes[key as usize]);
            positions.map(|slot| slot as usize * count)
        };
        let header = row_header(self.length_bytes);
        // Keys come in reverse peeling order, so each one's data lie anywhere in memory and
        // its own work is too short to wait for them: the pair and hash of the key
        // 2·PREFETCH_KEYS places ahead start loading, then, PREFETCH_KEYS places ahead, its
        // slots and value bytes.
        let ahead = |i: usize, distance: usize| i.checked_sub(distance).map(|k| self.order[k].0);
        let mut unreported = 0;
        for i in (0..self.order.len()).rev() {
            if let Some(far) = ahead(i, 2 * PREFETCH_KEYS) {
                prefetch(&self.pairs[far as usize]);
                prefetch(&self.hashes[far as usize]);
                prefetch(&self.checks[far as usize]);
            }
            if let Some(near) = ahead(i, PREFETCH_KEYS) {
                for start in &slot_runs(near)[..arity] {
                    prefetch(&slots[*start..*start + count]);
                }
                let value = self.pairs[near as usize].1.as_ref();
                let part = |at: usize| at.saturating_sub(header).min(value.len());
                prefetch(&value[part(bytes.start)..part(bytes.end)]);
            }
            let (key, t) = (self.order[i].0 as usize, usize::from(self.order[i].1));
            self.row_bytes_into(key, bytes.clone(), &mut window);
            let hash = self.hashes[key];
            // What the key's slot must hold: its row's digits minus its mask and its other
            // slots (filled already, or never).
            let wanted = &mut wanted[..count];
            for (j, digit) in wanted.iter_mut().enumerate() {
                let offset = (first + j) as u64 * u64::from(width) - 8 * bytes.start as u64;
                let mask = mask_digit(hash, first + j, width as u8);
                *digit = pack::digit_at(&window, offset, width, limit).wrapping_sub(mask);
            }
            let positions = slot_runs(self.order[i].0);
            for (u, &other) in positions[..arity].iter().enumerate() {
                if u != t {
                    for (digit, &x) in wanted.iter_mut().zip(&slots[other..other + count]) {
                        *digit = digit.wrapping_sub(x);
                    }
                }
            }
            for (slot, &digit) in slots[positions[t]..positions[t] + count]
                .iter_mut()
                .zip(&*wanted)
            {
                *slot = digit & reduce;
            }
            unreported += 1;
            if unreported == PROGRESS_KEYS || i == 0 {
                filled(unreported as u64);
                unreported = 0;
            }
        }
    }

    /// Bytes `range` of the row of pair `key` (check ‖ length ‖ value ‖ zero padding).
    fn row_bytes_into(&self, key: usize, range: Range<usize>, out: &mut [u8]) {
        out.fill(0);
        let value = self.pairs[key].1.as_ref();
        let length = (value.len() as u64).to_le_bytes();
        let header = row_header(self.length_bytes);
        let parts: [(usize, &[u8]); 3] = [
            (0, &self.checks[key]),
            (CHECK_BYTES, &length[..usize::from(self.length_bytes)]),
            (header, value),
        ];
        for (start, part) in parts {
            let (low, high) = (start.max(range.start), (start + part.len()).min(range.end));
            if low < high {
                out[low - range.start..high - range.start]
                    .copy_from_slice(&part[low - start..high - start]);
            }
        }
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
    ///
    /// `progress(done, total)` follows the two long steps in turn, each counting from zero up to
    /// its own total: filling the slots (keys; the total is the key count) and then the hint
    /// product (columns; the total is the slot count, always larger than the key count).
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
        let checks: Vec<[u8; CHECK_BYTES]> = pairs
            .par_iter()
            .zip(&digests)
            .map(|((_, value), digest)| row_check(digest, value.as_ref()))
            .collect();
        let keys = pairs.len() as u64;
        let lengths = || pairs.iter().map(|(_, v)| v.as_ref().len());
        let max_value = lengths().max().unwrap_or(0);
        let StorePlan {
            shape,
            length_bytes,
            row_bytes,
            planned,
        } = StorePlan::new(
            keys,
            max_value as u64,
            lengths().all(|l| l == max_value),
            &options,
        )?;
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
        let filled = Filled {
            pairs,
            checks: &checks,
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
            let database = filled.matrix(&geometry, MAX_FILL_BLOCK_ROWS, progress);
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

    /// What [`KeywordServer::setup`] of `keys` pairs whose longest value has `max_value` bytes
    /// (`uniform`: every value that long) will hold and produce (the pairs themselves not
    /// counted), computed before anything is allocated (see [`Footprint`]).
    pub fn footprint(
        keys: u64,
        max_value: u64,
        uniform: bool,
        options: KeywordOptions,
    ) -> Result<Footprint, PirError> {
        let plan = StorePlan::new(keys, max_value, uniform, &options)?;
        let engine = Footprint::engine(&plan.planned, options.params);
        // Per key: its digest, its filter hash and its place in the peeling order.
        let per_key = DIGEST_BYTES + std::mem::size_of::<u64>() + std::mem::size_of::<(u32, u8)>();
        // Finding repeated keys sorts a prefix and an index per key; peeling holds a count, a
        // key and a position per slot; the fill holds the slots once more, slot-major.
        let sort = keys.saturating_mul(std::mem::size_of::<(u64, usize)>() as u64);
        let peel = plan.shape.size().saturating_mul(4 + 4 + 1);
        let lwe_setup = engine.setup_bytes();
        Ok(engine
            .holding(keys.saturating_mul(per_key as u64))
            .working(sort.max(peel).max(engine.matrix_bytes()))
            .encoded_as(lwe_setup.saturating_add(SETUP_FIELD_BYTES), lwe_setup))
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

    /// The value stored under the key, or `None` when the key is absent. An answer altered on
    /// the way fails the row's check and also gives `None` (or an error), never a wrong value.
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
        let len = if header == CHECK_BYTES {
            max_value
        } else {
            let mut len = [0u8; 8];
            len[..header - CHECK_BYTES].copy_from_slice(&row[CHECK_BYTES..header]);
            u64::from_le_bytes(len)
        };
        // A length past the longest value is checked over the whole value area, then refused.
        let (value, padding) = row[header..].split_at(len.min(max_value) as usize);
        let expected = row_check(&state.digest, value);
        // Constant time in the check: OR of all byte differences.
        let difference = row[..CHECK_BYTES]
            .iter()
            .zip(&expected)
            .fold(0u8, |acc, (a, b)| acc | (a ^ b));
        if std::hint::black_box(difference) != 0
            || len > max_value
            || padding.iter().any(|&b| b != 0)
        {
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

    /// Every key's slots and mask sum to its row's digits in every matrix row, at every digit
    /// width and for both arities, with rows (up to 717 bytes) cut into fill blocks of 4, 12 or
    /// 64 rows (blocks that start inside a byte of the row included).
    #[test]
    fn filled_slots_sum_to_every_row_at_every_width() {
        let pairs: Vec<(Vec<u8>, Vec<u8>)> = (0..300usize)
            .map(|i| {
                let value = (0..i * 7 % 700).map(|j| (i * 31 + j * 7) as u8).collect();
                (i.to_le_bytes().to_vec(), value)
            })
            .collect();
        let digests: Vec<_> = pairs.iter().map(|(k, _)| key_digest(k)).collect();
        let checks: Vec<_> = pairs
            .iter()
            .zip(&digests)
            .map(|((_, v), d)| row_check(d, v))
            .collect();
        let max_value = pairs.iter().map(|(_, v)| v.len()).max().unwrap();
        let length_bytes = length_bytes(max_value as u64, false);
        let row_bytes = row_header(length_bytes) + max_value;
        for arity in [Arity::Three, Arity::Four] {
            let shape = FuseShape::new(pairs.len() as u64, arity).unwrap();
            let (hashes, order) = (0..=u8::MAX)
                .find_map(|s| {
                    let hashes: Vec<u64> =
                        digests.iter().map(|d| filter_hash(&[s; 32], d)).collect();
                    shape.peel(&hashes).map(|order| (hashes, order))
                })
                .unwrap();
            let filled = Filled {
                pairs: &pairs,
                checks: &checks,
                hashes: &hashes,
                order: &order,
                shape: &shape,
                length_bytes,
                row_bytes,
            };
            for log_p in 1..=8u8 {
                let bytes = shape.size() * row_bytes as u64;
                let geometry =
                    Geometry::with_log_p(bytes, row_bytes as u64, Layout::OnePerColumn, log_p)
                        .unwrap();
                let block_rows = [4, 12, 64][usize::from(log_p) % 3];
                let reported = std::sync::Mutex::new((0, 0));
                let matrix = filled.matrix(&geometry, block_rows, &|done, total| {
                    let mut reported = reported.lock().unwrap();
                    *reported = (reported.0.max(done), total);
                });
                let keys = pairs.len() as u64;
                assert_eq!(reported.into_inner().unwrap(), (keys, keys));
                let p = 1i16 << log_p;
                for (key, (_, value)) in pairs.iter().enumerate() {
                    let mut row = checks[key].to_vec();
                    row.extend(&(value.len() as u64).to_le_bytes()[..usize::from(length_bytes)]);
                    row.extend(value);
                    row.resize(row_bytes, 0);
                    let digits = pack::pack(&row, u32::from(log_p));
                    assert_eq!(digits.len(), matrix.rows());
                    let slots = &shape.positions(hashes[key])[..arity.get()];
                    for (j, &digit) in digits.iter().enumerate() {
                        let sum = slots
                            .iter()
                            .map(|&c| i16::from(matrix.get(j, c as usize) as i8))
                            .sum::<i16>()
                            + i16::from(mask_digit(hashes[key], j, log_p));
                        assert_eq!(sum.rem_euclid(p), i16::from(digit), "{arity:?} 2^{log_p}");
                    }
                }
            }
        }
    }
}
