//! Every backend held to the portable one (and the drivers to a plain product) on random and
//! extreme inputs.

use proptest::prelude::*;

use super::{
    plaintext_mat_mul_acc_with, plaintext_mat_vecs_with, portable, quad_interleaved,
    transposed_mat_vecs, Backend,
};
use crate::layout::{Group, GROUP_ROWS};
use crate::matrix::PlaintextMatrix;

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
    fn transposed_products_match_naive(
        rows in 0usize..70, cols in 0usize..40, k in 1usize..4, seed in any::<u64>()
    ) {
        // M is rows x cols; the kernel takes its transpose interleaved by quads of columns.
        let mut next = random(seed);
        let m: Vec<u8> = (0..rows * cols).map(|_| next() as u8).collect();
        let vs: Vec<Vec<u32>> = (0..k).map(|_| (0..cols).map(|_| next()).collect()).collect();
        let refs: Vec<&[u32]> = vs.iter().map(|v| &v[..]).collect();
        let t4 = quad_interleaved(&m, rows, cols);
        let products = transposed_mat_vecs(&t4, rows, &refs);
        for (v, product) in vs.iter().zip(&products) {
            let expected = naive_gemv(&m, rows, v);
            prop_assert_eq!(product, &expected);
        }
        // Every backend's form of the kernel agrees.
        for backend in Backend::available() {
            for v in &vs {
                let planes = super::drivers::quad_planes(v);
                let mut out = vec![0u32; rows];
                super::drivers::quads_on(backend, &t4, rows, &planes, &mut out);
                prop_assert_eq!(&out, &naive_gemv(&m, rows, v));
            }
        }
    }

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
    let d =
        PlaintextMatrix::from_row_major_in_panels(rows, cols, crate::layout::PANEL_COLS, &digits);
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
    assert_eq!(Backend::selected(), *available.last().unwrap());
}
