//! The parallel drivers: products of a whole [`PlaintextMatrix`] with a batch of vectors or a
//! block of rows, walked panel by panel and group by group, each group handed to one
//! [`Backend`]'s kernel.
//!
//! The drivers run on the caller's rayon pool (it decides the thread count) and walk the matrix
//! panel by panel, so the slice of the vector operand in use stays in cache while the matrix
//! streams from memory.

use std::ops::Range;

use rayon::prelude::*;

use super::{portable, Backend, MatrixOperand, VectorOperand};
use crate::layout::{Group, Panel, GROUP_ROWS};
use crate::matrix::PlaintextMatrix;

/// Rows of a panel that all queries of a batch go over while they are in cache (and rows per
/// parallel task of a `u32` matrix-vector product).
const ROWS_PER_BLOCK: usize = 16;

/// Runs per thread of a matrix-vector product: long sequential streams, but enough of them to
/// rebalance when one thread falls behind.
const RUNS_PER_THREAD: usize = 8;

/// Bytes of matrix below which a product runs on the calling thread: handing it to the pool
/// (waking a thread, 10-50 µs on a virtual machine) costs more than the pool saves.
pub const SEQUENTIAL_BYTES: usize = 256 << 10;

/// Bytes of matrix operand per column tile of a batch product.
const MATRIX_TILE_BYTES: usize = 256 << 10;

/// Batches at least this large use the matrix-matrix kernel, padded to whole vectors of this
/// many lanes; smaller ones run one matrix-vector kernel per query over each cache-resident
/// block, which costs about the same per query and wastes no lanes.
const GEMM_MIN_BATCH: usize = 16;

/// `D · v_j` over Z_{2^32} for every vector of a batch, in one pass over the plaintext matrix `D`
/// (every vector has `D.cols()` entries).
pub fn plaintext_mat_vecs(d: &PlaintextMatrix, vectors: &[&[u32]]) -> Vec<Vec<u32>> {
    plaintext_mat_vecs_with(Backend::selected(), d, vectors)
}

/// [`plaintext_mat_vecs`] on a chosen backend.
///
/// The matrix is read as one sequential stream (see [`PlaintextMatrix`]), cut into a few runs
/// per thread of the rayon pool (so a thread that falls behind has its work taken over): runs of
/// whole panels when there are at least two panels per thread, otherwise runs of rows inside
/// each panel. Each run sums into its own accumulator over the rows it touches.
///
/// # Panics
/// If a vector's length is not `D.cols()`.
pub fn plaintext_mat_vecs_with(
    backend: Backend,
    d: &PlaintextMatrix,
    vectors: &[&[u32]],
) -> Vec<Vec<u32>> {
    let (rows, k) = (d.rows(), vectors.len());
    assert!(
        vectors.iter().all(|v| v.len() == d.cols()),
        "vector lengths"
    );
    if rows == 0 || d.cols() == 0 || k == 0 {
        return vec![vec![0; rows]; k];
    }
    // Accumulators hold the batch padded to whole vectors of lanes when the matrix-matrix
    // kernel runs.
    let width = if k < GEMM_MIN_BATCH {
        k
    } else {
        k.next_multiple_of(GEMM_MIN_BATCH)
    };
    let panels: Vec<Panel> = d.panels().collect();
    let threads = rayon::current_num_threads();
    let runs = RUNS_PER_THREAD * threads;
    let mut sums = vec![0u32; rows * width];
    let add = |total: &mut [u32], partial: Vec<u32>| {
        total
            .iter_mut()
            .zip(partial)
            .for_each(|(a, b)| *a = a.wrapping_add(b));
    };
    if rows.saturating_mul(d.cols()) < SEQUENTIAL_BYTES {
        // One run on the calling thread, straight into the sums.
        for panel in &panels {
            let prepared = Prepared::new(panel, vectors, width);
            let operands = prepared.operands(backend);
            panel_mat_vecs(backend, panel, 0..rows, &operands, width, &mut sums);
        }
    } else if panels.len() >= 2 * threads {
        // Runs of whole panels, each preparing its panels' slices of the vectors.
        let runs = runs.min(panels.len());
        let partial: Vec<Vec<u32>> = (0..runs)
            .into_par_iter()
            .map(|t| {
                let mut sums = vec![0u32; rows * width];
                let count = panels.len();
                for panel in &panels[t * count / runs..(t + 1) * count / runs] {
                    let prepared = Prepared::new(panel, vectors, width);
                    let operands = prepared.operands(backend);
                    panel_mat_vecs(backend, panel, 0..rows, &operands, width, &mut sums);
                }
                sums
            })
            .collect();
        for partial in partial {
            add(&mut sums, partial);
        }
    } else {
        // Few panels: each is cut into runs of whole groups of rows that share its operands,
        // prepared once.
        let groups = rows.div_ceil(GROUP_ROWS);
        let per_panel = runs.div_ceil(panels.len()).min(groups);
        let run_start = move |i: usize| (i * groups / per_panel * GROUP_ROWS).min(rows);
        let tasks: Vec<(usize, Range<usize>)> = (0..panels.len())
            .flat_map(|p| (0..per_panel).map(move |i| (p, run_start(i)..run_start(i + 1))))
            .collect();
        let prepared: Vec<Prepared> = panels
            .iter()
            .map(|panel| Prepared::new(panel, vectors, width))
            .collect();
        let operands: Vec<Operands> = prepared.iter().map(|p| p.operands(backend)).collect();
        let partial: Vec<Vec<u32>> = tasks
            .par_iter()
            .map(|(p, here)| {
                let mut sums = vec![0u32; here.len() * width];
                panel_mat_vecs(
                    backend,
                    &panels[*p],
                    here.clone(),
                    &operands[*p],
                    width,
                    &mut sums,
                );
                sums
            })
            .collect();
        for ((_, here), partial) in tasks.iter().zip(partial) {
            add(&mut sums[here.start * width..here.end * width], partial);
        }
    }
    (0..k)
        .map(|j| (0..rows).map(|r| sums[r * width + j]).collect())
        .collect()
}

/// A panel's slices of a batch of vectors, in the form its kernel takes before the backend
/// prepares them: the slices themselves for the matrix-vector kernel, or the batch interleaved
/// and padded to whole vectors of lanes for the matrix-matrix kernel.
enum Prepared<'a> {
    Slices(Vec<&'a [u32]>),
    Interleaved {
        words: Vec<u32>,
        cols: usize,
        width: usize,
    },
}

/// A panel's vectors prepared for one backend.
enum Operands<'a> {
    Vectors(Vec<VectorOperand<'a>>),
    Matrix(MatrixOperand<'a>),
}

impl<'a> Prepared<'a> {
    fn new(panel: &Panel, vectors: &[&'a [u32]], width: usize) -> Self {
        let columns = panel.first..panel.first + panel.width;
        if vectors.len() < GEMM_MIN_BATCH {
            return Self::Slices(vectors.iter().map(|v| &v[columns.clone()]).collect());
        }
        let mut words = vec![0u32; panel.width * width];
        for (j, v) in vectors.iter().enumerate() {
            for (c, &x) in v[columns.clone()].iter().enumerate() {
                words[c * width + j] = x;
            }
        }
        Self::Interleaved {
            words,
            cols: panel.width,
            width,
        }
    }

    fn operands(&self, backend: Backend) -> Operands<'_> {
        match self {
            Self::Slices(slices) => {
                Operands::Vectors(slices.iter().map(|v| backend.prepare_vector(v)).collect())
            }
            Self::Interleaved { words, cols, width } => {
                Operands::Matrix(backend.prepare_matrix(words, *width, *cols, *width))
            }
        }
    }
}

/// Adds `panel[rows.start + r] · v_j[panel columns]` to `sums[r·width + j]` for every vector of
/// the batch (`operands`, prepared for this panel), on the calling thread. `rows` starts on a
/// group boundary.
fn panel_mat_vecs(
    backend: Backend,
    panel: &Panel,
    rows: Range<usize>,
    operands: &Operands,
    width: usize,
    sums: &mut [u32],
) {
    let cols = panel.width;
    // Whole groups of GROUP_ROWS rows, the last one possibly shorter.
    let groups: Vec<Group> = panel.groups(rows.clone()).map(|(_, g)| g).collect();
    let mut row_major = match operands {
        Operands::Vectors(_) => Vec::new(),
        Operands::Matrix(_) => vec![0u8; ROWS_PER_BLOCK * cols],
    };
    // Blocks of groups that every vector of the batch goes over while they are in cache.
    let per_block = ROWS_PER_BLOCK / GROUP_ROWS;
    for (b, block) in groups.chunks(per_block).enumerate() {
        let first = b * ROWS_PER_BLOCK;
        let block_rows: usize = block.iter().map(|g| g.rows).sum();
        let sums = &mut sums[first * width..(first + block_rows) * width];
        match operands {
            Operands::Vectors(operands) => {
                for (j, operand) in operands.iter().enumerate() {
                    let mut block_sums = [0u32; ROWS_PER_BLOCK];
                    backend.gemv_groups(block, operand, &mut block_sums);
                    for (i, &sum) in block_sums[..block_rows].iter().enumerate() {
                        let entry = &mut sums[i * width + j];
                        *entry = entry.wrapping_add(sum);
                    }
                }
            }
            Operands::Matrix(operand) => {
                // The matrix-matrix kernel takes the block row-major.
                let digits = &mut row_major[..block_rows * cols];
                for (g, group) in block.iter().enumerate() {
                    group.untile(0..cols, &mut digits[g * GROUP_ROWS * cols..]);
                }
                let tile = (MATRIX_TILE_BYTES / (4 * width))
                    .next_multiple_of(4)
                    .max(4)
                    .min(cols);
                for first in (0..cols).step_by(tile) {
                    let cols_tile = first..(first + tile).min(cols);
                    backend.gemm_acc(digits, cols, block_rows, operand, cols_tile, sums, width);
                }
            }
        }
    }
}

/// `out = M · v` over Z_{2^32}, where `M` is row-major with `out.len()` rows and `v.len()` columns.
/// A matrix below [`SEQUENTIAL_BYTES`] is multiplied on the calling thread.
pub fn mat_vec(m: &[u32], v: &[u32], out: &mut [u32]) {
    assert_eq!(m.len(), out.len() * v.len(), "matrix shape");
    mat_vecs_interleaved(m, &[v], out);
}

/// `M · v` over Z_{2^32} for every vector of `vs` (each as long as a row of the row-major `M`),
/// in one pass over `M`: each block of rows is multiplied by every vector while it is in cache.
/// A matrix below [`SEQUENTIAL_BYTES`] is multiplied on the calling thread.
pub fn mat_vecs(m: &[u32], vs: &[&[u32]]) -> Vec<Vec<u32>> {
    let cols = vs.first().map_or(0, |v| v.len());
    if cols == 0 {
        return vec![Vec::new(); vs.len()];
    }
    assert!(m.len().is_multiple_of(cols), "matrix shape");
    let (rows, k) = (m.len() / cols, vs.len());
    let mut interleaved = vec![0u32; rows * k];
    mat_vecs_interleaved(m, vs, &mut interleaved);
    (0..k)
        .map(|j| (0..rows).map(|r| interleaved[r * k + j]).collect())
        .collect()
}

/// [`mat_vecs`] into `out`, entry `r·k + j` holding `(M·v_j)[r]` for the `k` vectors (a single
/// vector's product is `out` as it is).
fn mat_vecs_interleaved(m: &[u32], vs: &[&[u32]], out: &mut [u32]) {
    let cols = vs.first().map_or(0, |v| v.len());
    assert!(vs.iter().all(|v| v.len() == cols), "vector lengths");
    if cols == 0 {
        out.fill(0);
        return;
    }
    let k = vs.len();
    let backend = Backend::selected();
    let block = |m: &[u32], out: &mut [u32]| {
        let mut sums = [0u32; ROWS_PER_BLOCK];
        let block_rows = m.len() / cols;
        for (j, v) in vs.iter().enumerate() {
            wide::dot_rows(backend, m, v, &mut sums[..block_rows]);
            for (r, &sum) in sums[..block_rows].iter().enumerate() {
                out[r * k + j] = sum;
            }
        }
    };
    if m.len() * 4 < SEQUENTIAL_BYTES {
        m.chunks(ROWS_PER_BLOCK * cols)
            .zip(out.chunks_mut(ROWS_PER_BLOCK * k))
            .for_each(|(m, out)| block(m, out));
    } else {
        m.par_chunks(ROWS_PER_BLOCK * cols)
            .zip(out.par_chunks_mut(ROWS_PER_BLOCK * k))
            .for_each(|(m, out)| block(m, out));
    }
}

/// Rows of `M` per block of [`quad_interleaved`]'s layout (one AVX-512 register of sums).
pub const QUAD_BLOCK: usize = 16;

/// The `rows x width` matrix of digits `m` (row-major) laid out for [`transposed_mat_vecs`]:
/// blocks of [`QUAD_BLOCK`] rows (the last one zero-padded), each holding, quad of columns by
/// quad of columns, every row's four digits of that quad: byte `t` of entry
/// `(b·quads + q)·QUAD_BLOCK + i` is `m[b·QUAD_BLOCK + i][4q + t]` (zero past the last column).
/// A block's quads are contiguous, so the kernel reads each block as one stream.
pub fn quad_interleaved(m: &[u8], rows: usize, width: usize) -> Vec<u8> {
    assert_eq!(m.len(), rows * width, "m's shape");
    let quads = width.div_ceil(4);
    let blocks = rows.div_ceil(QUAD_BLOCK);
    let mut t4 = vec![0u8; blocks * quads * QUAD_BLOCK * 4];
    for (r, row) in m.chunks_exact(width.max(1)).enumerate() {
        let (b, i) = (r / QUAD_BLOCK, r % QUAD_BLOCK);
        for (c, &digit) in row.iter().enumerate() {
            t4[((b * quads + c / 4) * QUAD_BLOCK + i) * 4 + c % 4] = digit;
        }
    }
    t4
}

/// `M · v` over Z_{2^32} for every vector of `vs`, each with an entry per column of `M`, with `M`
/// (`width` rows of digits read as `i8`) given by its transpose interleaved by quads
/// ([`quad_interleaved`]). On the calling thread: a few columns of `M` at a time, their sums
/// held over every quad of rows, so no product ends in a sum across lanes. For a tall `M` a
/// few columns wide, where a row-by-row kernel spends more on each row's sum than on its
/// multiply-adds.
///
/// # Panics
/// If `t4` does not hold whole quads of `width` entries for every vector's length.
pub fn transposed_mat_vecs(t4: &[u8], width: usize, vs: &[&[u32]]) -> Vec<Vec<u32>> {
    if width == 0 {
        return vec![Vec::new(); vs.len()];
    }
    let block_bytes = 4 * QUAD_BLOCK * width.div_ceil(QUAD_BLOCK);
    let quads = t4.len() / block_bytes;
    assert_eq!(t4.len(), quads * block_bytes, "t4's shape");
    assert!(
        vs.iter().all(|v| v.len().div_ceil(4) == quads),
        "vector lengths"
    );
    let backend = Backend::selected();
    vs.iter()
        .map(|v| {
            let mut out = vec![0u32; width];
            quads_on(backend, t4, width, &quad_planes(v), &mut out);
            out
        })
        .collect()
}

/// The planes of `v` for [`transposed_mat_vecs`]: entry `4q + k` packs byte `k` of
/// `v[4q .. 4q + 4]`, one byte per entry (zero past the end).
pub(super) fn quad_planes(v: &[u32]) -> Vec<u32> {
    let mut planes = vec![0u32; 4 * v.len().div_ceil(4)];
    for (i, word) in v.iter().enumerate() {
        for (k, byte) in word.to_le_bytes().into_iter().enumerate() {
            planes[4 * (i / 4) + k] |= u32::from(byte) << (8 * (i % 4));
        }
    }
    planes
}

/// `M · v` from `t4` ([`quad_interleaved`]) and `v`'s [`quad_planes`], on `backend`.
pub(super) fn quads_on(backend: Backend, t4: &[u8], width: usize, planes: &[u32], out: &mut [u32]) {
    wide::quads(backend, t4, width, planes, out)
}

/// `a · b` over Z_{2^32} (slices of equal length), on the calling thread's vector unit.
pub fn dot(a: &[u32], b: &[u32]) -> u32 {
    assert_eq!(a.len(), b.len(), "lengths");
    let mut out = [0u32];
    if !b.is_empty() {
        wide::dot_rows(Backend::selected(), a, b, &mut out);
    }
    out[0]
}

/// The portable row dot products compiled for each backend's vector unit (the crate's baseline
/// target has no 32-bit vector multiply).
mod wide {
    use super::super::Unit;
    use super::{portable, Backend, QUAD_BLOCK};
    use crate::backend::vectorized;

    /// `out[r] = m[r]·v` for the rows of `m` (each as long as `v`).
    pub(super) fn dot_rows(backend: Backend, m: &[u32], v: &[u32], out: &mut [u32]) {
        vectorized!(backend, fn(m: &[u32] = m, v: &[u32] = v, out: &mut [u32] = out) {
            for (o, row) in out.iter_mut().zip(m.chunks_exact(v.len())) {
                *o = portable::dot_u32(row, v);
            }
        })
    }

    /// [`avx512::quads_mat_vec`](super::super::avx512::quads_mat_vec) on `backend`: the
    /// kernel itself where the backend has VNNI, its definition compiled for the backend's
    /// vector unit otherwise.
    #[cfg_attr(not(target_arch = "x86_64"), allow(unused_variables))]
    pub(super) fn quads(
        backend: Backend,
        t4: &[u8],
        width: usize,
        planes: &[u32],
        out: &mut [u32],
    ) {
        match Unit::of(backend) {
            #[cfg(target_arch = "x86_64")]
            // SAFETY: the token proves avx512f, avx512bw and avx512vnni; the shapes were
            // checked by the caller.
            Unit::Vnni(_) => unsafe { super::super::avx512::quads_mat_vec(t4, width, planes, out) },
            _ => {
                vectorized!(backend, fn(t4: &[u8] = t4, planes: &[u32] = planes, out: &mut [u32] = out) {
                    quads_inline(t4, planes, out)
                })
            }
        }
    }

    /// `out[j] = Σ_q Σ_t v[4q + t]·t4[((b·quads + q)·QUAD_BLOCK + i)·4 + t]` for
    /// `j = b·QUAD_BLOCK + i`, the digits read as `i8` and `v` rebuilt from its planes.
    #[inline(always)]
    fn quads_inline(t4: &[u8], planes: &[u32], out: &mut [u32]) {
        let quads = planes.len() / 4;
        // The quads' entries of v, rebuilt from their planes.
        let v: Vec<[u32; 4]> = (0..quads)
            .map(|q| {
                std::array::from_fn(|t| {
                    (0..4).fold(0u32, |word, k| {
                        word | ((planes[4 * q + k] >> (8 * t)) & 0xff) << (8 * k)
                    })
                })
            })
            .collect();
        let block_bytes = 4 * QUAD_BLOCK * quads;
        for (block, out) in t4
            .chunks_exact(block_bytes.max(1))
            .zip(out.chunks_mut(QUAD_BLOCK))
        {
            let mut sums = [0u32; QUAD_BLOCK];
            for (quad, v) in block.chunks_exact(4 * QUAD_BLOCK).zip(&v) {
                for (sum, digits) in sums.iter_mut().zip(quad.chunks_exact(4)) {
                    for (&x, &digit) in v.iter().zip(digits) {
                        *sum = sum.wrapping_add(x.wrapping_mul(i32::from(digit as i8) as u32));
                    }
                }
            }
            out.copy_from_slice(&sums[..out.len()]);
        }
    }
}

/// `H += D[:, first .. first + b] · B` over Z_{2^32}, where `D` is a plaintext matrix, `B` is a
/// row-major `b x n` block and `H` is row-major `D.rows() x n`.
///
/// This is one step of the blocked hint product `H = D · A`, with `B` a block of rows of `A`.
///
/// # Panics
/// If the shapes do not fit.
pub fn plaintext_mat_mul_acc(
    d: &PlaintextMatrix,
    first: usize,
    block: &[u32],
    n: usize,
    h: &mut [u32],
) {
    plaintext_mat_mul_acc_with(Backend::selected(), d, first, block, n, h)
}

/// [`plaintext_mat_mul_acc`] on a chosen backend.
pub fn plaintext_mat_mul_acc_with(
    backend: Backend,
    d: &PlaintextMatrix,
    first: usize,
    block: &[u32],
    n: usize,
    h: &mut [u32],
) {
    assert!(n > 0 && block.len().is_multiple_of(n), "block shape");
    let b = block.len() / n;
    assert_eq!(h.len(), d.rows() * n, "hint shape");
    assert!(first + b <= d.cols(), "column block out of range");
    // The block cut at panel boundaries.
    for panel in d.panels() {
        let start = first.max(panel.first);
        let end = (first + b).min(panel.first + panel.width);
        if start >= end {
            continue;
        }
        let rows_of_b = &block[(start - first) * n..(end - first) * n];
        let operand = backend.prepare_matrix(rows_of_b, n, end - start, n);
        let cols = start - panel.first..end - panel.first;
        let groups: Vec<(usize, Group)> = panel.groups(0..d.rows()).collect();
        h.par_chunks_mut(GROUP_ROWS * n)
            .zip(&groups)
            .for_each(|(h, (_, group))| {
                // The matrix-matrix kernel takes the group's columns row-major.
                let mut digits = vec![0u8; group.rows * cols.len()];
                group.untile(cols.clone(), &mut digits);
                backend.gemm_acc(
                    &digits,
                    cols.len(),
                    group.rows,
                    &operand,
                    0..cols.len(),
                    h,
                    n,
                );
            });
    }
}
