//! The server: encodes the database, computes the hint, answers queries.

use std::ops::Range;

use obscura_math::expand::MatrixSeed;
use obscura_math::matrix::PlaintextMatrix;
use obscura_math::memory::LargeBuffer;
use obscura_math::{hint, kernels, pack};
use rayon::prelude::*;

use super::footprint::Footprint;
use super::layout::{Geometry, MAX_RECORD_BYTES};
use super::messages::{Answer, Query};
use super::scheme::{Lwe, RecordShape, Records};
use super::setup::{fill_value_slot, matrix_a, EngineOptions, PublicSetup, RecordFormat};
use crate::params::{
    worst_row_norm, LweParams, MatrixKind, ParamSet, ANSWER_BITS, LOG_FAILURE, MAX_LOG_P,
};
use crate::scheme::{IndexServer, Progress};
use crate::{Change, PirError, PirServer};

/// The server side of the LWE engine: the encoded database and its public setup.
#[derive(Clone)]
pub struct Server {
    setup: PublicSetup,
    database: PlaintextMatrix,
    /// The squared norm of each database row, once known: read when the server is assembled
    /// from stored parts (which checks them) or at its first update, and kept up to date by
    /// updates, so that the database is read for them once.
    row_norms: Option<Vec<u64>>,
}

impl Server {
    /// Builds a database of records of `record_bytes` bytes laid end to end in `data` (the last
    /// record may be short; it is zero-padded). `progress(done, total)` is called as the hint
    /// product advances over the columns.
    pub fn from_records(
        data: &[u8],
        record_bytes: u64,
        options: EngineOptions,
        progress: &(dyn Fn(u64, u64) + Sync),
    ) -> Result<Self, PirError> {
        Self::build_slots(data, record_bytes, RecordFormat::Raw, options, progress)
    }

    /// Builds a database of variable-length values (the value at index `i` is `values[i]`,
    /// possibly empty): each is stored as its length and bytes in a slot as large as the longest,
    /// and clients get the exact value back.
    pub fn from_values<V: AsRef<[u8]>>(
        values: &[V],
        options: EngineOptions,
        progress: &(dyn Fn(u64, u64) + Sync),
    ) -> Result<Self, PirError> {
        let (data, slot) = value_slots(values, options.value_bytes)?;
        Self::build_slots(&data, slot, RecordFormat::LengthPrefixed, options, progress)
    }

    /// What [`Server::from_records`] of `data_bytes` bytes of records of `record_bytes` bytes will
    /// hold and produce, computed before anything is allocated (see [`Footprint`]).
    pub fn footprint(
        data_bytes: u64,
        record_bytes: u64,
        options: EngineOptions,
    ) -> Result<Footprint, PirError> {
        let planned = Geometry::plan_with_capacity(
            data_bytes,
            record_bytes,
            options.layout,
            options.params,
            options.capacity,
            |_| LOG_FAILURE,
        )?;
        Ok(Footprint::engine(&planned, options.params))
    }

    /// What [`Server::from_values`] of `count` values, the longest of `longest` bytes, will
    /// hold and produce (the values themselves not counted), computed before anything is
    /// allocated.
    pub fn values_footprint(
        count: u64,
        longest: u64,
        options: EngineOptions,
    ) -> Result<Footprint, PirError> {
        let longest = longest.max(options.value_bytes.unwrap_or(0));
        values_footprint(count, longest, |data_bytes, slot| {
            Self::footprint(data_bytes, slot, options)
        })
    }

    /// Sets up slots of `record_bytes` bytes laid end to end in `data`.
    fn build_slots(
        data: &[u8],
        record_bytes: u64,
        format: RecordFormat,
        options: EngineOptions,
        progress: &(dyn Fn(u64, u64) + Sync),
    ) -> Result<Self, PirError> {
        Self::build_at(
            data,
            record_bytes,
            format,
            options,
            |_| LOG_FAILURE,
            progress,
        )
    }

    /// [`Server::build_slots`] with failure probability `2^-log_failure(geometry)` per decoded
    /// digit, for a scheme whose failure budget depends on the shape.
    pub(crate) fn build_at(
        data: &[u8],
        record_bytes: u64,
        format: RecordFormat,
        options: EngineOptions,
        log_failure: impl Fn(&Geometry) -> u32 + Copy,
        progress: &(dyn Fn(u64, u64) + Sync),
    ) -> Result<Self, PirError> {
        let (data_bytes, layout, set) = (data.len() as u64, options.layout, options.params);
        let capacity = options.capacity;
        let planned = Geometry::plan_with_capacity(
            data_bytes,
            record_bytes,
            layout,
            set,
            capacity,
            log_failure,
        )?;
        // A database built with room to change (for appends or longer values) keeps the
        // modulus correct for any contents; one without takes the largest its rows allow.
        let largest = if capacity.is_some() || options.value_bytes.is_some() {
            planned.log_p()
        } else {
            MAX_LOG_P
        };
        let encoded = encode_with_largest_p(set, planned, largest, log_failure, |log_p| {
            let geometry = Geometry::with_log_p_and_capacity(
                data_bytes,
                record_bytes,
                layout,
                log_p,
                capacity,
            )?;
            Ok((geometry, encode_database(data, &geometry)))
        })?;
        Self::with_database(encoded, format, options, progress)
    }

    /// A database of slots of `record_bytes` bytes in `format` stored as `log_p`-bit digits,
    /// whatever modulus its rows would allow (tests of digits shared by neighbouring records).
    #[cfg(test)]
    pub(crate) fn with_log_p(
        data: &[u8],
        record_bytes: u64,
        log_p: u8,
        format: RecordFormat,
        options: EngineOptions,
    ) -> Result<Self, PirError> {
        let geometry =
            Geometry::with_log_p(data.len() as u64, record_bytes, options.layout, log_p)?;
        let database = encode_database(data, &geometry);
        let encoded = Encoded {
            row_norm: database.max_row_norm(),
            geometry,
            database,
        };
        Self::with_database(encoded, format, options, &|_, _| {})
    }

    /// Computes the hint of an encoded database and assembles the server, its public matrix
    /// from a fresh seed.
    pub(crate) fn with_database(
        encoded: Encoded,
        format: RecordFormat,
        options: EngineOptions,
        progress: &(dyn Fn(u64, u64) + Sync),
    ) -> Result<Self, PirError> {
        Self::with_database_seeded(encoded, format, options, MatrixSeed::random()?, progress)
    }

    /// [`Self::with_database`] with the public matrix expanded from `seed`.
    pub(crate) fn with_database_seeded(
        encoded: Encoded,
        format: RecordFormat,
        options: EngineOptions,
        seed: MatrixSeed,
        progress: &(dyn Fn(u64, u64) + Sync),
    ) -> Result<Self, PirError> {
        let set = options.params;
        let kind = options.matrix.unwrap_or(MatrixKind::default_for(set));
        let Encoded {
            geometry,
            database,
            row_norm,
        } = encoded;
        let params = LweParams::new(set, kind, geometry.log_p(), geometry.cols(), row_norm)?;
        let a = matrix_a(&params, seed, &geometry);
        let hint = hint::hint_product(&database, &a, progress);
        let setup = PublicSetup::new(set, kind, format, geometry, row_norm, seed, hint)?;
        Ok(Self {
            setup,
            database,
            row_norms: None,
        })
    }

    /// The next version of the server of `setup`, holding `encoded` (a database of the same
    /// matrix shape) instead: the same parameters, format and seed, the hint computed anew.
    pub(crate) fn next_with_database(
        setup: &PublicSetup,
        encoded: Encoded,
        progress: &(dyn Fn(u64, u64) + Sync),
    ) -> Result<Self, PirError> {
        let Encoded {
            geometry,
            database,
            row_norm,
        } = encoded;
        let layer = setup
            .layer()
            .with_contents(geometry, row_norm)
            .map_err(|cause| PirError::NeedsNewSetup(Box::new(cause)))?;
        let hint = hint::hint_product(&database, &layer.matrix_a(), progress);
        Ok(Self {
            setup: setup.next_version(layer, hint, None)?,
            database,
            row_norms: None,
        })
    }

    /// A server of `setup` and `database`, taken to fit together (their shapes are checked);
    /// the rows' norms are read at the first update.
    pub(crate) fn trusted_parts(
        setup: PublicSetup,
        database: PlaintextMatrix,
    ) -> Result<Self, (PirError, PlaintextMatrix)> {
        if let Err(error) = check_shape(&database, setup.geometry()) {
            return Err((error, database));
        }
        Ok(Self {
            setup,
            database,
            row_norms: None,
        })
    }

    /// A server from a stored setup and database; checks that they fit together, the database's
    /// row norms included (one pass over it).
    pub fn from_parts(setup: PublicSetup, database: PlaintextMatrix) -> Result<Self, PirError> {
        let row_norms = Self::row_norms_within(&setup, &database)?;
        Ok(Self {
            setup,
            database,
            row_norms: Some(row_norms),
        })
    }

    /// `database` if it fits `setup`: its shape, and its row norms within the setup's.
    pub(crate) fn check_parts(
        setup: &PublicSetup,
        database: PlaintextMatrix,
    ) -> Result<PlaintextMatrix, PirError> {
        Self::row_norms_within(setup, &database)?;
        Ok(database)
    }

    /// The squared norm of each row of `database`, once its shape is checked to be `setup`'s
    /// and its norms to be within the setup's.
    fn row_norms_within(
        setup: &PublicSetup,
        database: &PlaintextMatrix,
    ) -> Result<Vec<u64>, PirError> {
        check_shape(database, setup.geometry())?;
        let mut norms = vec![0u64; database.rows()];
        database.add_row_norms(&mut norms);
        let norm = norms.iter().copied().max().unwrap_or(0);
        if norm > setup.row_norm() {
            return Err(PirError::InvalidParameters(format!(
                "a database row has squared norm {norm}, above the setup's {}",
                setup.row_norm()
            )));
        }
        Ok(norms)
    }

    /// The public setup to hand to clients.
    pub fn public_setup(&self) -> &PublicSetup {
        &self.setup
    }

    /// The encoded database matrix.
    pub fn database(&self) -> &PlaintextMatrix {
        &self.database
    }

    /// The bytes of record `index` read back from its digits (what its slot holds: for a
    /// database of values, the length prefix and padding too).
    pub(crate) fn record(&self, index: u64) -> Result<Vec<u8>, PirError> {
        let geometry = self.setup.geometry();
        let location = geometry.locate(index)?;
        let width = u32::from(geometry.log_p());
        let mask = ((1u16 << width) - 1) as u8;
        let first = location.first_row as usize;
        let digits: Vec<u8> = (first..first + location.row_count as usize)
            .map(|row| self.database.get(row, location.column as usize) & mask)
            .collect();
        let mut bytes = vec![0u8; location.len as usize];
        pack::unpack_into(&digits, width, location.skip_bits, &mut bytes);
        Ok(bytes)
    }

    /// The encoded database matrix, to rewrite in place, and the squared norm of each of its
    /// rows (computed here the first time).
    pub(crate) fn database_and_norms_mut(&mut self) -> (&mut PlaintextMatrix, &mut Vec<u64>) {
        let database = &mut self.database;
        let norms = self.row_norms.get_or_insert_with(|| {
            let mut norms = vec![0u64; database.rows()];
            database.add_row_norms(&mut norms);
            norms
        });
        (database, norms)
    }

    /// Replaces the public setup (by the next version of the same database).
    pub(crate) fn set_setup(&mut self, setup: PublicSetup) {
        self.setup = setup;
    }

    /// The public setup, to make it the next version of the same database in place.
    pub(super) fn setup_mut(&mut self) -> &mut PublicSetup {
        &mut self.setup
    }

    /// The public setup and the encoded database.
    pub fn into_parts(self) -> (PublicSetup, PlaintextMatrix) {
        (self.setup, self.database)
    }
}

impl IndexServer for Server {
    const STEPS: &'static [&'static str] = &["computing the hint"];

    fn footprint_for(shape: RecordShape, options: &EngineOptions) -> Result<Footprint, PirError> {
        shape.either(
            |bytes, record_bytes| Self::footprint(bytes, record_bytes, *options),
            |count, longest| Self::values_footprint(count, longest, *options),
        )
    }
}

impl PirServer for Server {
    type Scheme = Lwe;
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

    fn matrices(&self) -> Vec<&PlaintextMatrix> {
        vec![&self.database]
    }

    fn from_parts(setup: PublicSetup, matrices: Vec<PlaintextMatrix>) -> Result<Self, PirError> {
        let [database] = <[PlaintextMatrix; 1]>::try_from(matrices).map_err(|matrices| {
            PirError::malformed(
                "database",
                format!("{} matrices for one engine", matrices.len()),
            )
        })?;
        Server::from_parts(setup, database)
    }

    fn update(&mut self, changes: &[Change]) -> Result<Option<Vec<u8>>, PirError> {
        self.apply_changes(changes).map(Some)
    }

    fn replay(&mut self, changes: &[Change]) -> Result<(), PirError> {
        self.replay_changes(changes)
    }

    fn answer(&self, query: &Query) -> Result<Answer, PirError> {
        query.check(&self.setup)?;
        Ok(Answer {
            digest: *self.setup.digest(),
            values: switch_modulus(&self.database.mul_vec(&query.values)),
        })
    }

    fn answer_batch(&self, queries: &[Query]) -> Result<Vec<Answer>, PirError> {
        match queries {
            [] => return Ok(Vec::new()),
            [query] => return Ok(vec![self.answer(query)?]),
            _ => {}
        }
        for query in queries {
            query.check(&self.setup)?;
        }
        let vectors: Vec<&[u32]> = queries.iter().map(|q| q.values.as_slice()).collect();
        let answers = kernels::plaintext_mat_vecs(&self.database, &vectors);
        Ok(answers
            .into_iter()
            .map(|values| Answer {
                digest: *self.setup.digest(),
                values: switch_modulus(&values),
            })
            .collect())
    }
}

/// Variable-length values in slots as large as the longest, or as `room` bytes of value when
/// given (each slot the value's length as a `u32`, then its bytes), laid end to end, and the
/// slot size: the records of a database of values ([`RecordFormat::LengthPrefixed`]).
pub fn value_slots<V: AsRef<[u8]>>(
    values: &[V],
    room: Option<u64>,
) -> Result<(Vec<u8>, u64), PirError> {
    let longest = values
        .iter()
        .map(|v| v.as_ref().len() as u64)
        .max()
        .ok_or_else(|| PirError::InvalidParameters("the database has no records".into()))?;
    let longest = match room {
        Some(room) if room < longest => {
            return Err(PirError::InvalidParameters(format!(
                "slots for values of {room} bytes cannot hold the longest value, of {longest}"
            )))
        }
        Some(room) => room,
        None => longest,
    };
    let slot = value_slot(longest)? as usize;
    let mut data = vec![0u8; values.len() * slot];
    for (value, slot) in values.iter().zip(data.chunks_exact_mut(slot)) {
        fill_value_slot(slot, Some(value.as_ref()));
    }
    Ok((data, slot as u64))
}

/// The footprint of a setup of `count` values, the longest of `longest` bytes, from the
/// `footprint(data_bytes, slot)` of their slots laid end to end, which it also holds.
pub(crate) fn values_footprint(
    count: u64,
    longest: u64,
    footprint: impl FnOnce(u64, u64) -> Result<Footprint, PirError>,
) -> Result<Footprint, PirError> {
    let slot = value_slot(longest)?;
    let data_bytes = count.checked_mul(slot).ok_or_else(|| {
        PirError::InvalidParameters(format!("{count} values of {slot} bytes are too many"))
    })?;
    Ok(footprint(data_bytes, slot)?.holding(data_bytes))
}

/// The slot of a value of up to `longest` bytes: its length (a `u32`), then the bytes.
fn value_slot(longest: u64) -> Result<u64, PirError> {
    let slot = longest.saturating_add(4);
    if slot > MAX_RECORD_BYTES {
        return Err(PirError::InvalidParameters(format!(
            "a value of {longest} bytes is larger than the {MAX_RECORD_BYTES}-byte record limit"
        )));
    }
    Ok(slot)
}

/// Refuses `database` unless it has the matrix shape of `geometry`.
pub(crate) fn check_shape(database: &PlaintextMatrix, geometry: &Geometry) -> Result<(), PirError> {
    if database.rows() as u64 != geometry.rows() || database.cols() as u64 != geometry.cols() {
        return Err(PirError::InvalidParameters(format!(
            "a {} x {} database does not fit a {} x {} setup",
            database.rows(),
            database.cols(),
            geometry.rows(),
            geometry.cols()
        )));
    }
    Ok(())
}

/// An encoded database: its geometry, its matrix and the largest squared norm of a row.
pub(crate) struct Encoded {
    geometry: Geometry,
    database: PlaintextMatrix,
    row_norm: u64,
}

impl Encoded {
    /// `database`, of `geometry`, with its largest row norm measured.
    pub(crate) fn measured(geometry: Geometry, database: PlaintextMatrix) -> Self {
        Self {
            row_norm: database.max_row_norm(),
            geometry,
            database,
        }
    }

    /// The largest squared norm of a row.
    pub(crate) fn row_norm(&self) -> u64 {
        self.row_norm
    }
}

/// Encodes a database with the largest plaintext modulus its own rows allow (see
/// [`crate::params`]) at failure probability `2^-log_failure(geometry)` per entry:
/// `encode(log_p)` encodes it as `log_p`-bit digits, tried from `largest` bits (at most 8) down
/// to the modulus `planned` for any data, which always passes.
pub(crate) fn encode_with_largest_p(
    set: ParamSet,
    planned: Geometry,
    largest: u8,
    log_failure: impl Fn(&Geometry) -> u32,
    encode: impl Fn(u8) -> Result<(Geometry, PlaintextMatrix), PirError>,
) -> Result<Encoded, PirError> {
    let measured =
        |(geometry, database): (Geometry, PlaintextMatrix)| Encoded::measured(geometry, database);
    for log_p in (planned.log_p() + 1..=largest.min(MAX_LOG_P)).rev() {
        // A larger modulus whose geometry is not possible is skipped.
        let Ok(encoded) = encode(log_p).map(measured) else {
            continue;
        };
        let norm = encoded.row_norm;
        if norm <= worst_row_norm(encoded.geometry.cols(), log_p)
            && set.correct_at(log_p, norm, log_failure(&encoded.geometry))
        {
            return Ok(encoded);
        }
    }
    encode(planned.log_p()).map(measured)
}

/// Cuts the data into centered digits: column `c` of the matrix is the bit stream of records
/// `c·k .. (c+1)·k`, one `log_p`-bit digit per row, stored as a two's-complement `i8` in
/// `[-p/2, p/2)`.
pub(crate) fn encode_database(data: &[u8], geometry: &Geometry) -> PlaintextMatrix {
    encode_block(
        data,
        0,
        geometry,
        0..geometry.rows(),
        0..geometry.cols(),
        None,
    )
}

/// Rows `rows` of columns `cols` of the matrix [`encode_database`] makes of the records of
/// `geometry`, from `data`, the records' bytes from byte `offset` on (`offset` at most the first
/// byte of column `cols.start`): a streamed setup's band, a shard's block. Written over `spare`,
/// the buffer of a matrix no longer needed, when it has the size (see
/// [`PlaintextMatrix::from_group_fn_reusing`]).
pub(crate) fn encode_block(
    data: &[u8],
    offset: u64,
    geometry: &Geometry,
    rows: Range<u64>,
    cols: Range<u64>,
    spare: Option<LargeBuffer>,
) -> PlaintextMatrix {
    let width = u32::from(geometry.log_p());
    let columns: Vec<(u64, u64)> = cols
        .map(|c| {
            // Columns past the data (room for appends) hold none of it.
            let (start, last) = geometry.column_bits(c);
            (
                start.saturating_sub(offset * 8),
                last.saturating_sub(offset * 8),
            )
        })
        .collect();
    let height = (rows.end - rows.start) as usize;
    // Each column's bits above the block's first row.
    let skip = rows.start * u64::from(width);
    if width == 8 {
        // Whole bytes: row `r` of a column is byte `r` of its stream, and a byte is its own
        // centered digit (the `i8` with the same bits).
        return PlaintextMatrix::from_column_runs_reusing(height, columns.len(), spare, |c| {
            let (start, last) = columns[c];
            let byte = |bit: u64| (bit.min(last) / 8) as usize;
            &data[byte(start + skip)..byte(start + rows.end * 8)]
        });
    }
    PlaintextMatrix::from_group_fn_reusing(
        height,
        columns.len(),
        spare,
        |r, first, group_cols, digits| {
            for (i, row) in digits.chunks_exact_mut(group_cols).enumerate() {
                let at = skip + (r + i) as u64 * u64::from(width);
                for (entry, &(start, last)) in row.iter_mut().zip(&columns[first..]) {
                    *entry = centered(pack::digit_at(data, start + at, width, last), width);
                }
            }
        },
    )
}

/// The bytes `encode_database(data, geometry)` encoded: its inverse, the `geometry.data_bytes()`
/// bytes read back from the digits of each column, a band of columns at a time.
pub(crate) fn decode_database(database: &PlaintextMatrix, geometry: &Geometry) -> Vec<u8> {
    const BAND: usize = 64;
    let rows = geometry.rows() as usize;
    let cols = geometry.cols() as usize;
    let width = u32::from(geometry.log_p());
    let mask = ((1u16 << width) - 1) as u8;
    let bands: Vec<Vec<u8>> = (0..cols.div_ceil(BAND))
        .into_par_iter()
        .map(|band| {
            let first = band * BAND;
            let width_cols = BAND.min(cols - first);
            let mut block = vec![0u8; rows * width_cols];
            database.copy_block(0..rows, first..first + width_cols, &mut block);
            let (start, _) = geometry.column_bits(first as u64);
            let (_, end) = geometry.column_bits((first + width_cols - 1) as u64);
            let mut out = vec![0u8; ((end - start) / 8) as usize];
            let mut digits = vec![0u8; rows];
            for c in 0..width_cols {
                let (from, to) = geometry.column_bits((first + c) as u64);
                for (r, digit) in digits.iter_mut().enumerate() {
                    *digit = block[r * width_cols + c] & mask;
                }
                let at = ((from - start) / 8) as usize;
                pack::unpack_into(
                    &digits,
                    width,
                    0,
                    &mut out[at..][..((to - from) / 8) as usize],
                );
            }
            out
        })
        .collect();
    bands.concat()
}

/// A digit in `[0, 2^width)` stored centered, as the two's-complement `i8` in
/// `[-2^(width-1), 2^(width-1))` congruent to it.
pub(crate) fn centered(digit: u8, width: u32) -> u8 {
    let (digit, p) = (i16::from(digit), 1i16 << width);
    let value = if digit >= p / 2 { digit - p } else { digit };
    value as i8 as u8
}

/// Rounds answer entries from Z_{2^32} to their top [`ANSWER_BITS`] bits.
pub(crate) fn switch_modulus(values: &[u32]) -> Vec<u16> {
    let shift = 32 - ANSWER_BITS;
    let half = 1u32 << (shift - 1);
    values
        .iter()
        .map(|&x| (x.wrapping_add(half) >> shift) as u16)
        .collect()
}
