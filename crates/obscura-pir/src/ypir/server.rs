//! The YPIR server: sets a database up (the first layer and its hint for YPIR, the packed
//! matrix and its packing plans for both) and answers queries.

use obscura_math::expand::{MatrixSeed, NegacyclicMatrix, PublicMatrix};
use obscura_math::hint::PreparedProduct;
use obscura_math::kernels;
use obscura_math::matrix::{Matrix, PlaintextMatrix};
use obscura_math::memory::LargeBuffer;
use obscura_math::pack;
use obscura_math::ring::{pack, Ciphertext, PackingKeys, PackingPlan, Poly};
use std::time::{Duration, Instant};

use rayon::prelude::*;

use super::bits::regroup;
use super::messages::{Answer, Query};
use super::packed::{restore, PackedLayer};
use super::params::{DEGREE, FIRST_DIMENSION, GADGET_DIGITS, LEVELS, PLAINTEXT_BITS, ROUNDED_BITS};
use super::scheme::Ypir;
use super::setup::PublicSetup;
use super::shape::{Shape, Variant, YpirShape, YpirSpShape, HINT_CHUNKS};
use crate::lwe::{
    centered, value_slots, values_footprint, Footprint, RecordFormat, RecordShape, Records,
};
use crate::scheme::{IndexServer, Progress};
use crate::{PirError, PirServer};
use obscura_math::ring::words::{pass, word_at, word_matrix, word_writes, Residues};

/// The domain of YPIR's first-layer matrix under the database's seed.
pub(super) const FIRST_DOMAIN: u64 = 0x5950_4952_0000_0003;

/// Choices made when a server sets up a YPIR database.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct YpirOptions {
    /// The variant; `None` picks [`Variant::auto`] for the records.
    pub variant: Option<Variant>,
}

/// How long the phases of an answer took.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AnswerPhases {
    /// YPIR's first pass over the database (zero for YPIR+SP).
    pub first_pass: Duration,
    /// The packed layer's pass: over YPIR's hint chunks, or over YPIR+SP's database.
    pub second_pass: Duration,
    /// Packing: the keys' transforms, the planned and the per-query packing, modulus switching.
    pub packing: Duration,
}

/// The server side of YPIR.
#[derive(Clone)]
pub struct Server {
    setup: PublicSetup,
    layer: PackedLayer,
    /// The packed layer's matrix ([`word_matrix`]): YPIR+SP's 15-bit words, one column per
    /// column of records; YPIR's 15-bit chunks of the first layer's rounded hint, 2,048 rows
    /// and one column per first-layer row.
    pub(super) packed: PlaintextMatrix,
    /// One plan per ciphertext of the answer.
    pub(super) plans: Vec<PackingPlan>,
    /// YPIR's first layer: the records' digits.
    pub(super) first: Option<PlaintextMatrix>,
    /// YPIR's first hint's low bits that its chunks round off ([`first_residues`]): with the
    /// chunks they give the exact hint an update changes.
    pub(super) residues: Option<PlaintextMatrix>,
}

/// The first layer's public matrix `A1` (`columns x 1024`, negacyclic blocks).
pub(super) fn first_matrix(seed: MatrixSeed, columns: u64) -> PublicMatrix {
    PublicMatrix::Negacyclic(
        NegacyclicMatrix::new(seed, FIRST_DOMAIN, columns as usize, FIRST_DIMENSION)
            .expect("a power-of-two dimension"),
    )
}

/// Low bits of a first-layer value that rounding to [`ROUNDED_BITS`] bits leaves out.
const FIRST_DROPPED: u32 = 32 - ROUNDED_BITS;

/// A first-layer value rounded to [`ROUNDED_BITS`] bits: `round(x / 16) mod 2^28`.
pub(super) fn round_first(x: u32) -> u32 {
    x.wrapping_add(1 << (FIRST_DROPPED - 1)) >> FIRST_DROPPED
}

/// The bits of `x + 8` that [`round_first`] shifts out: with the rounded value they give `x`
/// back ([`unround_first`]).
fn first_residue(x: u32) -> u8 {
    (x.wrapping_add(1 << (FIRST_DROPPED - 1)) & ((1 << FIRST_DROPPED) - 1)) as u8
}

/// The first-layer value whose [`round_first`] is `rounded` and [`first_residue`] `residue`.
fn unround_first(rounded: u32, residue: u8) -> u32 {
    (rounded << FIRST_DROPPED | u32::from(residue)).wrapping_sub(1 << (FIRST_DROPPED - 1))
}

impl Server {
    /// Builds a database of records of `record_bytes` bytes laid end to end in `data` (the last
    /// one may be short); `progress(done, total)` follows the build.
    pub fn from_records(
        data: &[u8],
        record_bytes: u64,
        options: YpirOptions,
        progress: Progress<'_>,
    ) -> Result<Self, PirError> {
        Self::build_slots(data, record_bytes, RecordFormat::Raw, options, progress)
    }

    /// Builds a database of variable-length values, each stored as its length and bytes in a
    /// slot as large as the longest.
    pub fn from_values<V: AsRef<[u8]>>(
        values: &[V],
        options: YpirOptions,
        progress: Progress<'_>,
    ) -> Result<Self, PirError> {
        let (data, slot) = value_slots(values, None)?;
        Self::build_slots(&data, slot, RecordFormat::LengthPrefixed, options, progress)
    }

    /// What [`Server::from_records`] of `data_bytes` bytes of records of `record_bytes` bytes will
    /// hold and produce, computed before anything is allocated: the matrices it keeps and
    /// stores, the packing plans it keeps (about 96 MiB per answer ciphertext), and what it
    /// holds for a while (YPIR's first hint and its chunks, or a group's masks).
    pub fn footprint(
        data_bytes: u64,
        record_bytes: u64,
        options: YpirOptions,
    ) -> Result<Footprint, PirError> {
        if data_bytes == 0 || record_bytes == 0 {
            return Err(PirError::InvalidParameters(
                "the database has no records".into(),
            ));
        }
        let records = data_bytes.div_ceil(record_bytes);
        let variant = options
            .variant
            .unwrap_or_else(|| Variant::auto(records, record_bytes));
        let poly = (2 * DEGREE * 4) as u64;
        let plan = |group: usize| {
            let steps = group - 1 + (DEGREE / group).trailing_zeros() as usize;
            poly * (steps * GADGET_DIGITS + 2 + LEVELS) as u64
        };
        let setup_bytes = 160;
        Ok(match Shape::plan(variant, records, record_bytes)? {
            Shape::YpirSp(s) => {
                let packing = s.packing();
                Footprint::of(
                    s.rows().saturating_mul(2 * s.columns()),
                    packing.ciphertexts as u64 * plan(packing.group),
                    packing.group as u64 * poly,
                    setup_bytes,
                )
            }
            Shape::Ypir(s) => {
                let rows = s.rows();
                let first = rows.saturating_mul(s.columns());
                let packed = rows.saturating_mul(2 * DEGREE as u64);
                let residues = rows.saturating_mul(FIRST_DIMENSION as u64);
                // The first hint, and its chunks row by row.
                let hint = rows.saturating_mul(FIRST_DIMENSION as u64 * 4 + HINT_CHUNKS as u64 * 4);
                Footprint::of(
                    first.saturating_add(packed).saturating_add(residues),
                    plan(DEGREE),
                    hint.max(DEGREE as u64 * poly),
                    setup_bytes,
                )
            }
        })
    }

    /// What [`Server::from_values`] of `count` values, the longest of `longest` bytes, will
    /// hold and produce (the values themselves not counted).
    pub fn values_footprint(
        count: u64,
        longest: u64,
        options: YpirOptions,
    ) -> Result<Footprint, PirError> {
        values_footprint(count, longest, |data_bytes, slot| {
            Self::footprint(data_bytes, slot, options)
        })
    }

    fn build_slots(
        data: &[u8],
        record_bytes: u64,
        format: RecordFormat,
        options: YpirOptions,
        progress: Progress<'_>,
    ) -> Result<Self, PirError> {
        if data.is_empty() || record_bytes == 0 {
            return Err(PirError::InvalidParameters(
                "the database has no records".into(),
            ));
        }
        let records = (data.len() as u64).div_ceil(record_bytes);
        let variant = options
            .variant
            .unwrap_or_else(|| Variant::auto(records, record_bytes));
        let shape = Shape::plan(variant, records, record_bytes)?;
        Self::build_seeded(data, shape, format, MatrixSeed::random()?, progress)
    }

    /// The database of `data` laid out as `shape`, its public polynomials from `seed`.
    pub(super) fn build_seeded(
        data: &[u8],
        shape: Shape,
        format: RecordFormat,
        seed: MatrixSeed,
        progress: Progress<'_>,
    ) -> Result<Self, PirError> {
        let setup = PublicSetup::new(shape, format, data.len() as u64, seed)?;
        match shape {
            Shape::YpirSp(s) => {
                let packed = ypir_sp_words(data, &s);
                Ok(Self::assemble(setup, packed, None, progress))
            }
            Shape::Ypir(s) => {
                let first = first_digits(data, &s);
                let hint = PreparedProduct::new(first_matrix(seed, s.columns())).product(&first);
                let packed = hint_chunks(hint.as_slice(), &s, None);
                let residues = first_residues(hint.as_slice(), &s);
                Ok(Self::assemble(
                    setup,
                    packed,
                    Some((first, residues)),
                    progress,
                ))
            }
        }
    }

    /// A server from its setup and matrices (YPIR's first layer and first hint's residues
    /// beside the packed layer's): the packed layer's masks and plans are worked out again.
    fn assemble(
        setup: PublicSetup,
        packed: PlaintextMatrix,
        first: Option<(PlaintextMatrix, PlaintextMatrix)>,
        progress: Progress<'_>,
    ) -> Self {
        let layer = PackedLayer::new(setup.seed(), packed.cols() / 2);
        let (first, residues) = first.unzip();
        let mut server = Self {
            setup,
            layer,
            packed,
            plans: Vec::new(),
            first,
            residues,
        };
        // Each group's masks are worked out, planned and dropped in turn.
        let total = server.packed.rows().div_ceil(server.group());
        progress(0, total as u64);
        server.plans = (0..total)
            .map(|g| {
                let plan = server.group_plan(g);
                progress(g as u64 + 1, total as u64);
                plan
            })
            .collect();
        server
    }

    /// Rows of the packed matrix that one plan packs.
    fn group(&self) -> usize {
        match self.setup.shape() {
            Shape::YpirSp(s) => s.packing().group,
            Shape::Ypir(_) => DEGREE,
        }
    }

    /// The plan of group `g` of the packed matrix's rows: their masks worked out from the
    /// matrix (zero past its last row), planned and dropped.
    pub(super) fn group_plan(&self, g: usize) -> PackingPlan {
        let (group, rows) = (self.group(), self.packed.rows());
        let first = g * group;
        let count = group.min(rows - first);
        let mut masks = self.layer.word_masks(&self.packed, first..first + count);
        masks.resize(group, Poly::zero(DEGREE));
        self.layer.plan(&masks)
    }

    /// The public setup to hand to clients.
    pub fn public_setup(&self) -> &PublicSetup {
        &self.setup
    }

    /// Answers queries already checked against the setup.
    fn answer_checked(&self, queries: &[&Query]) -> Vec<Answer> {
        self.phases_checked(queries, true).0
    }

    /// Answers `queries` (in one pass over the database for all of them) and times the phases
    /// of the answer; with `overlap`, the first pass and the packed layer's pass run side by
    /// side, as answers do, otherwise one after the other, each on every thread.
    pub fn answer_phases(
        &self,
        queries: &[&Query],
        overlap: bool,
    ) -> Result<(Vec<Answer>, AnswerPhases), PirError> {
        for query in queries {
            query.check(&self.setup)?;
        }
        Ok(self.phases_checked(queries, overlap))
    }

    /// [`Self::answer_phases`] of queries already checked against the setup.
    fn phases_checked(&self, queries: &[&Query], overlap: bool) -> (Vec<Answer>, AnswerPhases) {
        let ring = self.layer.ring();
        let residues: Vec<Residues> = queries
            .iter()
            .map(|q| {
                let restored: Vec<u64> =
                    q.second.iter().map(|&v| restore(v, q.dropped[1])).collect();
                Residues::new(ring, &restored)
            })
            .collect();
        let timed = |f: &dyn Fn() -> Vec<Vec<u64>>| {
            let started = Instant::now();
            (f(), started.elapsed())
        };
        let second = || pass(ring, &self.packed, &residues);
        let first = || {
            let started = Instant::now();
            (self.first_answers(queries), started.elapsed())
        };
        let ((bodies, second_pass), (firsts, first_pass)) = if overlap {
            rayon::join(|| timed(&second), first)
        } else {
            let firsts = first();
            (timed(&second), firsts)
        };
        let started = Instant::now();
        let answers = queries
            .par_iter()
            .zip(bodies)
            .zip(residues.par_iter())
            .enumerate()
            .map(|(i, ((query, bodies), residues))| {
                let keys = self.layer.packing_keys(Some(&query.keys));
                let cts = match self.setup.shape() {
                    Shape::YpirSp(_) => self.pack_groups(&keys, &bodies),
                    Shape::Ypir(s) => {
                        let digits = s.digits() as usize;
                        let answers = &firsts[i * digits..(i + 1) * digits];
                        vec![self.pack_ypir(s, &keys, bodies, answers, residues)]
                    }
                };
                let (mut masks, mut values) = (Vec::new(), Vec::new());
                for ct in &cts {
                    let (mask, body) = self.layer.switch(ct);
                    masks.extend(mask);
                    values.extend(body);
                }
                Answer {
                    digest: *self.setup.digest(),
                    masks,
                    bodies: values,
                }
            })
            .collect();
        let phases = AnswerPhases {
            first_pass,
            second_pass,
            packing: started.elapsed(),
        };
        (answers, phases)
    }

    /// YPIR's first pass: every query's first-layer vectors over the database at once.
    fn first_answers(&self, queries: &[&Query]) -> Vec<Vec<u32>> {
        let (Some(first), Shape::Ypir(s)) = (&self.first, self.setup.shape()) else {
            return Vec::new();
        };
        let restored: Vec<Vec<u32>> = queries
            .iter()
            .map(|q| q.first.iter().map(|&w| w << q.dropped[0]).collect())
            .collect();
        let vectors: Vec<&[u32]> = restored
            .iter()
            .flat_map(|first| first.chunks_exact(s.columns() as usize))
            .collect();
        kernels::plaintext_mat_vecs(first, &vectors)
    }

    /// YPIR+SP's answer: each group of rows' bodies packed with its plan.
    fn pack_groups(&self, keys: &PackingKeys, bodies: &[u64]) -> Vec<Ciphertext> {
        self.plans
            .iter()
            .enumerate()
            .map(|(g, plan)| {
                let group = plan.count();
                let mut padded = bodies[(g * group).min(bodies.len())..].to_vec();
                padded.resize(group, 0);
                plan.pack(self.layer.ring(), keys, &padded)
            })
            .collect()
    }

    /// YPIR's answer: the hint chunks' bodies packed with the plan, the answer chunks (which
    /// change with every query) packed from scratch at their coefficients, the two added.
    fn pack_ypir(
        &self,
        shape: &YpirShape,
        keys: &PackingKeys,
        mut bodies: Vec<u64>,
        answers: &[Vec<u32>],
        residues: &Residues,
    ) -> Ciphertext {
        let ring = self.layer.ring();
        let rows = shape.rows() as usize;
        let chunks = shape.answer_chunks();
        // Row r's answers, rounded, cut into chunks.
        let per_row: Vec<Vec<u32>> = (0..rows)
            .map(|r| {
                let rounded = answers.iter().map(|a| round_first(a[r]));
                regroup(rounded, ROUNDED_BITS, PLAINTEXT_BITS, chunks)
            })
            .collect();
        let chunk_matrix = word_matrix(chunks, rows, |i, r| per_row[r][i] as u16);
        let chunk_bodies = pass(ring, &chunk_matrix, std::slice::from_ref(residues)).remove(0);
        for (i, body) in chunk_bodies.into_iter().enumerate() {
            bodies[shape.answer_position(i)] = body;
        }
        // The answers' chunks are packed from scratch (a chain of key switches, one thread)
        // while the plan packs the rest on the others.
        let (planned, answers) = rayon::join(
            || self.plans[0].pack(ring, keys, &bodies),
            || {
                let masks = self.layer.masks(chunks, |i, r| per_row[r][i] as u16);
                let zero = Poly::zero(DEGREE);
                let mut inputs = vec![
                    Ciphertext {
                        a: zero.clone(),
                        b: zero.clone(),
                    };
                    shape.answer_group()
                ];
                for (input, mask) in inputs.iter_mut().zip(masks) {
                    input.a = mask;
                }
                let stride = DEGREE / shape.answer_group();
                pack(ring, keys, &inputs).multiply_monomial(ring, stride - 1)
            },
        );
        planned.add(ring, &answers)
    }

    /// A server from a stored setup and matrices; checks that they fit together.
    pub fn from_parts(
        setup: PublicSetup,
        matrices: Vec<PlaintextMatrix>,
    ) -> Result<Self, PirError> {
        let shapes = matrix_shapes(&setup);
        if matrices.len() != shapes.len()
            || matrices
                .iter()
                .zip(&shapes)
                .any(|(m, &shape)| (m.rows(), m.cols()) != shape)
        {
            return Err(PirError::malformed(
                "database",
                "its matrices do not have the shapes of its YPIR setup",
            ));
        }
        let mut matrices = matrices.into_iter();
        let mut next = || matrices.next().expect("a matrix of each shape");
        let (first, packed) = match setup.shape() {
            Shape::YpirSp(_) => (None, next()),
            Shape::Ypir(_) => {
                let (first, packed, residues) = (next(), next(), next());
                (Some((first, residues)), packed)
            }
        };
        Ok(Self::assemble(setup, packed, first, &|_, _| {}))
    }
}

/// The `(rows, columns)` of the matrices a server of `setup` streams, in file order: YPIR's
/// first layer, then the packed layer's bytes, then YPIR's first hint's residues.
pub(super) fn matrix_shapes(setup: &PublicSetup) -> Vec<(usize, usize)> {
    match setup.shape() {
        Shape::YpirSp(s) => vec![(s.rows() as usize, 2 * s.columns() as usize)],
        Shape::Ypir(s) => vec![
            (s.rows() as usize, s.columns() as usize),
            (DEGREE, 2 * s.rows() as usize),
            (s.rows() as usize, FIRST_DIMENSION),
        ],
    }
}

/// YPIR+SP's matrix: column `c` is the bit stream of its records cut into 15-bit words.
fn ypir_sp_words(data: &[u8], shape: &YpirSpShape) -> PlaintextMatrix {
    let column_bytes = (shape.per_column() * shape.record_bytes()) as usize;
    let (rows, columns) = (shape.rows() as usize, shape.columns() as usize);
    word_matrix(rows, columns, |r, c| {
        let start = c * column_bytes;
        let stream = &data[start..(start + column_bytes).min(data.len())];
        word_in(stream, r as u64 * u64::from(PLAINTEXT_BITS), PLAINTEXT_BITS) as u16
    })
}

/// The `width`-bit value (at most 16) at bit `offset` of `bytes`, zero past their end.
pub(super) fn word_in(bytes: &[u8], offset: u64, width: u32) -> u32 {
    let first = (offset / 8) as usize;
    let window = (0..3).fold(0u32, |acc, i| {
        acc | u32::from(bytes.get(first + i).copied().unwrap_or(0)) << (8 * i)
    });
    (window >> (offset % 8)) & ((1 << width) - 1)
}

/// YPIR's first layer: row `r` holds records `r·m … r·m + m − 1`, each as its `k` digits in
/// consecutive columns, stored centered. With bytes for digits a row is a run of the data, its
/// bytes their own centered digits (the `i8` with the same bits).
fn first_digits(data: &[u8], shape: &YpirShape) -> PlaintextMatrix {
    let (rows, columns) = (shape.rows() as usize, shape.columns() as usize);
    if shape.log_p() == 8 {
        return PlaintextMatrix::from_fn(rows, columns, |r, c, out| {
            let start = (r * columns + c).min(data.len());
            let run = &data[start..(start + out.len()).min(data.len())];
            out[..run.len()].copy_from_slice(run);
            out[run.len()..].fill(0);
        });
    }
    let (per_row, digits) = (shape.per_row() as usize, shape.digits() as usize);
    let (record_bytes, width) = (shape.record_bytes() as usize, u32::from(shape.log_p()));
    let records = shape.records() as usize;
    PlaintextMatrix::from_fn(rows, columns, |r, c, out| {
        for (i, entry) in out.iter_mut().enumerate() {
            let (record, digit) = (r * per_row + (c + i) / digits, (c + i) % digits);
            *entry = if record < records {
                let start = record * record_bytes;
                record_digit(
                    &data[start..(start + record_bytes).min(data.len())],
                    digit,
                    width,
                )
            } else {
                0
            };
        }
    })
}

/// Digit `digit` of a record's `bytes` (`width` bits each, zero past its end), centered, as the
/// first layer stores it.
pub(super) fn record_digit(bytes: &[u8], digit: usize, width: u32) -> u8 {
    let offset = (digit as u32 * width) as u64;
    centered(
        pack::digit_at(bytes, offset, width, bytes.len() as u64 * 8),
        width,
    )
}

/// YPIR's first hint's [`first_residue`]s: row `r` holds those of hint row `r`.
pub(super) fn first_residues(hint: &[u32], shape: &YpirShape) -> PlaintextMatrix {
    PlaintextMatrix::from_fn(shape.rows() as usize, FIRST_DIMENSION, |r, c, out| {
        let row = &hint[r * FIRST_DIMENSION + c..][..out.len()];
        for (residue, &x) in out.iter_mut().zip(row) {
            *residue = first_residue(x);
        }
    })
}

/// YPIR's first hint `H1 = D·A1` exactly: each row's rounded values read back from its chunks
/// in `packed`, each with its residue.
pub(super) fn exact_hint(
    packed: &PlaintextMatrix,
    residues: &PlaintextMatrix,
    shape: &YpirShape,
) -> Matrix {
    let rows = shape.rows() as usize;
    let positions = shape.hint_positions();
    let mut hint = Matrix::zeros(rows, FIRST_DIMENSION);
    // A band of hint rows at a time: their words (two byte columns each, 2r and 2r + 1) over
    // the packed matrix's rows, and their residues, copied out row-major.
    hint.as_mut_slice()
        .par_chunks_mut(HINT_BAND * FIRST_DIMENSION)
        .enumerate()
        .for_each(|(b, band)| {
            let first = b * HINT_BAND;
            let count = band.len() / FIRST_DIMENSION;
            let width = 2 * count;
            let mut words = vec![0u8; DEGREE * width];
            packed.copy_block(0..DEGREE, 2 * first..2 * first + width, &mut words);
            let mut low = vec![0u8; count * FIRST_DIMENSION];
            residues.copy_block(first..first + count, 0..FIRST_DIMENSION, &mut low);
            for (i, (row, low)) in band
                .chunks_exact_mut(FIRST_DIMENSION)
                .zip(low.chunks_exact(FIRST_DIMENSION))
                .enumerate()
            {
                let chunk = |p: usize| {
                    let at = p * width + 2 * i;
                    u32::from(words[at]) | u32::from(words[at + 1]) << 8
                };
                unchunk(
                    positions.iter().map(|&p| chunk(p)),
                    low.iter().copied(),
                    row,
                );
            }
        });
    hint
}

/// Hint rows [`exact_hint`] reads back together (a multiple of the matrices' row groups).
const HINT_BAND: usize = 64;

/// The exact first hint's rows `rows`, read entry by entry: for a few rows, where reading the
/// whole packed matrix would cost more.
pub(super) fn exact_hint_rows(
    packed: &PlaintextMatrix,
    residues: &PlaintextMatrix,
    shape: &YpirShape,
    rows: &[usize],
) -> Matrix {
    let positions = shape.hint_positions();
    let mut hint = Matrix::zeros(rows.len(), FIRST_DIMENSION);
    hint.as_mut_slice()
        .par_chunks_mut(FIRST_DIMENSION)
        .zip(rows)
        .for_each(|(row, &r)| {
            let chunk = |p: usize| u32::from(word_at(packed, p, r));
            let low = (0..FIRST_DIMENSION).map(|j| residues.get(r, j));
            unchunk(positions.iter().map(|&p| chunk(p)), low, row);
        });
    hint
}

/// Writes `hint`'s rows, hint rows `rows` of YPIR's first layer, as their chunks in `packed`
/// and their residues.
pub(super) fn write_hint_rows(
    packed: &mut PlaintextMatrix,
    residues: &mut PlaintextMatrix,
    shape: &YpirShape,
    rows: &[usize],
    hint: &Matrix,
) {
    let positions = shape.hint_positions();
    let mut chunk_writes = Vec::with_capacity(rows.len() * 2 * HINT_CHUNKS);
    let mut residue_writes = Vec::with_capacity(rows.len() * FIRST_DIMENSION);
    for (i, &r) in rows.iter().enumerate() {
        let row = hint.row(i);
        for (&p, chunk) in positions.iter().zip(row_chunks(row)) {
            chunk_writes.extend(word_writes(p, r, chunk as u16));
        }
        residue_writes.extend(
            row.iter()
                .enumerate()
                .map(|(j, &x)| (r, j, first_residue(x))),
        );
    }
    packed.set_many(chunk_writes);
    residues.set_many(residue_writes);
}

/// A first-hint row's [`HINT_CHUNKS`] chunks: its values rounded, cut into 15-bit chunks.
fn row_chunks(row: &[u32]) -> Vec<u32> {
    let rounded = row.iter().map(|&x| round_first(x));
    regroup(rounded, ROUNDED_BITS, PLAINTEXT_BITS, HINT_CHUNKS)
}

/// Writes into `row` the first-hint row whose chunks are `chunks` and residues `residues`.
fn unchunk(chunks: impl Iterator<Item = u32>, residues: impl Iterator<Item = u8>, row: &mut [u32]) {
    let rounded = regroup(chunks, PLAINTEXT_BITS, ROUNDED_BITS, FIRST_DIMENSION);
    for ((x, rounded), residue) in row.iter_mut().zip(rounded).zip(residues) {
        *x = unround_first(rounded, residue);
    }
}

/// YPIR's packed matrix: column `r` holds the 15-bit chunks of the first layer's hint row `r`
/// (1,024 values rounded to 28 bits) at [`YpirShape::hint_positions`]; the answer chunks'
/// rows are zero. Written over `spare` when it has the size.
pub(super) fn hint_chunks(
    hint: &[u32],
    shape: &YpirShape,
    spare: Option<LargeBuffer>,
) -> PlaintextMatrix {
    let positions = shape.hint_positions();
    // Column by column, as the matrix's columns are read: hint row r's words as two byte
    // columns, 2r (low bytes) and 2r + 1 (high), each written by the row's own task.
    let mut columns = vec![0u8; 2 * hint.len() / FIRST_DIMENSION * DEGREE];
    columns
        .par_chunks_mut(2 * DEGREE)
        .zip(hint.par_chunks_exact(FIRST_DIMENSION))
        .for_each(|(pair, row)| {
            let (lo, hi) = pair.split_at_mut(DEGREE);
            for (&p, chunk) in positions.iter().zip(row_chunks(row)) {
                [lo[p], hi[p]] = (chunk as u16).to_le_bytes();
            }
        });
    let rows = shape.rows() as usize;
    PlaintextMatrix::from_column_runs_reusing(DEGREE, 2 * rows, spare, |c| {
        &columns[c * DEGREE..][..DEGREE]
    })
}

impl IndexServer for Server {
    const STEPS: &'static [&'static str] = &["planning the packing"];

    fn footprint_for(shape: RecordShape, options: &YpirOptions) -> Result<Footprint, PirError> {
        shape.either(
            |bytes, record_bytes| Self::footprint(bytes, record_bytes, *options),
            |count, longest| Self::values_footprint(count, longest, *options),
        )
    }
}

impl PirServer for Server {
    type Scheme = Ypir;
    type Data<'a> = Records<'a>;
    type Options = YpirOptions;

    fn build(
        records: Records<'_>,
        options: YpirOptions,
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
        for query in queries {
            query.check(&self.setup)?;
        }
        let queries: Vec<&Query> = queries.iter().collect();
        Ok(self.answer_checked(&queries))
    }

    fn matrices(&self) -> Vec<&PlaintextMatrix> {
        self.first
            .iter()
            .chain([&self.packed])
            .chain(&self.residues)
            .collect()
    }

    fn from_parts(setup: PublicSetup, matrices: Vec<PlaintextMatrix>) -> Result<Self, PirError> {
        Server::from_parts(setup, matrices)
    }

    /// Records set or deleted under the same setup ([`Server::update_phases`]): clients keep
    /// their setup, so there is no patch.
    fn update(&mut self, changes: &[crate::Change]) -> Result<Option<Vec<u8>>, PirError> {
        self.update_phases(changes).map(|_| None)
    }
}
