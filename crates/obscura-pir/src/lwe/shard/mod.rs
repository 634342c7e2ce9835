//! One database matrix answered by several servers: the engine's database cut into shards.
//!
//! The engine's answer is linear in the database: `D·q` over Z_{2^32}. Cut `D` (R x C) into
//! bands of rows, `D = [D_1; …; D_N]`, and every shard answers the whole query over its rows:
//! `D·q = [D_1·q; …; D_N·q]`, the answers concatenated. Cut it into bands of columns, `D = [D_1
//! | … | D_N]`, and each shard answers the query's entries of its columns: `D·q = Σ D_i·q_i`,
//! the answers added. The hint splits the same way, since `H = D·A`: by rows `H = [D_1·A; …]`,
//! by columns `H = Σ D_i·A_i` with `A_i` the rows of `A` for shard `i`'s columns. The rows'
//! squared norms, which the plaintext modulus is checked against, concatenate and add alike.
//! So shards built from one plan ([`ShardPlan`]: the geometry, parameters, plaintext modulus and
//! seed fixed first) combine into exactly the public setup ([`ShardPlan::setup`]) and the
//! answers ([`ShardPlan::answer`]) a build of the whole database with that seed makes, bit for
//! bit; the client cannot tell them apart, and the servers see what one server sees: the query.
//!
//! The answer is rounded to its top bits ([`switch_modulus`]) only once combined: the column
//! split adds the shards' answers first, so shards return full words. By rows, a shard holds a
//! part of every record and every shard's answer is needed; by columns, a shard holds whole
//! records (a column's records are consecutive) and reads a contiguous stretch of the input.
//! A negacyclic `A` is expanded a block of `n` columns at a time, so a column split falls on
//! whole blocks.
//!
//! The plaintext modulus is the one correct for any data ([`Geometry::plan_with_capacity`], as
//! a streamed setup chooses it): a shard cannot see the other rows' norms, which a modulus
//! chosen from the data needs.

use std::ops::Range;

use obscura_math::expand::MatrixSeed;
use obscura_math::hint;
use obscura_math::kernels;
use obscura_math::matrix::{Matrix, PlaintextMatrix};
use rayon::prelude::*;

pub use messages::{ShardAnswer, ShardQuery, ShardSetup, ShardTag};
pub use scheme::{LweShard, ShardClient, ShardInput};

mod messages;
mod scheme;

use super::layout::Geometry;
use super::messages::Answer;
use super::server::{encode_block, switch_modulus, Encoded, Server};
use super::setup::{EngineOptions, Layer, PublicSetup, RecordFormat};
use crate::params::{worst_row_norm, MatrixKind, LOG_FAILURE};
use crate::PirError;

/// How a database matrix is cut into shards.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Split {
    /// Bands of rows: every shard answers the whole query over its rows; answers concatenate.
    Rows,
    /// Bands of columns: every shard answers its columns' part of the query; answers add.
    Columns,
}

impl Split {
    /// Its name: `rows` or `columns`.
    pub fn name(self) -> &'static str {
        match self {
            Self::Rows => "rows",
            Self::Columns => "columns",
        }
    }
}

/// Parses `rows` or `columns`.
impl std::str::FromStr for Split {
    type Err = crate::ParseError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text {
            "rows" => Ok(Self::Rows),
            "columns" => Ok(Self::Columns),
            _ => Err(crate::ParseError::new(text, "rows or columns")),
        }
    }
}

/// A database planned for shards: what every shard must share (parameters, record format,
/// geometry, plaintext modulus, seed: a [`Layer`] checked at the worst row norm its geometry
/// allows) and the rows or columns each holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShardPlan {
    split: Split,
    layer: Layer,
    /// Each shard's rows or columns, in order, covering the matrix.
    ranges: Vec<Range<u64>>,
}

impl ShardPlan {
    /// Plans `data_bytes` bytes of slots of `record_bytes` bytes in `format` (records, or values
    /// in slots), laid out as `options` says, cut by `split` into `shards` shards, with the
    /// public matrix from `seed`. Refused when the matrix has fewer rows, or whole blocks of
    /// columns, than shards.
    pub fn new(
        data_bytes: u64,
        record_bytes: u64,
        format: RecordFormat,
        options: EngineOptions,
        split: Split,
        shards: usize,
        seed: MatrixSeed,
    ) -> Result<Self, PirError> {
        let set = options.params;
        let geometry = Geometry::plan_with_capacity(
            data_bytes,
            record_bytes,
            options.layout,
            set,
            options.capacity,
            |_| LOG_FAILURE,
        )?;
        let matrix = options.matrix.unwrap_or(MatrixKind::default_for(set));
        let worst = worst_row_norm(geometry.cols(), geometry.log_p());
        let layer = Layer::new(set, matrix, format, geometry, worst, seed)?;
        let (total, unit) = Self::units(&layer, split);
        let units = total.div_ceil(unit);
        if shards == 0 || shards as u64 > units {
            let s = if units == 1 { "" } else { "s" };
            let what = match (split, unit) {
                (Split::Rows, _) => format!("row{s}"),
                (Split::Columns, 1) => format!("column{s}"),
                (Split::Columns, n) => format!("block{s} of {n} columns (of its negacyclic A)"),
            };
            return Err(PirError::InvalidParameters(format!(
                "{shards} shards by {}: the {} x {} matrix has {units} {what}, and a shard \
                 needs at least one",
                split.name(),
                geometry.rows(),
                geometry.cols()
            )));
        }
        let n = shards as u64;
        let ranges = (0..n)
            .map(|i| (i * units / n * unit).min(total)..((i + 1) * units / n * unit).min(total))
            .collect();
        Ok(Self {
            split,
            layer,
            ranges,
        })
    }

    /// A plan of `layer` cut by `split` into `ranges` (as a stored plan holds them), checked:
    /// the layer's row norm is the worst its geometry allows, and the ranges cover the rows or
    /// columns in order, none empty, a column split's on whole blocks of a negacyclic `A`.
    pub fn from_parts(
        layer: Layer,
        split: Split,
        ranges: Vec<Range<u64>>,
    ) -> Result<Self, PirError> {
        let invalid = |reason: String| Err(PirError::InvalidParameters(reason));
        let g = layer.geometry();
        if layer.row_norm() != worst_row_norm(g.cols(), g.log_p()) {
            return invalid("a shard plan's modulus is checked at the worst row norm".into());
        }
        let (total, unit) = Self::units(&layer, split);
        let mut next = 0;
        for range in &ranges {
            let aligned = range.start % unit == 0 && (range.end % unit == 0 || range.end == total);
            if range.start != next || range.end <= range.start || !aligned {
                return invalid(format!(
                    "the shards' {} {ranges:?} do not cover 0..{total} in order on whole units of {unit}",
                    split.name()
                ));
            }
            next = range.end;
        }
        if next != total {
            return invalid(format!(
                "the shards' {} end at {next}, not at {total}",
                split.name()
            ));
        }
        Ok(Self {
            split,
            layer,
            ranges,
        })
    }

    /// The rows or columns `split` cuts in `layer`'s matrix, and the unit a shard holds whole.
    fn units(layer: &Layer, split: Split) -> (u64, u64) {
        let g = layer.geometry();
        match split {
            Split::Rows => (g.rows(), 1),
            Split::Columns => match layer.params().matrix {
                MatrixKind::Negacyclic => (g.cols(), layer.params().n() as u64),
                MatrixKind::Uniform => (g.cols(), 1),
            },
        }
    }

    /// How the matrix is cut.
    pub fn split(&self) -> Split {
        self.split
    }

    /// What every shard shares: parameters, record format, geometry and seed (its row norm the
    /// worst the geometry allows).
    pub fn layer(&self) -> &Layer {
        &self.layer
    }

    /// The whole database's geometry.
    pub fn geometry(&self) -> &Geometry {
        self.layer.geometry()
    }

    /// Every shard's rows or columns, in order.
    pub fn ranges(&self) -> &[Range<u64>] {
        &self.ranges
    }

    /// How many shards.
    pub fn shards(&self) -> usize {
        self.ranges.len()
    }

    /// Shard `index`'s rows (for [`Split::Rows`]) or columns of the matrix.
    ///
    /// # Panics
    /// If `index` is not a shard of the plan.
    pub fn range(&self, index: usize) -> Range<u64> {
        self.ranges[index].clone()
    }

    /// The bytes of the input shard `index` is built from ([`ShardPlan::build`]): by columns,
    /// the records its columns hold (none for columns past the data, room for appends); by
    /// rows, all of them, as every column holds records with digits in the shard's rows (of
    /// which it reads only [`ShardPlan::input_read`]).
    pub fn input(&self, index: usize) -> Range<u64> {
        let g = self.layer.geometry();
        match self.split {
            Split::Rows => 0..g.data_bytes(),
            Split::Columns => {
                let column_bytes = g.per_column() * g.record_bytes();
                let cols = self.range(index);
                let at = |c: u64| c.saturating_mul(column_bytes).min(g.data_bytes());
                at(cols.start)..at(cols.end)
            }
        }
    }

    /// The stretches of the input that building shard `index` reads, in order, within
    /// [`ShardPlan::input`]: by columns all of it; by rows, in each column, the bytes that hold
    /// the digits of the shard's rows (the others may be left unread, as zeros: a shard by
    /// rows needs about its share of the input).
    pub fn input_read(&self, index: usize) -> Vec<Range<u64>> {
        let input = self.input(index);
        let Split::Rows = self.split else {
            return vec![input];
        };
        let g = self.layer.geometry();
        let rows = self.range(index);
        let width = u64::from(g.log_p());
        let mut read: Vec<Range<u64>> = Vec::new();
        for c in 0..g.cols() {
            let (start, last) = g.column_bits(c);
            let (from, to) = (
                (start + rows.start * width).min(last),
                (start + rows.end * width).min(last),
            );
            if from == to {
                continue;
            }
            let bytes = from / 8..to.div_ceil(8);
            match read.last_mut() {
                Some(previous) if previous.end >= bytes.start => previous.end = bytes.end,
                _ => read.push(bytes),
            }
        }
        read
    }

    /// Builds shard `index` from `input`, the bytes [`ShardPlan::input`] names (of which only
    /// [`ShardPlan::input_read`] are read): its block of the matrix, and its part of the hint
    /// and of the rows' norms.
    pub fn build(&self, index: usize, input: &[u8]) -> Result<Shard, PirError> {
        if index >= self.shards() {
            return Err(PirError::InvalidParameters(format!(
                "shard {index} of a plan of {} (they count from 0)",
                self.shards()
            )));
        }
        let expected = self.input(index);
        if input.len() as u64 != expected.end - expected.start {
            return Err(PirError::InvalidParameters(format!(
                "shard {index} is built from {} bytes of input, not {}",
                expected.end - expected.start,
                input.len()
            )));
        }
        let g = self.layer.geometry();
        let range = self.range(index);
        let a = self.layer.matrix_a();
        let (database, hint) = match self.split {
            Split::Rows => {
                let block = encode_block(input, 0, g, range, 0..g.cols(), None);
                let hint = hint::hint_product(&block, &a, &|_, _| {});
                (block, hint)
            }
            Split::Columns => {
                let first = range.start;
                let block = encode_block(input, expected.start, g, 0..g.rows(), range, None);
                let mut hint = Matrix::zeros(g.rows() as usize, self.layer.params().n());
                hint::hint_accumulate(&block, &a, first as usize, &mut hint, &|_, _| {});
                (block, hint)
            }
        };
        let mut norms = vec![0u64; database.rows()];
        database.add_row_norms(&mut norms);
        let part = SetupPart { hint, norms };
        Ok(Shard {
            setup: ShardSetup::new(self.clone(), index, 0, part),
            database,
        })
    }

    /// The whole database of `data` (all the input the plan was made for) built as one, with
    /// the plan's seed and modulus: the database its shards combine into, whose setup and
    /// answers theirs equal (a baseline to compare them with).
    pub fn whole(&self, data: &[u8]) -> Result<Server, PirError> {
        let g = *self.layer.geometry();
        if data.len() as u64 != g.data_bytes() {
            return Err(PirError::InvalidParameters(format!(
                "the plan is for {} bytes of input, not {}",
                g.data_bytes(),
                data.len()
            )));
        }
        let database = encode_block(data, 0, &g, 0..g.rows(), 0..g.cols(), None);
        let params = self.layer.params();
        let options = EngineOptions {
            params: params.set,
            matrix: Some(params.matrix),
            ..EngineOptions::default()
        };
        let encoded = Encoded::measured(g, database);
        let (format, seed) = (self.layer.format(), self.layer.seed());
        Server::with_database_seeded(encoded, format, options, seed, &|_, _| {})
    }

    /// Shard `index`'s part of the query `values` (one entry per column of the matrix): all of
    /// it by rows, its columns' entries by columns. Refused when `values` is not one entry per
    /// column.
    pub fn query_part<'q>(&self, index: usize, values: &'q [u32]) -> Result<&'q [u32], PirError> {
        let cols = self.layer.geometry().cols();
        if values.len() as u64 != cols {
            return Err(PirError::malformed(
                "query",
                format!("{} entries where {cols} are expected", values.len()),
            ));
        }
        Ok(match self.split {
            Split::Rows => values,
            Split::Columns => {
                let cols = self.range(index);
                &values[cols.start as usize..cols.end as usize]
            }
        })
    }

    /// The public setup of the whole database from every shard's part, in shard order: the
    /// setup a build of the whole with this plan's seed and modulus makes. Refused when a part
    /// does not have its shard's shape, or the rows' norms are past what the modulus allows.
    pub fn setup(&self, parts: &[&SetupPart]) -> Result<PublicSetup, PirError> {
        let g = self.layer.geometry();
        let (rows, n) = (g.rows() as usize, self.layer.params().n());
        self.check_parts(parts.len(), "setup parts")?;
        for (index, part) in parts.iter().enumerate() {
            let height = self.rows_of(index);
            if (part.hint.rows(), part.hint.cols(), part.norms.len()) != (height, n, height) {
                return Err(PirError::malformed(
                    "shard setup part",
                    format!("shard {index}'s part does not have its {height} rows"),
                ));
            }
        }
        let (hint, norms) = match self.split {
            Split::Rows => {
                let mut hint = Vec::with_capacity(rows * n);
                let mut norms = Vec::with_capacity(rows);
                for part in parts {
                    hint.extend_from_slice(part.hint.as_slice());
                    norms.extend_from_slice(&part.norms);
                }
                let hint = Matrix::from_vec(rows, n, hint).expect("the rows of every shard");
                (hint, norms)
            }
            Split::Columns => {
                let mut hint = Matrix::zeros(rows, n);
                let mut norms = vec![0u64; rows];
                for part in parts {
                    add_words(hint.as_mut_slice(), part.hint.as_slice());
                    for (sum, &norm) in norms.iter_mut().zip(&part.norms) {
                        *sum += norm;
                    }
                }
                (hint, norms)
            }
        };
        let row_norm = norms.into_iter().max().unwrap_or(0);
        PublicSetup::with_layer(self.layer.with_contents(*g, row_norm)?, hint)
    }

    /// The answer of the whole database from every shard's answer (full words, from
    /// [`Shard::answer_parts`]), in shard order, for a query made with `setup` (this plan's, from
    /// [`ShardPlan::setup`]).
    pub fn answer(&self, setup: &PublicSetup, parts: &[Vec<u32>]) -> Result<Answer, PirError> {
        self.check_parts(parts.len(), "answers")?;
        for (index, part) in parts.iter().enumerate() {
            if part.len() != self.rows_of(index) {
                return Err(PirError::malformed(
                    "shard answer",
                    format!(
                        "shard {index} answered {} entries where {} are expected",
                        part.len(),
                        self.rows_of(index)
                    ),
                ));
            }
        }
        let values = match self.split {
            Split::Rows => parts.concat(),
            Split::Columns => {
                let mut sum = parts[0].clone();
                for part in &parts[1..] {
                    add_words(&mut sum, part);
                }
                sum
            }
        };
        Ok(Answer {
            digest: *setup.digest(),
            values: switch_modulus(&values),
        })
    }

    /// Shard `index`'s block: rows (entries of its answers) and columns (entries of its part
    /// of a query).
    ///
    /// # Panics
    /// If `index` is not a shard of the plan.
    pub fn shape(&self, index: usize) -> (u64, u64) {
        (self.rows_of(index) as u64, self.cols_of(index) as u64)
    }

    /// Columns of shard `index`'s block and of its part of a query.
    fn cols_of(&self, index: usize) -> usize {
        match self.split {
            Split::Rows => self.layer.geometry().cols() as usize,
            Split::Columns => {
                let cols = self.range(index);
                (cols.end - cols.start) as usize
            }
        }
    }

    /// Rows of shard `index`'s block, of its answer and of its part of the hint.
    fn rows_of(&self, index: usize) -> usize {
        match self.split {
            Split::Rows => {
                let rows = self.range(index);
                (rows.end - rows.start) as usize
            }
            Split::Columns => self.layer.geometry().rows() as usize,
        }
    }

    /// Refuses `count` of something per shard when it is not one per shard.
    fn check_parts(&self, count: usize, what: &'static str) -> Result<(), PirError> {
        if count != self.shards() {
            return Err(PirError::malformed(
                what,
                format!("{count} given for {} shards", self.shards()),
            ));
        }
        Ok(())
    }
}

/// `sum += part` over Z_{2^32}, entry by entry, on the rayon pool.
fn add_words(sum: &mut [u32], part: &[u32]) {
    const CHUNK: usize = 1 << 16;
    sum.par_chunks_mut(CHUNK)
        .zip(part.par_chunks(CHUNK))
        .for_each(|(sum, part)| {
            for (s, &p) in sum.iter_mut().zip(part) {
                *s = s.wrapping_add(p);
            }
        });
}

/// One shard: its block of the database matrix and its public setup (its part of the whole
/// database's).
#[derive(Clone)]
pub struct Shard {
    setup: ShardSetup,
    database: PlaintextMatrix,
}

/// A shard's part of the public setup: its part of the hint (its rows of `D·A` by rows, its
/// columns' `D_i·A_i` by columns) and of the rows' squared norms.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SetupPart {
    hint: Matrix,
    norms: Vec<u64>,
}

impl Shard {
    /// A shard of `setup` and `database` (as stored), checked: the block's shape is the
    /// shard's, and its rows' norms are those its setup part holds (one pass over it).
    pub fn from_parts(setup: ShardSetup, database: PlaintextMatrix) -> Result<Self, PirError> {
        let shape = (setup.rows() as usize, setup.cols() as usize);
        if (database.rows(), database.cols()) != shape {
            return Err(PirError::malformed(
                "shard",
                format!(
                    "a {} x {} block where shard {} holds {} x {}",
                    database.rows(),
                    database.cols(),
                    setup.index(),
                    shape.0,
                    shape.1
                ),
            ));
        }
        let mut norms = vec![0u64; database.rows()];
        database.add_row_norms(&mut norms);
        if norms != setup.part().norms {
            return Err(PirError::malformed(
                "shard",
                "the block's rows do not have the norms its setup part records",
            ));
        }
        Ok(Self { setup, database })
    }

    /// Its public setup.
    pub fn setup(&self) -> &ShardSetup {
        &self.setup
    }

    /// Its index in the plan.
    pub fn index(&self) -> usize {
        self.setup.index()
    }

    /// Its block of the database matrix.
    pub fn database(&self) -> &PlaintextMatrix {
        &self.database
    }

    /// Its part of the public setup.
    pub fn setup_part(&self) -> &SetupPart {
        self.setup.part()
    }

    /// Its answers to `queries`, each its part of a query ([`ShardPlan::query_part`]), in one
    /// pass over its block: full words, combined by [`ShardPlan::answer`].
    pub fn answer_parts(&self, queries: &[&[u32]]) -> Result<Vec<Vec<u32>>, PirError> {
        let cols = self.database.cols();
        if let Some(query) = queries.iter().find(|q| q.len() != cols) {
            return Err(PirError::malformed(
                "shard query",
                format!("{} entries where {cols} are expected", query.len()),
            ));
        }
        Ok(match queries {
            [] => Vec::new(),
            [query] => vec![self.database.mul_vec(query)],
            _ => kernels::plaintext_mat_vecs(&self.database, queries),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lwe::layout::Layout;
    use crate::lwe::Client;
    use crate::params::ParamSet;
    use crate::{PirClient, PirServer};
    use proptest::prelude::*;

    /// Builds every shard of `plan` from `data`, checks that they combine into the whole
    /// database's setup, and that combined answers are its answers and decode to the records.
    fn check_shards(plan: &ShardPlan, data: &[u8], indexes: &[u64]) {
        let shards: Vec<Shard> = (0..plan.shards())
            .map(|i| {
                let input = plan.input(i);
                plan.build(i, &data[input.start as usize..input.end as usize])
                    .unwrap()
            })
            .collect();
        let parts: Vec<&SetupPart> = shards.iter().map(Shard::setup_part).collect();
        let setup = plan.setup(&parts).unwrap();
        let whole = plan.whole(data).unwrap();
        assert_eq!(setup.to_bytes(), whole.public_setup().to_bytes());
        let mut client = Client::new(setup.clone());
        let record_bytes = plan.geometry().record_bytes() as usize;
        for &index in indexes {
            let (query, state) = client.query(index).unwrap();
            // Each shard's part goes as the gateway sends it: encoded, decoded by the shard,
            // answered, and the answer decoded by the shard's client.
            let answers: Vec<Vec<u32>> = shards
                .iter()
                .map(|shard| {
                    let setup = ShardSetup::from_bytes(&shard.setup().to_bytes()).unwrap();
                    assert_eq!(&setup, shard.setup());
                    let mut client = ShardClient::new(setup);
                    let part = plan.query_part(shard.index(), query.values()).unwrap();
                    let (part, ()) = client.query(part).unwrap();
                    let part =
                        ShardQuery::from_bytes(&part.to_bytes(), &shard.setup().tag()).unwrap();
                    let answer = PirServer::answer(shard, &part).unwrap();
                    let answer = ShardAnswer::from_bytes(&answer.to_bytes(), &client.setup().tag());
                    client.decode((), &answer.unwrap()).unwrap()
                })
                .collect();
            let answer = plan.answer(&setup, &answers).unwrap();
            assert_eq!(answer, PirServer::answer(&whole, &query).unwrap());
            let start = index as usize * record_bytes;
            let end = (start + record_bytes).min(data.len());
            assert_eq!(client.decode(state, &answer).unwrap(), &data[start..end]);
        }
    }

    fn options(layout: Layout, matrix: MatrixKind) -> EngineOptions {
        EngineOptions {
            params: ParamSet::Ypir1024,
            layout,
            matrix: Some(matrix),
            ..EngineOptions::default()
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(24))]

        /// Shards by rows or columns (a uniform `A`, any column) of any database combine into
        /// the whole database's setup and answers, bit for bit.
        #[test]
        fn shards_combine_into_the_whole_database(
            data in proptest::collection::vec(any::<u8>(), 1..3000),
            record_bytes in 1u64..48,
            layout in prop_oneof![
                Just(Layout::Square),
                Just(Layout::OnePerColumn),
                (1u64..6).prop_map(Layout::PerColumn),
            ],
            columns in any::<bool>(),
            shards in 1usize..5,
            picks in proptest::collection::vec(any::<u64>(), 2),
        ) {
            let options = options(layout, MatrixKind::Uniform);
            let split = if columns { Split::Columns } else { Split::Rows };
            let len = data.len() as u64;
            let seed = MatrixSeed::random().unwrap();
            let g = Geometry::plan(len, record_bytes, layout, options.params).unwrap();
            let units = if columns { g.cols() } else { g.rows() };
            let plan = |shards| {
                ShardPlan::new(len, record_bytes, RecordFormat::Raw, options, split, shards, seed)
            };
            if shards as u64 > units {
                // A matrix too small for the shards is refused; it takes as many as it has
                // rows or columns.
                prop_assert!(
                    matches!(plan(shards), Err(PirError::InvalidParameters(_))),
                    "{shards} shards of {units}"
                );
            }
            let plan = plan(shards.min(units as usize)).unwrap();
            let records = plan.geometry().records();
            let indexes: Vec<u64> = picks.iter().map(|p| p % records).collect();
            check_shards(&plan, &data, &indexes);
        }
    }

    /// With a negacyclic `A`, shards by columns take whole blocks of `n` columns, and combine
    /// as any shards do; one block cannot be split.
    #[test]
    fn column_shards_of_a_negacyclic_matrix_take_whole_blocks() {
        let options = options(Layout::OnePerColumn, MatrixKind::Negacyclic);
        let data: Vec<u8> = (0..2500u32 * 3).map(|i| (i * 7 + i / 5) as u8).collect();
        let seed = MatrixSeed::random().unwrap();
        let plan =
            ShardPlan::new(7500, 3, RecordFormat::Raw, options, Split::Columns, 3, seed).unwrap();
        assert_eq!(
            (0..3).map(|i| plan.range(i)).collect::<Vec<_>>(),
            [0..1024, 1024..2048, 2048..2500]
        );
        check_shards(&plan, &data, &[0, 1023, 1024, 2047, 2048, 2499]);
        let rows =
            ShardPlan::new(7500, 3, RecordFormat::Raw, options, Split::Rows, 2, seed).unwrap();
        check_shards(&rows, &data, &[0, 1500, 2499]);
        let refused = ShardPlan::new(7500, 3, RecordFormat::Raw, options, Split::Columns, 4, seed);
        assert!(
            matches!(&refused, Err(PirError::InvalidParameters(reason)) if reason.contains("3 blocks of 1024 columns")),
            "{:?}",
            refused.err()
        );
    }

    /// A shard by rows built from only the stretches of the input it reads (zeros elsewhere)
    /// is the shard built from all of it; by columns it reads its whole input.
    #[test]
    fn a_shard_by_rows_reads_about_its_share_of_the_input() {
        let options = options(Layout::Square, MatrixKind::Uniform);
        let data: Vec<u8> = (0..40_000u32).map(|i| (i * 101 + i / 7) as u8).collect();
        let seed = MatrixSeed::random().unwrap();
        for (width, split) in [(100, Split::Rows), (3, Split::Rows), (100, Split::Columns)] {
            let plan =
                ShardPlan::new(40_000, width, RecordFormat::Raw, options, split, 4, seed).unwrap();
            let mut read = 0;
            for i in 0..4 {
                let input = plan.input(i);
                let whole = &data[input.start as usize..input.end as usize];
                let mut sparse = vec![0u8; whole.len()];
                for range in plan.input_read(i) {
                    let at =
                        (range.start - input.start) as usize..(range.end - input.start) as usize;
                    sparse[at.clone()].copy_from_slice(&whole[at]);
                    read += range.end - range.start;
                }
                let from_all = plan.build(i, whole).unwrap();
                let from_read = plan.build(i, &sparse).unwrap();
                assert_eq!(from_read.setup(), from_all.setup());
                assert!(from_read.database() == from_all.database());
            }
            // Each byte is read once, but for the digits two bands share.
            assert!(
                (40_000..40_000 + 4 * plan.geometry().cols()).contains(&read),
                "{read}"
            );
        }
    }

    /// Inputs, parts, queries and answers that do not fit the plan are refused.
    #[test]
    fn what_does_not_fit_the_plan_is_refused() {
        let options = options(Layout::PerColumn(4), MatrixKind::Uniform);
        let data = vec![9u8; 400];
        let seed = MatrixSeed::random().unwrap();
        let plan =
            ShardPlan::new(400, 4, RecordFormat::Raw, options, Split::Columns, 2, seed).unwrap();
        let malformed = |result: Result<(), PirError>| {
            assert!(
                matches!(result, Err(PirError::Malformed { .. })),
                "{result:?}"
            )
        };
        let invalid = |result: Result<(), PirError>| {
            assert!(
                matches!(result, Err(PirError::InvalidParameters(_))),
                "{result:?}"
            )
        };
        invalid(plan.build(2, &data).map(drop));
        invalid(plan.build(0, &data).map(drop));
        let shards: Vec<Shard> = (0..2)
            .map(|i| {
                let input = plan.input(i);
                plan.build(i, &data[input.start as usize..input.end as usize])
                    .unwrap()
            })
            .collect();
        let part = shards[0].setup_part();
        malformed(plan.setup(&[part]).map(drop));
        malformed(plan.setup(&[part, part, part]).map(drop));
        let rows =
            ShardPlan::new(400, 4, RecordFormat::Raw, options, Split::Rows, 2, seed).unwrap();
        let row_shard = rows.build(0, &data).unwrap();
        malformed(plan.setup(&[part, row_shard.setup_part()]).map(drop));
        let cols = plan.geometry().cols() as usize;
        malformed(plan.query_part(0, &vec![0; cols + 1]).map(drop));
        malformed(shards[1].answer_parts(&[&vec![0; cols]]).map(drop));
        let parts: Vec<&SetupPart> = shards.iter().map(Shard::setup_part).collect();
        let setup = plan.setup(&parts).unwrap();
        let rows_of = plan.geometry().rows() as usize;
        malformed(plan.answer(&setup, &[vec![0; rows_of]]).map(drop));
        malformed(
            plan.answer(&setup, &[vec![0; rows_of], vec![0; rows_of - 1]])
                .map(drop),
        );
    }

    /// A shard's setup names everything in it: a change to any byte after the envelope, or a
    /// setup cut short, is refused; a shard's block must have its part's norms.
    #[test]
    fn shard_setups_refuse_what_they_do_not_name() {
        let options = options(Layout::PerColumn(3), MatrixKind::Uniform);
        let data: Vec<u8> = (0..600u32).map(|i| (i * 31 + 7) as u8).collect();
        let seed = MatrixSeed::random().unwrap();
        let plan =
            ShardPlan::new(600, 6, RecordFormat::Raw, options, Split::Rows, 3, seed).unwrap();
        let shard = plan.build(1, &data).unwrap();
        let bytes = shard.setup().to_bytes();
        for at in [crate::wire::HEADER_BYTES, bytes.len() / 2, bytes.len() - 1] {
            let mut changed = bytes.clone();
            changed[at] ^= 1;
            assert!(
                ShardSetup::from_bytes(&changed).is_err(),
                "byte {at} changed"
            );
        }
        assert!(ShardSetup::from_bytes(&bytes[..bytes.len() - 8]).is_err());
        let other = plan.build(2, &data).unwrap();
        let mixed = Shard::from_parts(shard.setup().clone(), other.database().clone());
        assert!(mixed.is_err());
        let same = Shard::from_parts(shard.setup().clone(), shard.database().clone()).unwrap();
        assert_eq!(same.setup(), shard.setup());
    }

    /// A database built with room for appends is planned with its capacity: the shards of
    /// columns past the records hold zeros, and combine as the others.
    #[test]
    fn shards_of_a_database_with_room_combine() {
        let options = EngineOptions {
            capacity: Some(400),
            ..options(Layout::PerColumn(4), MatrixKind::Uniform)
        };
        let data: Vec<u8> = (0..100u32 * 5).map(|i| (i * 13) as u8).collect();
        let seed = MatrixSeed::random().unwrap();
        let plan =
            ShardPlan::new(500, 5, RecordFormat::Raw, options, Split::Columns, 4, seed).unwrap();
        assert_eq!(plan.input(3), 500..500);
        check_shards(&plan, &data, &[0, 57, 99]);
    }
}
