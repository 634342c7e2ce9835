use proptest::prelude::*;

use super::*;
use crate::backend::Backend;

/// A deterministic stream of words (xorshift) for test polynomials.
struct Words(u64);

impl Words {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// A uniform-looking polynomial modulo `q`.
    fn uniform(&mut self, ring: &Ring) -> Poly<Coefficients> {
        let q = ring.modulus();
        let values: Vec<u64> = (0..ring.degree()).map(|_| self.next() % q).collect();
        ring.from_values(&values)
    }

    /// A polynomial of signed coefficients in `[−bound, bound]`.
    fn small(&mut self, ring: &Ring, bound: i64) -> Poly<Coefficients> {
        let values: Vec<i64> = (0..ring.degree())
            .map(|_| (self.next() % (2 * bound as u64 + 1)) as i64 - bound)
            .collect();
        ring.from_signed(&values)
    }
}

/// `a · b` modulo `x^n + 1` and `q`, by schoolbook multiplication over `u128`.
fn schoolbook(ring: &Ring, a: &Poly<Coefficients>, b: &Poly<Coefficients>) -> Vec<u64> {
    let (n, q) = (ring.degree(), u128::from(ring.modulus()));
    let (a, b) = (ring.values(a), ring.values(b));
    let mut out = vec![0u128; n];
    for (i, &x) in a.iter().enumerate() {
        for (j, &y) in b.iter().enumerate() {
            let product = u128::from(x) * u128::from(y) % q;
            let k = (i + j) % n;
            out[k] = if i + j < n {
                (out[k] + product) % q
            } else {
                (out[k] + q - product) % q
            };
        }
    }
    out.into_iter().map(|x| x as u64).collect()
}

fn small_ring(log_n: u32) -> Ring {
    Ring::new(1 << log_n, YPIR_MODULI).unwrap()
}

#[test]
fn ypir_ring_has_the_published_modulus() {
    let ring = Ring::ypir();
    assert_eq!(ring.degree(), 2048);
    assert_eq!(ring.modulus(), 66_974_689_739_603_969);
    assert_eq!(ring.modulus(), 268_369_921 * 249_561_089);
    // log2 q ≈ 55.9.
    assert_eq!(64 - ring.modulus().leading_zeros(), 56);
}

#[test]
fn rings_refuse_bad_degrees_and_moduli() {
    assert_eq!(
        Ring::new(1000, YPIR_MODULI).unwrap_err(),
        RingError::Degree(1000)
    );
    assert_eq!(Ring::new(1, YPIR_MODULI).unwrap_err(), RingError::Degree(1));
    assert_eq!(
        Ring::new(1 << 16, YPIR_MODULI).unwrap_err(),
        RingError::Degree(1 << 16)
    );
    // 249561089 − 1 = 2^21·119 but 268369921 − 1 = 2^16·4095: no degree above 2^15.
    assert!(Ring::new(1 << 15, YPIR_MODULI).is_ok());
    // Not prime, equal, above 2^30.
    assert!(Ring::new(16, [268_369_921, 268_369_923]).is_err());
    assert!(Ring::new(16, [268_369_921, 268_369_921]).is_err());
    assert!(Ring::new(16, [268_369_921, (1 << 31) - 1]).is_err());
}

/// Known answers: the transform of 1 is all ones, `x^(n−1) · x = x^n = −1`, and the values
/// of `x` are the odd powers of a primitive `2n`-th root in bit-reversed order.
#[test]
fn transforms_give_known_answers() {
    let ring = Ring::ypir();
    let n = ring.degree();
    let mut one = vec![0u64; n];
    one[0] = 1;
    let one = ring.forward(&ring.from_values(&one));
    assert!(one.residues().iter().all(|&x| x == 1));

    let monomial = |k: usize| {
        let mut values = vec![0u64; n];
        values[k] = 1;
        ring.from_values(&values)
    };
    let product =
        ring.inverse(&ring.multiply(&ring.forward(&monomial(n - 1)), &ring.forward(&monomial(1))));
    let mut minus_one = vec![0u64; n];
    minus_one[0] = ring.modulus() - 1;
    assert_eq!(ring.values(&product), minus_one);

    let x = ring.forward(&monomial(1));
    for (k, p) in ring.moduli().into_iter().enumerate() {
        let p = u64::from(p);
        let values = &x.residues()[k * n..(k + 1) * n];
        // Slot 0 holds ψ itself (bitrev(0) = 0): a primitive 2n-th root.
        let psi = u64::from(values[0]);
        assert_eq!(pow_mod(psi, n as u64, p), p - 1);
        for (i, &value) in values.iter().enumerate() {
            let reversed = i.reverse_bits() >> (usize::BITS - n.trailing_zeros());
            assert_eq!(u64::from(value), pow_mod(psi, 2 * reversed as u64 + 1, p));
        }
    }
}

#[test]
fn values_round_trip_and_center() {
    let ring = small_ring(3);
    let q = ring.modulus();
    let values = [0, 1, q / 2, q / 2 + 1, q - 1, 12345, q - 12345, 7];
    let poly = ring.from_values(&values);
    assert_eq!(ring.values(&poly), values);
    let centered = ring.centered(&poly);
    assert_eq!(centered[2], (q / 2) as i64);
    assert_eq!(centered[3], -((q / 2) as i64));
    assert_eq!(centered[4], -1);
    assert_eq!(centered[6], -12345);
    let signed = ring.from_signed(&[-1, 2, -3, 4, 0, i64::from(i32::MIN), 9, -9]);
    assert_eq!(
        ring.centered(&signed),
        [-1, 2, -3, 4, 0, i64::from(i32::MIN), 9, -9]
    );
}

#[test]
fn barrett_products_are_exact_at_the_edges() {
    let ring = Ring::ypir();
    let mut words = Words(0x1234_5678_9abc_def1);
    for (k, p) in ring.moduli().into_iter().enumerate() {
        let mut cases = vec![(0, 0), (1, 1), (p - 1, p - 1), (p - 1, 1), (p - 2, p - 1)];
        cases.extend((0..10_000).map(|_| {
            (
                (words.next() % u64::from(p)) as u32,
                (words.next() % u64::from(p)) as u32,
            )
        }));
        for (a, b) in cases {
            let expected = (u64::from(a) * u64::from(b) % u64::from(p)) as u32;
            assert_eq!(ring.multiply_mod(k, a, b), expected, "{a} · {b} mod {p}");
        }
    }
}

#[test]
fn gadgets_cover_the_modulus() {
    let ring = Ring::ypir();
    let gadget = Gadget::covering(&ring, 19).unwrap();
    assert_eq!(gadget.digits(), 3);
    assert!(Gadget::new(&ring, 19, 2).is_none());
    assert!(Gadget::new(&ring, 31, 2).is_none());
    assert!(Gadget::new(&ring, 0, 100).is_none());
    assert_eq!(Gadget::covering(&ring, 28).unwrap().digits(), 3);
    assert_eq!(Gadget::covering(&ring, 2).unwrap().digits(), 29);
    assert!(Gadget::covering(&ring, 1).is_none());
    assert_eq!(gadget.power(&ring, 2), 1 << 38);
}

/// Encryption of `message` under `s` with a fresh mask and a small error.
fn encrypt(
    ring: &Ring,
    words: &mut Words,
    s: &Poly<Evaluations>,
    message: &Poly<Coefficients>,
) -> Ciphertext {
    let a = words.uniform(ring);
    let e = words.small(ring, 8);
    Ciphertext::encrypt(ring, s, a, &e, message)
}

/// The largest centered coefficient of `phase − expected`.
fn error(ring: &Ring, phase: &Poly<Coefficients>, expected: &Poly<Coefficients>) -> i64 {
    let mut difference = phase.clone();
    ring.sub_assign(&mut difference, expected);
    ring.centered(&difference)
        .into_iter()
        .map(i64::abs)
        .max()
        .unwrap_or(0)
}

fn key(
    ring: &Ring,
    words: &mut Words,
    gadget: Gadget,
    from: &Poly<Coefficients>,
    to: &Poly<Evaluations>,
) -> KeySwitchKey {
    let a: Vec<_> = (0..gadget.digits()).map(|_| words.uniform(ring)).collect();
    let e: Vec<_> = (0..gadget.digits()).map(|_| words.small(ring, 8)).collect();
    KeySwitchKey::new(ring, gadget, from, to, &a, &e)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    #[test]
    fn transforms_round_trip(log_n in 1u32..=11, seed in 1u64..) {
        let ring = small_ring(log_n);
        let a = Words(seed).uniform(&ring);
        prop_assert_eq!(ring.inverse(&ring.forward(&a)), a);
    }

    #[test]
    fn products_match_schoolbook(log_n in 1u32..=7, seed in 1u64..) {
        let ring = small_ring(log_n);
        let mut words = Words(seed);
        let (a, b) = (words.uniform(&ring), words.uniform(&ring));
        let product = ring.inverse(&ring.multiply(&ring.forward(&a), &ring.forward(&b)));
        prop_assert_eq!(ring.values(&product), schoolbook(&ring, &a, &b));
        // x^k as a monomial product.
        let k = (words.next() % (2 << log_n)) as usize;
        let mut monomial = vec![0u64; ring.degree()];
        let n = ring.degree();
        monomial[k % n] = if k < n { 1 } else { ring.modulus() - 1 };
        let expected = schoolbook(&ring, &a, &ring.from_values(&monomial));
        prop_assert_eq!(ring.values(&ring.multiply_monomial(&a, k)), expected);
    }

    /// Every backend's transforms and products equal the portable code's.
    #[test]
    fn backends_agree_with_portable(log_n in 1u32..=11, seed in 1u64..) {
        let ring = small_ring(log_n);
        let mut words = Words(seed);
        let (a, b, c) = (words.uniform(&ring), words.uniform(&ring), words.uniform(&ring));
        let mut expected = a.data.clone();
        wide::forward_on(Backend::Portable, &ring, &mut expected);
        let mut expected_inverse = a.data.clone();
        wide::inverse_on(Backend::Portable, &ring, &mut expected_inverse);
        let mut expected_sum = c.data.clone();
        wide::multiply_add_on(Backend::Portable, &ring, &mut expected_sum, &a.data, &b.data);
        // A packing combine: y = b, τ_3's slots, three products, from c and from zero.
        let tau = Automorphism::new(&ring, 3).unwrap();
        let (d, e) = (words.uniform(&ring), words.uniform(&ring));
        let products = [
            (&a.data[..], &b.data[..]),
            (&d.data[..], &e.data[..]),
            (&e.data[..], &a.data[..]),
        ];
        let combine = |backend, from_zero| {
            let step = wide::Combine {
                y: &b.data,
                sources: tau.evaluation_sources(),
                products: &products,
                from_zero,
            };
            let (mut out, mut scratch) = (c.data.clone(), vec![0u32; 3 * ring.degree()]);
            wide::combine_on(backend, &ring, &step, &mut out, &d.data, &mut scratch);
            out
        };
        let expected_combines = [combine(Backend::Portable, false), combine(Backend::Portable, true)];
        for backend in Backend::available() {
            prop_assert_eq!(
                [combine(backend, false), combine(backend, true)],
                expected_combines.clone(),
                "{}",
                backend.name()
            );
            let mut forward = a.data.clone();
            wide::forward_on(backend, &ring, &mut forward);
            prop_assert_eq!(&forward, &expected, "{}", backend.name());
            let mut inverse = a.data.clone();
            wide::inverse_on(backend, &ring, &mut inverse);
            prop_assert_eq!(&inverse, &expected_inverse, "{}", backend.name());
            let mut sum = c.data.clone();
            wide::multiply_add_on(backend, &ring, &mut sum, &a.data, &b.data);
            prop_assert_eq!(&sum, &expected_sum, "{}", backend.name());
        }
    }

    /// `τ_j ∘ τ_k = τ_(jk)`, `τ_k` is a ring homomorphism, and it acts the same in both forms.
    #[test]
    fn automorphisms_compose_and_respect_products(
        log_n in 1u32..=8,
        j in any::<usize>(),
        k in any::<usize>(),
        seed in 1u64..,
    ) {
        let ring = small_ring(log_n);
        let two_n = 2 * ring.degree();
        let (j, k) = ((j % two_n) | 1, (k % two_n) | 1);
        let (tau_j, tau_k) = (
            Automorphism::new(&ring, j).unwrap(),
            Automorphism::new(&ring, k).unwrap(),
        );
        let tau_jk = Automorphism::new(&ring, j * k).unwrap();
        let mut words = Words(seed);
        let (a, b) = (words.uniform(&ring), words.uniform(&ring));
        prop_assert_eq!(tau_j.apply(&ring, &tau_k.apply(&ring, &a)), tau_jk.apply(&ring, &a));
        let (a_hat, b_hat) = (ring.forward(&a), ring.forward(&b));
        prop_assert_eq!(tau_k.apply(&ring, &a_hat), ring.forward(&tau_k.apply(&ring, &a)));
        let product = ring.multiply(&a_hat, &b_hat);
        prop_assert_eq!(
            tau_k.apply(&ring, &product),
            ring.multiply(&tau_k.apply(&ring, &a_hat), &tau_k.apply(&ring, &b_hat))
        );
        prop_assert!(Automorphism::new(&ring, 2 * j).is_none());
        prop_assert_eq!(Automorphism::new(&ring, 1).unwrap().apply(&ring, &a), a);
    }

    /// Digits recompose to the polynomial and stay within `[−B/2, B/2)`.
    #[test]
    fn gadget_digits_recompose(base_bits in 2u32..=30, seed in 1u64..) {
        let ring = small_ring(4);
        let gadget = Gadget::covering(&ring, base_bits).unwrap();
        let a = Words(seed).uniform(&ring);
        let digits = gadget.decompose(&ring, &a);
        prop_assert_eq!(digits.len(), gadget.digits());
        let half = 1i64 << (base_bits - 1);
        let mut sum = Poly::zero(ring.degree());
        for (j, digit) in digits.iter().enumerate() {
            prop_assert!(ring.centered(digit).iter().all(|&d| (-half..half).contains(&d)));
            ring.add_assign(&mut sum, &ring.scale(digit, gadget.power(&ring, j)));
        }
        prop_assert_eq!(sum, a);
    }

    /// A ciphertext under `s'` switched to `s` has the same phase up to the key's error
    /// `Σ d_j·e_j`: at most `ℓ·n·(B/2)·8` with errors in `[−8, 8]`.
    #[test]
    fn key_switching_keeps_the_phase(log_n in 1u32..=9, seed in 1u64..) {
        let ring = small_ring(log_n);
        let gadget = Gadget::covering(&ring, 19).unwrap();
        let mut words = Words(seed);
        let s_from = words.small(&ring, 1);
        let s_to = ring.forward(&words.small(&ring, 1));
        let message = ring.scale(&words.small(&ring, 100), 1 << 40);
        let ct = encrypt(&ring, &mut words, &ring.forward(&s_from), &message);
        let switched = key(&ring, &mut words, gadget, &s_from, &s_to).switch(&ring, &ct);
        let bound = 8 + (gadget.digits() * ring.degree()) as i64 * (1 << 18) * 8;
        prop_assert!(error(&ring, &switched.phase(&ring, &s_to), &message) <= bound);
    }

    /// `τ_k` of a ciphertext under `s` is one of `τ_k(m)` under `τ_k(s)`; a key from `τ_k(s)`
    /// to `s` brings it back under `s`.
    #[test]
    fn automorphisms_of_ciphertexts_switch_back(log_n in 1u32..=9, k in any::<usize>(), seed in 1u64..) {
        let ring = small_ring(log_n);
        let tau = Automorphism::new(&ring, (k % (2 * ring.degree())) | 1).unwrap();
        let gadget = Gadget::covering(&ring, 19).unwrap();
        let mut words = Words(seed);
        let s = words.small(&ring, 1);
        let s_hat = ring.forward(&s);
        let message = ring.scale(&words.small(&ring, 100), 1 << 40);
        let ct = encrypt(&ring, &mut words, &s_hat, &message);
        let moved = ct.automorphism(&ring, &tau);
        let tau_message = tau.apply(&ring, &message);
        prop_assert!(error(&ring, &moved.phase(&ring, &ring.forward(&tau.apply(&ring, &s))), &tau_message) <= 8);
        let switched = key(&ring, &mut words, gadget, &tau.apply(&ring, &s), &s_hat).switch(&ring, &moved);
        let bound = 8 + (gadget.digits() * ring.degree()) as i64 * (1 << 18) * 8;
        prop_assert!(error(&ring, &switched.phase(&ring, &s_hat), &tau_message) <= bound);
    }

    /// Switching both parts of a ciphertext to `q'` scales its phase by `q'/q`, with a rounding
    /// error of at most `(1 + ‖s‖_1)/2` per coefficient.
    #[test]
    fn modulus_switching_scales_the_phase(log_n in 1u32..=9, to_bits in 10u32..=40, seed in 1u64..) {
        let ring = small_ring(log_n);
        let mut words = Words(seed);
        let s = words.small(&ring, 1);
        let to = (1u64 << to_bits) + (words.next() % 1000);
        let message = words.small(&ring, 1000);
        let scaled = ring.scale(&message, ring.modulus() / to);
        let ct = encrypt(&ring, &mut words, &ring.forward(&s), &scaled);
        let (a, b) = (ring.switch_modulus(&ct.a, to), ring.switch_modulus(&ct.b, to));
        let s = ring.centered(&s);
        let n = ring.degree();
        let norm: i64 = s.iter().map(|x| x.abs()).sum();
        let message = ring.centered(&message);
        for (i, (&b, &m)) in b.iter().zip(&message).enumerate() {
            // (b − a·s)[i] modulo `to`, over the integers.
            let mut phase = i128::from(b);
            for (j, &sj) in s.iter().enumerate() {
                let (index, sign) = if j <= i { (i - j, 1) } else { (n + i - j, -1) };
                phase -= sign * i128::from(a[index]) * i128::from(sj);
            }
            let phase = phase.rem_euclid(i128::from(to));
            let expected = i128::from(m).rem_euclid(i128::from(to));
            let distance = (phase - expected).rem_euclid(i128::from(to));
            let distance = distance.min(i128::from(to) - distance);
            // Rounding (1 + ‖s‖_1)/2, the scaled error 8·to/q, and q/to's floor: below 2 + ‖s‖_1.
            prop_assert!(distance <= i128::from(2 + norm), "{} > {}", distance, 2 + norm);
        }
    }
}

/// Packs `count` LWE encryptions of random digits modulo 16 over `ring` and checks that each
/// lands at `x^(j·n/count)` and that every other coefficient decodes to zero.
fn check_packing(ring: &Ring, count: usize, seed: u64) {
    let (n, q) = (ring.degree(), ring.modulus());
    let gadget = Gadget::covering(ring, 19).unwrap();
    let mut words = Words(seed);
    let s = words.small(ring, 1);
    let secret = ring.values(&s);
    let keys = PackingKeys::new(
        ring,
        gadget,
        &s,
        |_, _| Words(seed ^ 0x5555).uniform(ring),
        |_, _| Words(seed ^ 0xaaaa).small(ring, 8),
    );
    let delta = q / 16;
    let factor = packing_factor(ring);
    let mut messages = Vec::new();
    let cts: Vec<Ciphertext> = (0..count)
        .map(|_| {
            let m = words.next() % 16;
            messages.push(m);
            let a: Vec<u64> = (0..n).map(|_| words.next() % q).collect();
            let inner = a.iter().zip(&secret).fold(0u128, |sum, (&a, &s)| {
                (sum + u128::from(a) * u128::from(s)) % u128::from(q)
            });
            let e = (words.next() % 17) as i128 - 8;
            let b = (inner as i128 + e + i128::from(delta * m)).rem_euclid(i128::from(q)) as u64;
            let ct = lwe_to_rlwe(ring, &a, b);
            Ciphertext {
                a: ring.scale(&ct.a, factor),
                b: ring.scale(&ct.b, factor),
            }
        })
        .collect();
    let packed = pack(ring, &keys, &cts);
    let phase = ring.values(&packed.phase(ring, &ring.forward(&s)));
    let stride = n / count;
    for (i, &x) in phase.iter().enumerate() {
        let decoded = ((u128::from(x) * 16 + u128::from(q / 2)) / u128::from(q)) % 16;
        let expected = if i % stride == 0 {
            messages[i / stride]
        } else {
            0
        };
        assert_eq!(
            decoded as u64, expected,
            "coefficient {i} of {count} packed in degree {n}"
        );
    }
}

#[test]
fn packing_fills_ypir_ring() {
    check_packing(&Ring::ypir(), 2048, 7);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(12))]

    #[test]
    fn packing_places_every_phase(log_n in 1u32..=8, log_count in 0u32..=8, seed in 1u64..) {
        let log_count = log_count.min(log_n);
        check_packing(&small_ring(log_n), 1 << log_count, seed);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(40))]

    /// A plan made from the masks alone packs exactly as the full packing does, for any bodies,
    /// every count from 1 to n at n = 2^7 among the cases.
    #[test]
    fn plans_pack_as_the_full_packing(log_n in 1u32..=7, log_count in 0u32..=7, seed in 1u64..) {
        let ring = small_ring(log_n);
        let count = 1usize << log_count.min(log_n);
        let (n, q) = (ring.degree(), ring.modulus());
        let gadget = Gadget::covering(&ring, 19).unwrap();
        let mut words = Words(seed);
        let s = words.small(&ring, 1);
        let keys = PackingKeys::new(
            &ring,
            gadget,
            &s,
            |_, _| Words(seed ^ 0x5555).uniform(&ring),
            |_, _| Words(seed ^ 0xaaaa).small(&ring, 8),
        );
        let rows: Vec<Vec<u64>> = (0..count)
            .map(|_| (0..n).map(|_| words.next() % q).collect())
            .collect();
        let bodies: Vec<u64> = (0..count).map(|_| words.next() % q).collect();
        let cts: Vec<_> = rows.iter().zip(&bodies).map(|(a, &b)| lwe_to_rlwe(&ring, a, b)).collect();
        let masks: Vec<_> = cts.iter().map(|ct| ct.a.clone()).collect();
        let plan = PackingPlan::new(&ring, &keys, &masks);
        prop_assert_eq!(plan.count(), count);
        prop_assert_eq!(plan.pack(&ring, &keys, &bodies), pack(&ring, &keys, &cts));
        // The keys rebuilt from their rows, as a server rebuilds a client's, pack the same.
        let rebuilt: Vec<_> = keys
            .keys()
            .map(|key| KeySwitchKey::from_rows(&ring, gadget, key.rows().to_vec()).unwrap())
            .collect();
        prop_assert!(PackingKeys::from_keys(&ring, rebuilt[1..].to_vec()).is_none());
        let rebuilt = PackingKeys::from_keys(&ring, rebuilt).unwrap();
        prop_assert_eq!(plan.pack(&ring, &rebuilt, &bodies), pack(&ring, &keys, &cts));
        // Packing again (on the plan's kept working memory) packs the same.
        prop_assert_eq!(plan.pack(&ring, &keys, &bodies), pack(&ring, &keys, &cts));
        let short = keys.keys().next().unwrap().rows()[1..].to_vec();
        prop_assert!(KeySwitchKey::from_rows(&ring, gadget, short).is_none());
    }
}

/// The packing error at degree 2048 has the variance the analysis predicts: a key switch adds
/// `n·σ_e²·Σ_j E[d_j²]` per coefficient, and the later levels amplify level `ℓ`'s by
/// `4^(L−ℓ)` coherently, `(n² − 1)/3` in all. Balanced digits of a uniform mask have
/// `E[d²] = B²/12`, except the top one, uniform over `±q/(2·B^(ℓ−1))`.
#[test]
fn packing_noise_matches_the_analysis() {
    let ring = Ring::ypir();
    let (n, q) = (ring.degree(), ring.modulus());
    let gadget = Gadget::covering(&ring, 19).unwrap();
    let mut words = Words(99);
    let s = words.small(&ring, 1);
    let bound = 8;
    let error_variance = ((2 * bound + 1) * (2 * bound + 1) - 1) as f64 / 12.0;
    let keys = PackingKeys::new(
        &ring,
        gadget,
        &s,
        |k, j| Words(1000 + 10 * k as u64 + j as u64).uniform(&ring),
        |k, j| Words(5000 + 10 * k as u64 + j as u64).small(&ring, bound),
    );
    let rows: Vec<Vec<u64>> = (0..n)
        .map(|_| (0..n).map(|_| words.next() % q).collect())
        .collect();
    let secret = ring.values(&s);
    // Bodies with zero phase: b = ⟨a, s⟩ · n^{-1}, so the packed phase is the packing error.
    let factor = packing_factor(&ring);
    let bodies: Vec<u64> = rows
        .iter()
        .map(|a| {
            let inner = a.iter().zip(&secret).fold(0u128, |sum, (&a, &s)| {
                (sum + u128::from(a) * u128::from(s)) % u128::from(q)
            });
            (inner * u128::from(factor) % u128::from(q)) as u64
        })
        .collect();
    let masks: Vec<_> = rows
        .iter()
        .map(|a| ring.scale(&lwe_to_rlwe(&ring, a, 0).a, factor))
        .collect();
    let packed = PackingPlan::new(&ring, &keys, &masks).pack(&ring, &keys, &bodies);
    let phase = ring.centered(&packed.phase(&ring, &ring.forward(&s)));
    let measured = phase.iter().map(|&x| (x as f64).powi(2)).sum::<f64>() / n as f64;

    let base = (1u64 << gadget.base_bits()) as f64;
    let top = q as f64 / (2.0 * base.powi(gadget.digits() as i32 - 1));
    let digits = (gadget.digits() - 1) as f64 * base * base / 12.0 + top * top / 3.0;
    let per_switch = n as f64 * error_variance * digits;
    let predicted = per_switch * ((n * n - 1) as f64 / 3.0);
    let ratio = measured / predicted;
    assert!(
        (0.8..1.25).contains(&ratio),
        "measured {measured:e}, predicted {predicted:e}"
    );
}

proptest! {
    /// Sums of as many products as a reduction takes reduce exactly, for primes of 28, 29 and
    /// 30 bits (YPIR's, and the largest a ring takes).
    #[test]
    fn sums_of_products_reduce_exactly(seed in any::<u64>()) {
        let rings = [
            Ring::new(2048, YPIR_MODULI).unwrap(),
            Ring::new(2048, [536_813_569, 536_752_129]).unwrap(),
            Ring::new(2048, [crate::ntt::PRIMES[0], crate::ntt::PRIMES[1]]).unwrap(),
        ];
        let mut words = Words(seed | 1);
        for ring in &rings {
            for k in 0..2 {
                let p = ring.moduli()[k];
                // The largest residues as well as random ones.
                for largest in [false, true] {
                    let terms: Vec<(u32, u32)> = (0..ring.sum_terms(k))
                        .map(|_| {
                            if largest {
                                (p - 1, p - 1)
                            } else {
                                ((words.next() % u64::from(p)) as u32, (words.next() % u64::from(p)) as u32)
                            }
                        })
                        .collect();
                    let x: u64 = terms.iter().map(|&(a, b)| u64::from(a) * u64::from(b)).sum();
                    prop_assert_eq!(u64::from(ring.reduce_sum(k, x)), x % u64::from(p));
                    let (a, b) = terms[0];
                    prop_assert_eq!(
                        u64::from(ring.multiply_mod(k, a, b)),
                        u64::from(a) * u64::from(b) % u64::from(p)
                    );
                }
            }
        }
    }
}
