//! The server: builds a keyword database's tables from their pairs and answers a query's part
//! for each table with its index scheme.

use rayon::prelude::*;

use super::fill::{self, fill_block_rows, Filled, MAX_FILL_BLOCK_ROWS};
use super::fuse::FuseShape;
use super::index::KeywordIndex;
use super::plan::{likely_log_p, StorePlan};
use super::row::{filter_hash, key_digest, row_check, CHECK_BYTES, DIGEST_BYTES};
use super::setup::{Setup, Table, SETUP_FIELD_BYTES};
use super::{Keyword, KeywordOptions};
use crate::batch::shards::Shards;
use crate::lwe::{Footprint, Geometry, Layout};
use crate::scheme::{AnswerOf, Progress, QueryOf, SetupMessage};
use crate::{PirError, PirServer};
use obscura_math::expand::{MatrixSeed, SEED_BYTES};
use obscura_math::layout::GROUP_ROWS;
use obscura_math::matrix::PlaintextMatrix;
use obscura_math::memory::prefetch;
use sha2::{Digest as _, Sha256};

/// Filter seeds tried before a build gives up (a failure is then astronomically unlikely).
const MAX_ATTEMPTS: usize = 100;

/// The index of a key whose digest another key shares, if any. Digests are sorted by their
/// first eight bytes (in parallel), whole digests deciding only between equal prefixes, so equal
/// digests end up side by side.
pub(super) fn repeated_digest(digests: &[[u8; DIGEST_BYTES]]) -> Option<usize> {
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

/// A table's server: the index scheme's server of its rows, and its keys' digests (what a
/// new version or a compaction of the table needs besides the rows).
#[derive(Clone)]
pub(super) struct Stored<I: KeywordIndex> {
    pub(super) index: I::Server,
    pub(super) digests: PlaintextMatrix,
}

/// The server side of a keyword database, on index scheme `I`: the main table and, between
/// compactions, the delta table of the keys changed since.
#[derive(Clone)]
pub struct Server<I: KeywordIndex> {
    pub(super) main: Stored<I>,
    pub(super) delta: Option<Stored<I>>,
    pub(super) setup: Setup<I>,
}

/// Where a table's public seeds (its filter's and its public matrix's) come from.
#[derive(Clone, Copy)]
pub(super) enum Seeds {
    /// Fresh from the OS CSPRNG: a build.
    Fresh,
    /// Expanded from one 32-byte value ([`derived_seed`]), so that the table is the same each
    /// time it is built of the same keys: a version, which loading a database file replays.
    From([u8; 32]),
}

/// The public seed `Seeds::From(seed)` gives for `what` (`filter` attempt `attempt`, or
/// `matrix`): SHA-256 of a domain, `seed`, `what` and `attempt`.
fn derived_seed(seed: &[u8; 32], what: &[u8], attempt: u64) -> [u8; 32] {
    let mut hash = Sha256::new();
    hash.update(b"obscura/keyword/table-seeds/v1");
    hash.update(seed);
    hash.update(what);
    hash.update(attempt.to_le_bytes());
    hash.finalize().into()
}

/// Builds one table of the rows of `digests[i]` and `values[i]` (digests distinct), its public
/// seeds from `seeds`.
///
/// `progress(done, total)` follows the two long steps in turn, each counting from zero up to
/// its own total: filling the slots (keys) and then the hint product (columns).
pub(super) fn build_table<I: KeywordIndex, V: AsRef<[u8]> + Sync>(
    digests: &[[u8; DIGEST_BYTES]],
    values: &[V],
    options: KeywordOptions,
    seeds: Seeds,
    progress: &(dyn Fn(u64, u64) + Sync),
) -> Result<(Table<I>, Stored<I>), PirError> {
    let checks: Vec<[u8; CHECK_BYTES]> = values
        .par_iter()
        .zip(digests)
        .map(|(value, digest)| row_check(digest, value.as_ref()))
        .collect();
    let keys = digests.len() as u64;
    let lengths = || values.iter().map(|v| v.as_ref().len());
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
    let attempts = (0u64..).map(|attempt| {
        let seed = match seeds {
            Seeds::Fresh => {
                let mut seed = [0u8; 32];
                obscura_math::sample::fill_random(&mut seed)?;
                seed
            }
            Seeds::From(from) => derived_seed(&from, b"filter", attempt),
        };
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
        values,
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
    let matrix_seed = match seeds {
        Seeds::Fresh => MatrixSeed::random()?,
        Seeds::From(from) => {
            let bytes = derived_seed(&from, b"matrix", 0);
            MatrixSeed(bytes[..SEED_BYTES].try_into().expect("a seed's bytes"))
        }
    };
    let index = I::build_slots(planned, largest, &encode, &options, matrix_seed, progress)?;
    let table = Table {
        index: index.public_setup().clone(),
        shape,
        seed,
        keys,
        max_value: max_value as u64,
        length_bytes,
    };
    let digests = digest_matrix(digests);
    Ok((table, Stored { index, digests }))
}

/// Key digests as the matrix a database file stores them in: one digest per column, in
/// increasing order (so that a key is found by a binary search).
pub(super) fn digest_matrix(digests: &[[u8; DIGEST_BYTES]]) -> PlaintextMatrix {
    let mut sorted = digests.to_vec();
    sorted.par_sort_unstable();
    digest_columns(&sorted)
}

/// `digests` as the columns of a matrix, in their order.
fn digest_columns(digests: &[[u8; DIGEST_BYTES]]) -> PlaintextMatrix {
    PlaintextMatrix::from_fn(DIGEST_BYTES, digests.len(), |r, c, out| {
        for (byte, digest) in out.iter_mut().zip(&digests[c..]) {
            *byte = digest[r];
        }
    })
}

/// Bytes of slot matrix a table's rows are read back through at once, column by column (see
/// [`Stored::values`]): at most [`MAX_FILL_BLOCK_ROWS`] rows, as the fill writes them, so that
/// a key's slots are read as few times.
const READ_BAND_BYTES: usize = 256 << 20;

/// How many keys ahead the read-back starts loading a key's slots.
const PREFETCH_KEYS: usize = 16;

/// Keys per task of the read-back.
const READ_TASK_KEYS: usize = 1 << 12;

impl<I: KeywordIndex> Stored<I> {
    /// The digests of the table's keys, in increasing order.
    pub(super) fn digests(&self) -> Vec<[u8; DIGEST_BYTES]> {
        let keys = self.digests.cols();
        let mut bytes = vec![0u8; DIGEST_BYTES * keys];
        self.digests
            .copy_block(0..DIGEST_BYTES, 0..keys, &mut bytes);
        (0..keys)
            .map(|c| std::array::from_fn(|r| bytes[r * keys + c]))
            .collect()
    }

    /// The value `table` holds for each key of `digests`, read from the rows as a client
    /// decodes them; `None` for a key the table does not hold.
    ///
    /// The rows are read in bands of rows, each copied column by column once, every key
    /// summing its slots' stretch of the band: a key costs `arity` short runs per band instead
    /// of a cache line per digit.
    pub(super) fn values(
        &self,
        table: &Table<I>,
        digests: &[[u8; DIGEST_BYTES]],
    ) -> Vec<Option<Vec<u8>>> {
        self.values_in_bands(table, digests, READ_BAND_BYTES)
    }

    /// [`Stored::values`] with bands of about `band_bytes` of the slot matrix.
    fn values_in_bands(
        &self,
        table: &Table<I>,
        digests: &[[u8; DIGEST_BYTES]],
        band_bytes: usize,
    ) -> Vec<Option<Vec<u8>>> {
        let matrix = I::slot_matrix(&self.index);
        let (rows, cols, arity) = (matrix.rows(), matrix.cols(), table.arity().get());
        let hashes: Vec<u64> = digests
            .par_iter()
            .map(|d| filter_hash(&table.seed, d))
            .collect();
        let slots: Vec<[u64; 4]> = hashes
            .par_iter()
            .map(|&h| table.shape().positions(h))
            .collect();
        let band = (band_bytes / cols.max(1) / GROUP_ROWS * GROUP_ROWS)
            .clamp(GROUP_ROWS, MAX_FILL_BLOCK_ROWS);
        let mut sums = vec![0u8; digests.len() * rows];
        let mut columns = vec![0u8; band.min(rows) * cols];
        for start in (0..rows).step_by(band) {
            let len = band.min(rows - start);
            let columns = &mut columns[..len * cols];
            matrix.copy_columns(start..start + len, columns);
            let columns = &*columns;
            let column = |slot: u64| &columns[slot as usize * len..][..len];
            sums.par_chunks_mut(rows * READ_TASK_KEYS)
                .zip(slots.par_chunks(READ_TASK_KEYS))
                .for_each(|(sums, slots)| {
                    for (i, (sum, key)) in sums.chunks_mut(rows).zip(slots).enumerate() {
                        // Slots lie anywhere in the band: the slots of the key PREFETCH_KEYS
                        // ahead start loading.
                        if let Some(ahead) = slots.get(i + PREFETCH_KEYS) {
                            for &slot in &ahead[..arity] {
                                prefetch(column(slot));
                            }
                        }
                        // The band's stretch of the sum is written before it is read: a
                        // page of fresh zeros read first would be copied on its first write.
                        let sum = &mut sum[start..start + len];
                        sum.copy_from_slice(column(key[0]));
                        // Slots hold centered digits; p divides 256, so wrapping byte sums
                        // add them mod p.
                        for &slot in &key[1..arity] {
                            for (s, &digit) in sum.iter_mut().zip(column(slot)) {
                                *s = s.wrapping_add(digit);
                            }
                        }
                    }
                });
        }
        sums.par_chunks_mut(rows)
            .zip(digests)
            .zip(&hashes)
            .map(|((sum, digest), &hash)| table.read_row(sum, digest, hash))
            .collect()
    }
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
        if pairs.is_empty() {
            return Err(PirError::InvalidParameters("the store has no keys".into()));
        }
        let digests: Vec<[u8; DIGEST_BYTES]> = pairs
            .par_iter()
            .map(|(k, _)| key_digest(k.as_ref()))
            .collect();
        if let Some(repeated) = repeated_digest(&digests) {
            let key = String::from_utf8_lossy(pairs[repeated].0.as_ref());
            return Err(PirError::InvalidParameters(format!(
                "the key {key:?} appears more than once"
            )));
        }
        let values: Vec<&[u8]> = pairs.iter().map(|(_, v)| v.as_ref()).collect();
        let (table, main) = build_table(&digests, &values, options, Seeds::Fresh, progress)?;
        let keys = table.keys;
        Ok(Self {
            main,
            delta: None,
            setup: Setup::new(table, None, keys, 0),
        })
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
        // The keys' digests are kept, as a matrix of the database file.
        let digests = Footprint::of(keys.saturating_mul(DIGEST_BYTES as u64), 0, 0, 0);
        Ok(Footprint::side_by_side([engine, digests])
            .holding(keys.saturating_mul(per_key as u64))
            .working(sort.max(peel).max(fill::working_bytes(keys)))
            .encoded_as(lwe_setup.saturating_add(SETUP_FIELD_BYTES), lwe_setup))
    }

    /// The public setup to hand to clients.
    pub fn public_setup(&self) -> &Setup<I> {
        &self.setup
    }

    /// The index scheme's server of the main table.
    pub fn engine(&self) -> &I::Server {
        &self.main.index
    }

    /// The tables' servers, in the setup's order.
    fn tables(&self) -> impl Iterator<Item = &Stored<I>> {
        std::iter::once(&self.main).chain(&self.delta)
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

    fn answer(&self, query: &QueryOf<Keyword<I>>) -> Result<AnswerOf<Keyword<I>>, PirError> {
        check_parts(query.0.len(), &self.setup, "keyword query")?;
        self.tables()
            .zip(&query.0)
            .map(|(table, part)| table.index.answer(part))
            .collect::<Result<_, _>>()
            .map(Shards)
    }

    fn answer_batch(
        &self,
        queries: &[QueryOf<Keyword<I>>],
    ) -> Result<Vec<AnswerOf<Keyword<I>>>, PirError> {
        if let [query] = queries {
            return Ok(vec![self.answer(query)?]);
        }
        for query in queries {
            check_parts(query.0.len(), &self.setup, "keyword query")?;
        }
        let mut answers: Vec<Shards<_>> = queries.iter().map(|_| Shards(Vec::new())).collect();
        for (t, table) in self.tables().enumerate() {
            let parts: Vec<_> = queries.iter().map(|q| q.0[t].clone()).collect();
            for (answer, part) in answers.iter_mut().zip(table.index.answer_batch(&parts)?) {
                answer.0.push(part);
            }
        }
        Ok(answers)
    }

    fn matrices(&self) -> Vec<&PlaintextMatrix> {
        self.tables()
            .flat_map(|table| {
                let mut matrices = table.index.matrices();
                matrices.push(&table.digests);
                matrices
            })
            .collect()
    }

    fn from_parts(setup: Setup<I>, matrices: Vec<PlaintextMatrix>) -> Result<Self, PirError> {
        let mut matrices = matrices.into_iter();
        let mut stored = setup.tables().map(|table| {
            let count = table.index.matrix_shapes().len();
            let index = I::Server::from_parts(
                table.index.clone(),
                matrices.by_ref().take(count).collect(),
            )?;
            let digests = matrices.next().ok_or(PirError::SetupMismatch {
                what: "keyword setup",
            })?;
            if index.public_setup().digest() != table.index.digest()
                || (digests.rows(), digests.cols() as u64) != (DIGEST_BYTES, table.keys)
            {
                return Err(PirError::SetupMismatch {
                    what: "keyword setup",
                });
            }
            let stored = Stored { index, digests };
            // Keys are found by binary search: the digests must be distinct and in order.
            if !stored.digests().windows(2).all(|pair| pair[0] < pair[1]) {
                return Err(PirError::malformed(
                    "keyword database",
                    "its key digests are not in increasing order",
                ));
            }
            Ok(stored)
        });
        let main = stored.next().expect("a main table")?;
        let delta = stored.next().transpose()?;
        drop(stored);
        if matrices.next().is_some() {
            return Err(PirError::SetupMismatch {
                what: "keyword setup",
            });
        }
        Ok(Self { main, delta, setup })
    }

    fn update(&mut self, changes: &[crate::Change]) -> Result<Option<Vec<u8>>, PirError> {
        super::delta::update(self, changes)
    }
}

/// A request or reply of `parts` parts (a `what`) for `setup`: one per table, or it was made
/// for another version (a version adds or folds the delta table).
pub(super) fn check_parts<I: KeywordIndex>(
    parts: usize,
    setup: &Setup<I>,
    what: &'static str,
) -> Result<(), PirError> {
    if parts == setup.tables().count() {
        Ok(())
    } else {
        Err(PirError::SetupMismatch { what })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::keyword::fuse::Arity;
    use crate::lwe::Lwe;

    /// Rows read back in bands of one group, of a few groups and whole give every stored
    /// key's value, and `None` for keys not stored.
    #[test]
    fn rows_read_back_in_any_bands_give_the_values() {
        let pairs: Vec<(Vec<u8>, Vec<u8>)> = (0..200u32)
            .map(|i| (i.to_le_bytes().to_vec(), vec![i as u8; i as usize % 90]))
            .collect();
        let values: Vec<&[u8]> = pairs.iter().map(|(_, v)| v.as_slice()).collect();
        let mut digests: Vec<_> = pairs.iter().map(|(k, _)| key_digest(k)).collect();
        let options = KeywordOptions::default();
        let (table, stored) =
            build_table::<Lwe, _>(&digests, &values, options, Seeds::Fresh, &|_, _| {}).unwrap();
        let cols = stored.index.database().cols();
        digests.push(key_digest(b"not stored"));
        let mut expected: Vec<Option<Vec<u8>>> = values.iter().map(|v| Some(v.to_vec())).collect();
        expected.push(None);
        for band in [1, 3 * GROUP_ROWS, usize::MAX / cols] {
            let read = stored.values_in_bands(&table, &digests, band * cols);
            assert_eq!(read, expected, "bands of {band} rows");
        }
    }

    /// A database whose key digests are out of order (which no build writes) is refused at
    /// load: keys are found in them by binary search.
    #[test]
    fn digests_out_of_order_are_refused() {
        let pairs: Vec<(Vec<u8>, Vec<u8>)> = (0..5u8).map(|i| (vec![i], vec![i; 3])).collect();
        let server = Server::<Lwe>::build(&pairs, KeywordOptions::default(), &|_, _| {}).unwrap();
        let mut matrices: Vec<PlaintextMatrix> = server.matrices().into_iter().cloned().collect();
        let mut digests = server.main.digests();
        let setup = server.public_setup().clone();
        assert!(Server::<Lwe>::from_parts(setup.clone(), matrices.clone()).is_ok());
        digests.reverse();
        matrices[1] = digest_columns(&digests);
        assert!(matches!(
            Server::<Lwe>::from_parts(setup, matrices),
            Err(PirError::Malformed { .. })
        ));
    }

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
