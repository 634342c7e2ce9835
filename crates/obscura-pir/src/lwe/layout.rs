//! How records are laid out in the database matrix.

use crate::params::{ParamSet, LOG_FAILURE, MAX_LOG_P};
use crate::PirError;

/// The largest record this engine accepts, in bytes (1 MiB).
pub const MAX_RECORD_BYTES: u64 = 1 << 20;

/// The largest number of matrix rows (bounds the hint at 2^22 · n entries).
const MAX_ROWS: u64 = 1 << 22;

/// The largest number of matrix columns (bounds a query at 2^33 entries): enough for the
/// keyword filter over 2^32 keys, which has at most 1.125 · 2^32 slots.
const MAX_COLS: u64 = 1 << 33;

/// How many records share a column of the database matrix.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Layout {
    /// One record per column (FrodoPIR, ChalametPIR): small hint and answer, long query.
    OnePerColumn,
    /// As many records per column as makes the matrix near square (SimplePIR). DoublePIR
    /// reads it as the shape that balances its query's two parts (see
    /// [`crate::double`]).
    #[default]
    Square,
    /// Exactly this many records per column (at least 1).
    PerColumn(u64),
}

/// Parses `square`, `one-per-column` or a count of records per column (at least 1).
impl std::str::FromStr for Layout {
    type Err = crate::ParseError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text {
            "square" => Ok(Self::Square),
            "one-per-column" => Ok(Self::OnePerColumn),
            count => match count.parse::<u64>() {
                Ok(k) if k >= 1 => Ok(Self::PerColumn(k)),
                _ => Err(crate::ParseError::new(
                    text,
                    "square, one-per-column or a count of at least 1",
                )),
            },
        }
    }
}

impl Layout {
    /// The number of records per column for `records` records of `record_bytes` bytes stored
    /// as `log_p`-bit digits.
    pub fn records_per_column(self, records: u64, record_bytes: u64, log_p: u8) -> u64 {
        let k = match self {
            Self::OnePerColumn => 1,
            Self::PerColumn(k) => k,
            Self::Square => {
                // rows ≈ k·8B/w and columns ≈ N/k are equal when k = √(N·w / 8B).
                let ideal =
                    (records as f64 * f64::from(log_p) / (8.0 * record_bytes as f64)).sqrt();
                ideal.round() as u64
            }
        };
        k.clamp(1, records.max(1))
    }
}

/// The shape of a database matrix and where each record lies in it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Geometry {
    records: u64,
    capacity: u64,
    record_bytes: u64,
    data_bytes: u64,
    per_column: u64,
    log_p: u8,
    rows: u64,
    cols: u64,
}

/// Where one record lies in the matrix.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RecordLocation {
    /// Its column.
    pub column: u64,
    /// The first row that holds its bits.
    pub first_row: u64,
    /// How many rows hold its bits.
    pub row_count: u64,
    /// Bits of the first row's digit that belong to the record before it.
    pub skip_bits: u64,
    /// The record's length in bytes (the last record may be shorter than the others).
    pub len: u64,
}

impl Geometry {
    /// Checks and derives the geometry of `records` records of `record_bytes` bytes holding
    /// `data_bytes` bytes of data in all, `per_column` records per column, as `log_p`-bit digits.
    pub fn new(
        records: u64,
        record_bytes: u64,
        data_bytes: u64,
        per_column: u64,
        log_p: u8,
    ) -> Result<Self, PirError> {
        let invalid = |reason: String| Err(PirError::InvalidParameters(reason));
        if records == 0 {
            return invalid("the database has no records".into());
        }
        if !(1..=MAX_RECORD_BYTES).contains(&record_bytes) {
            return invalid(format!(
                "record size {record_bytes} is outside 1 ..= {MAX_RECORD_BYTES} bytes"
            ));
        }
        // The last record holds between 1 and `record_bytes` bytes.
        let full = records.checked_mul(record_bytes);
        if full
            .is_none_or(|full| data_bytes.saturating_add(record_bytes) <= full || data_bytes > full)
        {
            return invalid(format!(
                "{data_bytes} data bytes do not make {records} records of {record_bytes} bytes"
            ));
        }
        if !(1..=records).contains(&per_column) {
            return invalid(format!(
                "{per_column} records per column is outside 1 ..= {records}"
            ));
        }
        if !(1..=MAX_LOG_P).contains(&log_p) {
            return invalid(format!("plaintext modulus 2^{log_p} is not supported"));
        }
        let column_bits = per_column
            .checked_mul(record_bytes * 8)
            .ok_or_else(|| PirError::InvalidParameters("column too large".into()))?;
        let rows = column_bits.div_ceil(u64::from(log_p));
        let cols = records.div_ceil(per_column);
        if rows > MAX_ROWS || cols > MAX_COLS {
            return invalid(format!(
                "a {rows} x {cols} matrix is larger than supported ({MAX_ROWS} rows, {MAX_COLS} columns)"
            ));
        }
        Ok(Self {
            records,
            capacity: records,
            record_bytes,
            data_bytes,
            per_column,
            log_p,
            rows,
            cols,
        })
    }

    /// This geometry with room for `capacity` records (at least its own): as many columns as
    /// `capacity` records fill, the columns past the records' holding zeros until records are
    /// appended.
    pub fn with_capacity(self, capacity: u64) -> Result<Self, PirError> {
        if capacity < self.records {
            return Err(PirError::InvalidParameters(format!(
                "a capacity of {capacity} records is less than the {} there are",
                self.records
            )));
        }
        let cols = capacity.div_ceil(self.per_column);
        if cols > MAX_COLS {
            return Err(PirError::InvalidParameters(format!(
                "a capacity of {capacity} records makes {cols} columns, more than the {MAX_COLS} supported"
            )));
        }
        Ok(Self {
            capacity,
            cols,
            ..self
        })
    }

    /// The geometry of `data_bytes` bytes of records of `record_bytes` bytes with the given
    /// layout, stored as `log_p`-bit digits.
    pub fn with_log_p(
        data_bytes: u64,
        record_bytes: u64,
        layout: Layout,
        log_p: u8,
    ) -> Result<Self, PirError> {
        Self::with_log_p_and_capacity(data_bytes, record_bytes, layout, log_p, None)
    }

    /// [`Geometry::with_log_p`] with room for `capacity` records when given; the layout's
    /// records per column are chosen for the capacity.
    pub fn with_log_p_and_capacity(
        data_bytes: u64,
        record_bytes: u64,
        layout: Layout,
        log_p: u8,
        capacity: Option<u64>,
    ) -> Result<Self, PirError> {
        if record_bytes == 0 {
            return Err(PirError::InvalidParameters(
                "record size must be at least 1 byte".into(),
            ));
        }
        let records = data_bytes.div_ceil(record_bytes);
        let capacity = capacity.unwrap_or(records);
        let per_column = layout
            .records_per_column(capacity, record_bytes, log_p)
            .min(records.max(1));
        Self::new(records, record_bytes, data_bytes, per_column, log_p)?.with_capacity(capacity)
    }

    /// Plans the geometry for `data_bytes` bytes of records of `record_bytes` bytes with the
    /// given layout: the largest plaintext modulus that the parameter set allows for the
    /// resulting number of columns whatever the data (a server may then pick a larger one that
    /// its own data allows, see [`crate::params`]).
    pub fn plan(
        data_bytes: u64,
        record_bytes: u64,
        layout: Layout,
        set: ParamSet,
    ) -> Result<Self, PirError> {
        Self::plan_at(data_bytes, record_bytes, layout, set, |_| LOG_FAILURE)
    }

    /// [`Geometry::plan`] with failure probability `2^-log_failure(geometry)` per decoded
    /// entry, for a scheme whose budget depends on the shape (how many entries a record
    /// decodes).
    pub fn plan_at(
        data_bytes: u64,
        record_bytes: u64,
        layout: Layout,
        set: ParamSet,
        log_failure: impl Fn(&Geometry) -> u32,
    ) -> Result<Self, PirError> {
        Self::plan_with_capacity(data_bytes, record_bytes, layout, set, None, log_failure)
    }

    /// [`Geometry::plan_at`] with room for `capacity` records when given.
    pub fn plan_with_capacity(
        data_bytes: u64,
        record_bytes: u64,
        layout: Layout,
        set: ParamSet,
        capacity: Option<u64>,
        log_failure: impl Fn(&Geometry) -> u32,
    ) -> Result<Self, PirError> {
        for log_p in (1..=MAX_LOG_P).rev() {
            let geometry =
                Self::with_log_p_and_capacity(data_bytes, record_bytes, layout, log_p, capacity)?;
            if set.max_log_p_at(geometry.cols(), log_failure(&geometry)) >= Some(log_p) {
                return Ok(geometry);
            }
        }
        Err(PirError::InvalidParameters(format!(
            "no plaintext modulus is correct for this layout with {}",
            set.name()
        )))
    }

    /// Number of records.
    pub fn records(&self) -> u64 {
        self.records
    }

    /// Records the matrix was set up to hold (at least [`Geometry::records`]): appends up to
    /// the slots of its columns need no new setup.
    pub fn capacity(&self) -> u64 {
        self.capacity
    }

    /// Bytes per record (the last record may be shorter, see [`Geometry::data_bytes`]).
    pub fn record_bytes(&self) -> u64 {
        self.record_bytes
    }

    /// Total bytes of data, before padding.
    pub fn data_bytes(&self) -> u64 {
        self.data_bytes
    }

    /// Records per column.
    pub fn per_column(&self) -> u64 {
        self.per_column
    }

    /// log2 of the plaintext modulus.
    pub fn log_p(&self) -> u8 {
        self.log_p
    }

    /// Rows of the matrix (answer length).
    pub fn rows(&self) -> u64 {
        self.rows
    }

    /// Columns of the matrix (query length).
    pub fn cols(&self) -> u64 {
        self.cols
    }

    /// Where record `index` lies.
    pub fn locate(&self, index: u64) -> Result<RecordLocation, PirError> {
        if index >= self.records {
            return Err(PirError::IndexOutOfRange {
                index,
                records: self.records,
            });
        }
        let width = u64::from(self.log_p);
        let start = (index % self.per_column) * self.record_bytes * 8;
        let end = start + self.record_bytes * 8;
        let first_row = start / width;
        let len = if index + 1 == self.records {
            self.data_bytes - (self.records - 1) * self.record_bytes
        } else {
            self.record_bytes
        };
        Ok(RecordLocation {
            column: index / self.per_column,
            first_row,
            row_count: (end - 1) / width + 1 - first_row,
            skip_bits: start - first_row * width,
            len,
        })
    }

    /// Bits of data in column `column` and the offset of its first bit in the data.
    pub(crate) fn column_bits(&self, column: u64) -> (u64, u64) {
        let data_bits = self.data_bytes * 8;
        let first = (column * self.per_column * self.record_bytes * 8).min(data_bits);
        let last = ((column + 1) * self.per_column * self.record_bytes * 8).min(data_bits);
        (first, last)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frodo_and_square_shapes() {
        let frodo =
            Geometry::plan(1 << 30, 1024, Layout::OnePerColumn, ParamSet::Ypir1024).unwrap();
        assert_eq!((frodo.cols(), frodo.log_p()), (1 << 20, 7));
        assert_eq!(frodo.rows(), (1024u64 * 8).div_ceil(7));
        let square = Geometry::plan(1 << 30, 1024, Layout::Square, ParamSet::Ypir1024).unwrap();
        assert_eq!(square.log_p(), 8);
        assert_eq!(square.rows(), square.per_column() * 1024);
        let ratio = square.rows() as f64 / square.cols() as f64;
        assert!((0.5..2.0).contains(&ratio), "{ratio}");
    }

    #[test]
    fn locations_tile_each_column() {
        let g = Geometry::new(10, 3, 29, 4, 7).unwrap();
        assert_eq!((g.rows(), g.cols()), (14, 3));
        let loc = g.locate(5).unwrap();
        assert_eq!((loc.column, loc.first_row, loc.skip_bits), (1, 3, 3));
        assert_eq!(loc.row_count, 4); // bits 24..48 over rows 3..=6
        assert_eq!(g.locate(9).unwrap().len, 2);
        assert!(matches!(
            g.locate(10),
            Err(PirError::IndexOutOfRange { .. })
        ));
    }

    #[test]
    fn rejects_bad_shapes() {
        assert!(Geometry::new(0, 1, 0, 1, 8).is_err());
        assert!(Geometry::new(2, 0, 1, 1, 8).is_err());
        assert!(Geometry::new(2, 4, 4, 1, 8).is_err());
        assert!(Geometry::new(2, 4, 9, 1, 8).is_err());
        assert!(Geometry::new(2, 4, 8, 3, 8).is_err());
        assert!(Geometry::new(2, 4, 8, 1, 9).is_err());
        assert!(Geometry::new(u64::MAX, u64::MAX, 1, 1, 8).is_err());
        assert!(Geometry::new(u64::MAX / 2, 1 << 20, u64::MAX, 1, 8).is_err());
        assert!(Geometry::new(1 << 40, 1 << 10, 1 << 50, 1, 8).is_err());
        assert!(Geometry::plan(10, 0, Layout::Square, ParamSet::Ypir1024).is_err());
    }
}
