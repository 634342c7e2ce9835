//! The DoublePIR public setup: the first layer without its hint, the second layer's LWE setup
//! (whose hint is the one the client downloads), and its wire codec.

use sha2::{Digest as _, Sha256};

use crate::lwe::{self, EngineOptions, Geometry, Layer, Layout, RecordFormat};
use crate::params::{ParamSet, LOG_FAILURE};
use crate::wire::{self, Digest, Kind, Reader};
use crate::PirError;

/// Bytes of one first-layer answer entry, a record of the second layer's answer part.
pub(super) const ENTRY_BYTES: u64 = 4;

/// The public setup of a DoublePIR database.
///
/// The first layer is the database `D` (R x C digits) as the LWE engine lays it out; its hint
/// `H1 = D·A1` is not published. The second layer is an LWE-engine database whose records are
/// the rows of `H1` (4n bytes each, one per column: a rows2 x R matrix of digits), and its
/// public setup carries that database's hint `H2`, what a client downloads: rows2 x n words,
/// independent of the database's size.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PublicSetup {
    first: Layer,
    second: lwe::PublicSetup,
    digest: Digest,
}

impl PublicSetup {
    /// Assembles a setup; checks that the second layer holds one record per row of the first,
    /// each a row of the first layer's hint, with a plaintext modulus that is correct for any
    /// digits (the digits of each first-layer answer are the second layer's per-query part).
    pub fn new(first: Layer, second: lwe::PublicSetup) -> Result<Self, PirError> {
        let set = first.params().set;
        let g = first.geometry();
        if !set.correct_at(g.log_p(), first.row_norm(), first_log_failure(g)) {
            return Err(PirError::InvalidParameters(format!(
                "plaintext modulus 2^{} is not correct for the first layer's rows at 2^-{} per digit",
                g.log_p(),
                first_log_failure(g)
            )));
        }
        let expected = second_geometry(g.rows(), set, max_rows_per_record(g))?;
        let second_layer = second.layer();
        if second_layer.geometry() != &expected
            || second_layer.format() != RecordFormat::Raw
            || second_layer.params().set != first.params().set
        {
            return Err(PirError::InvalidParameters(format!(
                "the second layer ({} x {}, {}) does not hold the rows of a {} x {} first layer's hint",
                second.geometry().rows(),
                second.geometry().cols(),
                second_layer.params().set.name(),
                first.geometry().rows(),
                first.geometry().cols(),
            )));
        }
        let mut hash = Sha256::new();
        hash.update(b"obscura/double/setup/v1");
        first.hash_into(&mut hash);
        hash.update(second.digest());
        let digest = hash.finalize().into();
        Ok(Self {
            first,
            second,
            digest,
        })
    }

    /// The first layer: the database's parameters, geometry and seed.
    pub fn first(&self) -> &Layer {
        &self.first
    }

    /// The second layer's setup: the records are the rows of the first layer's hint, and its
    /// hint is the one clients hold.
    pub fn second(&self) -> &lwe::PublicSetup {
        &self.second
    }

    /// The digest that names this setup.
    pub fn digest(&self) -> &Digest {
        &self.digest
    }

    /// Second-layer queries per query: the most first-layer rows a record spans (a query asks
    /// for as many rows whatever the record, so that it does not tell which one it wants).
    pub fn rows_per_query(&self) -> u64 {
        max_rows_per_record(self.first.geometry())
    }

    /// The geometry of one first-layer answer as a second-layer database: one entry
    /// (a 4-byte word) per column, as digits of the second layer's modulus.
    pub fn answer_geometry(&self) -> Geometry {
        let rows = self.first.geometry().rows();
        Geometry::with_log_p(
            rows * ENTRY_BYTES,
            ENTRY_BYTES,
            Layout::OnePerColumn,
            self.second.geometry().log_p(),
        )
        .expect("a geometry checked at setup")
    }

    /// Rows of the second layer's answer to one of its queries: the digits of a row of the
    /// first layer's hint, then those of its answer entry.
    pub fn second_answer_rows(&self) -> u64 {
        self.second.geometry().rows() + self.answer_geometry().rows()
    }

    /// Bytes of the encoded setup.
    pub(super) fn encoded_len(&self) -> u64 {
        let second = lwe::PublicSetup::encoded_len(self.second.geometry(), self.first.params().set);
        (wire::HEADER_BYTES + Layer::ENCODED_BYTES) as u64 + second
    }

    /// The encoded setup: the envelope, the first layer, then the second layer's setup.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.encoded_len() as usize);
        wire::write_header(&mut out, Kind::DOUBLE_SETUP, &self.digest);
        self.first.write(&mut out);
        self.second.write(&mut out);
        out
    }

    /// Decodes a setup; every length is checked before allocating and the digest is recomputed.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, PirError> {
        let (mut reader, digest) = Reader::open(bytes, Kind::DOUBLE_SETUP)?;
        let first = Layer::read(&mut reader)?;
        let second = lwe::PublicSetup::from_bytes(reader.rest())?;
        let setup =
            Self::new(first, second).map_err(|e| PirError::inconsistent("DoublePIR setup", e))?;
        if setup.digest != digest {
            return Err(PirError::malformed(
                "DoublePIR setup",
                "the parameter digest does not match the contents",
            ));
        }
        Ok(setup)
    }
}

/// The second layer's geometry for a first layer of `rows` rows under `set`, `rows_per_query`
/// second-layer queries per query: one record per column, a row of the first layer's hint (4n
/// bytes), with the plaintext modulus that is correct for any digits over `rows` columns (the
/// per-query digits of the first answer are not known at setup) at
/// [`second_log_failure`].
pub(super) fn second_geometry(
    rows: u64,
    set: ParamSet,
    rows_per_query: u64,
) -> Result<Geometry, PirError> {
    let record_bytes = set.n() as u64 * ENTRY_BYTES;
    let data_bytes = rows.checked_mul(record_bytes).ok_or_else(|| {
        PirError::InvalidParameters(format!("{rows} rows are too many for a second layer"))
    })?;
    Geometry::plan_at(data_bytes, record_bytes, Layout::OnePerColumn, set, |g| {
        second_log_failure(rows_per_query, g)
    })
}

/// The first layer's options for `data_bytes` bytes of records of `record_bytes` bytes: a
/// [`Layout::Square`] layout becomes the shape that balances the query's two parts, the
/// first layer's columns against the second-layer queries (one per row a record spans, each as
/// long as the first layer has rows). With `d` digits per record and `N` records, `k = √N / d`
/// records per column give about `√N` rows and `d·√N` columns: for records of one digit
/// that is the square, and for wider ones the second layer, a column per first-layer row and
/// a pass per row of a record, shrinks by `√d` while the query does too. Other layouts are
/// kept.
pub(super) fn first_options(
    data_bytes: u64,
    record_bytes: u64,
    options: EngineOptions,
) -> Result<EngineOptions, PirError> {
    if options.layout != Layout::Square {
        return Ok(options);
    }
    let square = Geometry::plan_at(
        data_bytes,
        record_bytes,
        Layout::Square,
        options.params,
        first_log_failure,
    )?;
    let digits = (record_bytes * 8).div_ceil(u64::from(square.log_p()));
    let per_column = ((square.records() as f64).sqrt() / digits as f64).round() as u64;
    Ok(EngineOptions {
        layout: Layout::PerColumn(per_column.max(1)),
        ..options
    })
}

/// The failure exponent of each first-layer digit: a record decodes at most
/// [`max_rows_per_record`] of them, which share half of the 2^-40 a record may fail with.
pub(super) fn first_log_failure(geometry: &Geometry) -> u32 {
    LOG_FAILURE + 1 + ceil_log2(max_rows_per_record(geometry))
}

/// The failure exponent of each second-layer digit: a record decodes, for each of its
/// `rows_per_query` rows, the digits of a row of the first layer's hint and of an answer
/// entry, which share the other half of the 2^-40.
pub(super) fn second_log_failure(rows_per_query: u64, geometry: &Geometry) -> u32 {
    let entry_digits = (ENTRY_BYTES * 8).div_ceil(u64::from(geometry.log_p()));
    LOG_FAILURE + 1 + ceil_log2(rows_per_query * (geometry.rows() + entry_digits))
}

/// `⌈log2 x⌉` for `x ≥ 1`.
fn ceil_log2(x: u64) -> u32 {
    u64::BITS - x.max(1).saturating_sub(1).leading_zeros()
}

/// The most rows any record of `geometry` spans: a record starts `k·8B` bits into its column,
/// and those offsets modulo the digit width repeat every 8 records at most.
pub(super) fn max_rows_per_record(geometry: &Geometry) -> u64 {
    let (bits, width) = (geometry.record_bytes() * 8, u64::from(geometry.log_p()));
    (0..geometry.per_column().min(8))
        .map(|k| {
            let start = k * bits;
            (start + bits - 1) / width - start / width + 1
        })
        .max()
        .unwrap_or(1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::params::worst_row_norm;

    #[test]
    fn the_widest_record_is_found() {
        // 3-byte records as 7-bit digits: offsets 0, 24, 48, ... bits; a record at offset 48
        // (bit 6 of row 6) spans rows 6..=10.
        let g = Geometry::new(100, 3, 300, 10, 7).unwrap();
        let widest = (0..100).map(|i| g.locate(i).unwrap().row_count).max();
        assert_eq!(Some(max_rows_per_record(&g)), widest);
        let bytes = Geometry::new(100, 3, 300, 10, 8).unwrap();
        assert_eq!(max_rows_per_record(&bytes), 3);
        let one = Geometry::new(5, 1, 5, 1, 8).unwrap();
        assert_eq!(max_rows_per_record(&one), 1);
    }

    /// A first layer whose modulus passes the engine's 2^-40 per digit but not DoublePIR's
    /// stricter budget is refused, as is a second layer of another shape.
    #[test]
    fn setups_outside_the_failure_budget_are_refused() {
        use obscura_math::expand::MatrixSeed;
        use obscura_math::matrix::Matrix;

        let set = ParamSet::Ypir1024;
        let kind = crate::params::MatrixKind::Negacyclic;
        // 2^20 columns: enough that the worst row norm passes the bound's limit.
        let first_geometry = Geometry::new(1 << 20, 1, 1 << 20, 1, 8).unwrap();
        // The largest row norm the engine's bound allows at p = 2^8.
        let (mut low, mut high) = (1u64, 1u64 << 40);
        while low < high {
            let mid = low + (high - low).div_ceil(2);
            if set.correct_at(8, mid, LOG_FAILURE) {
                low = mid;
            } else {
                high = mid - 1;
            }
        }
        assert!(!set.correct_at(8, low, first_log_failure(&first_geometry)));
        let second_geometry = second_geometry(first_geometry.rows(), set, 1).unwrap();
        let second = lwe::PublicSetup::new(
            set,
            kind,
            RecordFormat::Raw,
            second_geometry,
            0,
            MatrixSeed([2; 16]),
            Matrix::zeros(second_geometry.rows() as usize, set.n()),
        )
        .unwrap();
        let layer = |row_norm| {
            Layer::new(
                set,
                kind,
                RecordFormat::Raw,
                first_geometry,
                row_norm,
                MatrixSeed([1; 16]),
            )
            .unwrap()
        };
        assert!(PublicSetup::new(layer(1000), second.clone()).is_ok());
        assert!(PublicSetup::new(layer(low), second.clone()).is_err());
        let narrower = Geometry::new(1 << 20, 1, 1 << 20, 2, 8).unwrap();
        let other = Layer::new(
            set,
            kind,
            RecordFormat::Raw,
            narrower,
            1000,
            MatrixSeed([1; 16]),
        );
        assert!(PublicSetup::new(other.unwrap(), second).is_err());
    }

    #[test]
    fn square_first_layers_balance_the_query() {
        let options = EngineOptions::default();
        let first = |records: u64, record_bytes: u64, options| {
            let data = records * record_bytes;
            let layout = first_options(data, record_bytes, options).unwrap().layout;
            Geometry::plan_at(
                data,
                record_bytes,
                layout,
                options.params,
                first_log_failure,
            )
            .unwrap()
        };
        // One-byte records: the square.
        let bytes = first(1 << 20, 1, options);
        assert_eq!((bytes.rows(), bytes.cols()), (1024, 1024));
        // 3-byte records span 3 rows: about √N rows, and the query's two parts (the columns
        // and 3 second-layer queries of a row each) within a few percent of each other.
        let g = first(10_000, 3, options);
        assert_eq!(max_rows_per_record(&g), 3);
        assert!((90..=110).contains(&g.rows()), "{} rows", g.rows());
        let (columns, second) = (g.cols() as f64, 3.0 * g.rows() as f64);
        assert!(
            (columns / second - 1.0).abs() < 0.05,
            "{columns} against {second}"
        );
        // Another layout is kept.
        let kept = EngineOptions {
            layout: Layout::PerColumn(7),
            ..options
        };
        assert_eq!(first(10_000, 3, kept).per_column(), 7);
    }

    #[test]
    fn the_second_layer_is_correct_for_any_digits() {
        let g = second_geometry(32768, ParamSet::Ypir1024, 1).unwrap();
        assert_eq!((g.cols(), g.log_p(), g.rows()), (32768, 8, 4096));
        // 4096 + 4 digits per row: 2^-54 each.
        assert_eq!(second_log_failure(1, &g), 54);
        assert!(ParamSet::Ypir1024.correct_at(8, worst_row_norm(32768, 8), 54));
        assert!(second_geometry(u64::MAX, ParamSet::Ypir1024, 1).is_err());
        assert_eq!(
            (ceil_log2(1), ceil_log2(2), ceil_log2(3), ceil_log2(4100)),
            (0, 1, 2, 13)
        );
    }
}
