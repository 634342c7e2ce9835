//! Records replaced in place: a YPIR database's next version under the same setup.
//!
//! A YPIR setup carries no data (the variant, the layout and a seed), so it stays as it is,
//! digest and all: clients keep theirs and download nothing, and every answer is computed
//! from the version served. What the server recomputes:
//!
//! - **YPIR.** A changed record rewrites its `k` digits in its row of the first layer (all
//!   band of rows by band in parallel, [`PlaintextMatrix::par_row_bands_mut`]), and the
//!   first hint `H1 = D·A1` takes `ΔD·A1` entry by entry ([`obscura_math::hint_delta`]):
//!   `n = 1024` multiply-adds per changed digit, in proportion to the change. The exact hint
//!   is the packed layer's rounded chunks with the low bits the rounding drops, which the
//!   database keeps beside them. The changed rows are read back and written as chunks and
//!   residues again entry by entry when they are few (under one in [`FEW_ROWS`]); otherwise
//!   the whole hint is read back and cut again (a pass over the hint, about a tenth of the
//!   data at one byte per record). The packed layer's plan is made again whatever the
//!   change: each of its 2,048 masks sums its row of chunks over every hint row, and the
//!   plan's key-switching steps take every mask.
//! - **YPIR+SP.** A changed record rewrites its words down its column (a word shared with a
//!   neighbour keeps the neighbour's bits), and each group of rows whose words changed has its
//!   masks and plan made again: a record of `b` bytes spans `8b / 15` rows, so large records
//!   touch every group and the update costs about a setup's masks and plans.
//!
//! Everything is checked before anything changes. Appends are refused with
//! [`PirError::NeedsNewSetup`]: the setup names its record count, which an append changes.

use std::time::{Duration, Instant};

use obscura_math::hint_delta::{self, ColumnRuns};
use obscura_math::matrix::PlaintextMatrix;
use obscura_math::ring::words::{word_at, word_writes};
use rayon::prelude::*;

use super::bits::bytes_at;
use super::params::PLAINTEXT_BITS;
use super::server::{
    exact_hint, exact_hint_rows, first_matrix, first_residues, hint_chunks, record_digit, word_in,
    write_hint_rows, Server,
};
use super::shape::{Shape, YpirShape, YpirSpShape};
use crate::lwe::{record_slots, write_bits, Slot};
use crate::{Change, PirError};

/// Rows of YPIR's first layer whose records one task writes.
const ROW_BAND: usize = 64;

/// YPIR's hint rows are read and written back entry by entry when fewer than one in this many
/// change, else read and cut again whole.
const FEW_ROWS: usize = 8;

/// What an update of a YPIR database did and how long its parts took.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct UpdatePhases {
    /// Records changed.
    pub records: usize,
    /// Entries of the matrix that hold records (YPIR's first-layer digits, YPIR+SP's words)
    /// whose value changed.
    pub entries: usize,
    /// Writing the entries and, for YPIR, the first hint's change and its chunks cut again.
    pub records_seconds: Duration,
    /// The packed layer's masks and plans made again.
    pub packing_seconds: Duration,
    /// Plans made again, of how many the database has.
    pub plans: (usize, usize),
}

impl Server {
    /// Applies `changes` (records set, or deleted in a database of values) as the database's
    /// next version under the same setup, and says what it took. Refused before anything
    /// changes: an index out of range, an index given twice, a value of the wrong length, a
    /// change by key or a deletion of a fixed-size record, and appends or values longer than
    /// the slots ([`PirError::NeedsNewSetup`]).
    pub fn update_phases(&mut self, changes: &[Change]) -> Result<UpdatePhases, PirError> {
        let setup = self.public_setup();
        let records = setup.shape().records();
        if let Some(Change::Append { index, .. }) =
            changes.iter().find(|c| matches!(c, Change::Append { .. }))
        {
            return Err(PirError::NeedsNewSetup(Box::new(
                PirError::InvalidParameters(format!(
                    "an append at index {index}: a YPIR setup names its number of records ({records}), which an append changes"
                )),
            )));
        }
        let started = Instant::now();
        let locate = |index| {
            let place = match setup.shape() {
                Shape::Ypir(s) => s.locate(index)?,
                Shape::YpirSp(s) => s.locate(index)?,
            };
            Ok((place, setup.record_len(index)))
        };
        let slots = record_slots(changes, setup.format(), locate)?;
        let (entries, groups) = match *self.public_setup().shape() {
            Shape::Ypir(s) => (self.rewrite_first(&s, &slots), vec![0]),
            Shape::YpirSp(s) => self.rewrite_words(&s, &slots),
        };
        let records_seconds = started.elapsed();
        let started = Instant::now();
        let made: Vec<(usize, _)> = groups.iter().map(|&g| (g, self.group_plan(g))).collect();
        let all = self.plans.len();
        for (g, plan) in made {
            self.plans[g] = plan;
        }
        Ok(UpdatePhases {
            records: slots.len(),
            entries,
            records_seconds,
            packing_seconds: started.elapsed(),
            plans: (groups.len(), all),
        })
    }

    /// YPIR: the records' digits written in the first layer, `ΔD·A1` added to the exact first
    /// hint and its chunks and residues cut again; returns the digits changed.
    fn rewrite_first(&mut self, shape: &YpirShape, slots: &[Slot<'_, (u64, u64)>]) -> usize {
        let a = first_matrix(self.public_setup().seed(), shape.columns());
        let (Some(first), Some(residues)) = (&mut self.first, &mut self.residues) else {
            unreachable!("a YPIR server holds its first layer and residues")
        };
        let (digits, width) = (shape.digits() as usize, u32::from(shape.log_p()));
        // Each record's digits written band by band of rows (the records lie in row order),
        // each changed digit a run of one; rows in order, each with its changes.
        let bands = first.par_row_bands_mut(ROW_BAND, |mut band| {
            let rows = band.rows();
            let start = slots.partition_point(|slot| (slot.1 .0 as usize) < rows.start);
            let end = slots.partition_point(|slot| (slot.1 .0 as usize) < rows.end);
            let mut deltas = ColumnRuns::new();
            let mut touched: Vec<usize> = Vec::new();
            for (_, (row, column), bytes) in &slots[start..end] {
                let (row, column) = (*row as usize, *column as usize);
                for j in 0..digits {
                    let new = record_digit(bytes, j, width);
                    let old = band.replace(row, column + j, new);
                    if old != new {
                        deltas.push(column + j, row, &[hint_delta::delta(old, new)]);
                        if touched.last() != Some(&row) {
                            touched.push(row);
                        }
                    }
                }
            }
            (deltas, touched)
        });
        let entries = bands.iter().map(|(deltas, _)| deltas.entries()).sum();
        let mut deltas = ColumnRuns::with_capacity(entries, entries);
        let mut touched: Vec<usize> = Vec::new();
        for (part, rows) in &bands {
            deltas.append(part);
            touched.extend_from_slice(rows);
        }
        drop(bands);
        if touched.len() * FEW_ROWS < shape.rows() as usize {
            // A few rows: read and written back entry by entry.
            let mut hint = exact_hint_rows(&self.packed, residues, shape, &touched);
            let mut local = ColumnRuns::new();
            for run in deltas.iter() {
                let row = touched.partition_point(|&r| r < run.first_row);
                local.push(run.col, row, run.deltas);
            }
            hint_delta::apply(&mut hint, &a, &local);
            write_hint_rows(&mut self.packed, residues, shape, &touched, &hint);
        } else {
            let mut hint = exact_hint(&self.packed, residues, shape);
            hint_delta::apply(&mut hint, &a, &deltas);
            let empty = PlaintextMatrix::from_vec(0, 0, Vec::new()).expect("an empty matrix");
            let spare = std::mem::replace(&mut self.packed, empty);
            self.packed = hint_chunks(hint.as_slice(), shape, spare.into_buffer());
            *residues = first_residues(hint.as_slice(), shape);
        }
        deltas.len()
    }

    /// YPIR+SP: the records' words written down their columns; returns the words changed and
    /// the groups of rows they lie in.
    fn rewrite_words(
        &mut self,
        shape: &YpirSpShape,
        slots: &[Slot<'_, (u64, u64)>],
    ) -> (usize, Vec<usize>) {
        let packed = &self.packed;
        // Index order is column order, each column's records top to bottom.
        let writes: Vec<(usize, usize, u16)> = slots
            .chunk_by(|a, b| a.1 .0 == b.1 .0)
            .collect::<Vec<_>>()
            .par_iter()
            .flat_map_iter(|records| {
                let column = records[0].1 .0 as usize;
                column_words(packed, column, records)
                    .into_iter()
                    .map(move |(row, word)| (row, column, word))
            })
            .collect();
        let group = shape.packing().group;
        let mut groups: Vec<usize> = writes.iter().map(|&(row, _, _)| row / group).collect();
        groups.sort_unstable();
        groups.dedup();
        self.packed.set_many(
            writes
                .iter()
                .flat_map(|&(row, column, word)| word_writes(row, column, word)),
        );
        (writes.len(), groups)
    }
}

/// The words of YPIR+SP's column `column` that writing `records` (that column's, top to
/// bottom, each at the bit its stream starts) changes: `(row, new word)`.
fn column_words(
    packed: &PlaintextMatrix,
    column: usize,
    records: &[Slot<'_, (u64, u64)>],
) -> Vec<(usize, u16)> {
    let width = u64::from(PLAINTEXT_BITS);
    let (first, last) = (&records[0], &records[records.len() - 1]);
    let end = last.1 .1 + 8 * last.2.len() as u64;
    let rows = (first.1 .1 / width) as usize..end.div_ceil(width) as usize;
    let old: Vec<u32> = rows
        .clone()
        .map(|r| u32::from(word_at(packed, r, column)))
        .collect();
    let base = rows.start as u64 * width;
    let mut stream = bytes_at(
        &old,
        PLAINTEXT_BITS,
        0,
        (old.len() as u64 * width).div_ceil(8) as usize,
    );
    for (_, (_, bit), bytes) in records {
        write_bits(&mut stream, bit - base, bytes);
    }
    rows.zip(&old)
        .enumerate()
        .filter_map(|(i, (row, &old))| {
            let new = word_in(&stream, i as u64 * width, PLAINTEXT_BITS);
            (new != old).then_some((row, new as u16))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::super::server::{exact_hint, first_residues, hint_chunks, YpirOptions};
    use super::super::{Client, PublicSetup, Query, Variant};
    use super::*;
    use crate::lwe::RecordFormat;
    use crate::test_data::data as bytes;
    use crate::{PirClient, PirServer};
    use obscura_math::expand::MatrixSeed;
    use obscura_math::matrix::Matrix;
    use proptest::prelude::*;

    /// Record `index` of `data` (records of `record_bytes`, the last one short).
    fn record(data: &[u8], record_bytes: u64, index: u64) -> &[u8] {
        let start = (index * record_bytes) as usize;
        &data[start..(start + record_bytes as usize).min(data.len())]
    }

    /// A query for `index` by a client of `setup` (through its bytes): the answers of `a` and
    /// `b` are the same bytes, and decode to `expected`.
    fn same_answers(setup: &PublicSetup, a: &Server, b: &Server, index: u64, expected: &[u8]) {
        let mut client = Client::new(setup.clone());
        let (query, state) = client.query(index).expect("query");
        let query = Query::from_bytes(&query.to_bytes(), a.public_setup()).expect("codec");
        let answer = a.answer(&query).expect("answer");
        assert_eq!(
            answer.to_bytes(),
            b.answer(&query).expect("answer").to_bytes()
        );
        assert_eq!(client.decode(state, &answer).expect("decode"), expected);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(6))]

        /// The exact first hint comes back from its chunks and residues, whatever its values.
        #[test]
        fn the_first_hint_comes_back_from_its_chunks_and_residues(
            rows in 1usize..40,
            seed in any::<u64>(),
        ) {
            let shape = YpirShape::new(rows as u64, 1, 8, 1).expect("a shape");
            let values: Vec<u32> = bytes(rows * 4096, seed)
                .chunks_exact(4)
                .map(|w| u32::from_le_bytes(w.try_into().expect("4 bytes")))
                .collect();
            let hint = Matrix::from_vec(rows, 1024, values).expect("a matrix");
            let packed = hint_chunks(hint.as_slice(), &shape, None);
            let residues = first_residues(hint.as_slice(), &shape);
            let exact = exact_hint(&packed, &residues, &shape);
            prop_assert_eq!(exact.as_slice(), hint.as_slice());
        }
    }

    proptest! {
        // Each case builds both servers' packing plans two to four times (about a second).
        #![proptest_config(ProptestConfig::with_cases(3))]

        /// After any sequence of updates the matrices are those a build of the final records
        /// makes with the same layout and seed, the setup is the one clients hold, and a
        /// query made with it is answered by both with the same bytes, decoding to the final
        /// record.
        #[test]
        fn updates_leave_what_a_build_of_the_final_records_makes(
            ypir in any::<bool>(),
            records in 2u64..400,
            record_bytes in 1u64..6,
            short in 0u64..6,
            rounds in proptest::collection::vec(
                proptest::collection::vec((any::<u64>(), any::<u64>()), 1..30),
                1..3,
            ),
            seed in any::<u64>(),
        ) {
            // YPIR+SP with records of up to 600 bytes, several to a column.
            let record_bytes = if ypir { record_bytes } else { record_bytes * 100 };
            let len = (records * record_bytes - short.min(record_bytes - 1)) as usize;
            let mut data = bytes(len, seed);
            let variant = if ypir { Variant::Ypir } else { Variant::YpirSp };
            let options = YpirOptions { variant: Some(variant) };
            let mut server =
                Server::from_records(&data, record_bytes, options, &|_, _| {}).expect("setup");
            let setup = server.public_setup().clone();
            for (round, changes) in rounds.iter().enumerate() {
                let mut sets = std::collections::BTreeMap::new();
                for (k, &(at, value_seed)) in changes.iter().enumerate() {
                    let index = at % records;
                    let len = record(&data, record_bytes, index).len();
                    sets.insert(index, bytes(len, value_seed ^ k as u64));
                }
                let changes: Vec<Change> = sets
                    .iter()
                    .map(|(&index, value)| Change::Set { index, value: value.clone() })
                    .collect();
                let phases = server.update_phases(&changes).expect("update");
                prop_assert_eq!(phases.records, changes.len());
                prop_assert_eq!(server.update(&[]).expect("an empty update"), None);
                for (&index, value) in &sets {
                    let start = (index * record_bytes) as usize;
                    data[start..start + value.len()].copy_from_slice(value);
                }
                prop_assert_eq!(server.public_setup(), &setup);
                let built = Server::build_seeded(
                    &data,
                    *setup.shape(),
                    RecordFormat::Raw,
                    setup.seed(),
                    &|_, _| {},
                )
                .expect("a build of the final records");
                prop_assert!(server.matrices() == built.matrices(), "round {}", round);
                let changed = *sets.keys().next().expect("a change");
                for index in [changed, (changed + records / 2) % records] {
                    same_answers(&setup, &server, &built, index, record(&data, record_bytes, index));
                }
            }
        }
    }

    /// One record (its hint row read and written back alone) and records in every row (the
    /// hint cut again whole) leave what a build makes.
    #[test]
    fn few_and_many_changed_rows_leave_what_a_build_makes() {
        let mut data = bytes(20_000, 8);
        let shape = Shape::plan(Variant::Ypir, 20_000, 1).expect("a shape");
        let Shape::Ypir(ypir) = shape else {
            unreachable!("a YPIR shape")
        };
        assert!(
            ypir.rows() >= 2 * FEW_ROWS as u64,
            "rows enough for both ways"
        );
        let seed = MatrixSeed([9; 16]);
        let mut server =
            Server::build_seeded(&data, shape, RecordFormat::Raw, seed, &|_, _| {}).expect("setup");
        let per_row = ypir.per_row();
        for indexes in [
            vec![77],
            (0..ypir.rows()).map(|r| r * per_row + 3).collect(),
        ] {
            let changes: Vec<Change> = indexes
                .iter()
                .map(|&index| Change::Set {
                    index,
                    value: vec![!data[index as usize]],
                })
                .collect();
            server.update(&changes).expect("update");
            for &index in &indexes {
                data[index as usize] ^= 0xff;
            }
            let built = Server::build_seeded(&data, shape, RecordFormat::Raw, seed, &|_, _| {})
                .expect("a build");
            assert!(
                server.matrices() == built.matrices(),
                "{} records",
                indexes.len()
            );
        }
    }

    /// YPIR+SP records that span a few of many groups of rows make only those groups' plans
    /// again, and the answers are a build's.
    #[test]
    fn only_the_groups_of_changed_rows_are_planned_again() {
        let (records, record_bytes) = (48, 1000);
        let mut data = bytes((records * record_bytes) as usize, 5);
        let shape = Shape::YpirSp(YpirSpShape::new(records, record_bytes, 16).expect("a shape"));
        let seed = MatrixSeed([7; 16]);
        let mut server =
            Server::build_seeded(&data, shape, RecordFormat::Raw, seed, &|_, _| {}).expect("setup");
        let value = bytes(record_bytes as usize, 6);
        let phases = server
            .update_phases(&[Change::Set {
                index: 1,
                value: value.clone(),
            }])
            .expect("update");
        // 16 records of 1,000 bytes are 8,534 rows of 15 bits: five groups of 2,048; record 1
        // lies in rows 533 to 1,066.
        assert_eq!(phases.plans, (1, 5));
        data[1000..2000].copy_from_slice(&value);
        let built = Server::build_seeded(&data, shape, RecordFormat::Raw, seed, &|_, _| {})
            .expect("a build");
        assert!(server.matrices() == built.matrices());
        let setup = server.public_setup().clone();
        for index in [1, 0, 2, 17, 47] {
            let expected = &data[(index * 1000) as usize..][..1000];
            same_answers(&setup, &server, &built, index, expected);
        }
    }

    /// A database of values takes new values and deletions (deleted values are absent);
    /// appends, longer values, deletions of fixed-size records and malformed batches are
    /// refused and change nothing.
    #[test]
    fn values_are_set_and_deleted_and_refused_batches_change_nothing() {
        for variant in [Variant::Ypir, Variant::YpirSp] {
            let values: Vec<Vec<u8>> = (0..300u64)
                .map(|i| bytes(3 + (i % 3) as usize, i))
                .collect();
            let options = YpirOptions {
                variant: Some(variant),
            };
            let mut server = Server::from_values(&values, options, &|_, _| {}).expect("setup");
            let setup = server.public_setup().clone();
            let before: Vec<_> = server.matrices().into_iter().cloned().collect();
            let set = |index, value: &[u8]| Change::Set {
                index,
                value: value.to_vec(),
            };
            let refused: [(Vec<Change>, &str); 5] = [
                (
                    vec![Change::Append {
                        index: 300,
                        value: vec![1],
                    }],
                    "needs a new setup",
                ),
                (vec![set(4, &[9; 40])], "needs a new setup"),
                (vec![set(300, &[1])], "out of range"),
                (
                    vec![set(4, &[1]), Change::Delete { index: 4 }],
                    "changed twice",
                ),
                (
                    vec![Change::Upsert {
                        key: b"k".to_vec(),
                        value: vec![1],
                    }],
                    "not keys",
                ),
            ];
            for (changes, why) in refused {
                let error = server.update(&changes).expect_err(why).to_string();
                assert!(error.contains(why), "{error}");
                let now: Vec<_> = server.matrices().into_iter().cloned().collect();
                assert!(now == before, "{why}: unchanged");
            }
            server
                .update(&[set(4, b"new"), Change::Delete { index: 7 }, set(299, b"")])
                .expect("update");
            let mut client = Client::new(setup.clone());
            let mut fetch = |index| {
                let (query, state) = client.query(index).expect("query");
                client.decode(state, &server.answer(&query).expect("answer"))
            };
            assert_eq!(fetch(4).expect("set"), b"new");
            assert!(matches!(fetch(7), Err(crate::PirError::Absent)));
            assert_eq!(fetch(299).expect("set"), b"");
            assert_eq!(fetch(8).expect("kept"), values[8]);
        }
        let mut raw = Server::from_records(&bytes(300, 1), 3, YpirOptions::default(), &|_, _| {})
            .expect("setup");
        let error = raw.update(&[Change::Delete { index: 1 }]).expect_err("raw");
        assert!(error.to_string().contains("cannot be deleted"), "{error}");
    }
}
