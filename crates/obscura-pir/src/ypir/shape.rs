//! How a YPIR database is laid out, for each variant, and where a record lies.

use super::params::{
    first_log_failure, log_sum, packed_log_failure, DEGREE, PLAINTEXT_BITS, ROUNDED_BITS,
};
use crate::lwe::MAX_RECORD_BYTES;
use crate::params::LOG_FAILURE;
use crate::PirError;

/// The first layer's hint row in the second layer: `n` rounded values.
const HINT_BITS: u64 = super::params::FIRST_DIMENSION as u64 * ROUNDED_BITS as u64;

/// Chunks of a hint row: `⌈1024 · 28 / 15⌉`.
pub(super) const HINT_CHUNKS: usize = HINT_BITS.div_ceil(PLAINTEXT_BITS as u64) as usize;

/// The most digits a YPIR record may have: their rounded answers fill the chunks the hint
/// leaves free.
pub const MAX_DOUBLE_DIGITS: u64 =
    ((DEGREE - HINT_CHUNKS) as u64 * PLAINTEXT_BITS as u64) / ROUNDED_BITS as u64;

/// The most low bits a query leaves out of each entry of a vector.
pub const MAX_DROPPED_BITS: u32 = 12;

/// The most columns (query entries) a layer may have.
const MAX_COLUMNS: u64 = 1 << 28;

/// Which of YPIR's two schemes a database runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Variant {
    /// YPIR: DoublePIR's two layers, the second packed. Small records.
    Ypir,
    /// YPIR+SP: SimplePIR's one layer, packed. Large records.
    YpirSp,
}

impl Variant {
    /// The variant's name as the CLI spells it.
    pub fn name(self) -> &'static str {
        match self {
            Self::Ypir => "ypir",
            Self::YpirSp => "ypir-sp",
        }
    }

    /// The variant for `records` records of `record_bytes` bytes when none is asked for: YPIR
    /// for records of at most [`AUTO_YPIR_BYTES`] bytes in a database of at least
    /// [`AUTO_YPIR_DATA`] bytes, YPIR+SP otherwise. YPIR's second layer always packs 2,048
    /// ciphertexts, whose plan costs about half a second of setup and 96 MiB whatever the
    /// database's size, and its query grows with the record's digits; YPIR+SP packs about
    /// `√(data)` rows.
    pub fn auto(records: u64, record_bytes: u64) -> Self {
        if record_bytes <= AUTO_YPIR_BYTES && records.saturating_mul(record_bytes) >= AUTO_YPIR_DATA
        {
            Self::Ypir
        } else {
            Self::YpirSp
        }
    }
}

/// The longest records [`Variant::auto`] gives to YPIR.
pub const AUTO_YPIR_BYTES: u64 = 8;

/// The smallest database [`Variant::auto`] gives to YPIR: 4 MiB.
pub const AUTO_YPIR_DATA: u64 = 4 << 20;

/// YPIR+SP's layout: `per_column` records per column, each column their bit stream cut into
/// 15-bit words, one per row.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct YpirSpShape {
    records: u64,
    record_bytes: u64,
    per_column: u64,
}

/// YPIR's layout: `per_row` records per row of the first layer, each record's `log_p`-bit
/// digits in as many consecutive columns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct YpirShape {
    records: u64,
    record_bytes: u64,
    log_p: u8,
    per_row: u64,
}

/// A database's layout.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shape {
    /// YPIR+SP.
    YpirSp(YpirSpShape),
    /// YPIR.
    Ypir(YpirShape),
}

/// Checks the counts every shape needs.
fn check_counts(records: u64, record_bytes: u64) -> Result<(), PirError> {
    if records == 0 {
        return Err(PirError::InvalidParameters(
            "the database has no records".into(),
        ));
    }
    if record_bytes == 0 || record_bytes > MAX_RECORD_BYTES {
        return Err(PirError::InvalidParameters(format!(
            "records of {record_bytes} bytes: YPIR takes 1 to {MAX_RECORD_BYTES} bytes"
        )));
    }
    Ok(())
}

/// Checks that a matrix of `rows x columns` entries (YPIR's first layer, or YPIR+SP's words)
/// is one this machine can address, within [`MAX_COLUMNS`] each way.
fn check_size(rows: u64, columns: u64, records: u64, record_bytes: u64) -> Result<(), PirError> {
    let cells = rows.checked_mul(columns);
    if columns > MAX_COLUMNS
        || rows > MAX_COLUMNS
        || cells.is_none_or(|c| c > usize::MAX as u64 / 4)
    {
        return Err(PirError::InvalidParameters(format!(
            "{records} records of {record_bytes} bytes are too many"
        )));
    }
    Ok(())
}

impl YpirSpShape {
    /// The layout for `records` records of `record_bytes` bytes: about `√words` rows (the
    /// packing plan's size) but at least one record per column.
    pub fn plan(records: u64, record_bytes: u64) -> Result<Self, PirError> {
        check_counts(records, record_bytes)?;
        let bits = record_bytes * 8;
        let words = records
            .checked_mul(bits)
            .ok_or_else(|| PirError::InvalidParameters("the database is too large".into()))?
            / u64::from(PLAINTEXT_BITS);
        let per_record = bits.div_ceil(u64::from(PLAINTEXT_BITS));
        let per_column = ((words as f64).sqrt() / per_record as f64).floor() as u64;
        Self::new(records, record_bytes, per_column.clamp(1, records))
    }

    /// The layout with `per_column` records per column; checks that it fits the limits and is
    /// correct.
    pub fn new(records: u64, record_bytes: u64, per_column: u64) -> Result<Self, PirError> {
        check_counts(records, record_bytes)?;
        if per_column == 0 || per_column > records {
            return Err(PirError::InvalidParameters(format!(
                "{per_column} records per column for {records} records"
            )));
        }
        let shape = Self {
            records,
            record_bytes,
            per_column,
        };
        check_size(shape.rows(), shape.columns(), records, record_bytes)?;
        if shape.log_failure() > -f64::from(LOG_FAILURE) {
            return Err(PirError::InvalidParameters(format!(
                "{} columns are too many for YPIR+SP's 2^-{LOG_FAILURE} failure bound",
                shape.columns()
            )));
        }
        Ok(shape)
    }

    /// Records.
    pub fn records(&self) -> u64 {
        self.records
    }

    /// Bytes per record.
    pub fn record_bytes(&self) -> u64 {
        self.record_bytes
    }

    /// Records per column.
    pub fn per_column(&self) -> u64 {
        self.per_column
    }

    /// Columns: query entries.
    pub fn columns(&self) -> u64 {
        self.records.div_ceil(self.per_column)
    }

    /// Rows: 15-bit words per column.
    pub fn rows(&self) -> u64 {
        (self.per_column * self.record_bytes * 8).div_ceil(u64::from(PLAINTEXT_BITS))
    }

    /// `log2` of the probability that a query fails.
    pub fn log_failure(&self) -> f64 {
        self.log_failure_dropping(self.query_dropped())
    }

    /// [`Self::log_failure`] with a query vector that leaves out `dropped` low bits.
    fn log_failure_dropping(&self, dropped: u32) -> f64 {
        let one = packed_log_failure(PLAINTEXT_BITS, self.columns(), dropped, 1.0, 1.0);
        one + (self.packing().ciphertexts as f64).log2()
    }

    /// Low bits of each entry of the query vector that a query leaves out: the most (up to
    /// [`MAX_DROPPED_BITS`]) that keep a query's failure within 2^-41.
    pub fn query_dropped(&self) -> u32 {
        (0..=MAX_DROPPED_BITS)
            .rev()
            .find(|&k| self.log_failure_dropping(k) <= -f64::from(LOG_FAILURE + 1))
            .unwrap_or(0)
    }

    /// How the rows are packed.
    pub fn packing(&self) -> Packing {
        Packing::of_rows(self.rows() as usize)
    }

    /// The column of record `index` and the bit its stream starts at.
    pub fn locate(&self, index: u64) -> Result<(u64, u64), PirError> {
        if index >= self.records {
            return Err(PirError::IndexOutOfRange {
                index,
                records: self.records,
            });
        }
        let within = index % self.per_column;
        Ok((index / self.per_column, within * self.record_bytes * 8))
    }
}

/// How `rows` rows are packed: in groups of `group` (a power of two, at most `d`), one
/// ciphertext each, row `i` of a group at coefficient `i · d / group`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Packing {
    /// Rows per ciphertext.
    pub group: usize,
    /// Ciphertexts.
    pub ciphertexts: usize,
}

impl Packing {
    /// The packing of `rows` rows: `d` per ciphertext, or all in one if fewer.
    pub fn of_rows(rows: usize) -> Self {
        let group = rows.max(1).next_power_of_two().min(DEGREE);
        Self {
            group,
            ciphertexts: rows.max(1).div_ceil(group),
        }
    }
}

impl YpirShape {
    /// The layout for `records` records of `record_bytes` bytes: the widest digits (at most 8
    /// bits) that keep a query within its failure bound, and the records per row that make the
    /// query smallest (`4·k·C + 7·R` bytes for `k` digits, `C` columns and `R` rows).
    pub fn plan(records: u64, record_bytes: u64) -> Result<Self, PirError> {
        check_counts(records, record_bytes)?;
        let mut last = None;
        for log_p in (1..=8u8).rev() {
            let digits = (record_bytes * 8).div_ceil(u64::from(log_p));
            if digits > MAX_DOUBLE_DIGITS {
                break;
            }
            let best = ((7.0 * records as f64 / (4.0 * (digits * digits) as f64)).sqrt()).round();
            let per_row = (best as u64).clamp(1, records);
            match Self::new(records, record_bytes, log_p, per_row) {
                Ok(shape) => return Ok(shape),
                Err(e) => last = Some(e),
            }
        }
        Err(last.unwrap_or_else(|| {
            PirError::InvalidParameters(format!(
                "records of {record_bytes} bytes have more than YPIR's {MAX_DOUBLE_DIGITS} digits; \
                 use YPIR+SP"
            ))
        }))
    }

    /// The layout with `log_p`-bit digits and `per_row` records per row; checks that it fits
    /// the limits and is correct for any data.
    pub fn new(records: u64, record_bytes: u64, log_p: u8, per_row: u64) -> Result<Self, PirError> {
        check_counts(records, record_bytes)?;
        if !(1..=8).contains(&log_p) || per_row == 0 || per_row > records {
            return Err(PirError::InvalidParameters(format!(
                "{log_p}-bit digits and {per_row} records per row for {records} records"
            )));
        }
        let shape = Self {
            records,
            record_bytes,
            log_p,
            per_row,
        };
        if shape.digits() > MAX_DOUBLE_DIGITS {
            return Err(PirError::InvalidParameters(format!(
                "records of {} digits: YPIR takes at most {MAX_DOUBLE_DIGITS}",
                shape.digits()
            )));
        }
        check_size(shape.rows(), shape.columns(), records, record_bytes)?;
        if shape.log_failure() > -f64::from(LOG_FAILURE) {
            return Err(PirError::InvalidParameters(format!(
                "{}-bit digits over {} columns fail more often than 2^-{LOG_FAILURE}",
                log_p,
                shape.columns()
            )));
        }
        Ok(shape)
    }

    /// Records.
    pub fn records(&self) -> u64 {
        self.records
    }

    /// Bytes per record.
    pub fn record_bytes(&self) -> u64 {
        self.record_bytes
    }

    /// Bits per first-layer digit.
    pub fn log_p(&self) -> u8 {
        self.log_p
    }

    /// Records per row.
    pub fn per_row(&self) -> u64 {
        self.per_row
    }

    /// Digits per record: first-layer queries per query.
    pub fn digits(&self) -> u64 {
        (self.record_bytes * 8).div_ceil(u64::from(self.log_p))
    }

    /// First-layer columns.
    pub fn columns(&self) -> u64 {
        self.per_row * self.digits()
    }

    /// First-layer rows: the second layer's columns.
    pub fn rows(&self) -> u64 {
        self.records.div_ceil(self.per_row)
    }

    /// `log2` of the probability that a query fails: the first layer's digits, the packed
    /// layer's hint chunks (exact) and its answer chunks (off by one tolerated).
    pub fn log_failure(&self) -> f64 {
        log_sum(
            self.first_log_failure(self.first_dropped()),
            self.packed_log_failure(self.packed_dropped()),
        )
    }

    /// The first layer's part of [`Self::log_failure`], its vectors rounded by `dropped` bits.
    fn first_log_failure(&self, dropped: u32) -> f64 {
        let half = 1u64 << (self.log_p - 1);
        let worst_norm = self.columns().saturating_mul(half * half);
        first_log_failure(u32::from(self.log_p), worst_norm, dropped)
            + (self.digits() as f64).log2()
    }

    /// The packed layer's part of [`Self::log_failure`], its vector rounded by `dropped` bits.
    fn packed_log_failure(&self, dropped: u32) -> f64 {
        let hint = packed_log_failure(PLAINTEXT_BITS, self.rows(), dropped, 1.0, 1.0);
        let answers = packed_log_failure(PLAINTEXT_BITS, self.rows(), dropped, 2.0, 3.0);
        log_sum(hint, answers)
    }

    /// Low bits of each entry of the first-layer vectors that a query leaves out: the most (up
    /// to [`MAX_DROPPED_BITS`]) that keep the first layer's failure within 2^-42.
    pub fn first_dropped(&self) -> u32 {
        (0..=MAX_DROPPED_BITS)
            .rev()
            .find(|&k| self.first_log_failure(k) <= -f64::from(LOG_FAILURE + 2))
            .unwrap_or(0)
    }

    /// Low bits of each entry of the packed layer's vector that a query leaves out: the most
    /// (up to [`MAX_DROPPED_BITS`]) that keep the packed layer's failure within 2^-42.
    pub fn packed_dropped(&self) -> u32 {
        (0..=MAX_DROPPED_BITS)
            .rev()
            .find(|&k| self.packed_log_failure(k) <= -f64::from(LOG_FAILURE + 2))
            .unwrap_or(0)
    }

    /// Chunks of a row's answers: `⌈28·k / 15⌉`.
    pub fn answer_chunks(&self) -> usize {
        (self.digits() * u64::from(ROUNDED_BITS)).div_ceil(u64::from(PLAINTEXT_BITS)) as usize
    }

    /// The answers' packing: a power of two of ciphertexts, at least one per answer chunk.
    pub fn answer_group(&self) -> usize {
        self.answer_chunks().next_power_of_two()
    }

    /// The coefficient of answer chunk `i`: the last of the `i`-th of [`Self::answer_group`]
    /// equal stretches.
    pub fn answer_position(&self, i: usize) -> usize {
        (i + 1) * (DEGREE / self.answer_group()) - 1
    }

    /// The coefficients of the hint's chunks, in order: every other one.
    pub fn hint_positions(&self) -> Vec<usize> {
        let stride = DEGREE / self.answer_group();
        let answers = self.answer_chunks();
        (0..DEGREE)
            .filter(|&c| (c + 1) % stride != 0 || (c + 1) / stride > answers)
            .take(HINT_CHUNKS)
            .collect()
    }

    /// The row of record `index` and its first column.
    pub fn locate(&self, index: u64) -> Result<(u64, u64), PirError> {
        if index >= self.records {
            return Err(PirError::IndexOutOfRange {
                index,
                records: self.records,
            });
        }
        Ok((index / self.per_row, (index % self.per_row) * self.digits()))
    }
}

impl Shape {
    /// The layout of `variant` for `records` records of `record_bytes` bytes.
    pub fn plan(variant: Variant, records: u64, record_bytes: u64) -> Result<Self, PirError> {
        Ok(match variant {
            Variant::YpirSp => Self::YpirSp(YpirSpShape::plan(records, record_bytes)?),
            Variant::Ypir => Self::Ypir(YpirShape::plan(records, record_bytes)?),
        })
    }

    /// Its variant.
    pub fn variant(&self) -> Variant {
        match self {
            Self::YpirSp(_) => Variant::YpirSp,
            Self::Ypir(_) => Variant::Ypir,
        }
    }

    /// Records.
    pub fn records(&self) -> u64 {
        match self {
            Self::YpirSp(s) => s.records,
            Self::Ypir(s) => s.records,
        }
    }

    /// Bytes per record.
    pub fn record_bytes(&self) -> u64 {
        match self {
            Self::YpirSp(s) => s.record_bytes,
            Self::Ypir(s) => s.record_bytes,
        }
    }

    /// `log2` of the probability that a query fails.
    pub fn log_failure(&self) -> f64 {
        match self {
            Self::YpirSp(s) => s.log_failure(),
            Self::Ypir(s) => s.log_failure(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hint_and_the_answers_share_the_coefficients() {
        assert_eq!(HINT_CHUNKS, 1912);
        assert_eq!(MAX_DOUBLE_DIGITS, 72);
        for bytes in [1u64, 3, 8, 9, 72] {
            let shape = YpirShape::plan(1000, bytes).unwrap();
            let hint = shape.hint_positions();
            assert_eq!(hint.len(), HINT_CHUNKS);
            let answers: Vec<usize> = (0..shape.answer_chunks())
                .map(|i| shape.answer_position(i))
                .collect();
            assert!(answers.iter().all(|&c| c < DEGREE && !hint.contains(&c)));
            let mut all: Vec<usize> = hint.iter().chain(&answers).copied().collect();
            all.sort_unstable();
            all.dedup();
            assert_eq!(all.len(), HINT_CHUNKS + shape.answer_chunks());
        }
        assert!(YpirShape::plan(10, 73).is_err());
    }

    #[test]
    fn one_byte_records_make_a_balanced_first_layer() {
        let shape = YpirShape::plan(1 << 30, 1).unwrap();
        assert_eq!(shape.log_p(), 8);
        assert_eq!(shape.digits(), 1);
        // 4·C ≈ 7·R.
        let (c, r) = (shape.columns() as f64, shape.rows() as f64);
        assert!((4.0 * c / (7.0 * r) - 1.0).abs() < 0.01, "{c} x {r}");
        assert!(shape.log_failure() < -40.0);
        assert_eq!(shape.answer_chunks(), 2);
        assert_eq!(
            (shape.answer_position(0), shape.answer_position(1)),
            (1023, 2047)
        );
    }

    #[test]
    fn ypir_sp_shapes_pack_about_the_square_root() {
        let sp = YpirSpShape::plan(1 << 15, 32 << 10).unwrap();
        assert_eq!(
            (sp.per_column(), sp.columns(), sp.rows()),
            (1, 1 << 15, 17477)
        );
        assert_eq!(
            sp.packing(),
            Packing {
                group: 2048,
                ciphertexts: 9
            }
        );
        let small = YpirSpShape::plan(1000, 3).unwrap();
        assert!(small.rows() <= 64, "{small:?}");
        assert_eq!(small.packing().ciphertexts, 1);
        assert!(small.locate(1000).is_err());
        assert_eq!(small.locate(0).unwrap(), (0, 0));
        assert!(YpirSpShape::plan(0, 3).is_err());
        assert!(YpirSpShape::plan(3, 0).is_err());
    }

    #[test]
    fn the_variant_follows_the_records() {
        assert_eq!(Variant::auto(1 << 30, 1), Variant::Ypir);
        assert_eq!(Variant::auto(1000, 3), Variant::YpirSp);
        assert_eq!(Variant::auto(1 << 15, 32 << 10), Variant::YpirSp);
    }
}
