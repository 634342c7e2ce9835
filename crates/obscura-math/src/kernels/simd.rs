//! The shape shared by the SIMD backends: one macro that writes `gemv_acc` and `gemm_acc` from a
//! backend's lane primitives (`LANES`, `Vector`, `zero`, `load`, `store`, `splat`, `mul_add`,
//! `load_digits`, `reduce`), so that AVX2 and AVX-512 differ only in those primitives.

/// Writes the SIMD kernels for a backend whose primitives are in scope; `$features` is the
/// `target_feature` list they need.
macro_rules! simd_kernels {
    ($features:literal) => {
        /// See [`super::portable::gemv_acc`].
        ///
        /// # Safety
        /// The CPU must support this backend's features, `v.len() <= stride`, and `d` must hold
        /// `out.len()` rows of `stride` bytes (the last one at least `v.len()` bytes).
        #[target_feature(enable = $features)]
        pub unsafe fn gemv_acc(d: &[u8], stride: usize, v: &[u32], out: &mut [u32]) {
            let rows = out.len();
            let mut r = 0;
            while r < rows {
                let block = (rows - r).min(4);
                let at = &d[r * stride..];
                let sums = match block {
                    4 => gemv_rows::<4>(at, stride, v),
                    3 => gemv_rows::<3>(at, stride, v),
                    2 => gemv_rows::<2>(at, stride, v),
                    _ => gemv_rows::<1>(at, stride, v),
                };
                for (o, sum) in out[r..r + block].iter_mut().zip(sums) {
                    *o = o.wrapping_add(sum);
                }
                r += block;
            }
        }

        /// `R` rows of [`gemv_acc`]; the sums are in the first `R` entries.
        #[target_feature(enable = $features)]
        unsafe fn gemv_rows<const R: usize>(d: &[u8], stride: usize, v: &[u32]) -> [u32; 4] {
            let cols = v.len();
            let body = cols - cols % LANES;
            let mut acc = [zero(); R];
            let mut c = 0;
            while c < body {
                let q = load(v.as_ptr().add(c));
                for (i, acc) in acc.iter_mut().enumerate() {
                    *acc = mul_add(*acc, load_digits(d.as_ptr().add(i * stride + c)), q);
                }
                c += LANES;
            }
            let mut sums = [0u32; 4];
            for i in 0..R {
                let tail =
                    super::portable::dot_i8(&d[i * stride + body..i * stride + cols], &v[body..]);
                sums[i] = reduce(acc[i]).wrapping_add(tail);
            }
            sums
        }

        /// See [`super::portable::gemm_acc`].
        ///
        /// # Safety
        /// The CPU must support this backend's features, and the slices must hold every row
        /// the arguments describe.
        #[target_feature(enable = $features)]
        #[allow(clippy::too_many_arguments)]
        pub unsafe fn gemm_acc(
            d: &[u8],
            d_stride: usize,
            rows: usize,
            cols: usize,
            b: &[u32],
            b_stride: usize,
            width: usize,
            out: &mut [u32],
            out_stride: usize,
        ) {
            let body = width - width % LANES;
            let mut r = 0;
            while r < rows {
                let block = (rows - r).min(4);
                let mut j = 0;
                while j < body {
                    let vectors = ((body - j) / LANES).min(4);
                    let d = d.as_ptr().add(r * d_stride);
                    let b = b.as_ptr().add(j);
                    let o = out.as_mut_ptr().add(r * out_stride + j);
                    macro_rules! tile {
                        ($r:literal) => {
                            match vectors {
                                4 => gemm_tile::<$r, 4>(
                                    d, d_stride, cols, b, b_stride, o, out_stride,
                                ),
                                3 => gemm_tile::<$r, 3>(
                                    d, d_stride, cols, b, b_stride, o, out_stride,
                                ),
                                2 => gemm_tile::<$r, 2>(
                                    d, d_stride, cols, b, b_stride, o, out_stride,
                                ),
                                _ => gemm_tile::<$r, 1>(
                                    d, d_stride, cols, b, b_stride, o, out_stride,
                                ),
                            }
                        };
                    }
                    match block {
                        4 => tile!(4),
                        3 => tile!(3),
                        2 => tile!(2),
                        _ => tile!(1),
                    }
                    j += LANES * vectors;
                }
                r += block;
            }
            if body < width {
                super::portable::gemm_acc(
                    d,
                    d_stride,
                    rows,
                    cols,
                    &b[body..],
                    b_stride,
                    width - body,
                    &mut out[body..],
                    out_stride,
                );
            }
        }

        /// An `R`-row, `V`-vector tile of [`gemm_acc`], held in registers across all columns.
        #[target_feature(enable = $features)]
        unsafe fn gemm_tile<const R: usize, const V: usize>(
            d: *const u8,
            d_stride: usize,
            cols: usize,
            b: *const u32,
            b_stride: usize,
            out: *mut u32,
            out_stride: usize,
        ) {
            let mut acc = [[zero(); V]; R];
            for (i, acc) in acc.iter_mut().enumerate() {
                for (k, acc) in acc.iter_mut().enumerate() {
                    *acc = load(out.add(i * out_stride + k * LANES));
                }
            }
            for c in 0..cols {
                let mut bq = [zero(); V];
                for (k, bq) in bq.iter_mut().enumerate() {
                    *bq = load(b.add(c * b_stride + k * LANES));
                }
                for (i, acc) in acc.iter_mut().enumerate() {
                    let scale = splat(i32::from(*d.add(i * d_stride + c) as i8));
                    for (acc, &bq) in acc.iter_mut().zip(&bq) {
                        *acc = mul_add(*acc, scale, bq);
                    }
                }
            }
            for (i, acc) in acc.iter().enumerate() {
                for (k, &acc) in acc.iter().enumerate() {
                    store(out.add(i * out_stride + k * LANES), acc);
                }
            }
        }
    };
}

pub(crate) use simd_kernels;
