//! The plan of a store, from the key count and the values' lengths alone: the filter, the row,
//! the geometry planned for any data and the widest digits worth trying first.

use super::fuse::{Arity, FuseShape, MAX_KEYS};
use super::row::{length_bytes, row_header};
use super::KeywordOptions;
use crate::lwe::{Geometry, Layout};
use crate::params::ParamSet;
use crate::PirError;

/// The shape of a store, from the key count and the values' lengths alone: the filter, the row
/// and the geometry planned for any data.
pub(super) struct StorePlan {
    pub(super) shape: FuseShape,
    pub(super) length_bytes: u8,
    pub(super) row_bytes: u64,
    pub(super) planned: Geometry,
}

impl StorePlan {
    /// The plan for `keys` keys whose longest value has `max_value` bytes (`uniform`: every
    /// value that long); 3 slots per key below 10^5 keys and 4 from there unless `options` say.
    pub(super) fn new(
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

/// The widest digits worth encoding a store of `keys` pairs with: the largest `log_p` (above
/// `planned`, which fits any data) at which the expected row norm passes the correctness
/// bound. Each key fills one slot with a digit that its mask makes uniform, the other slots stay
/// zero, so a row's squared norm is about `keys·(p² + 2)/12` (the mean square of a uniform
/// centered digit). Trying this width first spares encodings that would fail; the measured
/// norm still decides.
pub(super) fn likely_log_p(set: ParamSet, keys: u64, planned: u8) -> u8 {
    (planned + 1..=crate::params::MAX_LOG_P)
        .rev()
        .find(|&log_p| {
            let p = 1u64 << log_p;
            set.correct_for_row_norm(log_p, keys.saturating_mul(p * p + 2) / 12)
        })
        .unwrap_or(planned)
}
