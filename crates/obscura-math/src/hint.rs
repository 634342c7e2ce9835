//! The hint product `H = D·A` of an LWE setup: `D` a `rows x cols` matrix of digits (read as
//! `i8`), `A` the `cols x n` public matrix, `H` over Z_{2^32}.
//!
//! For a uniform `A` it is the dense product, `rows·cols·n` multiply-adds on the kernels of
//! [`crate::kernels`], with `A` expanded from its seed a block at a time.
//!
//! For a negacyclic `A` (stacked `n x n` blocks, block `i` the matrix of multiplication by
//! `a_i(x)` in Z\[x\]/(x^n + 1)), each row is a sum of ring products: with `d_i` the row's digits
//! in block `i`'s columns, `H[row][j] = Σ_i Σ_r d_i[r]·[x^r](a_i·x^j)`. Writing `d̃(x) = d(x^{-1})`
//! (`d̃[0] = d[0]`, `d̃[n-r] = -d[r]`), `Σ_r d[r]·[x^r](a·x^j)` is the constant coefficient of
//! `d̃·a·x^j`, so with `Q = Σ_i d̃_i·a_i`: `H[row][0] = Q[0]` and `H[row][j] = -Q[n-j]`. `Q` is
//! computed in the NTT domain: one forward transform of each slice `d̃_i`, a pointwise
//! multiply-add by the transform of `a_i`, and one inverse transform per row, about
//! `rows·cols·log2(n)` butterflies per prime instead of `rows·cols·n` multiply-adds. Rows are
//! transformed `LANES` (16) at a time, one coefficient of each side by side, so every butterfly is
//! one vector operation.
//!
//! The products are exact: `|Q[j]| ≤ cols · 2^7 · 2^31` (digits in `[-128, 128]`, centered
//! entries of `A` below 2^31 in magnitude), below half the product of two NTT primes
//! (about 2^60) for up to 2^21 columns, and of three beyond; the coefficients are rebuilt by
//! CRT and reduced modulo 2^32, so the hint is bit for bit the dense product's.

use std::borrow::Cow;
use std::sync::Mutex;

use rayon::prelude::*;

use crate::backend::Backend;
use crate::expand::{NegacyclicMatrix, PublicMatrix};
use crate::kernels::{self, MatrixOperand};
use crate::matrix::{Matrix, PlaintextMatrix};
use crate::memory::written;
use crate::ntt::{add_mod, mul_shoup, shoup, Lanes, NttPlan, PrimeTables, LANES, PRIMES};

/// Columns of `D` (rows of a uniform `A`) per step of the dense product (a 256 x 1024 block of
/// `A` is 1 MiB); the kernel tiles it further for the cache.
const DENSE_BLOCK: usize = 256;

/// Copies of a block of `A` held during a step of the dense product: the block, and the form
/// the kernel prepares from it.
const DENSE_OPERANDS: usize = 2;

/// Multiply-adds of the dense kernel that cost about as much as one butterfly of the
/// negacyclic product, for `D` of one block of columns (AVX-512, Zen 4: 60-85 G multiply-adds/s
/// on two threads against 7.5 G butterflies/s, where each row's inverse transform and CRT weigh
/// as much as its forward transform).
const DENSE_PER_BUTTERFLY: u64 = 10;

/// Rows of `D` below which a negacyclic product stays on the transforms: the dense kernel
/// expands `A`'s rows and splits them into byte planes once per product, which took longer
/// than the whole transform product for the 54 rows of a 3,000-byte database.
const DENSE_MIN_ROWS: usize = 256;

/// Rows of a uniform `A` expanded by one parallel task.
const EXPAND_ROWS: usize = 16;

/// Largest magnitude of a digit of `D` read as `i8`.
const MAX_DIGIT: u128 = 128;

/// Largest magnitude of the centered lift of an entry of `A`.
const MAX_ENTRY: u128 = 1 << 31;

/// Bytes of the transforms of `A`'s blocks kept for the whole product; a larger `A` has its
/// blocks transformed again for every band of rows.
const MAX_TABLE_BYTES: usize = 64 << 20;

/// The most memory [`hint_product`] holds besides `D` and `H`, for `D` of `cols` columns and
/// `A` of `n` columns, on a pool of `threads` threads: a block of a uniform `A` in the kernel's
/// two forms, or the transforms of a negacyclic `A`'s blocks and each thread's band.
pub fn working_bytes(cols: usize, n: usize, threads: usize) -> u64 {
    let dense = DENSE_OPERANDS * DENSE_BLOCK * n * 4;
    let primes = primes_for(cols);
    let table = cols.div_ceil(n.max(1)).saturating_mul(primes * n * 8);
    let table = if table <= MAX_TABLE_BYTES { table } else { 0 };
    let scratch = Scratch::bytes(n, primes) + if table == 0 { primes * n * 8 } else { 0 };
    dense.max(table.saturating_add(threads.saturating_mul(scratch))) as u64
}

/// The butterflies [`hint_product`] computes for `D` of `rows x cols` and a negacyclic `A` of
/// degree `n`, counted per row: for each prime, a forward transform of each of the row's
/// `n`-column slices and one inverse transform. (A `D` narrower than about a fifth of a block
/// is multiplied by the dense kernel instead.)
pub fn ntt_butterflies(rows: usize, cols: usize, n: usize) -> u64 {
    let per_transform = (n / 2) as u64 * u64::from(n.max(1).trailing_zeros());
    let transforms = rows as u64 * (cols.div_ceil(n.max(1)) as u64 + 1);
    transforms * per_transform * primes_for(cols) as u64
}

/// Butterflies per second of the hint product's transforms of degree `n` (a power of two the
/// NTT supports) on the rayon pool: every thread transforms `LANES` (16) rows at a time for about
/// `duration`, on the backend [`hint_product`] uses. With [`ntt_butterflies`] it gives the time
/// the arithmetic alone takes, the bound a setup is measured against.
pub fn butterfly_rate(n: usize, duration: std::time::Duration) -> f64 {
    let Some(plan) = NttPlan::new(n) else {
        return 0.0;
    };
    let backend = Backend::selected();
    let per_transform = (n / 2) as u64 * u64::from(n.trailing_zeros()) * LANES as u64;
    let started = std::time::Instant::now();
    let done: u64 = rayon::broadcast(|_| {
        let mut lanes: Vec<Lanes> = (0..n).map(|i| [i as u32; LANES]).collect();
        let mut count = 0u64;
        while started.elapsed() < duration {
            wide::forward(backend, plan.table(0), &mut lanes);
            count += per_transform;
        }
        count
    })
    .into_iter()
    .sum();
    done as f64 / started.elapsed().as_secs_f64()
}

/// `H = D·A`, on the rayon pool. `progress(done, total)` follows the product with `total` the
/// column count of `D`, `done` growing to it.
///
/// # Panics
/// If `A` does not have a row per column of `D`.
pub fn hint_product(
    d: &PlaintextMatrix,
    a: &PublicMatrix,
    progress: &(dyn Fn(u64, u64) + Sync),
) -> Matrix {
    assert_eq!(a.rows(), d.cols(), "A needs a row per column of D");
    let mut hint = Matrix::zeros(d.rows(), a.cols());
    hint_accumulate(d, a, 0, &mut hint, progress);
    hint
}

/// `H += D·A[first .. first + cols]`: the share of the hint of the columns `first ..` of a
/// wider database that `D` holds, for a setup that streams the database a band of columns at
/// a time. `progress` is as for [`hint_product`].
///
/// # Panics
/// If `A` has too few rows, if `H` is not `rows x n`, or if `A` is negacyclic and `first` is
/// not a multiple of its degree (a band of columns must start at a block).
pub fn hint_accumulate(
    d: &PlaintextMatrix,
    a: &PublicMatrix,
    first: usize,
    hint: &mut Matrix,
    progress: &(dyn Fn(u64, u64) + Sync),
) {
    assert!(
        first + d.cols() <= a.rows(),
        "A needs a row per column of D"
    );
    assert_eq!(
        (hint.rows(), hint.cols()),
        (d.rows(), a.cols()),
        "H is rows x n"
    );
    match a {
        PublicMatrix::Uniform(_) => dense(d, a, first, hint, progress),
        PublicMatrix::Negacyclic(m) => {
            let block = m.degree();
            assert!(first.is_multiple_of(block), "a band starts at a block");
            if runs_dense(d.rows(), d.cols(), block) {
                return dense(d, a, first, hint, progress);
            }
            let product = Product::new(d, m, first / block, primes_for(d.cols()));
            negacyclic(Backend::selected(), &product, hint, progress)
        }
    }
}

/// The dense product, a block of `A` (from row `a_first`) expanded at a time.
fn dense(
    d: &PlaintextMatrix,
    a: &PublicMatrix,
    a_first: usize,
    hint: &mut Matrix,
    progress: &(dyn Fn(u64, u64) + Sync),
) {
    let (cols, n) = (d.cols(), a.cols());
    let mut first = 0;
    while first < cols {
        let count = DENSE_BLOCK.min(cols - first);
        let mut block = vec![0u32; count * n];
        block
            .par_chunks_mut(EXPAND_ROWS * n)
            .enumerate()
            .for_each(|(i, rows)| a.fill_rows(a_first + first + i * EXPAND_ROWS, rows));
        kernels::plaintext_mat_mul_acc(d, first, &block, n, hint.as_mut_slice());
        first += count;
        progress(first as u64, cols as u64);
    }
}

/// Whether the product of a `rows x cols` `D` and a negacyclic `A` of degree `n` is cheaper
/// with `A`'s rows expanded and the dense kernel: for `D` narrower than about a fifth of a
/// block, where each row's transforms cost more than its multiply-adds, and of at least
/// [`DENSE_MIN_ROWS`] rows.
fn runs_dense(rows: usize, cols: usize, n: usize) -> bool {
    let multiply_adds = (rows as u64)
        .saturating_mul(cols as u64)
        .saturating_mul(n as u64);
    rows >= DENSE_MIN_ROWS
        && multiply_adds <= DENSE_PER_BUTTERFLY.saturating_mul(ntt_butterflies(rows, cols, n))
}

/// A public matrix `A` held ready for many products `D·A` with `D` of a few rows (a DoublePIR
/// server multiplies each query's digits by its second layer's matrix): its rows expanded and
/// prepared for the matrix-matrix kernel when
/// they fit [`MAX_EXPANDED_BYTES`](crate::expand::MAX_EXPANDED_BYTES), each product then one pass over them; otherwise, for a negacyclic `A`,
/// the transforms of its blocks, so a product costs one band of transforms instead of
/// expanding and transforming `A` again. A larger uniform `A` is expanded for each product.
pub struct PreparedProduct {
    a: PublicMatrix,
    form: Prepared,
}

/// What a [`PreparedProduct`] keeps.
enum Prepared {
    /// `A`'s rows, prepared for the matrix-matrix kernel.
    Rows(MatrixOperand<'static>),
    /// The transforms of a negacyclic `A`'s blocks over the primes its products need.
    Transforms(Vec<BlockTransform>),
    /// Nothing: each product expands `A`.
    Nothing,
}

impl PreparedProduct {
    /// `A` prepared for products with a `D` of `A.rows()` columns, on the rayon pool.
    pub fn new(a: PublicMatrix) -> Self {
        let (rows, n) = (a.rows(), a.cols());
        let form = if let Some(words) = a.expanded() {
            Prepared::Rows(
                Backend::selected()
                    .prepare_matrix(&words, n, rows, n)
                    .into_owned(),
            )
        } else if let PublicMatrix::Negacyclic(m) = &a {
            let blocks = rows.div_ceil(n);
            block_transforms(m, 0, blocks, primes_for(rows))
                .map_or(Prepared::Nothing, Prepared::Transforms)
        } else {
            Prepared::Nothing
        };
        Self { a, form }
    }

    /// `D·A`, bit for bit [`hint_product`]'s.
    ///
    /// # Panics
    /// If `D` does not have a column per row of `A`.
    pub fn product(&self, d: &PlaintextMatrix) -> Matrix {
        let (rows, cols, n) = (d.rows(), d.cols(), self.a.cols());
        assert_eq!(self.a.rows(), cols, "A needs a row per column of D");
        match (&self.form, &self.a) {
            (Prepared::Rows(operand), _) => {
                let mut digits = vec![0u8; rows * cols];
                d.copy_block(0..rows, 0..cols, &mut digits);
                let mut hint = Matrix::zeros(rows, n);
                Backend::selected().gemm_acc(
                    &digits,
                    cols,
                    rows,
                    operand,
                    0..cols,
                    hint.as_mut_slice(),
                    n,
                );
                hint
            }
            (Prepared::Transforms(table), PublicMatrix::Negacyclic(m)) => {
                let product = Product {
                    table: Some(Cow::Borrowed(table)),
                    ..Product::without_table(d, m, 0, primes_for(cols))
                };
                let mut hint = Matrix::zeros(rows, n);
                negacyclic(Backend::selected(), &product, &mut hint, &|_, _| {});
                hint
            }
            _ => hint_product(d, &self.a, &|_, _| {}),
        }
    }
}

/// NTT primes the exact products of a `D` with `cols` columns need.
fn primes_for(cols: usize) -> usize {
    let bound = (cols as u128).saturating_mul(MAX_DIGIT * MAX_ENTRY);
    let two = u128::from(PRIMES[0]) * u128::from(PRIMES[1]);
    if bound < two / 2 {
        2
    } else {
        3
    }
}

/// The transform of block `i` of `A` modulo each prime, each value with its Shoup quotient.
type BlockTransform = Vec<Vec<(u32, u32)>>;

/// Adds the product for a negacyclic `A` to `hint`, bands of [`LANES`] rows in parallel.
fn negacyclic(
    backend: Backend,
    product: &Product,
    hint: &mut Matrix,
    progress: &(dyn Fn(u64, u64) + Sync),
) {
    let (rows, cols, n) = (
        product.d.rows(),
        product.d.cols(),
        product.a.plan().degree(),
    );
    // Rows done, and the share of the columns last reported: reports grow strictly.
    let reported = Mutex::new((0u64, 0u64));
    let (rows_total, cols_total) = (rows as u64, cols as u64);
    // A few chunks of bands per thread, each with one scratch: enough to balance the load, few
    // enough that the scratch (a few hundred KiB) is allocated a handful of times. A small hint
    // is one chunk on the calling thread, with one scratch.
    let bands = rows.div_ceil(LANES);
    let chunk_bands = if rows * n * 4 < kernels::SEQUENTIAL_BYTES {
        bands.max(1)
    } else {
        bands.div_ceil(8 * rayon::current_num_threads()).max(1)
    };
    hint.as_mut_slice()
        .par_chunks_mut(chunk_bands * LANES * n)
        .enumerate()
        .for_each(|(chunk, out)| {
            let mut scratch = Scratch::new(n, product.primes);
            for (i, out) in out.chunks_mut(LANES * n).enumerate() {
                let first = (chunk * chunk_bands + i) * LANES;
                wide::band(backend, product, first, &mut scratch, out);
                let mut reported = reported.lock().unwrap_or_else(|e| e.into_inner());
                reported.0 += (out.len() / n) as u64;
                let share =
                    u128::from(reported.0) * u128::from(cols_total) / u128::from(rows_total);
                if share as u64 > reported.1 {
                    reported.1 = share as u64;
                    progress(reported.1, cols_total);
                }
            }
        });
}

/// What every band of the negacyclic product reads.
struct Product<'a> {
    d: &'a PlaintextMatrix,
    a: &'a NegacyclicMatrix,
    /// The block of `A` that `D`'s first columns meet.
    first_block: usize,
    primes: usize,
    blocks: usize,
    /// Every block's transform, when they fit [`MAX_TABLE_BYTES`].
    table: Option<Cow<'a, [BlockTransform]>>,
}

/// One task's working memory: the digits of a band's slice, its transform, the sums.
struct Scratch {
    digits: Vec<u8>,
    signed: Vec<[i32; LANES]>,
    lanes: Vec<Lanes>,
    sums: Vec<Vec<Lanes>>,
}

impl Scratch {
    /// Bytes of the scratch for degree `n` and `primes` primes.
    fn bytes(n: usize, primes: usize) -> usize {
        LANES * n + (2 + primes) * n * std::mem::size_of::<Lanes>()
    }

    fn new(n: usize, primes: usize) -> Self {
        Self {
            digits: written(LANES * n, 0),
            signed: written(n, [0; LANES]),
            lanes: written(n, [0; LANES]),
            sums: (0..primes).map(|_| written(n, [0; LANES])).collect(),
        }
    }
}

impl<'a> Product<'a> {
    /// The product of `D` and the blocks of `A` from `first_block` through `primes` NTT primes
    /// (two or three, enough for the exact products, see [`primes_for`]), with the blocks'
    /// transforms made ahead when they fit [`MAX_TABLE_BYTES`].
    fn new(
        d: &'a PlaintextMatrix,
        a: &'a NegacyclicMatrix,
        first_block: usize,
        primes: usize,
    ) -> Self {
        let product = Self::without_table(d, a, first_block, primes);
        let table = product.make_table().map(Cow::Owned);
        Self { table, ..product }
    }

    /// The product with no transforms made yet.
    fn without_table(
        d: &'a PlaintextMatrix,
        a: &'a NegacyclicMatrix,
        first_block: usize,
        primes: usize,
    ) -> Self {
        Self {
            d,
            a,
            first_block,
            primes,
            blocks: d.cols().div_ceil(a.degree()),
            table: None,
        }
    }

    /// Every block's transform, if they fit [`MAX_TABLE_BYTES`].
    fn make_table(&self) -> Option<Vec<BlockTransform>> {
        block_transforms(self.a, self.first_block, self.blocks, self.primes)
    }

    /// Sums `d̃_i·a_i` over the blocks in the NTT domain for the band's rows, then inverts and
    /// adds `Q[0]` to `H[row][0]` and `-Q[n-j]` to `H[row][j]`.
    ///
    /// `d̃_i` is never formed: `d̃(x) = d(x^{-1})` is evaluated at the inverses of `d`'s points,
    /// and the transform lists the points `ψ^(2·bitrev(i)+1)` so that the inverse of point `i`
    /// is point `n-1-i`: `NTT(d̃)` is `NTT(d)` reversed. So the band multiplies `NTT(d_i)` by
    /// the reversed transform of `a_i` and reverses the sum once, before the inverse.
    #[inline(always)]
    fn band_inline(
        &self,
        ops: &impl LaneOps,
        first: usize,
        scratch: &mut Scratch,
        out: &mut [u32],
    ) {
        let plan = self.a.plan();
        let n = plan.degree();
        let (cols, band_rows) = (self.d.cols(), out.len() / n);
        for sums in &mut scratch.sums {
            sums.fill([0; LANES]);
        }
        for block in 0..self.blocks {
            let start = block * n;
            let width = n.min(cols - start);
            let digits = &mut scratch.digits[..band_rows * width];
            self.d
                .copy_block(first..first + band_rows, start..start + width, digits);
            let a_hat = match &self.table {
                Some(table) => Cow::Borrowed(&table[block]),
                None => Cow::Owned(transform_block(
                    self.a,
                    self.first_block + block,
                    self.primes,
                )),
            };
            // The digits read as i8, the band's rows side by side (zero past the block's end).
            scratch.signed[width..].fill([0; LANES]);
            ops.widen(digits, band_rows, width, &mut scratch.signed);
            for (k, (sums, a_hat)) in scratch.sums.iter_mut().zip(a_hat.iter()).enumerate() {
                let table = plan.table(k);
                let p = table.prime();
                // One flat loop (nested per lane, it was vectorized across lanes with gathers).
                let lanes = scratch.lanes.as_flattened_mut();
                for (value, &x) in lanes.iter_mut().zip(scratch.signed.as_flattened()) {
                    *value = x.wrapping_add((x >> 31) & p as i32) as u32;
                }
                ops.forward(table, &mut scratch.lanes);
                ops.multiply_add(table, sums, &scratch.lanes, a_hat);
            }
        }
        // The sums are of NTT(d_i)·rev(NTT(a_i)); NTT(d̃_i) is NTT(d_i) reversed, so reversing
        // them gives the transform of Q.
        for (k, sums) in scratch.sums.iter_mut().enumerate() {
            sums.reverse();
            ops.inverse(plan.table(k), sums);
        }
        // Q's coefficients rebuilt by CRT a lane vector at a time, into the free lane scratch.
        let q = &mut scratch.lanes;
        match scratch.sums.as_slice() {
            [r0, r1] => {
                for ((q, r0), r1) in q.iter_mut().zip(r0).zip(r1) {
                    for (l, q) in q.iter_mut().enumerate() {
                        *q = plan.crt_two(r0[l], r1[l]);
                    }
                }
            }
            [r0, r1, r2] => {
                for (((q, r0), r1), r2) in q.iter_mut().zip(r0).zip(r1).zip(r2) {
                    for (l, q) in q.iter_mut().enumerate() {
                        *q = plan.crt_three(r0[l], r1[l], r2[l]);
                    }
                }
            }
            _ => unreachable!("two or three primes"),
        }
        // H[row][0] += Q[0] and H[row][j] -= Q[n-j]: Q is held lane by lane and H row by row,
        // so the rows are updated a stretch of coefficients at a time, whose lanes (1 KiB)
        // stay in the L1 cache while every row reads them.
        for (l, row) in out.chunks_exact_mut(n).enumerate() {
            row[0] = row[0].wrapping_add(q[0][l]);
        }
        for start in (1..n).step_by(LANES) {
            let end = (start + LANES).min(n);
            for (l, row) in out.chunks_exact_mut(n).enumerate() {
                for (j, value) in row[start..end].iter_mut().enumerate() {
                    *value = value.wrapping_sub(q[n - start - j][l]);
                }
            }
        }
    }
}

/// The lane operations of a band: the transforms and the multiply-add, on [`LANES`] rows at
/// once.
trait LaneOps {
    /// [`PrimeTables::forward_lanes`] of residues, its results left below `4p` (congruent
    /// modulo `p`, not always reduced).
    fn forward(&self, table: &PrimeTables, a: &mut [Lanes]);
    /// [`PrimeTables::inverse_lanes`] of residues.
    fn inverse(&self, table: &PrimeTables, a: &mut [Lanes]);
    /// `sums[j] += lanes[j] · w[j] (mod p)` for residues `sums[j]` and any `lanes[j]`, `w[j]`
    /// with its Shoup quotient.
    fn multiply_add(
        &self,
        table: &PrimeTables,
        sums: &mut [Lanes],
        lanes: &[Lanes],
        w: &[(u32, u32)],
    );
    /// `signed[c][l] = digits[l·width + c]` read as `i8` for the `rows` rows of the row-major
    /// `digits` and the columns `c < width` (zero in the lanes of absent rows).
    fn widen(&self, digits: &[u8], rows: usize, width: usize, signed: &mut [[i32; LANES]]);
}

/// The lane operations written once, auto-vectorized for the target features of the caller.
struct Generic;

impl LaneOps for Generic {
    #[inline(always)]
    fn widen(&self, digits: &[u8], rows: usize, width: usize, signed: &mut [[i32; LANES]]) {
        signed[..width].fill([0; LANES]);
        for (l, row) in digits.chunks_exact(width).take(rows).enumerate() {
            for (signed, &digit) in signed.iter_mut().zip(row) {
                signed[l] = i32::from(digit as i8);
            }
        }
    }

    #[inline(always)]
    fn forward(&self, table: &PrimeTables, a: &mut [Lanes]) {
        table.forward_lanes(a)
    }

    #[inline(always)]
    fn inverse(&self, table: &PrimeTables, a: &mut [Lanes]) {
        table.inverse_lanes(a)
    }

    #[inline(always)]
    fn multiply_add(
        &self,
        table: &PrimeTables,
        sums: &mut [Lanes],
        lanes: &[Lanes],
        w: &[(u32, u32)],
    ) {
        let p = table.prime();
        for ((sum, lane), &(w, w_shoup)) in sums.iter_mut().zip(lanes).zip(w) {
            for (s, &x) in sum.iter_mut().zip(lane) {
                *s = add_mod(*s, mul_shoup(x, w, w_shoup, p), p);
            }
        }
    }
}

/// [`Product::band_inline`] compiled for the vector units of a [`Backend`]: the AVX-512
/// intrinsics on the AVX-512 backend, the generic lane code otherwise.
#[allow(unsafe_code)]
mod wide {
    use super::{Backend, Generic, LaneOps, Lanes, PrimeTables, Product, Scratch};
    use crate::backend::vectorized;
    #[cfg(target_arch = "x86_64")]
    use crate::backend::Avx512Token;

    /// The hint rows `first .. first + out.len() / n` on `backend`'s vector units.
    pub(super) fn band(
        backend: Backend,
        product: &Product,
        first: usize,
        scratch: &mut Scratch,
        out: &mut [u32],
    ) {
        #[cfg(target_arch = "x86_64")]
        if let Some(token) = backend.avx512() {
            // SAFETY: the token proves every feature `band_avx512` enables.
            return unsafe { band_avx512(Avx512(token), product, first, scratch, out) };
        }
        vectorized!(
            backend,
            fn(
                product: &Product = product,
                first: usize = first,
                scratch: &mut Scratch = scratch,
                out: &mut [u32] = out,
            ) {
                product.band_inline(&Generic, first, scratch, out)
            }
        )
    }

    /// [`LaneOps::forward`] on `backend`.
    pub(super) fn forward(backend: Backend, table: &PrimeTables, a: &mut [Lanes]) {
        #[cfg(target_arch = "x86_64")]
        if let Some(token) = backend.avx512() {
            return Avx512(token).forward(table, a);
        }
        vectorized!(backend, fn(table: &PrimeTables = table, a: &mut [Lanes] = a) {
            Generic.forward(table, a)
        })
    }

    /// [`Product::band_inline`] on the AVX-512 lane operations, generated for AVX-512.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2,avx512f,avx512bw,avx512dq,avx512vl")]
    fn band_avx512(
        lanes: Avx512,
        product: &Product,
        first: usize,
        scratch: &mut Scratch,
        out: &mut [u32],
    ) {
        product.band_inline(&lanes, first, scratch, out)
    }

    /// The lane operations in AVX-512 intrinsics, for a CPU that has them.
    #[cfg(target_arch = "x86_64")]
    struct Avx512(Avx512Token);

    #[cfg(target_arch = "x86_64")]
    impl LaneOps for Avx512 {
        #[inline(always)]
        fn widen(&self, digits: &[u8], rows: usize, width: usize, signed: &mut [[i32; 16]]) {
            // SAFETY: the token proves avx512f, the one feature `widen_columns` enables.
            unsafe { crate::ntt_avx512::widen_columns(digits, rows, width, signed) }
        }

        #[inline(always)]
        fn forward(&self, table: &PrimeTables, a: &mut [Lanes]) {
            // SAFETY: the token proves avx512f, the one feature `forward_lanes` enables.
            unsafe { crate::ntt_avx512::forward_lanes(table, a) }
        }

        #[inline(always)]
        fn inverse(&self, table: &PrimeTables, a: &mut [Lanes]) {
            // SAFETY: the token proves avx512f, the one feature `inverse_lanes` enables.
            unsafe { crate::ntt_avx512::inverse_lanes(table, a) }
        }

        #[inline(always)]
        fn multiply_add(
            &self,
            table: &PrimeTables,
            sums: &mut [Lanes],
            lanes: &[Lanes],
            w: &[(u32, u32)],
        ) {
            // SAFETY: the token proves avx512f, the one feature `multiply_add` enables.
            unsafe { crate::ntt_avx512::multiply_add(table, sums, lanes, w) }
        }
    }
}

/// The transforms of blocks `first .. first + blocks` of `A` over `primes` primes, if they fit
/// [`MAX_TABLE_BYTES`].
fn block_transforms(
    a: &NegacyclicMatrix,
    first: usize,
    blocks: usize,
    primes: usize,
) -> Option<Vec<BlockTransform>> {
    let table_bytes = blocks * primes * a.degree() * 8;
    (table_bytes <= MAX_TABLE_BYTES).then(|| {
        (first..first + blocks)
            .into_par_iter()
            .map(|block| transform_block(a, block, primes))
            .collect()
    })
}

/// The transform of block `block` of `A` modulo each of the first `primes` primes, reversed
/// (see [`Product::band_inline`]).
fn transform_block(a: &NegacyclicMatrix, block: usize, primes: usize) -> BlockTransform {
    let plan = a.plan();
    let mut coefficients = vec![0u32; plan.degree()];
    a.polynomial(block, &mut coefficients);
    (0..primes)
        .map(|k| transform_one(plan, k, &coefficients))
        .collect()
}

/// The forward transform of the centered lift of `coefficients` modulo prime `k`, in reversed
/// order, each value with its Shoup quotient.
fn transform_one(plan: &NttPlan, k: usize, coefficients: &[u32]) -> Vec<(u32, u32)> {
    let table = plan.table(k);
    let mut residues: Vec<u32> = coefficients.iter().map(|&x| table.lift(x)).collect();
    table.forward(&mut residues);
    residues
        .into_iter()
        .rev()
        .map(|x| (x, shoup(x, table.prime())))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::expand::{MatrixSeed, SeededMatrix};
    use proptest::prelude::*;

    /// `D·A` entry by entry, the reference.
    fn schoolbook(d: &PlaintextMatrix, a: &PublicMatrix) -> Vec<u32> {
        let (rows, cols, n) = (d.rows(), d.cols(), a.cols());
        let mut a_rows = vec![0u32; cols * n];
        a.fill_rows(0, &mut a_rows);
        let mut out = vec![0u32; rows * n];
        for r in 0..rows {
            for c in 0..cols {
                let digit = d.get(r, c) as i8 as i32 as u32;
                for j in 0..n {
                    let at = r * n + j;
                    out[at] = out[at].wrapping_add(digit.wrapping_mul(a_rows[c * n + j]));
                }
            }
        }
        out
    }

    fn digits(rows: usize, cols: usize, seed: u64) -> PlaintextMatrix {
        digit_columns(rows, 0..cols, seed)
    }

    /// Columns `columns` of the digits [`digits`] makes with `seed`.
    fn digit_columns(rows: usize, columns: std::ops::Range<usize>, seed: u64) -> PlaintextMatrix {
        PlaintextMatrix::from_fn(rows, columns.len(), |r, c, out| {
            for (i, digit) in out.iter_mut().enumerate() {
                let column = columns.start + c + i;
                let x = (r as u64 * 1_000_003 + column as u64).wrapping_mul(seed | 1);
                *digit = (x >> 17) as u8;
            }
        })
    }

    fn negacyclic_a(cols: usize, n: usize, seed: u8) -> PublicMatrix {
        PublicMatrix::Negacyclic(NegacyclicMatrix::new(MatrixSeed([seed; 16]), 3, cols, n).unwrap())
    }

    #[test]
    fn the_ntt_product_is_the_dense_product_bit_for_bit() {
        // Rows that fill no band, several bands and a partial one; columns that end inside a
        // block, and blocks that span panels (n = 4096).
        for (rows, cols, n) in [
            (1, 8, 8),
            (5, 37, 16),
            (33, 300, 64),
            (16, 2048, 1024),
            (7, 5000, 4096),
        ] {
            let d = digits(rows, cols, (rows * cols) as u64);
            let a = negacyclic_a(cols, n, rows as u8);
            let reference = schoolbook(&d, &a);
            let ntt = hint_product(&d, &a, &|_, _| {});
            assert_eq!(ntt.as_slice(), &reference[..], "{rows} x {cols}, n = {n}");
            let PublicMatrix::Negacyclic(m) = &a else {
                unreachable!("a negacyclic matrix")
            };
            for backend in Backend::available() {
                for primes in [2, 3] {
                    let mut on = Matrix::zeros(rows, n);
                    let product = Product::new(&d, m, 0, primes);
                    negacyclic(backend, &product, &mut on, &|_, _| {});
                    assert_eq!(
                        on.as_slice(),
                        &reference[..],
                        "{backend:?}, {primes} primes"
                    );
                }
            }
            let uniform = PublicMatrix::Uniform(SeededMatrix::new(MatrixSeed([9; 16]), 3, cols, n));
            assert_eq!(
                hint_product(&d, &uniform, &|_, _| {}).as_slice(),
                &schoolbook(&d, &uniform)[..]
            );
        }
    }

    /// `H += D·A[first ..]` through the transforms, whatever [`runs_dense`] would choose.
    fn ntt_accumulate(d: &PlaintextMatrix, a: &PublicMatrix, first: usize, hint: &mut Matrix) {
        let PublicMatrix::Negacyclic(m) = a else {
            unreachable!("a negacyclic matrix")
        };
        let product = Product::new(d, m, first / m.degree(), primes_for(d.cols()));
        negacyclic(Backend::selected(), &product, hint, &|_, _| {});
    }

    #[test]
    fn bands_of_columns_add_up_to_the_whole_product() {
        // Bands that start at blocks (n = 64 and 16) and end anywhere, the last one short.
        for (rows, cols, n, band) in [(21, 1000, 64, 128), (17, 333, 16, 48), (3, 64, 64, 64)] {
            let whole = digits(rows, cols, 5);
            let negacyclic = negacyclic_a(cols, n, 2);
            for a in [
                negacyclic.clone(),
                PublicMatrix::Uniform(SeededMatrix::new(MatrixSeed([4; 16]), 3, cols, n)),
            ] {
                let mut hint = Matrix::zeros(rows, n);
                for first in (0..cols).step_by(band) {
                    let d = digit_columns(rows, first..(first + band).min(cols), 5);
                    hint_accumulate(&d, &a, first, &mut hint, &|_, _| {});
                }
                assert_eq!(
                    hint.as_slice(),
                    &schoolbook(&whole, &a)[..],
                    "{rows} x {cols}, n = {n}"
                );
            }
            let mut hint = Matrix::zeros(rows, n);
            for first in (0..cols).step_by(band) {
                let d = digit_columns(rows, first..(first + band).min(cols), 5);
                ntt_accumulate(&d, &negacyclic, first, &mut hint);
            }
            assert_eq!(hint.as_slice(), &schoolbook(&whole, &negacyclic)[..]);
        }
    }

    #[test]
    fn narrow_products_run_dense() {
        // One block of n = 1024: the transforms cost more than 200 columns of multiply-adds.
        assert!(runs_dense(4096, 200, 1024) && !runs_dense(4096, 220, 1024));
        assert!(!runs_dense(16, 32768, 1024) && !runs_dense(54, 56, 1024));
    }

    #[test]
    fn prepared_products_are_the_products() {
        // Rows kept (uniform and negacyclic), block transforms kept (negacyclic, beyond
        // MAX_EXPANDED_BYTES: 65,536 rows at n = 16), and nothing kept (a larger uniform one).
        let n = 16;
        let many = (1 << 16) + 5;
        let cases = [
            (negacyclic_a(300, n, 1), "rows"),
            (
                PublicMatrix::Uniform(SeededMatrix::new(MatrixSeed([5; 16]), 3, 300, n)),
                "rows",
            ),
            (negacyclic_a(many, n, 2), "transforms"),
            (
                PublicMatrix::Uniform(SeededMatrix::new(MatrixSeed([6; 16]), 3, many, n)),
                "nothing",
            ),
        ];
        for (a, kept) in cases {
            let cols = a.rows();
            let prepared = PreparedProduct::new(a.clone());
            let form = match prepared.form {
                Prepared::Rows(_) => "rows",
                Prepared::Transforms(_) => "transforms",
                Prepared::Nothing => "nothing",
            };
            assert_eq!(form, kept, "{cols} rows");
            for rows in [1, 4, 5] {
                let d = digits(rows, cols, rows as u64);
                assert_eq!(
                    prepared.product(&d).as_slice(),
                    &schoolbook(&d, &a)[..],
                    "{rows} x {cols}, {kept}"
                );
            }
        }
    }

    #[test]
    #[should_panic(expected = "a band starts at a block")]
    fn a_band_inside_a_block_is_refused() {
        let d = digits(2, 16, 1);
        let mut hint = Matrix::zeros(2, 16);
        hint_accumulate(&d, &negacyclic_a(64, 16, 1), 8, &mut hint, &|_, _| {});
    }

    #[test]
    fn butterflies_are_counted_per_row_and_measured() {
        // 3 rows, 2 blocks of degree 8: per row and prime 2 forward + 1 inverse transforms of
        // 4 · 3 butterflies.
        assert_eq!(ntt_butterflies(3, 16, 8), 3 * 3 * 12 * 2);
        assert!(butterfly_rate(64, std::time::Duration::from_millis(20)) > 0.0);
        assert_eq!(butterfly_rate(3, std::time::Duration::from_millis(1)), 0.0);
    }

    #[test]
    fn extreme_digits_and_many_columns_stay_exact() {
        // Every digit -128, the largest magnitude, over enough columns that two primes would
        // overflow were they not checked.
        let (rows, cols, n) = (2, 1 << 14, 1024);
        let d = PlaintextMatrix::from_fn(rows, cols, |_, _, out| out.fill(0x80));
        let a = negacyclic_a(cols, n, 1);
        assert_eq!(
            hint_product(&d, &a, &|_, _| {}).as_slice(),
            &schoolbook(&d, &a)[..]
        );
        assert_eq!(primes_for(2_000_000), 2);
        assert_eq!(primes_for(1 << 21), 3);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(24))]
        #[test]
        fn random_shapes_match(rows in 1usize..40, cols in 1usize..700, log_n in 1u32..7, seed in any::<u64>()) {
            let n = 1 << log_n;
            let d = digits(rows, cols, seed);
            let a = negacyclic_a(cols, n, seed as u8);
            let product = hint_product(&d, &a, &|_, _| {});
            let reference = schoolbook(&d, &a);
            prop_assert_eq!(product.as_slice(), &reference[..]);
            let mut ntt = Matrix::zeros(rows, n);
            ntt_accumulate(&d, &a, 0, &mut ntt);
            prop_assert_eq!(ntt.as_slice(), &reference[..]);
        }
    }
}
