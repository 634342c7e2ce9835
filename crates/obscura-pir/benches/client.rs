//! Criterion benchmarks of the client on the `frodo` and `simple-1g` shapes (2^20 x 1 KiB).
//!
//! The client needs only the public setup; a zero hint of the right shape stands in for the
//! server's, so no 1 GiB database is built here.

use criterion::{criterion_group, criterion_main, Criterion};
use obscura_math::expand::MatrixSeed;
use obscura_math::matrix::Matrix;
use obscura_pir::lwe::{Client, Geometry, Layout, PublicSetup, RecordFormat};
use obscura_pir::params::{MatrixKind, ParamSet};
use obscura_pir::PirClient;

fn new_client(layout: Layout, matrix: MatrixKind) -> Client {
    let set = ParamSet::Ypir1024;
    let geometry = Geometry::plan(1 << 30, 1024, layout, set).unwrap();
    let hint = Matrix::zeros(geometry.rows() as usize, set.n());
    let format = RecordFormat::Raw;
    // The zero hint is that of an all-zero database, whose rows have norm 0.
    let seed = MatrixSeed([7; 16]);
    let setup = PublicSetup::new(set, matrix, format, geometry, 0, seed, hint).unwrap();
    Client::new(setup)
}

fn queries(c: &mut Criterion) {
    let mut group = c.benchmark_group("client_1GiB");
    group.sample_size(10);
    for (name, layout) in [("frodo", Layout::OnePerColumn), ("square", Layout::Square)] {
        for matrix in MatrixKind::ALL {
            let mut client = new_client(layout, matrix);
            // Prepare one query and spend it at once, so the pool does not grow.
            group.bench_function(format!("{name}/{}/prepare", matrix.name()), |b| {
                b.iter(|| {
                    client.preprocess(1).unwrap();
                    client.query(12345).unwrap()
                })
            });
            let mut client = new_client(layout, matrix);
            group.bench_function(format!("{name}/{}/fresh_query", matrix.name()), |b| {
                b.iter(|| client.query(12345).unwrap())
            });
        }
    }
    group.finish();
}

criterion_group!(benches, queries);
criterion_main!(benches);
