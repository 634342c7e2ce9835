//! Records replaced in place: the next version of a database without a new setup.
//!
//! A record's bytes lie in one column, over the rows its bits cover (the first and last of them
//! possibly shared with its neighbours, see [`Geometry::locate`]). Replacing it rewrites those
//! digits (each column's changes in turn, so neighbours sharing a digit compose) and adds
//! `ΔD·A` to the hint in place, a run of entries down a column at a time
//! ([`obscura_math::hint_delta`]): work in proportion to the changed entries, `n` multiply-adds
//! each, besides hashing the pieces of the hint those rows lie in (the first update of a server
//! also reads its database once for the rows' norms, which it then keeps). Everything is
//! checked first ([`Server::prepare`]); only then are the digits and the hint changed
//! ([`Server::commit`]). The new version's setup has a new digest (its version and
//! its hint's hash enter it), so queries made with the old one are refused.
//!
//! The result is the setup and database a build of the new records would make with the same
//! seed and geometry. A change that the setup cannot take — rows whose new norm the plaintext
//! modulus is not correct for, a value longer than the slots — is refused with
//! [`PirError::NeedsNewSetup`] before anything changes.

use std::borrow::Cow;
use std::ops::Range;
use std::sync::{Mutex, PoisonError};

use obscura_math::hint_delta::{self, ColumnRuns};
use obscura_math::pack;
use rayon::prelude::*;

use super::layout::{Geometry, RecordLocation};
use super::patch;
use super::server::centered;
use super::setup::{fill_value_slot, Layer, RecordFormat};
use super::{PublicSetup, Server};
use crate::{Change, PirError};

/// A record changed: its index, where it lies and the bytes its slot is to hold.
pub(crate) type Slot<'a, L = RecordLocation> = (u64, L, Cow<'a, [u8]>);

/// The entries of the database matrix to rewrite, as runs down columns: each entry's change
/// (new digit minus old, both centered and read as signed) and, in the same order, its new
/// digit.
#[derive(Default)]
struct Rewrites {
    deltas: ColumnRuns,
    digits: Vec<u8>,
}

impl Rewrites {
    /// Adds the other's runs after these.
    fn append(&mut self, other: &Rewrites) {
        self.deltas.append(&other.deltas);
        self.digits.extend_from_slice(&other.digits);
    }

    /// The rows the runs cover.
    fn touched_rows(&self) -> Vec<Range<usize>> {
        self.deltas.iter().map(|run| run.rows()).collect()
    }

    /// Each run's column, first row and new digits.
    fn runs(&self) -> Vec<(usize, usize, &[u8])> {
        let mut at = 0;
        self.deltas
            .iter()
            .map(|run| {
                let digits = &self.digits[at..at + run.deltas.len()];
                at += run.deltas.len();
                (run.col, run.first_row, digits)
            })
            .collect()
    }
}

/// A server's next version, checked, not yet made ([`Server::prepare`]): its layer, the
/// digits to write and the entries' changes its hint takes, and the rows' new norms.
pub(crate) struct Prepared {
    layer: Layer,
    rewrites: Rewrites,
    norms: Vec<u64>,
}

impl Prepared {
    /// The next version's setup, made beside `current` (the setup it was prepared from),
    /// whose hint it copies.
    pub(crate) fn next_setup(&self, current: &PublicSetup) -> Result<PublicSetup, PirError> {
        let mut hint = current.hint().clone();
        hint_delta::apply(&mut hint, &current.matrix_a(), &self.rewrites.deltas);
        let touched = self.rewrites.touched_rows();
        current.next_version(self.layer.clone(), hint, Some(&touched))
    }
}

impl Server {
    /// [`crate::PirServer::update`] of the engine: records set, appended (within
    /// the matrix's slots: those its columns have past the records, which a build reserves
    /// with [`EngineOptions::capacity`](super::EngineOptions::capacity)) or deleted (databases of
    /// values only: fixed-size records use every bit of their slot and have no absent state),
    /// their digits rewritten and `ΔD·A` added to the hint, with a new setup digest. For a
    /// database of fixed-size records a value is the record's bytes (as many as the record
    /// has); for one of values, any value that fits the slots.
    ///
    /// Everything is checked before anything changes: an index out of range
    /// ([`PirError::IndexOutOfRange`]); an index given twice, appends that do not follow the
    /// last record, a value of the wrong length, a key change or a deletion of a fixed-size
    /// record ([`PirError::InvalidParameters`]); appends past the capacity, a value longer than
    /// the slots or rows whose new norm the plaintext modulus is not correct for
    /// ([`PirError::NeedsNewSetup`]).
    ///
    /// Returns the [patch](super::patch) that turns the previous version's setup into the new
    /// one.
    pub(super) fn apply_changes(&mut self, changes: &[Change]) -> Result<Vec<u8>, PirError> {
        let prepared = self.prepare(changes)?;
        Ok(self.commit(prepared))
    }

    /// Everything [`Server::apply_changes`] checks and computes before anything changes: the
    /// next version's layer, the digits to write and the entries' changes.
    pub(crate) fn prepare(&mut self, changes: &[Change]) -> Result<Prepared, PirError> {
        let setup = self.public_setup();
        let geometry = grown(setup.geometry(), changes)?;
        let rewrites = self.rewrites(&geometry, changes)?;
        let square = |digit: i32| (digit * digit) as u64;
        let (_, norms) = self.database_and_norms_mut();
        let mut new_norms = norms.clone();
        for ((_, row, digits), run) in rewrites.runs().into_iter().zip(rewrites.deltas.iter()) {
            for ((norm, &new), &delta) in new_norms[row..].iter_mut().zip(digits).zip(run.deltas) {
                let new = i32::from(new as i8);
                *norm = *norm + square(new) - square(new - i32::from(delta));
            }
        }
        let row_norm = new_norms.iter().copied().max().unwrap_or(0);
        let setup = self.public_setup();
        // The new norm, checked before anything changes.
        let layer = setup
            .layer()
            .with_contents(geometry, row_norm)
            .map_err(|cause| PirError::NeedsNewSetup(Box::new(cause)))?;
        Ok(Prepared {
            layer,
            rewrites,
            norms: new_norms,
        })
    }

    /// Makes `prepared` (from [`Server::prepare`] of this server) the server's next version,
    /// its hint changed in place by `ΔD·A`; returns its patch.
    pub(crate) fn commit(&mut self, prepared: Prepared) -> Vec<u8> {
        let base = *self.public_setup().digest();
        let rewrites = self.advance(prepared);
        patch::encode(&base, self.public_setup(), &rewrites.deltas)
    }

    /// [`Server::apply_changes`] without making the patch ([`crate::PirServer::replay`]).
    pub(super) fn replay_changes(&mut self, changes: &[Change]) -> Result<(), PirError> {
        let prepared = self.prepare(changes)?;
        self.advance(prepared);
        Ok(())
    }

    /// Makes `prepared` the server's next version as [`Server::commit`] does, without its
    /// patch; returns the entries rewritten.
    fn advance(&mut self, prepared: Prepared) -> Rewrites {
        let Prepared {
            layer,
            rewrites,
            norms,
        } = prepared;
        self.rewrite(&rewrites, norms);
        let a = self.public_setup().matrix_a();
        let touched = rewrites.touched_rows();
        self.setup_mut().advance(
            layer,
            |hint| hint_delta::apply(hint, &a, &rewrites.deltas),
            &touched,
        );
        rewrites
    }

    /// Makes `prepared` the server's next version with `next`, the setup
    /// [`Prepared::next_setup`] made of the current one.
    pub(crate) fn commit_to(&mut self, prepared: Prepared, next: PublicSetup) {
        self.rewrite(&prepared.rewrites, prepared.norms);
        self.set_setup(next);
    }

    /// Writes the digits of `rewrites` and keeps the rows' new `norms`.
    fn rewrite(&mut self, rewrites: &Rewrites, new_norms: Vec<u64>) {
        let (database, norms) = self.database_and_norms_mut();
        database.write_columns(&rewrites.runs());
        *norms = new_norms;
    }

    /// The entries `changes` rewrite in a database of `geometry`, checked; in column order,
    /// each column's top to bottom.
    fn rewrites(&self, geometry: &Geometry, changes: &[Change]) -> Result<Rewrites, PirError> {
        let format = self.public_setup().format();
        let slots = record_slots(changes, format, |index| {
            let location = geometry.locate(index)?;
            Ok((location, location.len))
        })?;
        // Records lie in their columns in index order, so index order is column order, each
        // column's records top to bottom.
        let columns: Vec<&[Slot<'_>]> = slots.chunk_by(|a, b| a.1.column == b.1.column).collect();
        let per_column: Vec<Rewrites> = columns
            .par_iter()
            .map(|records| self.column_rewrites(records))
            .collect();
        let mut rewrites = Rewrites::default();
        for column in &per_column {
            rewrites.append(column);
        }
        Ok(rewrites)
    }

    /// The entries of the one column of `records` (top to bottom) that writing them rewrites,
    /// as runs: each record in turn over the column's current digits, so two neighbours sharing
    /// a digit both keep their bits (and share a run).
    fn column_rewrites(&self, records: &[Slot<'_>]) -> Rewrites {
        let geometry = self.public_setup().geometry();
        let width = u32::from(geometry.log_p());
        let mask = ((1u16 << width) - 1) as u8;
        let database = self.database();
        let col = records[0].1.column as usize;
        let mut rewrites = Rewrites::default();
        // The current run: its first row, and each row's old digit and new raw digit (in
        // `[0, 2^width)`); a record's first row may be the previous one's last.
        let mut first = 0;
        let mut rows: Vec<(u8, u8)> = Vec::new();
        let mut flush = |first: usize, rows: &mut Vec<(u8, u8)>| {
            let deltas: Vec<i16> = rows
                .iter()
                .map(|&(old, raw)| hint_delta::delta(old, centered(raw, width)))
                .collect();
            rewrites.deltas.push(col, first, &deltas);
            rewrites
                .digits
                .extend(rows.iter().map(|&(_, raw)| centered(raw, width)));
            rows.clear();
        };
        let (mut olds, mut digits, mut stream) = (Vec::new(), Vec::new(), Vec::new());
        for (_, location, bytes) in records {
            let start = location.first_row as usize;
            let end = start + location.row_count as usize;
            let shared = !rows.is_empty() && first + rows.len() - 1 == start;
            if !rows.is_empty() && !shared && first + rows.len() != start {
                flush(first, &mut rows);
            }
            if rows.is_empty() {
                first = start;
            }
            // Each row's old digit, read once, and its raw digit as the earlier records left it.
            olds.resize(end - start, 0);
            database.read_column(col, start..end, &mut olds);
            digits.clear();
            digits.extend(olds.iter().map(|&old| old & mask));
            if shared {
                let (old, raw) = rows.pop().expect("the shared row");
                (olds[0], digits[0]) = (old, raw);
            }
            let total = digits.len() as u64 * u64::from(width);
            // Enough zero digits after the rows for whole bytes of the stream.
            digits.extend([0; 8]);
            stream.clear();
            stream.resize(total.div_ceil(8) as usize, 0);
            pack::unpack_into(&digits, width, 0, &mut stream);
            write_bits(&mut stream, location.skip_bits, bytes);
            rows.extend(olds.iter().enumerate().map(|(i, &old)| {
                (
                    old,
                    pack::digit_at(&stream, i as u64 * u64::from(width), width, total),
                )
            }));
        }
        flush(first, &mut rows);
        rewrites
    }
}

/// The geometry of the database after `changes`' appends: the same matrix holding more
/// records, the appends being the indexes just past the last record.
fn grown(geometry: &Geometry, changes: &[Change]) -> Result<Geometry, PirError> {
    let mut appended: Vec<u64> = changes
        .iter()
        .filter_map(|change| match change {
            Change::Append { index, .. } => Some(*index),
            _ => None,
        })
        .collect();
    if appended.is_empty() {
        return Ok(*geometry);
    }
    appended.sort_unstable();
    let records = geometry.records();
    let total = records + appended.len() as u64;
    if let Some(index) = (records..)
        .zip(&appended)
        .find_map(|(next, &i)| (i != next).then_some(i))
    {
        return Err(PirError::InvalidParameters(format!(
            "an append at index {index}: the database has {records} records, so its appends take the indexes from {records} on, one each"
        )));
    }
    let capacity = geometry.cols() * geometry.per_column();
    if total > capacity {
        return Err(PirError::NeedsNewSetup(Box::new(
            PirError::InvalidParameters(format!(
                "{total} records are more than the {capacity} its matrix holds"
            )),
        )));
    }
    let grown = Geometry::new(
        total,
        geometry.record_bytes(),
        total * geometry.record_bytes(),
        geometry.per_column(),
        geometry.log_p(),
    )?
    .with_capacity(geometry.capacity().max(total))?;
    debug_assert_eq!(
        (grown.rows(), grown.cols()),
        (geometry.rows(), geometry.cols())
    );
    Ok(grown)
}

/// The records `changes` set, append or delete, in index order, each with where it lies and
/// its length (`locate` of its index) and the bytes its slot is to hold ([`slot`]). Refused: a
/// change by key, an index given twice, and whatever `locate` or [`slot`] refuses.
pub(crate) fn record_slots<'a, L: Send + Sync>(
    changes: &'a [Change],
    format: RecordFormat,
    locate: impl Fn(u64) -> Result<(L, u64), PirError> + Sync,
) -> Result<Vec<Slot<'a, L>>, PirError> {
    // Collected by position, straight into their places (a collection of results would
    // gather pieces and copy them again); the refusal reported is the earliest change's.
    let refusal = Mutex::new(None::<(usize, PirError)>);
    let slots: Vec<Option<Slot<'a, L>>> = changes
        .par_iter()
        .enumerate()
        .map(|(position, change)| {
            let made = (|| {
                let (index, value) = match change {
                    Change::Set { index, value } | Change::Append { index, value } => {
                        (*index, Some(value.as_slice()))
                    }
                    Change::Delete { index } => (*index, None),
                    Change::Upsert { .. } | Change::Remove { .. } => {
                        return Err(PirError::InvalidParameters(
                            "a database of records by index takes set, append and delete, not keys"
                                .into(),
                        ))
                    }
                };
                let (location, len) = locate(index)?;
                Ok((index, location, slot(format, index, value, len)?))
            })();
            made.map_err(|error| {
                let mut first = refusal.lock().unwrap_or_else(PoisonError::into_inner);
                if first.as_ref().is_none_or(|(at, _)| position < *at) {
                    *first = Some((position, error));
                }
            })
            .ok()
        })
        .collect();
    if let Some((_, error)) = refusal.into_inner().unwrap_or_else(PoisonError::into_inner) {
        return Err(error);
    }
    // In place: every change made a slot, or a refusal was returned above.
    let mut slots: Vec<Slot<'a, L>> = slots
        .into_iter()
        .map(|slot| slot.expect("a slot for every change"))
        .collect();
    if !slots.par_windows(2).all(|pair| pair[0].0 < pair[1].0) {
        slots.par_sort_unstable_by_key(|(index, _, _)| *index);
        if let Some(pair) = slots.windows(2).find(|pair| pair[0].0 == pair[1].0) {
            return Err(PirError::InvalidParameters(format!(
                "record {} is changed twice",
                pair[0].0
            )));
        }
    }
    Ok(slots)
}

/// The bytes a record's slot holds for `value` (`None`: deleted): the value itself for
/// fixed-size records (exactly `len` bytes, the record's length), its length and bytes,
/// zero-padded, for values.
fn slot(
    format: RecordFormat,
    index: u64,
    value: Option<&[u8]>,
    len: u64,
) -> Result<Cow<'_, [u8]>, PirError> {
    match (format, value) {
        (RecordFormat::Raw, Some(value)) if value.len() as u64 == len => Ok(Cow::Borrowed(value)),
        (RecordFormat::Raw, Some(value)) => Err(PirError::InvalidParameters(format!(
            "record {index} has {len} bytes; {} were given",
            value.len()
        ))),
        (RecordFormat::Raw, None) => Err(PirError::InvalidParameters(format!(
            "record {index} cannot be deleted: a database of fixed-size records uses every bit of each record and has no absent state (build it from CSV or JSON lines, whose values can be deleted)"
        ))),
        (RecordFormat::LengthPrefixed, value) => {
            let room = len.saturating_sub(4);
            let given = value.map_or(0, <[u8]>::len) as u64;
            if given > room {
                return Err(PirError::NeedsNewSetup(Box::new(
                    PirError::InvalidParameters(format!(
                        "a value of {given} bytes does not fit the database's slots of {room} bytes"
                    )),
                )));
            }
            let mut slot = vec![0u8; len as usize];
            fill_value_slot(&mut slot, value);
            Ok(Cow::Owned(slot))
        }
    }
}

/// Writes `bytes` over bits `skip ..` of the little-endian bit stream `stream`.
pub(crate) fn write_bits(stream: &mut [u8], skip: u64, bytes: &[u8]) {
    if skip.is_multiple_of(8) {
        let start = (skip / 8) as usize;
        stream[start..start + bytes.len()].copy_from_slice(bytes);
        return;
    }
    for (k, &byte) in bytes.iter().enumerate() {
        for b in 0..8 {
            let bit = skip + 8 * k as u64 + b;
            let (at, shift) = ((bit / 8) as usize, bit % 8);
            let value = (byte >> b) & 1;
            stream[at] = (stream[at] & !(1 << shift)) | (value << shift);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::server::encode_database;
    use super::super::setup::EngineOptions;
    use super::super::{Client, Layout};
    use super::*;
    use crate::params::ParamSet;
    use crate::{Found, PirClient, PirServer, Target};
    use obscura_math::hint;
    use proptest::prelude::*;

    /// `(index, value)` pairs as changes that set those records.
    fn sets(changes: &[(u64, Vec<u8>)]) -> Vec<Change> {
        changes
            .iter()
            .map(|(index, value)| Change::Set {
                index: *index,
                value: value.clone(),
            })
            .collect()
    }

    /// Record `index` of `data` (fixed-size records of `record_bytes`, the last one short).
    fn record(data: &[u8], record_bytes: usize, index: usize) -> &[u8] {
        &data[index * record_bytes..((index + 1) * record_bytes).min(data.len())]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(12))]

        /// After any sequence of updates the database and hint are those of the final records
        /// encoded with the same geometry and seed, every record decodes to its final value,
        /// and each version's digest is new.
        #[test]
        fn updates_leave_what_a_build_of_the_final_records_makes(
            records in 2usize..200,
            record_bytes in 1usize..40,
            short in 0usize..40,
            layout in 0usize..3,
            log_p in 3u8..=8,
            rounds in proptest::collection::vec(proptest::collection::vec((any::<usize>(), any::<u64>()), 1..12), 1..4),
            seed in any::<u64>(),
        ) {
            let mut x = seed | 1;
            let mut next = move || { x ^= x << 13; x ^= x >> 7; x ^= x << 17; x };
            let len = records * record_bytes - short.min(record_bytes - 1);
            let mut data: Vec<u8> = (0..len).map(|_| next() as u8 & 0x3f).collect();
            let layout = [Layout::Square, Layout::OnePerColumn, Layout::PerColumn(3)][layout];
            let options = EngineOptions { params: ParamSet::Ypir1024, layout, matrix: None, value_bytes: None, capacity: None };
            let mut server = Server::with_log_p(&data, record_bytes as u64, log_p, RecordFormat::Raw, options).unwrap();
            prop_assert_eq!(server.public_setup().geometry().log_p(), log_p);
            let mut digests = vec![*server.public_setup().digest()];
            for round in rounds {
                let mut changes: Vec<(u64, Vec<u8>)> = Vec::new();
                for (index, value_seed) in round {
                    let index = index % records;
                    if changes.iter().any(|(i, _)| *i as usize == index) {
                        continue;
                    }
                    let mut y = value_seed | 1;
                    let value: Vec<u8> = record(&data, record_bytes, index)
                        .iter()
                        .map(|_| { y ^= y << 13; y ^= y >> 7; y ^= y << 17; y as u8 & 0x3f })
                        .collect();
                    changes.push((index as u64, value));
                }
                let before = server.public_setup().clone();
                let mut replayed = server.clone();
                let patch = server.update(&sets(&changes)).unwrap().unwrap();
                // A version replayed from a log is the same version, without the patch.
                replayed.replay(&sets(&changes)).unwrap();
                prop_assert_eq!(replayed.public_setup(), server.public_setup());
                prop_assert!(replayed.database() == server.database());
                let encoded = before.to_bytes();
                prop_assert_eq!(&before.patched(&patch).unwrap(), server.public_setup());
                let in_place = super::super::patch::patch_encoded(encoded, &patch).unwrap();
                prop_assert_eq!(in_place, server.public_setup().to_bytes());
                for (index, value) in &changes {
                    let start = *index as usize * record_bytes;
                    data[start..start + value.len()].copy_from_slice(value);
                }
                digests.push(*server.public_setup().digest());
            }
            let setup = server.public_setup();
            let geometry = setup.geometry();
            let expected = encode_database(&data, geometry);
            prop_assert!(server.database() == &expected);
            let hint = hint::hint_product(&expected, &setup.matrix_a(), &|_, _| {});
            prop_assert_eq!(setup.hint(), &hint);
            prop_assert_eq!(setup.row_norm(), expected.max_row_norm());
            prop_assert_eq!(setup.version(), digests.len() as u64 - 1);
            let mut distinct = digests.clone();
            distinct.sort_unstable();
            distinct.dedup();
            prop_assert_eq!(distinct.len(), digests.len());
            let mut client = Client::new(setup.clone());
            for index in [0, records / 2, records - 1] {
                let (query, state) = client.query(index as u64).unwrap();
                let answer = server.answer(&query).unwrap();
                prop_assert_eq!(client.decode(state, &answer).unwrap(), record(&data, record_bytes, index));
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(12))]

        /// Values set, appended and deleted in any order leave the database and hint a build of
        /// the final slots makes; a deleted value reads as absent, and an append past the
        /// matrix's capacity needs a new setup.
        #[test]
        fn values_set_appended_and_deleted_match_a_build_of_the_final_slots(
            lengths in proptest::collection::vec(0usize..12, 2..60),
            per_column in 2u64..7,
            log_p in 3u8..=8,
            rounds in proptest::collection::vec(proptest::collection::vec((0u8..3, any::<usize>(), any::<u64>()), 1..10), 1..4),
        ) {
            let value = |seed: u64, len: usize| -> Vec<u8> {
                (0..len as u64).map(|k| (seed.wrapping_mul(0x9e37_79b9_7f4a_7c15).rotate_left(k as u32 * 7) as u8) & 0x7f).collect()
            };
            let mut current: Vec<Option<Vec<u8>>> =
                lengths.iter().enumerate().map(|(i, &len)| Some(value(i as u64, len))).collect();
            let room = lengths.iter().copied().max().unwrap();
            let slot_bytes = room + 4;
            let slots = |values: &[Option<Vec<u8>>]| -> Vec<u8> {
                let mut data = vec![0u8; values.len() * slot_bytes];
                for (value, slot) in values.iter().zip(data.chunks_exact_mut(slot_bytes)) {
                    fill_value_slot(slot, value.as_deref());
                }
                data
            };
            let options = EngineOptions {
                params: ParamSet::Ypir1024,
                layout: Layout::PerColumn(per_column),
                matrix: None,
                value_bytes: None,
                capacity: None,
            };
            let mut server = Server::with_log_p(
                &slots(&current), slot_bytes as u64, log_p, RecordFormat::LengthPrefixed, options,
            ).unwrap();
            let geometry = server.public_setup().geometry();
            let capacity = geometry.cols() * geometry.per_column();
            for round in rounds {
                let mut changes = Vec::new();
                let mut next = current.clone();
                for (op, index, seed) in round {
                    let index = index % current.len();
                    if changes.iter().any(|c| matches!(c, Change::Set { index: i, .. } | Change::Delete { index: i } if *i == index as u64)) {
                        continue;
                    }
                    match op {
                        0 => {
                            let v = value(seed, seed as usize % (room + 1));
                            next[index] = Some(v.clone());
                            changes.push(Change::Set { index: index as u64, value: v });
                        }
                        1 => {
                            next[index] = None;
                            changes.push(Change::Delete { index: index as u64 });
                        }
                        _ => {
                            let v = value(seed, seed as usize % (room + 1));
                            changes.push(Change::Append { index: next.len() as u64, value: v.clone() });
                            next.push(Some(v));
                        }
                    }
                }
                let before = server.public_setup().clone();
                let result = server.update(&changes);
                if next.len() as u64 > capacity {
                    prop_assert!(matches!(result, Err(PirError::NeedsNewSetup(_))), "{:?}", result);
                } else {
                    let patch = result.unwrap().unwrap();
                    prop_assert_eq!(&before.patched(&patch).unwrap(), server.public_setup());
                    current = next;
                }
            }
            let setup = server.public_setup();
            let geometry = setup.geometry();
            prop_assert_eq!(geometry.records(), current.len() as u64);
            let expected = encode_database(&slots(&current), geometry);
            prop_assert!(server.database() == &expected);
            let hint = hint::hint_product(&expected, &setup.matrix_a(), &|_, _| {});
            prop_assert_eq!(setup.hint(), &hint);
            prop_assert_eq!(setup.row_norm(), expected.max_row_norm());
            let mut client = Client::new(setup.clone());
            for (index, value) in current.iter().enumerate() {
                let (query, state) = client.query(index as u64).unwrap();
                let answer = server.answer(&query).unwrap();
                match value {
                    Some(value) => prop_assert_eq!(&client.decode(state, &answer).unwrap(), value),
                    None => {
                        prop_assert!(matches!(client.decode(state, &answer), Err(PirError::Absent)));
                        let (bytes, state) = client.lookup(Target::Index(index as u64)).unwrap();
                        let answer = crate::Encode::to_bytes(&server.answer(&crate::Message::from_bytes(&bytes, setup).unwrap()).unwrap());
                        prop_assert_eq!(client.found(state, &answer).unwrap(), Found::Absent);
                    }
                }
            }
        }
    }

    #[test]
    fn appends_fill_the_capacity_a_build_reserved() {
        let record_bytes = 24usize;
        let mut data: Vec<u8> = (0..100 * record_bytes)
            .map(|i| (i * 7 % 251) as u8)
            .collect();
        data.truncate(data.len() - 5); // a short last record
        for layout in [Layout::Square, Layout::OnePerColumn, Layout::PerColumn(6)] {
            let options = EngineOptions {
                layout,
                capacity: Some(160),
                ..EngineOptions::default()
            };
            let mut server =
                Server::from_records(&data, record_bytes as u64, options, &|_, _| {}).unwrap();
            let geometry = *server.public_setup().geometry();
            assert_eq!((geometry.records(), geometry.capacity()), (100, 160));
            assert!(geometry.cols() * geometry.per_column() >= 160);
            let mut records = data.clone();
            records.resize(100 * record_bytes, 0);
            for batch in [100..130u64, 130..160] {
                let changes: Vec<Change> = batch
                    .map(|index| Change::Append {
                        index,
                        value: vec![index as u8 ^ 0x5a; record_bytes],
                    })
                    .collect();
                server.update(&changes).unwrap();
                for change in &changes {
                    if let Change::Append { value, .. } = change {
                        records.extend_from_slice(value);
                    }
                }
            }
            let setup = server.public_setup();
            let geometry = setup.geometry();
            assert_eq!(
                (geometry.records(), geometry.capacity(), geometry.cols()),
                (160, 160, server_cols(geometry))
            );
            let expected = encode_database(&records, geometry);
            assert!(server.database() == &expected);
            assert_eq!(
                setup.hint(),
                &hint::hint_product(&expected, &setup.matrix_a(), &|_, _| {})
            );
            let mut client = Client::new(setup.clone());
            for index in [0, 99, 100, 159] {
                let (query, state) = client.query(index).unwrap();
                let answer = server.answer(&query).unwrap();
                assert_eq!(
                    client.decode(state, &answer).unwrap(),
                    record(&records, record_bytes, index as usize),
                    "{layout:?} {index}"
                );
            }
            // Past the matrix's last slot: a new setup.
            let past = geometry.cols() * geometry.per_column();
            let appends: Vec<Change> = (160..=past)
                .map(|index| Change::Append {
                    index,
                    value: vec![1; record_bytes],
                })
                .collect();
            assert!(matches!(
                server.update(&appends),
                Err(PirError::NeedsNewSetup(_))
            ));
        }
    }

    /// The columns a geometry of its capacity has.
    fn server_cols(geometry: &Geometry) -> u64 {
        geometry.capacity().div_ceil(geometry.per_column())
    }

    #[test]
    fn bad_changes_change_nothing() {
        let data: Vec<u8> = (0..100u8).collect();
        let options = EngineOptions::default();
        let mut server = Server::from_records(&data, 10, options, &|_, _| {}).unwrap();
        let before = (server.public_setup().clone(), server.database().clone());
        let new = [7u8; 10];
        assert!(matches!(
            server.update(&sets(&[(3, new.to_vec()), (10, new.to_vec())])),
            Err(PirError::IndexOutOfRange {
                index: 10,
                records: 10
            })
        ));
        // Of many refused changes, checked in parallel, the earliest is reported.
        let many: Vec<(u64, Vec<u8>)> = (0..10_000)
            .map(|i| (if i < 5000 { i % 10 } else { 10 + i }, new.to_vec()))
            .collect();
        assert!(matches!(
            server.update(&sets(&many)),
            Err(PirError::IndexOutOfRange { index: 5010, .. })
        ));
        assert!(
            matches!(server.update(&sets(&[(3, new.to_vec()), (3, new.to_vec())])), Err(PirError::InvalidParameters(m)) if m.contains("twice"))
        );
        assert!(
            matches!(server.update(&sets(&[(3, new[..9].to_vec())])), Err(PirError::InvalidParameters(m)) if m.contains("10 bytes"))
        );
        assert!(matches!(
            server.update(&[Change::Delete { index: 3 }]),
            Err(PirError::InvalidParameters(m)) if m.contains("no absent state")
        ));
        assert!(matches!(
            server.update(&[Change::Append { index: 11, value: new.to_vec() }]),
            Err(PirError::InvalidParameters(m)) if m.contains("appends take the indexes from 10 on")
        ));
        assert!(matches!(
            server.update(&[Change::Remove { key: b"k".to_vec() }]),
            Err(PirError::InvalidParameters(m)) if m.contains("not keys")
        ));
        let capacity =
            server.public_setup().geometry().cols() * server.public_setup().geometry().per_column();
        let appends: Vec<Change> = (10..=capacity)
            .map(|index| Change::Append {
                index,
                value: new.to_vec(),
            })
            .collect();
        assert!(matches!(
            server.update(&appends),
            Err(PirError::NeedsNewSetup(cause)) if cause.to_string().contains("more than the")
        ));
        assert!(server.public_setup() == &before.0 && server.database() == &before.1);
        // A value database refuses a value longer than its slots.
        let values = vec![b"short".to_vec(), b"longest!".to_vec()];
        let mut server = Server::from_values(&values, options, &|_, _| {}).unwrap();
        let long = [1u8; 9];
        assert!(matches!(
            server.update(&sets(&[(0, long.to_vec())])),
            Err(PirError::NeedsNewSetup(_))
        ));
        server.update(&sets(&[(0, Vec::new())])).unwrap();
        let mut client = Client::new(server.public_setup().clone());
        let (query, state) = client.query(0).unwrap();
        assert_eq!(
            client
                .decode(state, &server.answer(&query).unwrap())
                .unwrap(),
            b""
        );
    }

    #[test]
    fn a_row_norm_past_the_modulus_needs_a_new_setup() {
        // Zeros let the build pick the largest modulus, which 2^20 columns of the largest
        // digits are past.
        let data = vec![0u8; 1 << 20];
        let options = EngineOptions {
            layout: Layout::OnePerColumn,
            ..EngineOptions::default()
        };
        let mut server = Server::from_records(&data, 1, options, &|_, _| {}).unwrap();
        assert_eq!(server.public_setup().geometry().log_p(), 8);
        let loud = [0x80u8];
        let changes: Vec<(u64, Vec<u8>)> = (0..1 << 20).map(|i| (i, loud.to_vec())).collect();
        let error = server.update(&sets(&changes)).unwrap_err();
        assert!(matches!(error, PirError::NeedsNewSetup(_)), "{error}");
        assert_eq!(server.public_setup().version(), 0);
        assert!(server.database() == &encode_database(&data, server.public_setup().geometry()));
    }
}
