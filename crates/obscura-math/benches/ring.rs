//! Criterion benchmarks of YPIR's ring: transforms, a key switch and packing 2048 LWE
//! ciphertexts.

use criterion::{criterion_group, criterion_main, Criterion};
use obscura_math::ring::{
    lwe_to_rlwe, pack, Automorphism, Ciphertext, Gadget, KeySwitchKey, PackingKeys, PackingPlan,
    Poly, Ring,
};

/// A polynomial of pseudo-random coefficients modulo `q` (xorshift from `seed`).
fn uniform(ring: &Ring, seed: u64) -> Poly<obscura_math::ring::Coefficients> {
    let mut x = seed | 1;
    let values: Vec<u64> = (0..ring.degree())
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % ring.modulus()
        })
        .collect();
    ring.from_values(&values)
}

fn ring_operations(c: &mut Criterion) {
    let ring = Ring::ypir();
    let gadget = Gadget::covering(&ring, 19).expect("gadget");
    let a = uniform(&ring, 1);
    let a_hat = ring.forward(&a);
    let mut group = c.benchmark_group("ring_2048");
    group.bench_function("forward", |b| b.iter(|| ring.forward(&a)));
    group.bench_function("inverse", |b| b.iter(|| ring.inverse(&a_hat)));
    group.bench_function("multiply", |b| b.iter(|| ring.multiply(&a_hat, &a_hat)));
    let tau = Automorphism::new(&ring, 3).expect("odd");
    let masks: Vec<_> = (0..gadget.digits())
        .map(|j| uniform(&ring, 10 + j as u64))
        .collect();
    let errors: Vec<_> = (0..gadget.digits())
        .map(|_| Poly::zero(ring.degree()))
        .collect();
    let key = KeySwitchKey::new(
        &ring,
        gadget,
        &tau.apply(&ring, &a),
        &a_hat,
        &masks,
        &errors,
    );
    let ct = Ciphertext {
        a: uniform(&ring, 2),
        b: uniform(&ring, 3),
    };
    group.bench_function("key_switch", |b| b.iter(|| key.switch(&ring, &ct)));
    group.finish();

    let keys = PackingKeys::new(
        &ring,
        gadget,
        &a,
        |k, j| uniform(&ring, (k * 8 + j) as u64),
        |_, _| Poly::zero(ring.degree()),
    );
    let cts: Vec<_> = (0..ring.degree())
        .map(|i| {
            let row: Vec<u64> = ring.values(&uniform(&ring, 100 + i as u64));
            lwe_to_rlwe(&ring, &row, row[0])
        })
        .collect();
    let mut group = c.benchmark_group("packing_2048");
    group.sample_size(10);
    group.bench_function("pack", |b| b.iter(|| pack(&ring, &keys, &cts)));
    let masks: Vec<_> = cts.iter().map(|ct| ct.a.clone()).collect();
    group.bench_function("plan", |b| {
        b.iter(|| PackingPlan::new(&ring, &keys, &masks))
    });
    let plan = PackingPlan::new(&ring, &keys, &masks);
    let bodies: Vec<u64> = (0..ring.degree() as u64).collect();
    group.bench_function("pack_planned", |b| {
        b.iter(|| plan.pack(&ring, &keys, &bodies))
    });
    group.finish();
}

criterion_group!(benches, ring_operations);
criterion_main!(benches);
