//! Criterion benchmarks of the kernels on every backend this CPU has.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use obscura_math::backend::Backend;
use obscura_math::expand::{MatrixSeed, NegacyclicMatrix, PublicMatrix};
use obscura_math::hint::hint_product;
use obscura_math::hint_delta::{apply, ColumnRuns};
use obscura_math::kernels::{plaintext_mat_mul_acc_with, plaintext_mat_vecs_with};
use obscura_math::layout::{Group, GROUP_ROWS, PANEL_COLS};
use obscura_math::matrix::{Matrix, PlaintextMatrix};

fn random_bytes(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

fn random_words(len: usize, seed: u64) -> Vec<u32> {
    random_bytes(4 * len, seed)
        .chunks_exact(4)
        .map(|w| u32::from_le_bytes([w[0], w[1], w[2], w[3]]))
        .collect()
}

/// Queries against 256 MiB databases: square (16384 x 16384, one panel) and one record per
/// column (1024 x 262144, eight panels), the two shapes the layouts produce.
fn answer(c: &mut Criterion) {
    for (name, rows, cols) in [
        ("answer_256MiB", 16384, 16384),
        ("answer_256MiB_wide", 1024, 262144),
    ] {
        let d = PlaintextMatrix::from_vec(rows, cols, random_bytes(rows * cols, 1)).expect("shape");
        let queries: Vec<Vec<u32>> = (0..16).map(|j| random_words(cols, 2 + j)).collect();
        let mut group = c.benchmark_group(name);
        group.sample_size(10);
        for backend in Backend::available() {
            for k in [1usize, 4, 16] {
                let refs: Vec<&[u32]> = queries[..k].iter().map(|q| q.as_slice()).collect();
                group.throughput(Throughput::Bytes((k * rows * cols) as u64));
                group.bench_with_input(BenchmarkId::new(backend.name(), k), &refs, |b, refs| {
                    b.iter(|| plaintext_mat_vecs_with(backend, &d, refs))
                });
            }
        }
        group.finish();
    }
}

/// The matrix-vector kernel alone on cache-resident data (one group of a panel, no threads):
/// its compute ceiling.
fn gemv_in_cache(c: &mut Criterion) {
    let (rows, cols) = (GROUP_ROWS, PANEL_COLS);
    let digits = random_bytes(rows * cols, 5);
    let group = Group {
        rows,
        width: cols,
        bytes: &digits,
    };
    let v = random_words(cols, 6);
    let mut group_bench = c.benchmark_group("gemv_in_cache");
    group_bench.throughput(Throughput::Bytes((rows * cols) as u64));
    for backend in Backend::available() {
        let operand = backend.prepare_vector(&v);
        group_bench.bench_function(backend.name(), |b| {
            let mut out = vec![0u32; rows];
            b.iter(|| backend.gemv_group(&group, &operand, &mut out))
        });
    }
    group_bench.finish();
}

/// One 256-column block of the hint product for 1024 rows with n = 1024.
fn hint_block(c: &mut Criterion) {
    let (rows, cols, n) = (1024, 256, 1024);
    let d = PlaintextMatrix::from_vec(rows, cols, random_bytes(rows * cols, 3)).expect("shape");
    let block = random_words(cols * n, 4);
    let mut group = c.benchmark_group("hint_block");
    group.sample_size(10);
    group.throughput(Throughput::Elements((rows * cols * n) as u64));
    for backend in Backend::available() {
        group.bench_function(backend.name(), |b| {
            let mut h = vec![0u32; rows * n];
            b.iter(|| plaintext_mat_mul_acc_with(backend, &d, 0, &block, n, &mut h))
        });
    }
    group.finish();
}

/// The whole hint product for a negacyclic `A` (NTT domain), 1024 x 16384 digits, n = 1024.
fn hint_negacyclic(c: &mut Criterion) {
    let (rows, cols, n) = (1024, 16384, 1024);
    let d = PlaintextMatrix::from_vec(rows, cols, random_bytes(rows * cols, 7)).expect("shape");
    let a = PublicMatrix::Negacyclic(
        NegacyclicMatrix::new(MatrixSeed([8; 16]), 1, cols, n).expect("degree"),
    );
    let mut group = c.benchmark_group("hint_negacyclic");
    group.sample_size(10);
    group.throughput(Throughput::Bytes((rows * cols) as u64));
    group.bench_function("ntt", |b| b.iter(|| hint_product(&d, &a, &|_, _| {})));
    group.finish();
}

/// `H += ΔD·A` for a hint of 4096 rows and a negacyclic `A` of 16 blocks (n = 1024): 168
/// records of 1,024 digits changed down their columns (runs), and as many entries scattered one
/// by one, at random and in row order (set the backend with `OBSCURA_BACKEND`).
fn hint_delta(c: &mut Criterion) {
    let (rows, cols, n) = (4096, 16384, 1024);
    let a = PublicMatrix::Negacyclic(
        NegacyclicMatrix::new(MatrixSeed([9; 16]), 1, cols, n).expect("degree"),
    );
    let words = random_words(3 * 168 * 1024, 10);
    let delta = |w: u32| (w % 511) as i16 - 255;
    let mut records = ColumnRuns::new();
    let mut scattered = ColumnRuns::new();
    for (k, w) in words.chunks_exact(3 * 1024).take(168).enumerate() {
        let deltas: Vec<i16> = w[..1024].iter().map(|&x| delta(x)).collect();
        let (col, slot) = (w[0] as usize % cols, k % (rows / 1024));
        records.push(col, slot * 1024, &deltas);
        for (i, &x) in w[1024..2048].iter().enumerate() {
            scattered.push(x as usize % cols, w[2048 + i] as usize % rows, &[delta(x)]);
        }
    }
    let mut hint = Matrix::zeros(rows, n);
    let mut group = c.benchmark_group("hint_delta");
    group.sample_size(10);
    group.throughput(Throughput::Elements((records.entries() * n) as u64));
    group.bench_function("records", |b| b.iter(|| apply(&mut hint, &a, &records)));
    group.bench_function("scattered", |b| b.iter(|| apply(&mut hint, &a, &scattered)));
    let mut in_order: Vec<_> = scattered.iter().collect();
    in_order.sort_by_key(|run| run.first_row);
    let mut sorted = ColumnRuns::new();
    for run in in_order {
        sorted.push(run.col, run.first_row, run.deltas);
    }
    group.bench_function("scattered_in_row_order", |b| {
        b.iter(|| apply(&mut hint, &a, &sorted))
    });
    group.finish();
}

criterion_group!(
    benches,
    answer,
    gemv_in_cache,
    hint_block,
    hint_negacyclic,
    hint_delta
);
criterion_main!(benches);
