//! The hot loops of the LWE schemes.
//!
//! Following curve25519-dalek's backend pattern, [`portable`] holds the reference
//! implementation that runs everywhere (wasm included); `avx2` and `avx512` hold the same
//! kernels for x86-64 vector units. [`crate::backend`] selects the [`Backend`]; the products
//! run on its AVX-512 kernels where the CPU also has VNNI (their byte dot products), on the AVX2
//! ones on any other AVX2 or AVX-512 backend, and on the portable ones otherwise. Every unsafe
//! call into code compiled for a feature rests on holding that feature's token. Tests hold
//! every backend to the portable one on random inputs.
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
//! The parallel drivers ([`plaintext_mat_vecs`], [`plaintext_mat_mul_acc`]) walk a
//! [`PlaintextMatrix`](crate::matrix::PlaintextMatrix) panel by panel on the caller's rayon pool
//! and hand each group to the chosen backend.

#![allow(unsafe_code)]

#[cfg(target_arch = "x86_64")]
mod avx2;
#[cfg(target_arch = "x86_64")]
mod avx512;
mod drivers;
pub mod portable;
#[cfg(test)]
mod tests;

use std::borrow::Cow;
use std::ops::Range;

use crate::backend::{vectorized, Backend};
#[cfg(target_arch = "x86_64")]
use crate::backend::{Avx2Token, VnniToken};
pub use drivers::{
    dot, mat_vec, mat_vecs, plaintext_mat_mul_acc, plaintext_mat_mul_acc_with, plaintext_mat_vecs,
    plaintext_mat_vecs_with, quad_interleaved, transposed_mat_vecs, QUAD_BLOCK, SEQUENTIAL_BYTES,
};

#[cfg(target_arch = "x86_64")]
use crate::layout::STEP_COLS;
use crate::layout::{Group, GROUP_ROWS};

/// The kernels a backend's products run on.
#[derive(Clone, Copy)]
enum Unit {
    Portable,
    /// The AVX2 kernels, on the AVX2 backend and on an AVX-512 one without VNNI.
    #[cfg(target_arch = "x86_64")]
    Avx2(Avx2Token),
    /// The AVX-512 kernels, which need VNNI's `vpdpbusd`.
    #[cfg(target_arch = "x86_64")]
    Vnni(VnniToken),
}

impl Unit {
    fn of(backend: Backend) -> Unit {
        #[cfg(target_arch = "x86_64")]
        if let Some(token) = backend.vnni() {
            return Unit::Vnni(token);
        }
        #[cfg(target_arch = "x86_64")]
        if let Some(token) = backend.avx2() {
            return Unit::Avx2(token);
        }
        let _ = backend;
        Unit::Portable
    }
}

impl Backend {
    /// Prepares `v` for [`Backend::gemv_group`] (the AVX2 backend splits it into 16-bit halves,
    /// the AVX-512 one into byte planes).
    pub fn prepare_vector(self, v: &[u32]) -> VectorOperand<'_> {
        let planes = match Unit::of(self) {
            Unit::Portable => Vec::new(),
            #[cfg(target_arch = "x86_64")]
            // SAFETY: the token proves avx2, the one feature `vector_planes` enables.
            Unit::Avx2(_) => unsafe { avx2::vector_planes(v) },
            #[cfg(target_arch = "x86_64")]
            // SAFETY: the token proves avx512f, the one feature `vector_planes` enables.
            Unit::Vnni(_) => unsafe { avx512::vector_planes(v) },
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
        let planes = match Unit::of(self) {
            Unit::Portable => Vec::new(),
            #[cfg(target_arch = "x86_64")]
            Unit::Avx2(_) => avx2::matrix_planes(b, stride, rows, width),
            #[cfg(target_arch = "x86_64")]
            Unit::Vnni(_) => avx512::matrix_planes(b, stride, rows, width),
        };
        MatrixOperand {
            backend: self,
            words: Cow::Borrowed(b),
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
        match Unit::of(self) {
            Unit::Portable => portable::gemv_group(group, v.words, out),
            #[cfg(target_arch = "x86_64")]
            // SAFETY: the token proves avx2, the one feature `gemv_group` enables; the shapes
            // were checked above and `v` was prepared for this backend.
            Unit::Avx2(_) => unsafe { gemv_in_steps(self, group, v, out) },
            #[cfg(target_arch = "x86_64")]
            // SAFETY: the token proves avx512f, avx512bw and avx512vnni, the features
            // `gemv_group` enables; the shapes were checked above and `v` was prepared for this
            // backend.
            Unit::Vnni(_) => unsafe { avx512::gemv_groups(&[*group], &v.planes, out) },
        }
    }

    /// [`Backend::gemv_group`] over consecutive groups of a panel: `out[i] += ` the sum of the
    /// `i`-th of their rows taken in order.
    ///
    /// # Panics
    /// As [`Backend::gemv_group`] for any of the groups, or if `out` is shorter than their rows.
    pub fn gemv_groups(self, groups: &[Group], v: &VectorOperand, out: &mut [u32]) {
        let rows: usize = groups.iter().map(|g| g.rows).sum();
        assert!(out.len() >= rows, "output shorter than the groups' rows");
        match Unit::of(self) {
            #[cfg(target_arch = "x86_64")]
            Unit::Vnni(_) => {
                assert_eq!(
                    v.backend, self,
                    "the vector was prepared for another backend"
                );
                for group in groups {
                    assert!(
                        (1..=GROUP_ROWS).contains(&group.rows)
                            && group.bytes.len() == group.rows * group.width
                            && v.words.len() == group.width,
                        "group shape"
                    );
                }
                // SAFETY: the token proves avx512f, avx512bw and avx512vnni, the features
                // `gemv_groups` enables; every group's shape was checked above and `v` was
                // prepared for this backend.
                unsafe { avx512::gemv_groups(groups, &v.planes, out) }
            }
            _ => {
                let mut at = 0;
                for group in groups {
                    self.gemv_group(group, v, &mut out[at..]);
                    at += group.rows;
                }
            }
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
        let unit = Unit::of(self);
        // The reference kernel over a column range, compiled for the backend's vector unit.
        let portable = |cols: Range<usize>, out: &mut [u32]| {
            if cols.is_empty() {
                return;
            }
            let b_stride = b.stride;
            let (d, b) = (&d[cols.start..], &b.words[cols.start * b_stride..]);
            let cols = cols.len();
            vectorized!(
                self,
                fn(
                    d: &[u8] = d,
                    d_stride: usize = d_stride,
                    rows: usize = rows,
                    cols: usize = cols,
                    b: &[u32] = b,
                    b_stride: usize = b_stride,
                    width: usize = width,
                    out: &mut [u32] = out,
                    out_stride: usize = out_stride,
                ) {
                    portable::gemm_acc(d, d_stride, rows, cols, b, b_stride, width, out, out_stride)
                }
            )
        };
        match unit {
            Unit::Portable => portable(cols, out),
            #[cfg(target_arch = "x86_64")]
            Unit::Avx2(_) => {
                // Columns outside whole pairs go through the portable kernel.
                let p_start = cols.start.next_multiple_of(2).min(cols.end);
                let p_end = (cols.end / 2 * 2).max(p_start);
                portable(cols.start..p_start, out);
                portable(p_end..cols.end, out);
                if p_end > p_start {
                    // SAFETY: the token proves avx2, the one feature `gemm_acc` enables; the
                    // bounds were checked above and the pairs lie inside `cols`.
                    unsafe {
                        avx2::gemm_acc(
                            d,
                            d_stride,
                            rows,
                            &b.words,
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
            Unit::Vnni(_) => {
                // Columns outside whole groups of four go through the portable kernel.
                let q_start = cols.start.next_multiple_of(4).min(cols.end);
                let q_end = (cols.end / 4 * 4).max(q_start);
                portable(cols.start..q_start, out);
                portable(q_end..cols.end, out);
                let quads = q_start..q_end;
                if !quads.is_empty() {
                    // SAFETY: the token proves avx512f, avx512bw and avx512vnni, the features
                    // `gemm_acc` enables; the bounds were checked above and the quad range lies
                    // inside `cols`.
                    unsafe {
                        avx512::gemm_acc(
                            d, d_stride, rows, &b.words, b.stride, width, &b.planes, quads, out,
                            out_stride,
                        )
                    }
                }
            }
        }
    }
}

/// How far ahead of its reads the SIMD matrix-vector kernels ask for the stream to be fetched
/// into L2 (a software prefetch per line). On Zen 4 this took one query from 82% to 91% of the
/// streaming read bandwidth with one thread and from 86% to 94% with two (21 alternating runs
/// each); the hardware prefetcher alone does not run far enough ahead while the core computes.
#[cfg(target_arch = "x86_64")]
const PREFETCH_BYTES: usize = 1024;

/// [`Backend::gemv_group`] with the AVX2 kernel over the whole steps and the portable dot
/// product, compiled for `backend`, over the narrower last step, if any (all of a group
/// narrower than a step).
///
/// # Safety
/// The CPU must support AVX2; the shapes must have been checked as in
/// [`Backend::gemv_group`] and `v` prepared for the AVX2 kernels.
#[cfg(target_arch = "x86_64")]
unsafe fn gemv_in_steps(backend: Backend, group: &Group, v: &VectorOperand, out: &mut [u32]) {
    let steps = group.full_steps();
    // SAFETY: the caller vouches for the CPU, the group's shape and `v`'s planes.
    let sums = unsafe { avx2::gemv_group(group.bytes, group.rows, steps, &v.planes) };
    let tail = steps * STEP_COLS;
    for (i, (o, sum)) in out.iter_mut().zip(sums).take(group.rows).enumerate() {
        let tail = if tail < group.width {
            vectorized!(backend, fn(d: &[u8] = group.stretch(i, steps), v: &[u32] = &v.words[tail..]) -> u32 {
                portable::dot_i8(d, v)
            })
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
    words: Cow<'a, [u32]>,
    stride: usize,
    rows: usize,
    width: usize,
    /// The SIMD backends' form of the matrix (empty for the portable one).
    #[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
    planes: Vec<u32>,
}

impl MatrixOperand<'_> {
    /// The operand owning its matrix, to be kept and used for many products.
    pub fn into_owned(self) -> MatrixOperand<'static> {
        MatrixOperand {
            words: Cow::Owned(self.words.into_owned()),
            ..self
        }
    }
}
