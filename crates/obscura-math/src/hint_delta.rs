//! The hint's change when entries of the database change: `H += ΔD·A`, entry by entry.
//!
//! A changed entry `D[r][c]` (by `δ`, its new signed digit minus the old) adds `δ·A[c]` to row
//! `r` of `H`: `n` multiply-adds, against the `log2(n)` butterflies per entry of a whole
//! negacyclic hint product ([`crate::hint`]), so a change of up to about a tenth of the entries
//! is cheaper this way than a new product. The rows of a negacyclic `A` are not expanded: row
//! `b·n + j` is the window `W_b[n-1-j .. 2n-1-j]` of `W_b = (a_b reversed, -a_b reversed)`, one
//! `2n`-word table per block; a uniform `A`'s changed rows are expanded once each. Work is
//! split by bands of rows of `H`, and each row takes all its changes a strip of entries at a
//! time, so each row is read and written once whatever the number of changes.

use std::collections::HashMap;

use rayon::prelude::*;

use crate::backend::{vectorized, Backend};
use crate::expand::PublicMatrix;
use crate::matrix::Matrix;

/// The change of one entry of `D`: its row, its column and `δ` (new digit minus old, both read
/// as signed).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EntryDelta {
    /// The entry's row (a row of `H`).
    pub row: usize,
    /// The entry's column (a row of `A`).
    pub col: usize,
    /// New digit minus old.
    pub delta: i32,
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
    /// The rows of `a` that `deltas` name.
    fn new(a: &PublicMatrix, deltas: &[EntryDelta]) -> Self {
        let n = a.cols();
        match a {
            PublicMatrix::Negacyclic(m) => {
                let blocks = a.rows().div_ceil(n);
                let needed = distinct(deltas.iter().map(|d| d.col / n), blocks);
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
                let rows = distinct(deltas.iter().map(|d| d.col), a.rows())
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

/// `H += ΔD·A` for the changes `deltas` (any order; several changes of one entry add up), on
/// the rayon pool.
///
/// # Panics
/// If a change lies outside `H`'s rows or `A`'s rows, `A` has 2^32 rows or more, or `H` does
/// not have `A`'s width.
pub fn apply(hint: &mut Matrix, a: &PublicMatrix, deltas: &[EntryDelta]) {
    let n = a.cols();
    assert_eq!(hint.cols(), n, "H has A's width");
    assert!(
        deltas
            .iter()
            .all(|d| d.row < hint.rows() && d.col < a.rows()),
        "a change outside the matrices"
    );
    assert!(
        u32::try_from(a.rows()).is_ok(),
        "A has fewer than 2^32 rows"
    );
    let rows = Rows::new(a, deltas);
    let backend = Backend::selected();
    // The changes grouped by band of rows, then by row within each band (two counting sorts,
    // each writing to few places at a time, the first skipped for changes already in row
    // order): band `k`'s are `by_band[starts[k]..starts[k + 1]]`, each as (row within the
    // band, column, δ), the column below 2^32 as asserted above.
    let bands = hint.rows().div_ceil(BAND);
    let entry = |d: &EntryDelta| ((d.row % BAND) as u32, d.col as u32, d.delta);
    let (starts, by_band) = if deltas.is_sorted_by_key(|d| d.row) {
        let starts: Vec<usize> = (0..=bands)
            .map(|k| deltas.partition_point(|d| d.row < k * BAND))
            .collect();
        let by_band: Vec<(u32, u32, i32)> = deltas.par_iter().map(entry).collect();
        (starts, by_band)
    } else {
        let mut starts = vec![0usize; bands + 1];
        for d in deltas {
            starts[d.row / BAND + 1] += 1;
        }
        for k in 0..bands {
            starts[k + 1] += starts[k];
        }
        let mut next = starts.clone();
        let mut by_band = vec![(0u32, 0u32, 0i32); deltas.len()];
        for d in deltas {
            let k = d.row / BAND;
            by_band[next[k]] = entry(d);
            next[k] += 1;
        }
        (starts, by_band)
    };
    hint.as_mut_slice()
        .par_chunks_mut(BAND * n)
        .enumerate()
        .for_each(|(k, band)| {
            let changes = &by_band[starts[k]..starts[k + 1]];
            let mut row_starts = [0usize; BAND + 1];
            for &(row, _, _) in changes {
                row_starts[row as usize + 1] += 1;
            }
            for r in 0..BAND {
                row_starts[r + 1] += row_starts[r];
            }
            let mut next = row_starts;
            let mut terms: Vec<(&[u32], u32)> = vec![(&[], 0); changes.len()];
            for &(row, col, delta) in changes {
                terms[next[row as usize]] = (rows.row(col as usize), delta as u32);
                next[row as usize] += 1;
            }
            for (r, h) in band.chunks_mut(n).enumerate() {
                add_scaled(backend, h, &terms[row_starts[r]..row_starts[r + 1]]);
            }
        });
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

/// Entries of `h` summed in registers at a time by [`add_scaled`]: 16 AVX-512 registers.
const STRIP: usize = 256;

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::expand::{MatrixSeed, NegacyclicMatrix, SeededMatrix};
    use proptest::prelude::*;

    /// `H += ΔD·A` entry by entry from expanded rows, the reference.
    fn schoolbook(hint: &mut [u32], a: &PublicMatrix, deltas: &[EntryDelta]) {
        let n = a.cols();
        let mut row = vec![0u32; n];
        for d in deltas {
            a.fill_rows(d.col, &mut row);
            for (h, &x) in hint[d.row * n..][..n].iter_mut().zip(&row) {
                *h = h.wrapping_add(x.wrapping_mul(d.delta as u32));
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(16))]

        #[test]
        fn deltas_add_their_rows_of_a(
            negacyclic in any::<bool>(),
            wide in any::<bool>(),
            rows in 1usize..150,
            blocks in 1usize..4,
            in_row_order in any::<bool>(),
            changes in proptest::collection::vec((any::<usize>(), any::<usize>(), -255i32..=255), 0..60),
            seed in any::<[u8; 16]>(),
        ) {
            // Narrower than a strip, and (a uniform A's rows need not be a power of two long)
            // whole strips and a partial one.
            let n = match (wide, negacyclic) {
                (false, _) => 64,
                (true, true) => 512,
                (true, false) => STRIP + 64,
            };
            let cols = blocks * n - 3;
            let a = match negacyclic {
                true => PublicMatrix::Negacyclic(NegacyclicMatrix::new(MatrixSeed(seed), 7, cols, n).unwrap()),
                false => PublicMatrix::Uniform(SeededMatrix::new(MatrixSeed(seed), 7, cols, n)),
            };
            // Over several bands of rows; in row order or not (two ways of grouping them).
            let mut deltas: Vec<EntryDelta> = changes
                .iter()
                .map(|&(r, c, delta)| EntryDelta { row: r % rows, col: c % cols, delta })
                .collect();
            if in_row_order {
                deltas.sort_by_key(|d| d.row);
            }
            let start: Vec<u32> = (0..rows * n).map(|i| (i as u32).wrapping_mul(0x9e37_79b9)).collect();
            let mut expected = start.clone();
            schoolbook(&mut expected, &a, &deltas);
            let mut hint = Matrix::from_vec(rows, n, start).unwrap();
            apply(&mut hint, &a, &deltas);
            prop_assert_eq!(hint.as_slice(), &expected[..]);
        }
    }
}
