//! The DoublePIR server: sets up both layers and answers a query in one pass over the database
//! and one over the second layer's matrix.

use obscura_math::hint::PreparedProduct;
use obscura_math::kernels;
use obscura_math::matrix::PlaintextMatrix;

use super::messages::{Answer, Query};
use super::scheme::Double;
use super::setup::{
    first_log_failure, first_options, max_rows_per_record, second_geometry, second_log_failure,
    PublicSetup,
};
use crate::lwe::{
    self, encode_database, encode_with_largest_p, switch_modulus, value_slots, EngineOptions,
    Footprint, Geometry, Layout, RecordFormat, RecordShape, Records,
};
use crate::scheme::{IndexServer, Progress};
use crate::wire;
use crate::{Change, PirError, PirServer};

/// The server side of DoublePIR: the database, the second layer (the digits of the first
/// layer's hint, with their setup) and the second layer's public matrix, prepared for the
/// product with each query's digits.
pub struct Server {
    setup: PublicSetup,
    database: PlaintextMatrix,
    /// The second layer's database: the digits of the first layer's hint.
    hint_digits: PlaintextMatrix,
    /// The same matrix transposed and interleaved by quads of first-layer rows
    /// ([`kernels::quad_interleaved`]), kept when the first layer has at most
    /// [`TRANSPOSED_ROWS`] rows.
    hint_rows: Option<Vec<u8>>,
    a2: PreparedProduct,
}

impl Clone for Server {
    /// A copy of the server, its prepared product and transposed copy made again.
    fn clone(&self) -> Self {
        Self::assemble(
            self.setup.clone(),
            self.database.clone(),
            self.hint_digits.clone(),
        )
    }
}

impl Server {
    /// Builds a database of records of `record_bytes` bytes laid end to end in `data` (the last
    /// one may be short): the first layer as the LWE engine sets it up with `options` (a square
    /// layout shaped to balance the query: about √N rows for N records), then the second over
    /// the rows of its hint. `progress(done, total)` follows both hint products on one scale
    /// (the first layer's columns, then the second's work in the same units).
    pub fn from_records(
        data: &[u8],
        record_bytes: u64,
        options: EngineOptions,
        progress: Progress<'_>,
    ) -> Result<Self, PirError> {
        Self::build_slots(data, record_bytes, RecordFormat::Raw, options, progress)
    }

    /// Builds a database of variable-length values (the value at index `i` is `values[i]`,
    /// possibly empty), each stored as its length and bytes in a slot as large as the longest.
    pub fn from_values<V: AsRef<[u8]>>(
        values: &[V],
        options: EngineOptions,
        progress: Progress<'_>,
    ) -> Result<Self, PirError> {
        let (data, slot) = value_slots(values, None)?;
        Self::build_slots(&data, slot, RecordFormat::LengthPrefixed, options, progress)
    }

    /// What [`Server::from_records`] of `data_bytes` bytes of records of `record_bytes` bytes will
    /// hold and produce, computed before anything is allocated: both layers' matrices and hints
    /// at once, the bytes of the first layer's hint that the second layer encodes, and the
    /// second layer's transposed copy where one is kept.
    pub fn footprint(
        data_bytes: u64,
        record_bytes: u64,
        options: EngineOptions,
    ) -> Result<Footprint, PirError> {
        let set = options.params;
        let layout = first_options(data_bytes, record_bytes, options)?.layout;
        let first = Geometry::plan_at(data_bytes, record_bytes, layout, set, first_log_failure)?;
        let second = second_geometry(first.rows(), set, max_rows_per_record(&first))?;
        let hint_bytes = first.rows().saturating_mul(set.n() as u64 * 4);
        // The second layer's transposed copy, for a first layer of few rows (at most 4 MiB).
        let transposed = if first.rows() <= TRANSPOSED_ROWS as u64 {
            second.rows().saturating_mul(second.cols())
        } else {
            0
        };
        Ok(Footprint::side_by_side([
            Footprint::engine(&first, set),
            Footprint::engine(&second, set),
        ])
        .holding(hint_bytes.saturating_add(transposed)))
    }

    /// What [`Server::from_values`] of `count` values, the longest of `longest` bytes, will
    /// hold and produce (the values themselves not counted).
    pub fn values_footprint(
        count: u64,
        longest: u64,
        options: EngineOptions,
    ) -> Result<Footprint, PirError> {
        lwe::values_footprint(count, longest, |data_bytes, slot| {
            Self::footprint(data_bytes, slot, options)
        })
    }

    /// Sets up slots of `record_bytes` bytes in `format`, laid end to end in `data`.
    fn build_slots(
        data: &[u8],
        record_bytes: u64,
        format: RecordFormat,
        options: EngineOptions,
        progress: Progress<'_>,
    ) -> Result<Self, PirError> {
        // The second product's work in the first's units (columns of rows of n words): about
        // the 4n rows of the second layer's matrix.
        let second_units = options.params.n() as u64 * 4;
        let first_progress = |done, total| progress(done, total + second_units);
        let (first, database) = lwe::Server::build_at(
            data,
            record_bytes,
            format,
            first_options(data.len() as u64, record_bytes, options)?,
            first_log_failure,
            &first_progress,
        )?
        .into_parts();
        let set = options.params;
        let g = first.geometry();
        let rows_per_query = max_rows_per_record(g);
        let geometry = second_geometry(g.rows(), set, rows_per_query)?;
        // The modulus is the one for any digits: the per-query digits share it.
        let encoded = encode_with_largest_p(
            set,
            geometry,
            geometry.log_p(),
            |g| second_log_failure(rows_per_query, g),
            |_| Ok((geometry, word_digits(first.hint().as_slice(), &geometry))),
        )?;
        let second_options = EngineOptions {
            layout: Layout::OnePerColumn,
            ..options
        };
        let first_units = g.cols();
        let second_progress = |done: u64, total: u64| {
            let share = (done.min(total) * second_units)
                .checked_div(total)
                .unwrap_or(0);
            progress(first_units + share, first_units + second_units)
        };
        let second = lwe::Server::with_database(
            encoded,
            RecordFormat::Raw,
            second_options,
            &second_progress,
        )?;
        let (second_setup, hint_digits) = second.into_parts();
        let setup = PublicSetup::new(first.layer().clone(), second_setup)?;
        Ok(Self::assemble(setup, database, hint_digits))
    }

    /// A server from a stored setup, database and second-layer matrix; checks that they fit
    /// together, row norms included.
    pub fn from_parts(
        setup: PublicSetup,
        database: PlaintextMatrix,
        hint_digits: PlaintextMatrix,
    ) -> Result<Self, PirError> {
        lwe::check_shape(&database, setup.first().geometry())?;
        let norm = database.max_row_norm();
        if norm > setup.first().row_norm() {
            return Err(PirError::InvalidParameters(format!(
                "a database row has squared norm {norm}, above the setup's {}",
                setup.first().row_norm()
            )));
        }
        let hint_digits = lwe::Server::check_parts(setup.second(), hint_digits)?;
        Ok(Self::assemble(setup, database, hint_digits))
    }

    pub(super) fn assemble(
        setup: PublicSetup,
        database: PlaintextMatrix,
        hint_digits: PlaintextMatrix,
    ) -> Self {
        let a2 = PreparedProduct::new(setup.second().matrix_a());
        let (rows, cols) = (hint_digits.rows(), hint_digits.cols());
        let hint_rows = (cols <= TRANSPOSED_ROWS).then(|| {
            let mut row_major = vec![0u8; rows * cols];
            hint_digits.copy_block(0..rows, 0..cols, &mut row_major);
            kernels::quad_interleaved(&row_major, rows, cols)
        });
        Self {
            setup,
            database,
            hint_digits,
            hint_rows,
            a2,
        }
    }

    /// The public setup to hand to clients.
    pub fn public_setup(&self) -> &PublicSetup {
        &self.setup
    }

    /// The first layer's matrix: the records' digits.
    #[cfg(test)]
    pub(super) fn database(&self) -> &PlaintextMatrix {
        &self.database
    }

    /// The first layer's matrix, taken out of the server until [`Server::restore_database`]
    /// puts it back (the server answers nothing meanwhile).
    pub(super) fn take_database(&mut self) -> PlaintextMatrix {
        let empty = PlaintextMatrix::from_vec(0, 0, Vec::new()).expect("an empty matrix");
        std::mem::replace(&mut self.database, empty)
    }

    /// Puts back the matrix [`Server::take_database`] took.
    pub(super) fn restore_database(&mut self, database: PlaintextMatrix) {
        self.database = database;
    }

    /// The second layer's matrix: the digits of the first layer's hint.
    pub(super) fn hint_digits(&self) -> &PlaintextMatrix {
        &self.hint_digits
    }

    /// Answers queries already checked against the setup: one pass over the database for their
    /// first parts; then one pass over the second layer's matrix for all their second parts,
    /// while each query's first answer is cut into digits and multiplied by its second parts
    /// and by `A2`.
    fn answer_checked(&self, queries: &[&Query]) -> Vec<Answer> {
        let rows = self.setup.first().geometry().rows() as usize;
        let firsts: Vec<&[u32]> = queries.iter().map(|q| q.first.as_slice()).collect();
        let first_answers = kernels::plaintext_mat_vecs(&self.database, &firsts);
        let seconds: Vec<&[u32]> = queries
            .iter()
            .flat_map(|q| q.second.chunks_exact(rows))
            .collect();
        let answer_geometry = self.setup.answer_geometry();
        let hint_answers = || match &self.hint_rows {
            Some(rows) => kernels::transposed_mat_vecs(rows, self.hint_digits.rows(), &seconds),
            None => kernels::plaintext_mat_vecs(&self.hint_digits, &seconds),
        };
        let digit_parts = || {
            queries
                .iter()
                .zip(&first_answers)
                .map(|(query, first_answer)| {
                    let digits = word_digits(first_answer, &answer_geometry);
                    let own: Vec<&[u32]> = query.second.chunks_exact(rows).collect();
                    let answers = kernels::plaintext_mat_vecs(&digits, &own);
                    let hint = self.a2.product(&digits);
                    (answers, hint)
                })
                .collect::<Vec<_>>()
        };
        // A small second layer is answered faster than another thread wakes up.
        let second = &self.hint_digits;
        let (hint_answers, digit_parts) =
            if second.rows() * second.cols() < kernels::SEQUENTIAL_BYTES {
                (hint_answers(), digit_parts())
            } else {
                rayon::join(hint_answers, digit_parts)
            };
        let per_query = self.setup.rows_per_query() as usize;
        hint_answers
            .chunks(per_query)
            .zip(digit_parts)
            .map(|(hint_answers, (digit_answers, hint))| {
                let mut values =
                    Vec::with_capacity(per_query * self.setup.second_answer_rows() as usize);
                for (hint_part, digit_part) in hint_answers.iter().zip(&digit_answers) {
                    values.extend(switch_modulus(hint_part));
                    values.extend(switch_modulus(digit_part));
                }
                Answer {
                    digest: *self.setup.digest(),
                    hint: hint.as_slice().to_vec(),
                    values,
                }
            })
            .collect()
    }
}

/// First-layer rows up to which the second layer's pass runs on a transposed copy of its
/// matrix ([`kernels::transposed_mat_vecs`]: sixteen of its rows at a time over every column, no
/// row ending in a sum across lanes). Whole answers with three queries on Zen 4, at 33, 99 and
/// 315 rows: 15, 29-38 and 91-97 µs, against 25, 58 and 102-120 µs with the row-by-row
/// kernel. At 1,024 rows the copy is 4 MiB; past that the matrix is streamed once, as stored.
const TRANSPOSED_ROWS: usize = 1024;

/// Words (rows of the first layer's hint, or a first-layer answer) as a second-layer database
/// of `geometry`: their little-endian bytes ([`wire::le_bytes`]) cut into its digits.
pub(super) fn word_digits(words: &[u32], geometry: &Geometry) -> PlaintextMatrix {
    encode_database(&wire::le_bytes(words), geometry)
}

impl IndexServer for Server {
    const STEPS: &'static [&'static str] = &["computing the hints"];

    fn footprint_for(shape: RecordShape, options: &EngineOptions) -> Result<Footprint, PirError> {
        shape.either(
            |bytes, record_bytes| Self::footprint(bytes, record_bytes, *options),
            |count, longest| Self::values_footprint(count, longest, *options),
        )
    }
}

impl PirServer for Server {
    type Scheme = Double;
    type Data<'a> = Records<'a>;
    type Options = EngineOptions;

    fn build(
        records: Records<'_>,
        options: EngineOptions,
        progress: Progress<'_>,
    ) -> Result<Self, PirError> {
        records.either(
            |bytes, record_bytes| Self::from_records(bytes, record_bytes, options, progress),
            |values| Self::from_values(values, options, progress),
        )
    }

    fn public_setup(&self) -> &PublicSetup {
        &self.setup
    }

    fn answer(&self, query: &Query) -> Result<Answer, PirError> {
        query.check(&self.setup)?;
        Ok(self.answer_checked(&[query]).remove(0))
    }

    fn answer_batch(&self, queries: &[Query]) -> Result<Vec<Answer>, PirError> {
        if queries.is_empty() {
            return Ok(Vec::new());
        }
        for query in queries {
            query.check(&self.setup)?;
        }
        let queries: Vec<&Query> = queries.iter().collect();
        Ok(self.answer_checked(&queries))
    }

    fn matrices(&self) -> Vec<&PlaintextMatrix> {
        vec![&self.database, &self.hint_digits]
    }

    fn update(&mut self, changes: &[Change]) -> Result<Option<Vec<u8>>, PirError> {
        self.apply_changes(changes)?;
        Ok(None)
    }

    fn from_parts(setup: PublicSetup, matrices: Vec<PlaintextMatrix>) -> Result<Self, PirError> {
        let [database, hint_digits] =
            <[PlaintextMatrix; 2]>::try_from(matrices).map_err(|matrices| {
                PirError::malformed(
                    "database",
                    format!("{} matrices for DoublePIR's two", matrices.len()),
                )
            })?;
        Server::from_parts(setup, database, hint_digits)
    }
}
