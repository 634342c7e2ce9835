//! The server: builds a keyword database from its pairs and answers queries with its index
//! scheme.

use rayon::prelude::*;

use super::fill::{self, fill_block_rows, Filled};
use super::fuse::FuseShape;
use super::index::KeywordIndex;
use super::plan::{likely_log_p, StorePlan};
use super::row::{filter_hash, key_digest, row_check, CHECK_BYTES, DIGEST_BYTES};
use super::setup::{Setup, SETUP_FIELD_BYTES};
use super::{Keyword, KeywordOptions};
use crate::lwe::{Footprint, Geometry, Layout};
use crate::scheme::{AnswerOf, Progress, QueryOf, SetupMessage};
use crate::{PirError, PirServer};
use obscura_math::matrix::PlaintextMatrix;

/// Filter seeds tried before a build gives up (a failure is then astronomically unlikely).
const MAX_ATTEMPTS: usize = 100;

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

/// The server side of a keyword database, on index scheme `I`.
pub struct Server<I: KeywordIndex> {
    index: I::Server,
    setup: Setup<I>,
}

impl<I: KeywordIndex> Server<I> {
    /// Builds the database of `pairs` (keys of any length, values of any length, empty ones
    /// included). Duplicate keys are refused, naming the key.
    ///
    /// `progress(done, total)` follows the two long steps in turn, each counting from zero up to
    /// its own total: filling the slots (keys; the total is the key count) and then the hint
    /// product (columns; the total is the slot count, always larger than the key count).
    pub fn from_pairs<K: AsRef<[u8]> + Sync, V: AsRef<[u8]> + Sync>(
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
            obscura_math::sample::fill_random(&mut seed)?;
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
        let encode = |log_p| {
            let geometry =
                Geometry::with_log_p(slots * row_bytes, row_bytes, Layout::OnePerColumn, log_p)?;
            let database = filled.matrix(
                &geometry,
                fill_block_rows(geometry.rows() as usize, rayon::current_num_threads()),
                progress,
            );
            Ok((geometry, database))
        };
        let index = I::build_slots(planned, largest, &encode, &options, progress)?;
        let setup = Setup {
            index: index.public_setup().clone(),
            shape,
            seed,
            keys,
            max_value: max_value as u64,
            length_bytes,
        };
        Ok(Self { index, setup })
    }

    /// What [`Server::from_pairs`] of `keys` pairs whose longest value has `max_value` bytes
    /// (`uniform`: every value that long) will hold and produce (the pairs themselves not
    /// counted), computed before anything is allocated (see [`Footprint`]).
    pub fn footprint(
        keys: u64,
        max_value: u64,
        uniform: bool,
        options: KeywordOptions,
    ) -> Result<Footprint, PirError> {
        let plan = StorePlan::new(keys, max_value, uniform, &options)?;
        let engine = I::footprint(&plan.planned, &options);
        // Per key: its digest, its filter hash and its place in the peeling order.
        let per_key = DIGEST_BYTES + std::mem::size_of::<u64>() + std::mem::size_of::<(u32, u8)>();
        // Finding repeated keys sorts a prefix and an index per key; peeling holds a count, a
        // key and a position per slot; the fill writes the matrix in place from a step per key.
        let sort = keys.saturating_mul(std::mem::size_of::<(u64, usize)>() as u64);
        let peel = plan.shape.size().saturating_mul(4 + 4 + 1);
        let lwe_setup = engine.setup_bytes();
        Ok(engine
            .holding(keys.saturating_mul(per_key as u64))
            .working(sort.max(peel).max(fill::working_bytes(keys)))
            .encoded_as(lwe_setup.saturating_add(SETUP_FIELD_BYTES), lwe_setup))
    }

    /// The public setup to hand to clients.
    pub fn public_setup(&self) -> &Setup<I> {
        &self.setup
    }

    /// The index scheme's server that answers the queries.
    pub fn engine(&self) -> &I::Server {
        &self.index
    }
}

impl<I: KeywordIndex> PirServer for Server<I> {
    type Scheme = Keyword<I>;
    type Data<'a> = &'a [(Vec<u8>, Vec<u8>)];
    type Options = KeywordOptions;

    fn build(
        pairs: &[(Vec<u8>, Vec<u8>)],
        options: KeywordOptions,
        progress: Progress<'_>,
    ) -> Result<Self, PirError> {
        Self::from_pairs(pairs, options, progress)
    }

    fn public_setup(&self) -> &Setup<I> {
        &self.setup
    }

    fn answer(&self, query: &QueryOf<I>) -> Result<AnswerOf<I>, PirError> {
        self.index.answer(query)
    }

    fn answer_batch(&self, queries: &[QueryOf<I>]) -> Result<Vec<AnswerOf<I>>, PirError> {
        self.index.answer_batch(queries)
    }

    fn matrices(&self) -> Vec<&PlaintextMatrix> {
        self.index.matrices()
    }

    fn from_parts(setup: Setup<I>, matrices: Vec<PlaintextMatrix>) -> Result<Self, PirError> {
        let index = I::Server::from_parts(setup.index.clone(), matrices)?;
        if index.public_setup().digest() != setup.index.digest() {
            return Err(PirError::SetupMismatch {
                what: "keyword setup",
            });
        }
        Ok(Self { index, setup })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::keyword::fuse::Arity;

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
