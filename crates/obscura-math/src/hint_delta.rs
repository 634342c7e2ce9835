//! The hint's change when entries of the database change: `H += ΔD·A`, entry by entry.
//!
//! A changed entry `D[r][c]` (by `δ`, its new digit minus the old) adds `δ·A[c]` to row `r` of
//! `H`: `n` multiply-adds, against the `log2(n)` butterflies per entry of a whole negacyclic
//! hint product ([`crate::hint`]), so a change of up to about a tenth of the entries is cheaper
//! this way than a new product. The rows of a negacyclic `A` are not expanded: row `b·n + j` is
//! the window `W_b[n-1-j .. 2n-1-j]` of `W_b = (a_b reversed, -a_b reversed)`, one `2n`-word
//! table per block; a uniform `A`'s changed rows are expanded once each.
//!
//! Changes come as runs down columns ([`ColumnRuns`]), as a record's digits lie. Work is split
//! by bands of rows of `H`, and within a band by groups of four rows: the part of a run that
//! crosses all four rows of a group (a record's digits down its column) is added to the four at
//! once, each row of `A` read once for them and each strip of the four rows summed in registers;
//! the other changed entries are added row by row. Either way each row of `H` is read and
//! written once per kind of change, whatever the number of its changes.

use std::collections::HashMap;

use rayon::prelude::*;

use crate::backend::{vectorized, Backend};
use crate::expand::PublicMatrix;
use crate::matrix::Matrix;

/// Changes of `D` as runs down its columns: each run changes consecutive rows of one column,
/// each entry by its `δ` (new digit minus old, both read as `i8`, so `|δ| ≤ 255`; a `δ` of zero
/// is an entry left as it was). Positions and the count of entries stay below 2^32.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ColumnRuns {
    heads: Vec<Head>,
    deltas: Vec<i16>,
}

/// The `δ` of an entry whose digit `old` becomes `new` (both read as `i8`).
pub fn delta(old: u8, new: u8) -> i16 {
    i16::from(new as i8) - i16::from(old as i8)
}

/// Where a run lies and where its `δ` start in [`ColumnRuns::deltas`] (it ends where the next
/// run's start).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Head {
    col: u32,
    first_row: u32,
    start: u32,
}

/// One run of [`ColumnRuns`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Run<'a> {
    /// The run's column (a row of `A`).
    pub col: usize,
    /// Its first row (a row of `H`).
    pub first_row: usize,
    /// The `δ` of its entries, top to bottom.
    pub deltas: &'a [i16],
}

impl Run<'_> {
    /// The rows the run covers.
    pub fn rows(&self) -> std::ops::Range<usize> {
        self.first_row..self.first_row + self.deltas.len()
    }
}

impl ColumnRuns {
    /// No changes.
    pub fn new() -> Self {
        Self::default()
    }

    /// No changes, with room for `runs` runs of `entries` entries in all.
    pub fn with_capacity(runs: usize, entries: usize) -> Self {
        Self {
            heads: Vec::with_capacity(runs),
            deltas: Vec::with_capacity(entries),
        }
    }

    /// Adds the run of `deltas` down column `col` from row `first_row` (an empty run is
    /// skipped).
    ///
    /// # Panics
    /// If a position or the count of entries reaches 2^32.
    pub fn push(&mut self, col: usize, first_row: usize, deltas: &[i16]) {
        if deltas.is_empty() {
            return;
        }
        let narrow = |x: usize| u32::try_from(x).expect("positions and counts below 2^32");
        narrow(first_row + deltas.len());
        self.heads.push(Head {
            col: narrow(col),
            first_row: narrow(first_row),
            start: narrow(self.deltas.len()),
        });
        self.deltas.extend_from_slice(deltas);
        narrow(self.deltas.len());
    }

    /// Adds every run of `other` after this one's.
    ///
    /// # Panics
    /// If the count of entries reaches 2^32.
    pub fn append(&mut self, other: &ColumnRuns) {
        let offset = u32::try_from(self.deltas.len()).expect("counts below 2^32");
        self.heads.extend(other.heads.iter().map(|h| Head {
            start: h.start + offset,
            ..*h
        }));
        self.deltas.extend_from_slice(&other.deltas);
        u32::try_from(self.deltas.len()).expect("counts below 2^32");
    }

    /// The number of runs.
    pub fn len(&self) -> usize {
        self.heads.len()
    }

    /// Whether there are no runs.
    pub fn is_empty(&self) -> bool {
        self.heads.is_empty()
    }

    /// The number of entries the runs cover (zero `δ` included).
    pub fn entries(&self) -> usize {
        self.deltas.len()
    }

    /// Run `k`.
    fn run(&self, k: usize) -> Run<'_> {
        let head = self.heads[k];
        let end = self
            .heads
            .get(k + 1)
            .map_or(self.deltas.len(), |next| next.start as usize);
        Run {
            col: head.col as usize,
            first_row: head.first_row as usize,
            deltas: &self.deltas[head.start as usize..end],
        }
    }

    /// The runs in the order they were added.
    pub fn iter(&self) -> impl Iterator<Item = Run<'_>> + '_ {
        (0..self.heads.len()).map(|k| self.run(k))
    }
}

/// The rows of `A` that changed entries need, each as a slice: windows of per-block tables for
/// a negacyclic `A`, expanded rows for a uniform one.
enum Rows {
    /// Per block `b` that a change needs, the table `W_b`; row `b·n + j` is
    /// `W_b[n-1-j ..][.. n]`.
    Negacyclic {
        n: usize,
        tables: Vec<Option<Vec<u32>>>,
    },
    /// Each needed row, expanded.
    Uniform(HashMap<usize, Vec<u32>>),
}

impl Rows {
    /// The rows `cols` of `a`.
    fn new(a: &PublicMatrix, cols: impl Iterator<Item = usize>) -> Self {
        let n = a.cols();
        match a {
            PublicMatrix::Negacyclic(m) => {
                let blocks = a.rows().div_ceil(n);
                let needed = distinct(cols.map(|c| c / n), blocks);
                let mut tables = vec![None; blocks];
                let made: Vec<(usize, Vec<u32>)> = needed
                    .into_par_iter()
                    .map(|block| {
                        let mut a = vec![0u32; n];
                        m.polynomial(block, &mut a);
                        let table = a
                            .iter()
                            .rev()
                            .copied()
                            .chain(a.iter().rev().map(|x| x.wrapping_neg()))
                            .collect();
                        (block, table)
                    })
                    .collect();
                for (block, table) in made {
                    tables[block] = Some(table);
                }
                Self::Negacyclic { n, tables }
            }
            PublicMatrix::Uniform(_) => {
                let rows = distinct(cols, a.rows())
                    .into_par_iter()
                    .map(|col| {
                        let mut row = vec![0u32; n];
                        a.fill_rows(col, &mut row);
                        (col, row)
                    })
                    .collect();
                Self::Uniform(rows)
            }
        }
    }

    /// Row `col` of `A`.
    fn row(&self, col: usize) -> &[u32] {
        match self {
            Self::Negacyclic { n, tables } => {
                let (block, j) = (col / n, col % n);
                let table = tables[block].as_ref().expect("made for every change");
                &table[n - 1 - j..][..*n]
            }
            Self::Uniform(rows) => &rows[&col],
        }
    }
}

/// `H += ΔD·A` for the changes `runs` (any order; several changes of one entry add up), on the
/// rayon pool.
///
/// # Panics
/// If a run lies outside `H`'s rows or `A`'s rows, or `H` does not have `A`'s width.
pub fn apply(hint: &mut Matrix, a: &PublicMatrix, runs: &ColumnRuns) {
    assert_eq!(hint.cols(), a.cols(), "H has A's width");
    apply_to_rows(hint.as_mut_slice(), a, runs);
}

/// [`apply`] to a hint given as its entries, row-major, `A`'s width to a row (the words of an
/// encoded setup, changed where they lie).
///
/// # Panics
/// If a run lies outside `H`'s rows or `A`'s rows, or `hint` is not whole rows.
pub fn apply_to_rows(hint: &mut [u32], a: &PublicMatrix, runs: &ColumnRuns) {
    let n = a.cols();
    let hint_rows = hint.len().checked_div(n).unwrap_or(0);
    assert!(n == 0 || hint.len().is_multiple_of(n), "H is whole rows");
    let bands = hint_rows.div_ceil(BAND);
    let span = |run: &Run<'_>| run.first_row / BAND..(run.rows().end - 1) / BAND + 1;
    // Whether every run lies inside the matrices, and whether each lies within one band.
    let (inside, in_one_band) = (0..runs.len())
        .into_par_iter()
        .map(|k| {
            let run = runs.run(k);
            let inside = run.rows().end <= hint_rows && run.col < a.rows();
            (inside, inside && span(&run).len() == 1)
        })
        .reduce(|| (true, true), |x, y| (x.0 && y.0, x.1 && y.1));
    assert!(inside, "a change outside the matrices");
    if runs.is_empty() || n == 0 {
        return;
    }
    let rows = Rows::new(a, runs.heads.iter().map(|h| h.col as usize));
    let backend = Backend::selected();
    // The runs crossing each band of rows: band `k`'s are those at `starts[k]..starts[k + 1]`
    // of `by_band`, or of the runs themselves when `by_band` is `None`.
    let (starts, by_band) = if in_one_band && runs.heads.is_sorted_by_key(|h| h.first_row) {
        // In row order, each within a band (scattered entries, as a row-major layout's
        // records): already grouped.
        let starts: Vec<usize> = (0..=bands)
            .map(|k| {
                runs.heads
                    .partition_point(|h| (h.first_row as usize) < k * BAND)
            })
            .collect();
        (starts, None)
    } else {
        // A counting sort.
        let mut starts = vec![0usize; bands + 1];
        for run in runs.iter() {
            for band in span(&run) {
                starts[band + 1] += 1;
            }
        }
        for k in 0..bands {
            starts[k + 1] += starts[k];
        }
        let mut next = starts.clone();
        let mut by_band = vec![0u32; starts[bands]];
        for (k, run) in runs.iter().enumerate() {
            for band in span(&run) {
                by_band[next[band]] = k as u32;
                next[band] += 1;
            }
        }
        (starts, Some(by_band))
    };
    hint.par_chunks_mut(BAND * n)
        .enumerate()
        .for_each(|(k, band)| {
            let first = k * BAND;
            let band_rows = band.len() / n;
            // The terms of runs crossing all of a group's rows, with a factor per row, by group;
            // the other entries' terms by row. A term is a row of A and its factor.
            let mut groups: Vec<Vec<(&[u32], [u32; GROUP])>> =
                vec![Vec::new(); band_rows.div_ceil(GROUP)];
            let mut singles: Vec<Vec<(&[u32], u32)>> = vec![Vec::new(); band_rows];
            for i in starts[k]..starts[k + 1] {
                let run = runs.run(by_band.as_ref().map_or(i, |by_band| by_band[i] as usize));
                let window = rows.row(run.col);
                let covered = run.rows();
                let mut row = covered.start.max(first);
                let end = covered.end.min(first + band_rows);
                while row < end {
                    let g = (row - first) / GROUP;
                    let group = first + g * GROUP..first + (g + 1) * GROUP;
                    if row == group.start && group.end <= end {
                        let deltas = &run.deltas[row - run.first_row..][..GROUP];
                        groups[g].push((window, std::array::from_fn(|j| factor(deltas[j]))));
                        row = group.end;
                    } else {
                        let delta = run.deltas[row - run.first_row];
                        if delta != 0 {
                            singles[row - first].push((window, factor(delta)));
                        }
                        row += 1;
                    }
                }
            }
            for ((terms, h), g) in groups.iter().zip(band.chunks_mut(GROUP * n)).zip(0..) {
                if !terms.is_empty() {
                    add_scaled_group(backend, h, terms);
                }
                for (h, terms) in h.chunks_mut(n).zip(&singles[g * GROUP..]) {
                    if !terms.is_empty() {
                        add_scaled(backend, h, terms);
                    }
                }
            }
        });
}

/// `δ` as a factor modulo 2^32.
fn factor(delta: i16) -> u32 {
    i32::from(delta) as u32
}

/// The distinct values of `values` (each below `bound`), in increasing order.
fn distinct(values: impl Iterator<Item = usize>, bound: usize) -> Vec<usize> {
    let mut seen = vec![false; bound];
    for value in values {
        seen[value] = true;
    }
    (0..bound).filter(|&v| seen[v]).collect()
}

/// Rows of `H` whose changes are grouped and added together, by one task.
const BAND: usize = 64;

/// Rows of `H` that take the changes of runs crossing them together.
const GROUP: usize = 4;
const _: () = assert!(BAND.is_multiple_of(GROUP));

/// Entries of one row of `h` summed in registers at a time by [`add_scaled`]: 16 AVX-512
/// registers.
const STRIP: usize = 256;

/// Entries of each of [`GROUP`] rows summed in registers at a time by [`add_scaled_group`]:
/// 16 AVX-512 registers in all.
const GROUP_STRIP: usize = STRIP / GROUP;

/// `h += Σ factor · a` over Z_{2^32} for the `(a, factor)` of `terms` (each `a` as long as `h`):
/// a strip of [`STRIP`] entries of `h` at a time takes every term, so `h` is read and written
/// once instead of once per term.
fn add_scaled(backend: Backend, h: &mut [u32], terms: &[(&[u32], u32)]) {
    vectorized!(backend, fn(h: &mut [u32] = h, terms: &[(&[u32], u32)] = terms) {
        for (k, strip) in h.chunks_mut(STRIP).enumerate() {
            let start = k * STRIP;
            if let Ok(strip) = <&mut [u32; STRIP]>::try_from(&mut *strip) {
                let mut sum = *strip;
                for &(a, factor) in terms {
                    let a: &[u32; STRIP] = a[start..start + STRIP].try_into().expect("a strip");
                    for (s, &a) in sum.iter_mut().zip(a) {
                        *s = s.wrapping_add(a.wrapping_mul(factor));
                    }
                }
                *strip = sum;
            } else {
                for &(a, factor) in terms {
                    for (s, &a) in strip.iter_mut().zip(&a[start..]) {
                        *s = s.wrapping_add(a.wrapping_mul(factor));
                    }
                }
            }
        }
    })
}

/// [`add_scaled`] for the [`GROUP`] consecutive rows of `h` at once, each term a row `a` of `A`
/// and a factor per row: each strip of `a` is read once for the group.
fn add_scaled_group(backend: Backend, h: &mut [u32], terms: &[(&[u32], [u32; GROUP])]) {
    vectorized!(backend, fn(h: &mut [u32] = h, terms: &[(&[u32], [u32; GROUP])] = terms) {
        let n = h.len() / GROUP;
        let whole = n / GROUP_STRIP * GROUP_STRIP;
        for start in (0..whole).step_by(GROUP_STRIP) {
            let mut sums = [[0u32; GROUP_STRIP]; GROUP];
            for (j, sum) in sums.iter_mut().enumerate() {
                sum.copy_from_slice(&h[j * n + start..][..GROUP_STRIP]);
            }
            for &(a, factors) in terms {
                let a: &[u32; GROUP_STRIP] =
                    a[start..start + GROUP_STRIP].try_into().expect("a strip");
                for (sum, factor) in sums.iter_mut().zip(factors) {
                    for (s, &a) in sum.iter_mut().zip(a) {
                        *s = s.wrapping_add(a.wrapping_mul(factor));
                    }
                }
            }
            for (j, sum) in sums.iter().enumerate() {
                h[j * n + start..][..GROUP_STRIP].copy_from_slice(sum);
            }
        }
        for &(a, factors) in terms {
            for (j, factor) in factors.into_iter().enumerate() {
                for (s, &a) in h[j * n + whole..(j + 1) * n].iter_mut().zip(&a[whole..]) {
                    *s = s.wrapping_add(a.wrapping_mul(factor));
                }
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::expand::{MatrixSeed, NegacyclicMatrix, SeededMatrix};
    use proptest::prelude::*;

    /// `H += ΔD·A` entry by entry from expanded rows, the reference.
    fn schoolbook(hint: &mut [u32], a: &PublicMatrix, runs: &ColumnRuns) {
        let n = a.cols();
        let mut row = vec![0u32; n];
        for run in runs.iter() {
            a.fill_rows(run.col, &mut row);
            for (r, &delta) in run.rows().zip(run.deltas) {
                for (h, &x) in hint[r * n..][..n].iter_mut().zip(&row) {
                    *h = h.wrapping_add(x.wrapping_mul(delta as u32));
                }
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(24))]

        #[test]
        fn runs_add_their_rows_of_a(
            negacyclic in any::<bool>(),
            width in 0usize..3,
            rows in 1usize..150,
            blocks in 1usize..4,
            changes in proptest::collection::vec(
                (any::<usize>(), any::<usize>(), proptest::collection::vec(-255i16..=255, 1..80)),
                0..40,
            ),
            in_row_order in any::<bool>(),
            short in any::<bool>(),
            seed in any::<[u8; 16]>(),
        ) {
            // Narrower than a strip of either kernel, a whole number of strips, and (a uniform
            // A's rows need not be a power of two long) strips and a part of one.
            let n = match (width, negacyclic) {
                (0, _) => 64,
                (_, true) => 512,
                (1, false) => STRIP + 64,
                (_, false) => 100,
            };
            let cols = blocks * n - 3;
            let a = match negacyclic {
                true => PublicMatrix::Negacyclic(NegacyclicMatrix::new(MatrixSeed(seed), 7, cols, n).unwrap()),
                false => PublicMatrix::Uniform(SeededMatrix::new(MatrixSeed(seed), 7, cols, n)),
            };
            // Runs from one entry (row by row) to longer than a band (groups of rows), over
            // several bands, overlapping or not, with zeros among their changes; or entries
            // one by one; in row order (entries so are grouped by band already) or not.
            let longest = if short { 1 } else { usize::MAX };
            let mut changes: Vec<(usize, usize, &[i16])> = changes
                .iter()
                .map(|(r, c, deltas)| {
                    let first = r % rows;
                    (first, c % cols, &deltas[..deltas.len().min(rows - first).min(longest)])
                })
                .collect();
            if in_row_order {
                changes.sort_by_key(|&(first, _, _)| first);
            }
            let mut runs = ColumnRuns::new();
            for &(first, c, deltas) in &changes {
                runs.push(c, first, deltas);
            }
            let start: Vec<u32> = (0..rows * n).map(|i| (i as u32).wrapping_mul(0x9e37_79b9)).collect();
            let mut expected = start.clone();
            schoolbook(&mut expected, &a, &runs);
            let mut hint = Matrix::from_vec(rows, n, start).unwrap();
            apply(&mut hint, &a, &runs);
            prop_assert_eq!(hint.as_slice(), &expected[..]);
        }

        #[test]
        fn appended_runs_are_the_runs_pushed_in_turn(
            first in proptest::collection::vec((0usize..1000, 0usize..1000, proptest::collection::vec(any::<i16>(), 0..5)), 0..8),
            second in proptest::collection::vec((0usize..1000, 0usize..1000, proptest::collection::vec(any::<i16>(), 0..5)), 0..8),
        ) {
            let make = |runs: &[(usize, usize, Vec<i16>)]| {
                let mut made = ColumnRuns::new();
                for (c, r, deltas) in runs {
                    made.push(*c, *r, deltas);
                }
                made
            };
            let mut joined = make(&first);
            joined.append(&make(&second));
            let all: Vec<_> = first.iter().chain(&second).cloned().collect();
            let pushed = make(&all);
            prop_assert_eq!(&joined, &pushed);
            let nonempty: Vec<_> = all.iter().filter(|(_, _, d)| !d.is_empty()).collect();
            prop_assert_eq!(joined.len(), nonempty.len());
            for (run, (c, r, deltas)) in joined.iter().zip(nonempty) {
                prop_assert_eq!((run.col, run.first_row, run.deltas), (*c, *r, &deltas[..]));
            }
        }
    }
}
