//! The packed layer's pass: a matrix of 16-bit words (entries below 2^15) times query vectors
//! modulo `q = p0 · p1`, one pass over the matrix for every query.
//!
//! The words are stored in a [`PlaintextMatrix`] of twice as many byte columns, word `j` of a
//! row being its bytes `2j` (low) and `2j + 1` (high), so that the matrix streams in the
//! engine's storage order (column panels of row groups, see [`obscura_math::layout`]) and is
//! stored and mapped like any other. Panels and steps have even widths, so no word straddles
//! two of them.

use obscura_math::layout::{Group, GROUP_ROWS};
use obscura_math::matrix::PlaintextMatrix;
use obscura_math::ring::Ring;
use rayon::prelude::*;

/// Row groups per parallel task.
const TASK_GROUPS: usize = 8;

/// A query vector split into its residues modulo each prime, for the pass.
pub(super) struct Residues {
    r0: Vec<u32>,
    r1: Vec<u32>,
}

impl Residues {
    /// The residues of `values` (each below `q`).
    pub(super) fn new(ring: &Ring, values: &[u64]) -> Self {
        let [p0, p1] = ring.moduli().map(u64::from);
        Self {
            r0: values.iter().map(|&x| (x % p0) as u32).collect(),
            r1: values.iter().map(|&x| (x % p1) as u32).collect(),
        }
    }
}

/// A `rows x words` matrix of 16-bit words as the byte matrix the pass reads.
pub(super) fn word_matrix(
    rows: usize,
    words: usize,
    word: impl Fn(usize, usize) -> u16 + Sync,
) -> PlaintextMatrix {
    PlaintextMatrix::from_fn(rows, 2 * words, |r, c, out| {
        for (i, byte) in out.iter_mut().enumerate() {
            let column = c + i;
            *byte = word(r, column / 2).to_le_bytes()[column % 2];
        }
    })
}

/// The word at row `r`, column `j` of a [`word_matrix`].
pub(super) fn word_at(matrix: &PlaintextMatrix, r: usize, j: usize) -> u16 {
    u16::from_le_bytes([matrix.get(r, 2 * j), matrix.get(r, 2 * j + 1)])
}

/// `matrix · query mod q` for each query, `matrix` a [`word_matrix`] whose words are below
/// 2^15 and each query as long as its rows.
///
/// # Panics
/// If a query's length is not the matrix's word count.
pub(super) fn pass(ring: &Ring, matrix: &PlaintextMatrix, queries: &[Residues]) -> Vec<Vec<u64>> {
    let (rows, words) = (matrix.rows(), matrix.cols() / 2);
    assert!(
        queries
            .iter()
            .all(|q| q.r0.len() == words && q.r1.len() == words),
        "a query entry per word"
    );
    let [p0, p1] = ring.moduli().map(u64::from);
    let task_rows = TASK_GROUPS * GROUP_ROWS;
    // Per task: for each query, the residue sums of its rows.
    let tasks: Vec<Vec<[Vec<u64>; 2]>> = (0..rows.div_ceil(task_rows))
        .into_par_iter()
        .map(|task| {
            let first = task * task_rows;
            let count = task_rows.min(rows - first);
            let mut sums = vec![[vec![0u64; count], vec![0u64; count]]; queries.len()];
            for panel in matrix.panels() {
                let offset = panel.first / 2;
                for (row, group) in panel.groups(first..first + count) {
                    for (query, [s0, s1]) in queries.iter().zip(&mut sums) {
                        let lanes = group_sums(&group, &query.r0[offset..], &query.r1[offset..]);
                        for (i, (a, b)) in lanes.into_iter().take(group.rows).enumerate() {
                            let at = row - first + i;
                            s0[at] = (s0[at] + a % p0) % p0;
                            s1[at] = (s1[at] + b % p1) % p1;
                        }
                    }
                }
            }
            sums
        })
        .collect();
    (0..queries.len())
        .map(|q| {
            tasks
                .iter()
                .flat_map(|sums| {
                    let [s0, s1] = &sums[q];
                    s0.iter()
                        .zip(s1)
                        .map(|(&a, &b)| ring.combine(a as u32, b as u32))
                })
                .collect()
        })
        .collect()
}

/// For each row of a group, `(Σ x_j·a_j, Σ x_j·b_j)` over the panel's words, unreduced: a panel
/// has at most 1,024 words and each product is below 2^46, so the sums stay below 2^56.
fn group_sums(group: &Group<'_>, a: &[u32], b: &[u32]) -> [(u64, u64); GROUP_ROWS] {
    const LANES: usize = 8;
    let mut out = [(0u64, 0u64); GROUP_ROWS];
    for (i, sums) in out.iter_mut().enumerate().take(group.rows) {
        let (mut s0, mut s1) = ([0u64; LANES], [0u64; LANES]);
        for (start, stretch) in group.stretches(i) {
            let (a, b) = (&a[start / 2..], &b[start / 2..]);
            let mut bytes = stretch.chunks_exact(2 * LANES);
            let mut k = 0;
            for chunk in &mut bytes {
                for l in 0..LANES {
                    let x = u64::from(u16::from_le_bytes([chunk[2 * l], chunk[2 * l + 1]]));
                    s0[l] += x * u64::from(a[k + l]);
                    s1[l] += x * u64::from(b[k + l]);
                }
                k += LANES;
            }
            for (l, pair) in bytes.remainder().chunks_exact(2).enumerate() {
                let x = u64::from(u16::from_le_bytes([pair[0], pair[1]]));
                s0[l] += x * u64::from(a[k + l]);
                s1[l] += x * u64::from(b[k + l]);
            }
        }
        *sums = (s0.iter().sum(), s1.iter().sum());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(32))]
        #[test]
        fn the_pass_is_the_product_modulo_q(
            rows in 1usize..11,
            words in 1usize..2100,
            seed in any::<u64>(),
        ) {
            let ring = Ring::ypir();
            let q = ring.modulus();
            let mut state = seed;
            let mut next = move || {
                state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                state
            };
            let values: Vec<u16> = (0..rows * words).map(|_| (next() >> 49) as u16).collect();
            let queries: Vec<Vec<u64>> = (0..2)
                .map(|_| (0..words).map(|_| next() % q).collect())
                .collect();
            let matrix = word_matrix(rows, words, |r, j| values[r * words + j]);
            prop_assert_eq!(word_at(&matrix, rows - 1, words - 1), values[rows * words - 1]);
            let residues: Vec<Residues> = queries.iter().map(|v| Residues::new(&ring, v)).collect();
            let got = pass(&ring, &matrix, &residues);
            for (query, got) in queries.iter().zip(&got) {
                for r in 0..rows {
                    let want = (0..words).fold(0u128, |acc, j| {
                        (acc + u128::from(values[r * words + j]) * u128::from(query[j]))
                            % u128::from(q)
                    });
                    prop_assert_eq!(u128::from(got[r]), want);
                }
            }
        }
    }
}
