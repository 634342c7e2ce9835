//! The hot loops of the LWE schemes.
//!
//! Following curve25519-dalek's backend pattern, [`portable`] holds the reference
//! implementation that runs everywhere (wasm included); `avx2` and `avx512` hold the same
//! kernels for x86-64 vector units, and this module alone decides which one runs
//! ([`Backend::detect`], once per process). Tests hold every backend to the portable one on
//! random inputs.
//!
//! Plaintext matrices store one centered digit per byte as two's-complement `i8`, so a database
//! entry costs one byte of memory traffic; kernels sign-extend it before multiplying. Two kernel
//! shapes cover every product:
//!
//! - `gemv_group`: vector lanes run along the rows of a group of a panel in storage order (one
//!   query: `D·q`; see [`crate::layout`]);
//! - `gemm_acc`: vector lanes run along the output row (`D·B` for a batch of queries, and the
//!   hint product `D·A`), a tile of four output rows held in registers, over row-major digits
//!   (the drivers copy a group's columns out of storage order first).
//!
//! The parallel drivers below run on the caller's rayon pool (it decides the thread count) and
//! walk a [`PlaintextMatrix`] panel by panel, so the slice of the vector operand in use stays in
//! cache while the matrix streams from memory.

#![allow(unsafe_code)]

#[cfg(target_arch = "x86_64")]
mod avx2;
#[cfg(target_arch = "x86_64")]
mod avx512;
pub mod portable;

use std::ops::Range;
use std::sync::OnceLock;

use rayon::prelude::*;

use crate::layout::{Group, Panel, GROUP_ROWS, STEP_COLS};
use crate::matrix::PlaintextMatrix;

/// An implementation of the kernels.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backend {
    /// Plain Rust; runs everywhere.
    Portable,
    /// x86-64 AVX2, 8 lanes.
    Avx2,
    /// x86-64 AVX-512 with VNNI (F, BW, VNNI), byte dot products in 16 lanes.
    Avx512,
}

impl Backend {
    /// The fastest backend this CPU supports, detected once.
    pub fn detect() -> Self {
        static DETECTED: OnceLock<Backend> = OnceLock::new();
        *DETECTED.get_or_init(|| *Self::available().last().expect("portable is always there"))
    }

    /// Every backend this CPU supports, slowest first.
    #[cfg_attr(not(target_arch = "x86_64"), allow(unused_mut))]
    pub fn available() -> Vec<Self> {
        let mut backends = vec![Self::Portable];
        #[cfg(target_arch = "x86_64")]
        {
            // Every CPU with AVX-512 has AVX2; the AVX-512 backend is offered only beside it, so
            // code that falls back from AVX-512 to AVX2 may rely on it.
            if is_x86_feature_detected!("avx2") {
                backends.push(Self::Avx2);
                if avx512_vnni() {
                    backends.push(Self::Avx512);
                }
            }
        }
        backends
    }

    /// The backend's name.
    pub fn name(self) -> &'static str {
        match self {
            Self::Portable => "portable",
            Self::Avx2 => "avx2",
            Self::Avx512 => "avx512",
        }
    }

    /// Prepares `v` for [`Backend::gemv_group`] (the AVX2 backend splits it into 16-bit halves,
    /// the AVX-512 one into byte planes).
    pub fn prepare_vector(self, v: &[u32]) -> VectorOperand<'_> {
        let planes = match self {
            #[cfg(target_arch = "x86_64")]
            Self::Avx2 => {
                assert!(is_x86_feature_detected!("avx2"), "operand");
                // SAFETY: the feature is present.
                unsafe { avx2::vector_planes(v) }
            }
            #[cfg(target_arch = "x86_64")]
            Self::Avx512 => {
                assert!(avx512_vnni(), "operand");
                // SAFETY: the features are present.
                unsafe { avx512::vector_planes(v) }
            }
            _ => Vec::new(),
        };
        VectorOperand {
            backend: self,
            words: v,
            planes,
        }
    }

    /// Prepares the `rows x width` matrix `b` (row stride `stride`) for [`Backend::gemm_acc`]
    /// (the AVX2 backend splits it into 16-bit halves of pairs of rows, the AVX-512 one into byte
    /// planes of four rows).
    ///
    /// # Panics
    /// If `b` is too short for the shape.
    pub fn prepare_matrix(
        self,
        b: &[u32],
        stride: usize,
        rows: usize,
        width: usize,
    ) -> MatrixOperand<'_> {
        assert!(width <= stride, "stride");
        assert!(
            rows == 0 || b.len() >= (rows - 1) * stride + width,
            "operand too short"
        );
        let planes = match self {
            #[cfg(target_arch = "x86_64")]
            Self::Avx2 => avx2::matrix_planes(b, stride, rows, width),
            #[cfg(target_arch = "x86_64")]
            Self::Avx512 => avx512::matrix_planes(b, stride, rows, width),
            _ => Vec::new(),
        };
        MatrixOperand {
            backend: self,
            words: b,
            stride,
            rows,
            width,
            planes,
        }
    }

    /// `out[i] += Σ_c row_i[c] · v[c]` over Z_{2^32} for the rows of `group` (digits read as
    /// `i8`), with `v` prepared from the panel's slice of the vector (`group.width` entries).
    ///
    /// # Panics
    /// If `group` is not a whole group, `out` is shorter than its rows, or `v` has another
    /// length or was prepared by another backend.
    pub fn gemv_group(self, group: &Group, v: &VectorOperand, out: &mut [u32]) {
        assert_eq!(
            v.backend, self,
            "the vector was prepared for another backend"
        );
        assert!(
            (1..=GROUP_ROWS).contains(&group.rows)
                && group.bytes.len() == group.rows * group.width
                && v.words.len() == group.width
                && out.len() >= group.rows,
            "group shape"
        );
        match self {
            Self::Portable => portable::gemv_group(group, v.words, out),
            #[cfg(target_arch = "x86_64")]
            Self::Avx2 => {
                assert!(is_x86_feature_detected!("avx2"), "operand");
                // SAFETY: the feature is present and the shapes were checked above.
                unsafe { gemv_in_steps(avx2::gemv_group, group, v, out) }
            }
            #[cfg(target_arch = "x86_64")]
            Self::Avx512 => {
                assert!(avx512_vnni(), "operand");
                // SAFETY: the features are present and the shapes were checked above.
                unsafe { gemv_in_steps(avx512::gemv_group, group, v, out) }
            }
            #[cfg(not(target_arch = "x86_64"))]
            _ => unreachable!("only the portable backend exists here"),
        }
    }

    /// `out[r·out_stride + j] += Σ_{c ∈ cols} d[r·d_stride + c] · b[c][j]` over Z_{2^32} for
    /// `r < rows`, `j < b.width`, with `d` read as `i8` digits (see [`portable::gemm_acc`]).
    ///
    /// # Panics
    /// If the slices are too short for the shape, or `b` was prepared by another backend.
    #[allow(clippy::too_many_arguments)]
    pub fn gemm_acc(
        self,
        d: &[u8],
        d_stride: usize,
        rows: usize,
        b: &MatrixOperand,
        cols: Range<usize>,
        out: &mut [u32],
        out_stride: usize,
    ) {
        let width = b.width;
        if rows == 0 || cols.is_empty() || width == 0 {
            return;
        }
        assert_eq!(
            b.backend, self,
            "the matrix was prepared for another backend"
        );
        assert!(cols.end <= b.rows, "columns out of range");
        assert!(cols.end <= d_stride && width <= out_stride, "strides");
        assert!(
            d.len() >= (rows - 1) * d_stride + cols.end,
            "matrix too short"
        );
        assert!(
            out.len() >= (rows - 1) * out_stride + width,
            "output too short"
        );
        // The reference kernel over a column range.
        let portable = |cols: Range<usize>, out: &mut [u32]| {
            if cols.is_empty() {
                return;
            }
            portable::gemm_acc(
                &d[cols.start..],
                d_stride,
                rows,
                cols.len(),
                &b.words[cols.start * b.stride..],
                b.stride,
                width,
                out,
                out_stride,
            )
        };
        match self {
            Self::Portable => portable(cols, out),
            #[cfg(target_arch = "x86_64")]
            Self::Avx2 => {
                assert!(is_x86_feature_detected!("avx2"), "operand");
                // Columns outside whole pairs go through the portable kernel.
                let p_start = cols.start.next_multiple_of(2).min(cols.end);
                let p_end = (cols.end / 2 * 2).max(p_start);
                portable(cols.start..p_start, out);
                portable(p_end..cols.end, out);
                if p_end > p_start {
                    // SAFETY: the feature is present; the bounds were checked above and the
                    // pairs lie inside `cols`.
                    unsafe {
                        avx2::gemm_acc(
                            d,
                            d_stride,
                            rows,
                            b.words,
                            b.stride,
                            width,
                            &b.planes,
                            p_start / 2..p_end / 2,
                            out,
                            out_stride,
                        )
                    }
                }
            }
            #[cfg(target_arch = "x86_64")]
            Self::Avx512 => {
                assert!(avx512_vnni(), "operand");
                // Columns outside whole groups of four go through the portable kernel.
                let q_start = cols.start.next_multiple_of(4).min(cols.end);
                let q_end = (cols.end / 4 * 4).max(q_start);
                portable(cols.start..q_start, out);
                portable(q_end..cols.end, out);
                let quads = q_start..q_end;
                if !quads.is_empty() {
                    // SAFETY: the features are present; the bounds were checked above and the
                    // quad range lies inside `cols`.
                    unsafe {
                        avx512::gemm_acc(
                            d, d_stride, rows, b.words, b.stride, width, &b.planes, quads, out,
                            out_stride,
                        )
                    }
                }
            }
            #[cfg(not(target_arch = "x86_64"))]
            _ => unreachable!("only the portable backend exists here"),
        }
    }
}

/// How far ahead of its reads the SIMD matrix-vector kernels ask for the stream to be fetched
/// into L2 (a software prefetch per line). On Zen 4 this took one query from 82% to 91% of the
/// streaming read bandwidth with one thread and from 86% to 94% with two (21 alternating runs
/// each); the hardware prefetcher alone does not run far enough ahead while the core computes.
#[cfg(target_arch = "x86_64")]
const PREFETCH_BYTES: usize = 1024;

/// A SIMD matrix-vector kernel over the whole steps of a group (`gemv_group` of a backend):
/// `(group bytes, rows, whole steps, vector planes)` to the rows' sums.
#[cfg(target_arch = "x86_64")]
type StepKernel = unsafe fn(&[u8], usize, usize, &[u8]) -> [u32; GROUP_ROWS];

/// [`Backend::gemv_group`] with a SIMD `kernel` over the whole steps; the narrower last step, if
/// any, goes through the portable kernel.
///
/// # Safety
/// The CPU must support the kernel's features; the shapes must have been checked as in
/// [`Backend::gemv_group`] and `v` prepared for the kernel's backend.
#[cfg(target_arch = "x86_64")]
unsafe fn gemv_in_steps(kernel: StepKernel, group: &Group, v: &VectorOperand, out: &mut [u32]) {
    let steps = group.full_steps();
    let sums = kernel(group.bytes, group.rows, steps, &v.planes);
    let tail = steps * STEP_COLS;
    for (i, (o, sum)) in out.iter_mut().zip(sums).take(group.rows).enumerate() {
        let tail = if tail < group.width {
            portable::dot_i8(group.stretch(i, steps), &v.words[tail..])
        } else {
            0
        };
        *o = o.wrapping_add(sum).wrapping_add(tail);
    }
}

/// A vector prepared for one backend's [`Backend::gemv_group`].
pub struct VectorOperand<'a> {
    backend: Backend,
    words: &'a [u32],
    /// The SIMD backends' form of the vector (empty for the portable one).
    #[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
    planes: Vec<u8>,
}

/// A matrix prepared for one backend's [`Backend::gemm_acc`].
pub struct MatrixOperand<'a> {
    backend: Backend,
    words: &'a [u32],
    stride: usize,
    rows: usize,
    width: usize,
    /// The SIMD backends' form of the matrix (empty for the portable one).
    #[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
    planes: Vec<u32>,
}

/// Whether the CPU has the AVX-512 features the `avx512` backend needs.
#[cfg(target_arch = "x86_64")]
fn avx512_vnni() -> bool {
    is_x86_feature_detected!("avx512f")
        && is_x86_feature_detected!("avx512bw")
        && is_x86_feature_detected!("avx512vnni")
}

/// Rows of a panel that all queries of a batch go over while they are in cache (and rows per
/// parallel task of a `u32` matrix-vector product).
const ROWS_PER_BLOCK: usize = 16;

/// Runs per thread of a matrix-vector product: long sequential streams, but enough of them to
/// rebalance when one thread falls behind.
const RUNS_PER_THREAD: usize = 8;

/// Bytes of matrix operand per column tile of a batch product.
const MATRIX_TILE_BYTES: usize = 256 << 10;

/// Batches at least this large use the matrix-matrix kernel, padded to whole vectors of this
/// many lanes; smaller ones run one matrix-vector kernel per query over each cache-resident
/// block, which costs about the same per query and wastes no lanes.
const GEMM_MIN_BATCH: usize = 16;

/// `D · v_j` over Z_{2^32} for every vector of a batch, in one pass over the plaintext matrix `D`
/// (every vector has `D.cols()` entries).
pub fn plaintext_mat_vecs(d: &PlaintextMatrix, vectors: &[&[u32]]) -> Vec<Vec<u32>> {
    plaintext_mat_vecs_with(Backend::detect(), d, vectors)
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
    if panels.len() >= 2 * threads {
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
    let groups: Vec<(usize, Group)> = panel.groups(rows.clone()).collect();
    let mut row_major = match operands {
        Operands::Vectors(_) => Vec::new(),
        Operands::Matrix(_) => vec![0u8; ROWS_PER_BLOCK * cols],
    };
    // Blocks of groups that every vector of the batch goes over while they are in cache.
    for block in groups.chunks(ROWS_PER_BLOCK / GROUP_ROWS) {
        let first = block[0].0 - rows.start;
        let block_rows: usize = block.iter().map(|(_, g)| g.rows).sum();
        let sums = &mut sums[first * width..(first + block_rows) * width];
        match operands {
            Operands::Vectors(operands) => {
                for (j, operand) in operands.iter().enumerate() {
                    for (start, group) in block {
                        let mut group_sums = [0u32; GROUP_ROWS];
                        backend.gemv_group(group, operand, &mut group_sums);
                        let at = start - rows.start - first;
                        for (i, &sum) in group_sums[..group.rows].iter().enumerate() {
                            let entry = &mut sums[(at + i) * width + j];
                            *entry = entry.wrapping_add(sum);
                        }
                    }
                }
            }
            Operands::Matrix(operand) => {
                // The matrix-matrix kernel takes the block row-major.
                let digits = &mut row_major[..block_rows * cols];
                for (start, group) in block {
                    let at = start - rows.start - first;
                    group.untile(0..cols, &mut digits[at * cols..]);
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
pub fn mat_vec(m: &[u32], v: &[u32], out: &mut [u32]) {
    let cols = v.len();
    assert_eq!(m.len(), out.len() * cols, "matrix shape");
    if cols == 0 {
        out.fill(0);
        return;
    }
    out.par_chunks_mut(ROWS_PER_BLOCK)
        .zip(m.par_chunks(ROWS_PER_BLOCK * cols))
        .for_each(|(out, m)| {
            for (o, row) in out.iter_mut().zip(m.chunks_exact(cols)) {
                *o = portable::dot_u32(row, v);
            }
        });
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
    plaintext_mat_mul_acc_with(Backend::detect(), d, first, block, n, h)
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

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn random(seed: u64) -> impl FnMut() -> u32 {
        let mut x = seed | 1;
        move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u32
        }
    }

    /// `D · v` for the row-major `rows x v.len()` digits `D`, one entry at a time.
    fn naive_gemv(digits: &[u8], rows: usize, v: &[u32]) -> Vec<u32> {
        let cols = v.len();
        (0..rows)
            .map(|r| {
                let row = &digits[r * cols..(r + 1) * cols];
                row.iter().zip(v).fold(0u32, |sum, (&d, &x)| {
                    sum.wrapping_add(portable::widen(d).wrapping_mul(x))
                })
            })
            .collect()
    }

    proptest! {
        #[test]
        fn gemv_backends_agree(
            rows in 1usize..=GROUP_ROWS, width in 0usize..300, seed in any::<u64>()
        ) {
            let mut next = random(seed);
            let digits: Vec<u8> = (0..rows * width).map(|_| next() as u8).collect();
            let v: Vec<u32> = (0..width).map(|_| next()).collect();
            let start: Vec<u32> = (0..rows).map(|_| next()).collect();
            let mut tiled = vec![0u8; digits.len()];
            crate::layout::tile(&digits, rows, width, &mut tiled);
            let group = Group { rows, width, bytes: &tiled };
            let expected: Vec<u32> = start
                .iter()
                .zip(naive_gemv(&digits, rows, &v))
                .map(|(a, b)| a.wrapping_add(b))
                .collect();
            for backend in Backend::available() {
                let mut out = start.clone();
                backend.gemv_group(&group, &backend.prepare_vector(&v), &mut out);
                prop_assert_eq!(&out, &expected, "{}", backend.name());
            }
        }

        #[test]
        fn gemm_backends_agree(
            rows in 1usize..11, cols in 1usize..40, width in 1usize..150, pad in 0usize..3,
            skip in 0usize..9, seed in any::<u64>()
        ) {
            let mut next = random(seed);
            let (d_stride, b_stride, out_stride) = (cols + pad, width + pad, width + 2 * pad);
            let d: Vec<u8> = (0..rows * d_stride).map(|_| next() as u8).collect();
            let b: Vec<u32> = (0..cols * b_stride).map(|_| next()).collect();
            let start: Vec<u32> = (0..rows * out_stride).map(|_| next()).collect();
            let range = skip.min(cols)..cols;
            let mut expected = start.clone();
            portable::gemm_acc(
                &d[range.start..], d_stride, rows, range.len(), &b[range.start * b_stride..], b_stride,
                width, &mut expected, out_stride,
            );
            for backend in Backend::available() {
                let mut out = start.clone();
                let operand = backend.prepare_matrix(&b, b_stride, cols, width);
                backend.gemm_acc(&d, d_stride, rows, &operand, range.clone(), &mut out, out_stride);
                prop_assert_eq!(&out, &expected, "{}", backend.name());
            }
        }

        #[test]
        fn batch_products_match_on_every_backend(
            rows in 0usize..40, cols in 0usize..200, panel in 1usize..90, k in 1usize..20,
            seed in any::<u64>()
        ) {
            let mut next = random(seed);
            let digits: Vec<u8> = (0..rows * cols).map(|_| next() as u8).collect();
            let d = PlaintextMatrix::from_row_major_in_panels(rows, cols, panel, &digits);
            let vectors: Vec<Vec<u32>> = (0..k).map(|_| (0..cols).map(|_| next()).collect()).collect();
            let refs: Vec<&[u32]> = vectors.iter().map(|v| v.as_slice()).collect();
            let expected: Vec<Vec<u32>> = vectors
                .iter()
                .map(|v| naive_gemv(&digits, rows, v))
                .collect();
            for backend in Backend::available() {
                for threads in [1, 3] {
                    let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
                    let answers = pool.install(|| plaintext_mat_vecs_with(backend, &d, &refs));
                    prop_assert_eq!(&answers, &expected, "{} on {} threads", backend.name(), threads);
                }
            }
        }

        #[test]
        fn hint_products_match_on_every_backend(
            rows in 1usize..12, d_cols in 1usize..40, panel in 1usize..30, b in 1usize..12,
            n in 1usize..70, seed in any::<u64>()
        ) {
            let mut next = random(seed);
            let digits: Vec<u8> = (0..rows * d_cols).map(|_| next() as u8).collect();
            let d = PlaintextMatrix::from_row_major_in_panels(rows, d_cols, panel, &digits);
            let a: Vec<u32> = (0..d_cols * n).map(|_| next()).collect();
            let mut expected = vec![0u32; rows * n];
            portable::gemm_acc(&digits, d_cols, rows, d_cols, &a, n, n, &mut expected, n);
            for backend in Backend::available() {
                let mut h = vec![0u32; rows * n];
                let mut first = 0;
                while first < d_cols {
                    let b = (d_cols - first).min(b);
                    plaintext_mat_mul_acc_with(backend, &d, first, &a[first * n..(first + b) * n], n, &mut h);
                    first += b;
                }
                prop_assert_eq!(&h, &expected, "{}", backend.name());
            }
        }
    }

    /// The extremes of both operands: digits at -128 and 127, and words whose 16-bit halves sit
    /// at the edges of the signed range (the AVX2 kernel splits words into such halves).
    #[test]
    fn extreme_operands_agree() {
        let words: [u32; 8] = [
            0,
            1,
            0x7fff,
            0x8000,
            0xffff,
            0x1_0000,
            0x7fff_8000,
            0x8000_0000,
        ];
        let words: Vec<u32> = words.iter().flat_map(|&w| [w, w.wrapping_neg()]).collect();
        let v: Vec<u32> = words.iter().cycle().take(103).copied().collect();
        for digit in [0x80u8, 0x7f, 0xff] {
            let d = vec![digit; 3 * v.len()];
            let expected = naive_gemv(&d, 3, &v);
            let group = Group {
                rows: 3,
                width: v.len(),
                bytes: &d,
            };
            for backend in Backend::available() {
                let mut out = vec![0u32; 3];
                let operand = backend.prepare_vector(&v);
                backend.gemv_group(&group, &operand, &mut out);
                assert_eq!(out, expected, "{} with digit {digit:#x}", backend.name());
            }
            // The same words as a 7 x 13 matrix operand: an odd column count, and 13 output
            // columns (one vector of 8 and a tail of 5).
            let (cols, width) = (v.len() / 13, 13);
            let mut expected = vec![0u32; 3 * width];
            portable::gemm_acc(&d, cols, 3, cols, &v, width, width, &mut expected, width);
            for backend in Backend::available() {
                let mut out = vec![0u32; 3 * width];
                let operand = backend.prepare_matrix(&v, width, cols, width);
                backend.gemm_acc(&d, cols, 3, &operand, 0..cols, &mut out, width);
                assert_eq!(out, expected, "{} with digit {digit:#x}", backend.name());
            }
        }
    }

    /// An operand prepared by one backend is refused by another (its layout differs), and a
    /// matrix operand of exactly the minimum length with a row stride wider than its width is
    /// accepted by every backend.
    #[test]
    fn operands_belong_to_their_backend() {
        let (rows, stride, width) = (4, 10, 8);
        let b: Vec<u32> = (0..(rows - 1) * stride + width)
            .map(|x| x as u32 * 7919)
            .collect();
        let d: Vec<u8> = (0..3 * rows).map(|x| x as u8).collect();
        let mut expected = vec![0u32; 3 * width];
        portable::gemm_acc(&d, rows, 3, rows, &b, stride, width, &mut expected, width);
        for backend in Backend::available() {
            let operand = backend.prepare_matrix(&b, stride, rows, width);
            let mut out = vec![0u32; 3 * width];
            backend.gemm_acc(&d, rows, 3, &operand, 0..rows, &mut out, width);
            assert_eq!(out, expected, "{}", backend.name());
            for other in Backend::available().into_iter().filter(|&o| o != backend) {
                let refused = std::panic::catch_unwind(|| {
                    let mut out = vec![0u32; 3 * width];
                    other.gemm_acc(&d, rows, 3, &operand, 0..rows, &mut out, width);
                });
                assert!(
                    refused.is_err(),
                    "{} took a {} operand",
                    other.name(),
                    backend.name()
                );
            }
        }
    }

    #[test]
    fn full_width_panels_agree() {
        // Real panels (three full ones and a narrow one), several matrix tiles per panel for
        // batches, and both ways of splitting the work: on one thread the runs take whole
        // panels, on three threads (fewer than two panels each) they take rows.
        let mut next = random(7);
        let (rows, cols) = (5, 3 * crate::layout::PANEL_COLS + 17);
        let digits: Vec<u8> = (0..rows * cols).map(|_| next() as u8).collect();
        let d = PlaintextMatrix::from_row_major_in_panels(
            rows,
            cols,
            crate::layout::PANEL_COLS,
            &digits,
        );
        let vectors: Vec<Vec<u32>> = (0..17)
            .map(|_| (0..cols).map(|_| next()).collect())
            .collect();
        let expected: Vec<Vec<u32>> = vectors
            .iter()
            .map(|v| naive_gemv(&digits, rows, v))
            .collect();
        for k in [1, 17] {
            let refs: Vec<&[u32]> = vectors[..k].iter().map(|v| v.as_slice()).collect();
            for backend in Backend::available() {
                for threads in [1, 3] {
                    let pool = rayon::ThreadPoolBuilder::new()
                        .num_threads(threads)
                        .build()
                        .unwrap();
                    let answers = pool.install(|| plaintext_mat_vecs_with(backend, &d, &refs));
                    assert_eq!(
                        answers,
                        expected[..k],
                        "{} with k = {k} on {threads} threads",
                        backend.name()
                    );
                }
            }
        }
    }

    #[test]
    fn this_machine_has_its_backends() {
        let available = Backend::available();
        assert_eq!(available[0], Backend::Portable);
        assert_eq!(Backend::detect(), *available.last().unwrap());
    }
}
