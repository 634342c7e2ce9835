//! YPIR's parameters and the failure probability of a query, computed for each database.
//!
//! # The packed layer (both variants)
//!
//! Ring `R_q = Z_q[x]/(x^d + 1)` with `d` = [`DEGREE`] = 2048 and `q = 268369921 · 249561089`
//! (≈ 2^55.9, odd, both primes ≡ 1 mod 2d). Secret and errors are discrete Gaussians of
//! standard deviation [`SIGMA`] = 6.4 (the secret from the error distribution, as YPIR's
//! assumption states it). A query vector of length `C` is `⌈C/d⌉` RLWE samples
//! `a_k·s + d^{-1}·(e_k + Δ·m_k)` truncated to `C` coefficients, the `a_k` expanded from the
//! database's public seed; the packing keys are [`log d`](LEVELS) = 11 key-switching keys of
//! [`GADGET_DIGITS`] = 3 rows each (gadget base 2^[`GADGET_BITS`] = 2^19), from `τ_(2^ℓ+1)(s)` to
//! `s`, whose masks come from the seed too. Privacy of the index rests on decisional RLWE in
//! degree 2048 with `q ≈ 2^56`, σ = 6.4 and `⌈C/d⌉ + 33` samples, plus the circular-security
//! assumption that packing keys (encryptions of functions of `s` under `s`) look random, as in
//! YPIR (Menon and Wu, USENIX Security 2024, §3 and Appendix A) and every CDKS-packing scheme.
//! YPIR's authors estimate these parameters at 128 bits with the lattice estimator; a rough
//! primal-attack estimate in the core-SVP model (ADPS16) gives BKZ block size about 355 (2^104
//! classical operations at 0.292·β, before the polynomial factors the estimator adds).
//!
//! The answer is the packed ciphertext switched to a mask modulus 2^[`MASK_BITS`] and a body
//! modulus 2^[`BODY_BITS`]: `d·(28 + 20)/8 = 12,288` bytes.
//!
//! # Correctness of the packed layer
//!
//! In units of the body modulus `Q_b = 2^20`, coefficient `c` decodes correctly when its error
//! stays below `τ = Q_b/(2p)` (`p = 2^15` the plaintext modulus of both variants). The
//! error is
//!
//! - **packing**: each key switch adds `Σ_j δ_j·e_j` (digits `δ_j` of a uniform mask, balanced in
//!   `[−B/2, B/2)`, so of variance `B²/12`, the top one `(q/B²)²/12`, times errors of variance
//!   σ², plus the rounding of the key's body that the query leaves out, see
//!   [`key_dropped_bits`]): variance `d·Σ_j E[δ_j²]·(σ² + v_k)` per coefficient, `v_k = 4^k/12 + 1/6` the
//!   variance of a `k`-bit rounding ([`rounding_variance`]); a level-`ℓ`
//!   error is doubled by each of the `L − ℓ` later levels, and each output coefficient receives
//!   one error per level, so the packed variance is the sum over levels of `4^(L−ℓ)` times that
//!   ([`packing_variance`]; without rounding, `(d² − 1)/3 · d·σ²·Σ_j E[δ_j²]`, measured at 0.97
//!   of this by the ring's noise test);
//! - **the pass**: the phase of input `r` is `d^{-1}·Σ_j D[r][j]·e_j`, which packing multiplies by
//!   `d`: variance at most `C·(p − 1)²·σ²`, negligible; the query vector's rounding (its low
//!   `k` bits left out) adds `Σ_j D[r][j]·ε_j` after the scaling, so `d²·C·(p − 1)²·v_k`. The
//!   rounding sends ties to the even result, so each `ε_j` has mean zero: with ties rounded up
//!   they would have mean 1/2 and shift row `r` by `d·Σ_j D[r][j]/2`, a bias no variance bound
//!   covers (a test retrieves words of all ones over 2^15 columns);
//! - **modulus switching**: the body's rounding and the client's rounding of `â·s` add at most
//!   1 in all; the mask's rounding `ε` (at most 1/2 per coefficient in units of 2^28) adds
//!   `⟨ε, s⟩·Q_b/2^28`, subgaussian with variance proxy `d·σ²/4·(Q_b/2^28)²`.
//!
//! Treating the packed error as Gaussian under the independence heuristic (as YPIR, Spiral
//! and CDKS do), a coefficient fails with probability at most `2·exp(−(τ − 1)²/(2V))`, `V`
//! the sum of the variances above; a ciphertext fails with at most `d` times that. Each shape
//! leaves out as many bits of its query vectors as keep a query within 2^-41 or 2^-42 (see
//! [`crate::ypir::YpirShape`]); a test measures the decoded error at about half the bound's
//! variance on random data. (YPIR's reference code takes p = 2^14 for YPIR+SP, for the margin its
//! unsigned gadget digits need; balanced digits have it at 2^15, which packs 7% more of a
//! record into each ciphertext.)
//!
//! # The first layer (YPIR)
//!
//! LWE with `n` = 1024, `q = 2^32`, the public matrix made of negacyclic blocks (Ring-LWE in
//! degree 1024), a Gaussian secret and error of standard deviation [`FIRST_SIGMA`] = 11: YPIR's
//! first layer, estimated at 128 bits by its authors. Digits are `log p1`-bit, stored centered.
//! Rows of its hint and its answers are rounded to 28 bits before the packed layer carries
//! them, so a digit's decoding sees, besides the pass's noise `Σ_j D[r][j]·e_j` (variance proxy
//! `σ²·‖D_r‖²`), the hint's rounding `⟨ε, s⟩` (`|ε_i| ≤ 8`: proxy `64·n·σ²`), the answer's
//! rounding (at most 8) and the packed layer's tolerated error on the answer's chunks (see
//! [`ANSWER_CHUNK_SLACK`]); a first-layer vector sent without its `k` low bits adds
//! `Σ_j D[r][j]·ε_j` with `|ε_j| ≤ 2^(k−1)` (proxy `4^(k−1)·‖D_r‖²`). A digit fails with
//! probability at most
//! `2·exp(−(q/(2p1) − 8 − slack)² / (2·((σ² + 4^(k−1))·‖D_r‖² + 64·n·σ²)))`.
//!
//! A query fails with at most the sum of its layers' failure probabilities; every setup is
//! checked to keep it at most 2^-[`LOG_FAILURE`](crate::params::LOG_FAILURE).

/// The ring degree `d` of the packed layer.
pub const DEGREE: usize = obscura_math::ring::YPIR_DEGREE;

/// `log2 d`: the packing levels, one key-switching key each.
pub const LEVELS: usize = DEGREE.trailing_zeros() as usize;

/// The standard deviation of the packed layer's secret and errors.
pub const SIGMA: f64 = 6.4;

/// Bits of the packing keys' gadget base `B`.
pub const GADGET_BITS: u32 = 19;

/// Digits of the packing keys' gadget: `B^3 ≥ 2q`.
pub const GADGET_DIGITS: usize = 3;

/// Bits of the answer's mask modulus.
pub const MASK_BITS: u32 = 28;

/// Bits of the answer's body modulus.
pub const BODY_BITS: u32 = 20;

/// Bits of the packed layer's plaintexts (its modulus is 2^15): YPIR's chunks and YPIR+SP's
/// words.
pub const PLAINTEXT_BITS: u32 = 15;

/// The standard deviation of YPIR's first-layer secret and error.
pub const FIRST_SIGMA: f64 = 11.0;

/// The first layer's LWE dimension.
pub const FIRST_DIMENSION: usize = 1024;

/// Bits a first-layer hint entry or answer is rounded to before the packed layer carries it.
pub const ROUNDED_BITS: u32 = 28;

/// Bytes of one packed answer ciphertext: `d` masks of [`MASK_BITS`] and `d` bodies of
/// [`BODY_BITS`].
pub const CIPHERTEXT_BYTES: u64 = (DEGREE as u64) * (MASK_BITS + BODY_BITS) as u64 / 8;

/// What an error of ±1 in each chunk of a first-layer answer moves the answer by, in units of
/// `2^32`: the chunks hold a 28-bit rounded value in 15-bit pieces, so ±1 in the high chunk is
/// `2^15` rounded units (`2^19`), in the low one 1 (`2^4`). The packed layer lets the answer's
/// chunks be off by one (its failure bound there is taken at `3τ`, not `τ`), and the first
/// layer absorbs it.
pub const ANSWER_CHUNK_SLACK: f64 = (1u64 << 19) as f64 + 16.0;

/// Low bits of a packing key's body at `level` (1 to [`LEVELS`]) and gadget `digit` that a
/// query leaves out: `level + 1`, one more for the top digit. A level's key-switching error is
/// doubled by each later level, so the rounding an early level can take is small and a late
/// one's large; the top digit multiplies a smaller digit (below `q / B^2`). Together they save
/// 62 KB of the 473 KB of keys, for a packing error 1.35 times as large (see
/// [`packing_variance`]).
pub fn key_dropped_bits(level: usize, digit: usize) -> u32 {
    level as u32 + 1 + u32::from(digit + 1 == GADGET_DIGITS)
}

/// The variance of the error a value rounded by `dropped` bits carries, under the heuristic
/// that its low bits are uniform: a query or key rounds a tie to the even result, so
/// the error takes each value of `(−2^(k−1), 2^(k−1))` with probability `2^−k` and `±2^(k−1)`
/// with `2^−(k+1)` each: mean zero, variance `4^k/12 + 1/6` (`k` = `dropped`, none for 0).
pub fn rounding_variance(dropped: u32) -> f64 {
    if dropped == 0 {
        0.0
    } else {
        (4f64.powi(dropped as i32) + 2.0) / 12.0
    }
}

/// The modulus `q = p0 · p1` of the packed layer.
pub const MODULUS: u64 =
    obscura_math::ring::YPIR_MODULI[0] as u64 * obscura_math::ring::YPIR_MODULI[1] as u64;

/// The modulus `q` of the packed layer, as a float.
fn modulus() -> f64 {
    MODULUS as f64
}

/// The variance of the packing error per coefficient, in units of 1 modulo `q`: for each level
/// `ℓ` and digit `j`, `4^(L−ℓ) · d · E[δ_j²] · (σ² + v_k)`, the key's body rounded by `k` =
/// [`key_dropped_bits`] bits (an error of variance `v_k` = [`rounding_variance`]`(k)`),
/// the balanced digits of a uniform mask of variance `B²/12`, the top one `(q/B²)²/12`.
pub fn packing_variance() -> f64 {
    let (d, q) = (DEGREE as f64, modulus());
    let base = 2f64.powi(GADGET_BITS as i32);
    let digit_variance = |j: usize| {
        if j + 1 < GADGET_DIGITS {
            base * base / 12.0
        } else {
            (q / base.powi(GADGET_DIGITS as i32 - 1)).powi(2) / 12.0
        }
    };
    (1..=LEVELS)
        .map(|level| {
            let amplified = 4f64.powi((LEVELS - level) as i32) * d;
            (0..GADGET_DIGITS)
                .map(|j| {
                    let rounding = rounding_variance(key_dropped_bits(level, j));
                    amplified * digit_variance(j) * (SIGMA * SIGMA + rounding)
                })
                .sum::<f64>()
        })
        .sum()
}

/// `log2` of the probability that one packed ciphertext of `d` coefficients fails to decode,
/// for plaintexts of `plaintext_bits` bits, a pass over `columns` columns whose query vector
/// leaves out `dropped` low bits of each entry (an error of mean zero and variance
/// [`rounding_variance`], which packing multiplies by `d`, against entries of at most `p − 1`), and a slack of `tolerance` (1 for exact coefficients, 3 where an
/// error of ±1 is tolerated: the bound is then taken at `3τ`) on coefficients that carry
/// `packs` packings' errors (2 for YPIR's answer chunks, packed apart and added).
pub fn packed_log_failure(
    plaintext_bits: u32,
    columns: u64,
    dropped: u32,
    packs: f64,
    tolerance: f64,
) -> f64 {
    let variance = packed_variance(plaintext_bits, columns, dropped, packs);
    let p = 2f64.powi(plaintext_bits as i32);
    let tau = tolerance * 2f64.powi(BODY_BITS as i32) / (2.0 * p) - 1.0;
    let per_coefficient = std::f64::consts::LN_2.recip() * (-tau * tau / (2.0 * variance)) + 1.0;
    per_coefficient + (DEGREE as f64).log2()
}

/// The variance of a decoded coefficient's error in units of the body modulus
/// ([`packed_log_failure`]'s terms but the one unit of rounding it takes off the threshold).
pub fn packed_variance(plaintext_bits: u32, columns: u64, dropped: u32, packs: f64) -> f64 {
    let (d, q) = (DEGREE as f64, modulus());
    let sigma2 = SIGMA * SIGMA;
    let p = 2f64.powi(plaintext_bits as i32);
    let entry = (p - 1.0) * (p - 1.0) * columns as f64;
    let rounding = rounding_variance(dropped);
    let pass = entry * (sigma2 + d * d * rounding);
    let body = 2f64.powi(BODY_BITS as i32);
    let to_body = body / q;
    let mask_rounding = d * sigma2 / 4.0 * (body / 2f64.powi(MASK_BITS as i32)).powi(2);
    (packs * packing_variance() + pass) * to_body * to_body + mask_rounding
}

/// `log2` of the probability that one first-layer digit of `log_p` bits fails to decode, for a
/// database whose rows have squared norms of at most `row_norm` and a query vector that leaves
/// out `dropped` low bits of each entry (an error of at most `2^(dropped−1)` per column).
pub fn first_log_failure(log_p: u32, row_norm: u64, dropped: u32) -> f64 {
    let sigma2 = FIRST_SIGMA * FIRST_SIGMA;
    let rounding = if dropped == 0 {
        0.0
    } else {
        4f64.powi(dropped as i32 - 1)
    };
    let variance = (sigma2 + rounding) * row_norm as f64 + 64.0 * FIRST_DIMENSION as f64 * sigma2;
    let tau = 2f64.powi(31 - log_p as i32) - 8.0 - ANSWER_CHUNK_SLACK;
    if tau <= 0.0 {
        return 0.0;
    }
    std::f64::consts::LN_2.recip() * (-tau * tau / (2.0 * variance)) + 1.0
}

/// `log2(2^a + 2^b)`.
pub fn log_sum(a: f64, b: f64) -> f64 {
    let (high, low) = if a > b { (a, b) } else { (b, a) };
    high + (1.0 + 2f64.powf(low - high)).log2()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounded_keys_cost_a_third_more_packing_error() {
        let exact: u32 = (1..=LEVELS)
            .flat_map(|l| (0..GADGET_DIGITS).map(move |j| key_dropped_bits(l, j)))
            .sum();
        // 242 bits of each of the 2,048 coefficients: 61,952 bytes.
        assert_eq!(exact as usize * DEGREE / 8, 61_952);
        // The variance against the keys unrounded: σ² alone in place of σ² + 4^(k−1).
        let (d, q) = (DEGREE as f64, modulus());
        let b = 2f64.powi(GADGET_BITS as i32);
        let digits = 2.0 * b * b / 12.0 + (q / (b * b)).powi(2) / 12.0;
        let unrounded = (d * d - 1.0) / 3.0 * d * SIGMA * SIGMA * digits;
        let ratio = packing_variance() / unrounded;
        assert!((1.3..1.4).contains(&ratio), "{ratio}");
    }

    #[test]
    fn the_answer_is_twelve_kilobytes() {
        assert_eq!(CIPHERTEXT_BYTES, 12_288);
        assert_eq!(LEVELS, 11);
        // The gadget covers twice the modulus.
        assert!(GADGET_BITS as usize * GADGET_DIGITS >= 57);
    }

    #[test]
    fn packed_failure_matches_the_analysis() {
        // p = 2^15 over 2^15 columns: about 2^-58 per ciphertext.
        let ypir = packed_log_failure(PLAINTEXT_BITS, 1 << 15, 0, 1.0, 1.0);
        assert!((-62.0..-54.0).contains(&ypir), "{ypir}");
        // Rounding the query by a few bits costs a little; by many, too much.
        let rounded = packed_log_failure(PLAINTEXT_BITS, 1 << 15, 3, 1.0, 1.0);
        assert!((ypir..-42.0).contains(&rounded), "{rounded}");
        assert!(packed_log_failure(PLAINTEXT_BITS, 1 << 15, 6, 1.0, 1.0) > -20.0);
        // The answer's chunks carry two packings' errors but tolerate ±1.
        assert!(packed_log_failure(PLAINTEXT_BITS, 1 << 15, 0, 2.0, 3.0) < -200.0);
        // Two packings at the exact threshold would not be enough.
        assert!(packed_log_failure(PLAINTEXT_BITS, 1 << 15, 0, 2.0, 1.0) > -40.0);
        // A plaintext bit less has four times the margin in variance.
        assert!(packed_log_failure(PLAINTEXT_BITS - 1, 1 << 15, 0, 1.0, 1.0) < -200.0);
    }

    #[test]
    fn first_layer_failure_falls_with_the_row_norm() {
        // 2^15 bytes-wide rows of spread digits (mean square about 2^14).
        let typical = first_log_failure(8, (1 << 15) * (1 << 14), 0);
        assert!(typical < -200.0, "{typical}");
        assert!(first_log_failure(8, (1 << 15) * (1 << 14), 6) < -40.0);
        let worst = first_log_failure(8, (1u64 << 21) * (1 << 14), 0);
        assert!(worst > -40.0, "{worst}");
        assert!(first_log_failure(7, (1u64 << 21) * (1 << 12), 0) < worst);
        assert_eq!(first_log_failure(32, 1, 0), 0.0);
        assert!((log_sum(-40.0, -40.0) + 39.0).abs() < 1e-12);
    }
}
