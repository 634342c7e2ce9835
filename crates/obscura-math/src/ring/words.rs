//! Matrices of 16-bit words (entries below 2^15) times vectors modulo a [`Ring`]'s
//! `q = p0 · p1`, one pass over the matrix for every vector: YPIR's passes.
//!
//! The words are stored in a [`PlaintextMatrix`] of twice as many byte columns, word `j` of a
//! row being its bytes `2j` (low) and `2j + 1` (high), so that the matrix streams in the
//! engine's storage order (column panels of row groups, see [`crate::layout`]) and is
//! stored and mapped like any other. Panels and steps have even widths, so no word straddles
//! two of them.

use rayon::prelude::*;

use super::Ring;
use crate::backend::{vectorized, Backend};
use crate::layout::{Group, GROUP_ROWS, STEP_COLS};
use crate::matrix::PlaintextMatrix;

/// Row groups per parallel task.
const TASK_GROUPS: usize = 8;

/// A vector modulo `q` split into its residues modulo each prime, for [`pass`].
pub struct Residues {
    r0: Vec<u32>,
    r1: Vec<u32>,
}

impl Residues {
    /// The residues of `values` (each below `q`).
    pub fn new(ring: &Ring, values: &[u64]) -> Self {
        let [p0, p1] = ring.moduli().map(u64::from);
        Self {
            r0: values.iter().map(|&x| (x % p0) as u32).collect(),
            r1: values.iter().map(|&x| (x % p1) as u32).collect(),
        }
    }
}

/// A `rows x words` matrix of 16-bit words as the byte matrix the pass reads.
pub fn word_matrix(
    rows: usize,
    words: usize,
    word: impl Fn(usize, usize) -> u16 + Sync,
) -> PlaintextMatrix {
    PlaintextMatrix::from_fn(rows, 2 * words, |r, c, out| {
        // A run starts a panel, and panels have even widths: each word once, both its bytes.
        assert!(c.is_multiple_of(2), "a run starts on a word");
        for (j, pair) in out.chunks_mut(2).enumerate() {
            pair.copy_from_slice(&word(r, c / 2 + j).to_le_bytes()[..pair.len()]);
        }
    })
}

/// Word `w` of row `r` of a [`word_matrix`]: its byte columns `2w` (low) and `2w + 1` (high).
///
/// # Panics
/// If the position is outside the matrix.
pub fn word_at(matrix: &PlaintextMatrix, r: usize, w: usize) -> u16 {
    u16::from_le_bytes([matrix.get(r, 2 * w), matrix.get(r, 2 * w + 1)])
}

/// The byte writes ([`PlaintextMatrix::set_many`]'s `(row, column, byte)`) that put `word` at
/// word `w` of row `r` of a [`word_matrix`].
pub fn word_writes(r: usize, w: usize, word: u16) -> [(usize, usize, u8); 2] {
    let [lo, hi] = word.to_le_bytes();
    [(r, 2 * w, lo), (r, 2 * w + 1, hi)]
}

/// `matrix · v mod q` for each vector `v` of `vectors`, `matrix` a [`word_matrix`] whose words
/// are below 2^15 and each vector as long as its rows, on the rayon pool.
///
/// # Panics
/// If a query's length is not the matrix's word count.
pub fn pass(ring: &Ring, matrix: &PlaintextMatrix, queries: &[Residues]) -> Vec<Vec<u64>> {
    pass_with(Backend::selected(), ring, matrix, queries)
}

/// [`pass`] on `backend`.
fn pass_with(
    backend: Backend,
    ring: &Ring,
    matrix: &PlaintextMatrix,
    queries: &[Residues],
) -> Vec<Vec<u64>> {
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
                        let lanes =
                            group_sums(backend, &group, &query.r0[offset..], &query.r1[offset..]);
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
fn group_sums(
    backend: Backend,
    group: &Group<'_>,
    a: &[u32],
    b: &[u32],
) -> [(u64, u64); GROUP_ROWS] {
    vectorized!(
        backend,
        fn(group: &Group<'_> = group, a: &[u32] = a, b: &[u32] = b) -> [(u64, u64); GROUP_ROWS] {
            group_sums_inline(group, a, b)
        }
    )
}

/// Words per step of a panel: a 64-byte stretch.
const STEP_WORDS: usize = STEP_COLS / 2;

/// Lanes of each row's sums.
const LANES: usize = 8;

/// [`group_sums`]: a full group's whole steps in storage order with every row's sums in
/// fixed-size lanes the compiler keeps in vector registers; a short group or a narrow last
/// step word by word.
#[inline(always)]
fn group_sums_inline(group: &Group<'_>, a: &[u32], b: &[u32]) -> [(u64, u64); GROUP_ROWS] {
    let mut s0 = [[0u64; LANES]; GROUP_ROWS];
    let mut s1 = [[0u64; LANES]; GROUP_ROWS];
    let full = if group.rows == GROUP_ROWS {
        group.width / STEP_COLS
    } else {
        0
    };
    let block = GROUP_ROWS * STEP_COLS;
    for (step, bytes) in group.bytes[..full * block].chunks_exact(block).enumerate() {
        let a: &[u32; STEP_WORDS] = a[step * STEP_WORDS..][..STEP_WORDS]
            .try_into()
            .expect("a step of words");
        let b: &[u32; STEP_WORDS] = b[step * STEP_WORDS..][..STEP_WORDS]
            .try_into()
            .expect("a step of words");
        for (row, (s0, s1)) in bytes
            .chunks_exact(STEP_COLS)
            .zip(s0.iter_mut().zip(&mut s1))
        {
            let mut words = [0u64; STEP_WORDS];
            for (word, pair) in words.iter_mut().zip(row.chunks_exact(2)) {
                *word = u64::from(u16::from_le_bytes([pair[0], pair[1]]));
            }
            let (mut p0, mut p1) = ([0u64; STEP_WORDS], [0u64; STEP_WORDS]);
            for l in 0..STEP_WORDS {
                p0[l] = words[l] * u64::from(a[l]);
                p1[l] = words[l] * u64::from(b[l]);
            }
            for l in 0..LANES {
                s0[l] += p0[l] + p0[l + LANES] + p0[l + 2 * LANES] + p0[l + 3 * LANES];
                s1[l] += p1[l] + p1[l + LANES] + p1[l + 2 * LANES] + p1[l + 3 * LANES];
            }
        }
    }
    let mut out = [(0u64, 0u64); GROUP_ROWS];
    for (i, sums) in out.iter_mut().enumerate().take(group.rows) {
        let (mut t0, mut t1): (u64, u64) = (s0[i].iter().sum(), s1[i].iter().sum());
        for step in full..group.width.div_ceil(STEP_COLS) {
            let start = step * STEP_WORDS;
            for (l, pair) in group.stretch(i, step).chunks_exact(2).enumerate() {
                let x = u64::from(u16::from_le_bytes([pair[0], pair[1]]));
                t0 += x * u64::from(a[start + l]);
                t1 += x * u64::from(b[start + l]);
            }
        }
        *sums = (t0, t1);
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
            let last = u16::from_le_bytes([
                matrix.get(rows - 1, 2 * words - 2),
                matrix.get(rows - 1, 2 * words - 1),
            ]);
            prop_assert_eq!(last, values[rows * words - 1]);
            let residues: Vec<Residues> = queries.iter().map(|v| Residues::new(&ring, v)).collect();
            for backend in Backend::available() {
                let got = pass_with(backend, &ring, &matrix, &residues);
                for (query, got) in queries.iter().zip(&got) {
                    for r in 0..rows {
                        let want = (0..words).fold(0u128, |acc, j| {
                            (acc + u128::from(values[r * words + j]) * u128::from(query[j]))
                                % u128::from(q)
                        });
                        prop_assert_eq!(u128::from(got[r]), want, "{}", backend.name());
                    }
                }
            }
        }
    }
}
