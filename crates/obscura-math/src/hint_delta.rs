//! The hint's change when entries of the database change: `H += ΔD·A`, entry by entry.
//!
//! A changed entry `D[r][c]` (by `δ`, its new signed digit minus the old) adds `δ·A[c]` to row
//! `r` of `H`: `n` multiply-adds, against the `log2(n)` butterflies per entry of a whole
//! negacyclic hint product ([`crate::hint`]), so a change of up to about a tenth of the entries
//! is cheaper this way than a new product. The rows of a negacyclic `A` are not expanded: row
//! `b·n + j` is the window `W_b[n-1-j .. 2n-1-j]` of `W_b = (a_b reversed, -a_b reversed)`, one
//! `2n`-word table per block; a uniform `A`'s changed rows are expanded once each. Work is
//! split by rows of `H`, so each row is read and written once whatever the number of changes.

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
/// If a change lies outside `H`'s rows or `A`'s rows, or `H` does not have `A`'s width.
pub fn apply(hint: &mut Matrix, a: &PublicMatrix, deltas: &[EntryDelta]) {
    let n = a.cols();
    assert_eq!(hint.cols(), n, "H has A's width");
    assert!(
        deltas
            .iter()
            .all(|d| d.row < hint.rows() && d.col < a.rows()),
        "a change outside the matrices"
    );
    let rows = Rows::new(a, deltas);
    let backend = Backend::selected();
    // The changes grouped by row (a counting sort): row `r`'s are `by_row[starts[r]..starts[r + 1]]`.
    let mut starts = vec![0usize; hint.rows() + 1];
    for d in deltas {
        starts[d.row + 1] += 1;
    }
    for r in 0..hint.rows() {
        starts[r + 1] += starts[r];
    }
    let mut next = starts.clone();
    let mut by_row = vec![(0usize, 0i32); deltas.len()];
    for d in deltas {
        by_row[next[d.row]] = (d.col, d.delta);
        next[d.row] += 1;
    }
    hint.as_mut_slice()
        .par_chunks_mut(n)
        .enumerate()
        .for_each(|(r, h)| {
            for &(col, delta) in &by_row[starts[r]..starts[r + 1]] {
                add_scaled(backend, h, rows.row(col), delta as u32);
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

/// `h += factor · a` over Z_{2^32}.
fn add_scaled(backend: Backend, h: &mut [u32], a: &[u32], factor: u32) {
    vectorized!(backend, fn(h: &mut [u32] = h, a: &[u32] = a, factor: u32 = factor) {
        for (h, &a) in h.iter_mut().zip(a) {
            *h = h.wrapping_add(a.wrapping_mul(factor));
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
            rows in 1usize..20,
            blocks in 1usize..4,
            changes in proptest::collection::vec((any::<usize>(), any::<usize>(), -255i32..=255), 0..60),
            seed in any::<[u8; 16]>(),
        ) {
            let n = 64;
            let cols = blocks * n - 3;
            let a = match negacyclic {
                true => PublicMatrix::Negacyclic(NegacyclicMatrix::new(MatrixSeed(seed), 7, cols, n).unwrap()),
                false => PublicMatrix::Uniform(SeededMatrix::new(MatrixSeed(seed), 7, cols, n)),
            };
            let deltas: Vec<EntryDelta> = changes
                .iter()
                .map(|&(r, c, delta)| EntryDelta { row: r % rows, col: c % cols, delta })
                .collect();
            let start: Vec<u32> = (0..rows * n).map(|i| (i as u32).wrapping_mul(0x9e37_79b9)).collect();
            let mut expected = start.clone();
            schoolbook(&mut expected, &a, &deltas);
            let mut hint = Matrix::from_vec(rows, n, start).unwrap();
            apply(&mut hint, &a, &deltas);
            prop_assert_eq!(hint.as_slice(), &expected[..]);
        }
    }
}
