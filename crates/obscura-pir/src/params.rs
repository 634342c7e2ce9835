//! LWE parameters: the security table, and the correctness bound that picks the plaintext
//! modulus.
//!
//! # The LWE layer
//!
//! Every index-PIR scheme here works modulo q = 2^32 (the machine word). A query is
//! `A·s + e + Δ·u` with `A` a public uniform matrix in Z_q^{C×n}, `s` the client's secret in
//! Z_q^n and `e` an error vector in Z_q^C; privacy of the index is exactly the decisional LWE
//! assumption for (n, q, χ_s, χ_e) with C samples.
//!
//! # Security table
//!
//! | set | n | secret | error | source of the estimate |
//! |---|---|---|---|---|
//! | [`ParamSet::Ypir1024`] (default) | 1024 | uniform in Z_q | discrete Gaussian, σ = 11 | YPIR (Menon–Wu, USENIX Security 2024), whose authors ran the lattice estimator on n = 1024, q = 2^32, σ = 11 (σ a standard deviation; their code passes the width s = 11·√(2π)) |
//! | [`ParamSet::Hintless1408`] | 1408 | uniform ternary | discrete Gaussian, σ = 6.4 | HintlessPIR (Li, Micciancio, Raykova, Schultz-Wu, 2023/1733), §7.1 |
//! | [`ParamSet::Frodo1774`] | 1774 | uniform ternary | uniform ternary | FrodoPIR (Davidson, Pestana, Celi, PETS 2023), 128 bits for up to 2^52 queries |
//!
//! All three target 128-bit classical security as estimated by their authors with the lattice
//! estimator (Albrecht–Player–Scott), with q = 2^32 and at most 2^21 LWE samples per secret.
//! SimplePIR's original choice (n = 1024, σ = 6.4) is *not* offered: the later schemes of the
//! family (YPIR, HintlessPIR) chose a wider error or a larger dimension for more margin, and we
//! follow them. Notes on each row:
//!
//! - **Default, `ypir-1024`**: the smallest n (so the smallest hint and the cheapest setup) among
//!   the conservative current choices. We draw the secret uniformly from Z_q rather than from the
//!   error distribution as YPIR does: uniform-secret LWE is at least as hard as the normal-form
//!   problem the estimate is about (Applebaum–Cash–Peikert–Sahai 2009 reduce one to the other
//!   with a loss of n samples), so the estimate carries over. The secret's distribution costs
//!   nothing here: the client subtracts `H·s` exactly.
//! - **`hintless-1408`**: the published parameter for ternary secrets. HintlessPIR's own code
//!   samples a narrower centered-binomial error (variance 8); we keep the paper's σ = 6.4, which
//!   only widens the error and so only strengthens the assumption.
//! - **`frodo-1774`**: FrodoPIR's parameter (its repository also ships n = 1572 for a smaller
//!   query budget; we use the more conservative 1774). The ternary error is 1-subgaussian, so it
//!   allows the largest plaintext modulus.
//!
//! # The public matrix: uniform or negacyclic
//!
//! `A` is expanded from a public seed either entry by entry ([`MatrixKind::Uniform`]) or as
//! stacked negacyclic `n x n` blocks ([`MatrixKind::Negacyclic`], as YPIR does), block `i` being
//! multiplication by a seeded polynomial `a_i` in R_q = Z_q\[x\]/(x^n + 1). With the negacyclic
//! matrix a query is `C/n` Ring-LWE samples `a_i·s + e_i` in R_q with one secret, so privacy
//! rests on decisional Ring-LWE in the power-of-two cyclotomic ring of degree n = 1024 with
//! q = 2^32 and the same error. That is a stronger assumption than plain LWE (it adds ring
//! structure), but no known attack on these parameters exploits the structure: the lattice
//! estimator treats RLWE as LWE of the same dimension, so the table's estimate carries over,
//! and YPIR relies on exactly this instance. Hardness of RLWE for non-prime moduli such as 2^32
//! follows from the modulus-switching results for algebraically structured LWE
//! (Peikert–Pepin 2019). The structure buys speed, not size: the client computes `A·s` with
//! NTTs (`C/n` products of degree n instead of `C·n` products and `4·C·n` bytes of expanded
//! keystream), which makes preparing a query for 2^20 records a matter of milliseconds. It is
//! the default where n is a power of two (`ypir-1024`); the other sets use the uniform matrix.
//!
//! The error is sampled by [`obscura_math::sample`] from the OS CSPRNG; the public matrix `A`
//! comes from [`obscura_math::expand`] (AES-128-CTR), never from the same generator.
//!
//! # Correctness: choosing the plaintext modulus p
//!
//! Database entries are stored centered, `|D[r][j]| ≤ p/2`, and p is a power of two
//! (p ≤ 2^8, so one entry is one byte and Δ = q/p is exact). Decoding row r of an answer leaves
//! `Δ·D[r][col] + Σ_j D[r][j]·e[j]` (the `A·s` part is removed exactly with the hint). Each
//! `e[j]` is σ-subgaussian (σ for the Gaussian; 1 for uniform ternary, by Hoeffding), so the
//! noise is subgaussian with variance proxy `C·(p/2)²·σ²` for C columns, and
//!
//! ```text
//! Pr[|noise| ≥ q/(2p)] ≤ 2·exp(−q² / (2·C·p⁴·σ²)) ≤ δ   ⇔   q/p² ≥ σ·√(2·C·ln(2/δ)).
//! ```
//!
//! This is SimplePIR's bound (Henzinger et al., Thm C.1; it reproduces their table, e.g.
//! p = 991 for C = 2^13 and σ = 6.4). Answers are then rounded to their top [`ANSWER_BITS`]
//! bits, which adds at most r = 2^(32 − ANSWER_BITS − 1) to every entry, so we require the tail
//! bound at q/(2p) − r instead of q/(2p):
//! `2·exp(−(q/(2p) − r)² · 2 / (C·p²·σ²)) ≤ δ`. We take δ = 2^-40 per decoded entry and the
//! largest power of two p ≤ 256 that satisfies it ([`max_log_p`]); with r = 2^15 the change
//! against the plain bound is below 1% of the margin. A record spread over ℓ entries fails with
//! probability at most ℓ·2^-40. With the default set this gives p = 256 up to about 2^19.2
//! columns and p = 128 up to 2^23.2 columns.
//!
//! That is the bound for the worst database, every digit at ±p/2. For a given database the
//! noise of row r is `Σ_j D[r][j]·e[j]` with the `D[r][j]` fixed and the `e[j]` independent, so
//! it is subgaussian with variance proxy `σ²·‖D_r‖²`, and the same tail bound holds with the
//! largest squared row norm `N = max_r ‖D_r‖²` in place of `C·(p/2)²`:
//! `2·exp(−(q/(2p) − r)² / (2·σ²·N)) ≤ δ` ([`correct_for_row_norm`]). The server encodes its
//! database with the largest p for which its own rows pass, publishes N in the setup (it is
//! part of the setup digest), and every setup is checked against it. Digits spread over
//! `[-p/2, p/2)` have a mean square of about p²/12, a third of the worst case, which allows three
//! times as many columns: p = 256 up to about 2^20.8 columns with the default set. Keyword
//! databases always get that spread, since their slots are masked with pseudo-random digits.

use crate::error::ParseError;
use crate::PirError;

/// The LWE modulus is q = 2^32: arithmetic wraps in `u32`.
pub const LOG_Q: u32 = 32;

/// Correctness failure probability per decoded entry, as a power of two: δ = 2^-40.
pub const LOG_FAILURE: u32 = 40;

/// Bits of each answer entry sent back: the server rounds `D·query` (mod 2^32) to its top 16
/// bits (modulus switching to 2^16), halving the answer. The rounding adds at most
/// `2^(32 − ANSWER_BITS − 1)` to the noise, which the correctness bound accounts for.
pub const ANSWER_BITS: u32 = 16;

/// Largest plaintext modulus exponent: entries are stored one per byte.
pub const MAX_LOG_P: u8 = 8;

/// A distribution of secrets or errors.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Distribution {
    /// Uniform over Z_q.
    UniformModQ,
    /// Uniform over {-1, 0, 1}.
    Ternary,
    /// The discrete Gaussian over Z with this standard deviation.
    Gaussian(f64),
}

/// A named LWE parameter set from the security table (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum ParamSet {
    /// n = 1024, uniform secret, Gaussian error σ = 11 (YPIR's LWE parameters). The default.
    #[default]
    Ypir1024,
    /// n = 1408, ternary secret, Gaussian error σ = 6.4 (HintlessPIR's LWE parameters).
    Hintless1408,
    /// n = 1774, ternary secret and error (FrodoPIR's parameters).
    Frodo1774,
}

impl ParamSet {
    /// Every set, in the table's order.
    pub const ALL: [ParamSet; 3] = [Self::Ypir1024, Self::Hintless1408, Self::Frodo1774];

    /// The set's name as the CLI and the docs spell it.
    pub fn name(self) -> &'static str {
        match self {
            Self::Ypir1024 => "ypir-1024",
            Self::Hintless1408 => "hintless-1408",
            Self::Frodo1774 => "frodo-1774",
        }
    }

    /// The code of the set in binary formats.
    pub fn code(self) -> u8 {
        match self {
            Self::Ypir1024 => 1,
            Self::Hintless1408 => 2,
            Self::Frodo1774 => 3,
        }
    }

    /// The set with this format code.
    pub fn from_code(code: u8) -> Option<Self> {
        Self::ALL.into_iter().find(|set| set.code() == code)
    }

    /// The LWE dimension n (length of the secret).
    pub fn n(self) -> usize {
        match self {
            Self::Ypir1024 => 1024,
            Self::Hintless1408 => 1408,
            Self::Frodo1774 => 1774,
        }
    }

    /// The secret distribution.
    pub fn secret(self) -> Distribution {
        match self {
            Self::Ypir1024 => Distribution::UniformModQ,
            Self::Hintless1408 | Self::Frodo1774 => Distribution::Ternary,
        }
    }

    /// The error distribution.
    pub fn error(self) -> Distribution {
        match self {
            Self::Ypir1024 => Distribution::Gaussian(11.0),
            Self::Hintless1408 => Distribution::Gaussian(6.4),
            Self::Frodo1774 => Distribution::Ternary,
        }
    }

    /// The subgaussian parameter of the error, which the correctness bound uses.
    pub fn error_subgaussian(self) -> f64 {
        match self.error() {
            Distribution::Gaussian(sigma) => sigma,
            Distribution::Ternary => 1.0,
            Distribution::UniformModQ => f64::INFINITY,
        }
    }

    /// Whether the set can use a public matrix of this kind (negacyclic needs n a power of two).
    pub fn supports(self, kind: MatrixKind) -> bool {
        kind == MatrixKind::Uniform || obscura_math::ntt::NttPlan::supports(self.n())
    }

    /// The largest plaintext modulus exponent that is correct for `columns` columns of any
    /// data.
    pub fn max_log_p(self, columns: u64) -> Option<u8> {
        self.max_log_p_at(columns, LOG_FAILURE)
    }

    /// [`ParamSet::max_log_p`] with failure probability `2^-log_failure` per decoded entry.
    pub fn max_log_p_at(self, columns: u64, log_failure: u32) -> Option<u8> {
        max_log_p_at(columns, self.error_subgaussian(), log_failure)
    }

    /// Whether `log_p` decodes correctly for a database whose rows have squared norms of at most
    /// `row_norm` (see the module docs).
    pub fn correct_for_row_norm(self, log_p: u8, row_norm: u64) -> bool {
        self.correct_at(log_p, row_norm, LOG_FAILURE)
    }

    /// [`ParamSet::correct_for_row_norm`] with failure probability `2^-log_failure` per decoded
    /// entry.
    pub fn correct_at(self, log_p: u8, row_norm: u64, log_failure: u32) -> bool {
        correct_at(log_p, row_norm, self.error_subgaussian(), log_failure)
    }
}

/// The squared norm of a row of `columns` digits all at the largest magnitude `p/2`, saturated
/// at `u64::MAX`.
pub fn worst_row_norm(columns: u64, log_p: u8) -> u64 {
    let half_p = 1u64 << (log_p.clamp(1, MAX_LOG_P) - 1);
    columns.saturating_mul(half_p * half_p)
}

/// Whether the noise of a database whose rows have squared norms of at most `row_norm` stays
/// below `q/(2p) − r` (r the answer rounding, see the module docs) except with probability
/// δ = 2^-40 per entry, for an error with subgaussian parameter `sigma`.
pub fn correct_for_row_norm(log_p: u8, row_norm: u64, sigma: f64) -> bool {
    correct_at(log_p, row_norm, sigma, LOG_FAILURE)
}

/// [`correct_for_row_norm`] with δ = `2^-log_failure` per entry.
pub fn correct_at(log_p: u8, row_norm: u64, sigma: f64, log_failure: u32) -> bool {
    let ln_two_over_delta = f64::from(log_failure + 1) * std::f64::consts::LN_2;
    let rounding = 2f64.powi((LOG_Q - ANSWER_BITS - 1) as i32);
    let p = 2f64.powi(i32::from(log_p));
    let margin = 2f64.powi(LOG_Q as i32) / (2.0 * p) - rounding;
    // Noise variance proxy σ²·N; need margin² / (2·σ²·N) ≥ ln(2/δ).
    margin > 0.0
        && margin * margin / (2.0 * sigma * sigma * row_norm.max(1) as f64) >= ln_two_over_delta
}

/// The largest `log_p ≤ 8` that is correct for `columns` = C columns of any data: the bound of
/// [`correct_for_row_norm`] at the worst row norm `C·(p/2)²`; `None` if even p = 2 fails.
pub fn max_log_p(columns: u64, sigma: f64) -> Option<u8> {
    max_log_p_at(columns, sigma, LOG_FAILURE)
}

/// [`max_log_p`] with δ = `2^-log_failure` per entry.
pub fn max_log_p_at(columns: u64, sigma: f64, log_failure: u32) -> Option<u8> {
    (1..=MAX_LOG_P)
        .rev()
        .find(|&log_p| correct_at(log_p, worst_row_norm(columns, log_p), sigma, log_failure))
}

/// How the public matrix `A` is expanded from its seed (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum MatrixKind {
    /// Every entry uniform: plain LWE.
    Uniform,
    /// Stacked negacyclic blocks: Ring-LWE, NTT-fast client. Needs n a power of two.
    Negacyclic,
}

impl MatrixKind {
    /// Both kinds.
    pub const ALL: [MatrixKind; 2] = [Self::Uniform, Self::Negacyclic];

    /// The kind's name as the CLI spells it.
    pub fn name(self) -> &'static str {
        match self {
            Self::Uniform => "uniform",
            Self::Negacyclic => "negacyclic",
        }
    }

    /// The code of the kind in binary formats.
    pub fn code(self) -> u8 {
        match self {
            Self::Uniform => 1,
            Self::Negacyclic => 2,
        }
    }

    /// The kind with this format code.
    pub fn from_code(code: u8) -> Option<Self> {
        Self::ALL.into_iter().find(|kind| kind.code() == code)
    }

    /// The default kind for a parameter set: negacyclic where n allows it.
    pub fn default_for(set: ParamSet) -> Self {
        if set.supports(Self::Negacyclic) {
            Self::Negacyclic
        } else {
            Self::Uniform
        }
    }
}

/// A parameter set together with the kind of public matrix and the plaintext modulus chosen for
/// a database.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct LweParams {
    /// The security parameter set.
    pub set: ParamSet,
    /// How the public matrix is expanded.
    pub matrix: MatrixKind,
    /// log2 of the plaintext modulus p.
    pub log_p: u8,
}

impl LweParams {
    /// Checks the matrix kind against the set, and `log_p` against the database's largest
    /// squared row norm `row_norm`, which can be at most `columns·(p/2)²`.
    pub fn new(
        set: ParamSet,
        matrix: MatrixKind,
        log_p: u8,
        columns: u64,
        row_norm: u64,
    ) -> Result<Self, PirError> {
        if !set.supports(matrix) {
            return Err(PirError::InvalidParameters(format!(
                "{} cannot use a {} matrix (n = {} is not a power of two)",
                set.name(),
                matrix.name(),
                set.n()
            )));
        }
        if !(1..=MAX_LOG_P).contains(&log_p) || row_norm > worst_row_norm(columns, log_p) {
            return Err(PirError::InvalidParameters(format!(
                "rows of squared norm {row_norm} cannot be {columns} digits modulo 2^{log_p}"
            )));
        }
        if !set.correct_for_row_norm(log_p, row_norm) {
            return Err(PirError::InvalidParameters(format!(
                "p = 2^{log_p} is not correct for rows of squared norm {row_norm} with {}",
                set.name()
            )));
        }
        Ok(Self { set, matrix, log_p })
    }

    /// The LWE dimension.
    pub fn n(&self) -> usize {
        self.set.n()
    }

    /// The plaintext modulus p.
    pub fn p(&self) -> u32 {
        1 << self.log_p
    }

    /// The scaling factor Δ = q / p.
    pub fn delta(&self) -> u32 {
        1 << (LOG_Q - u32::from(self.log_p))
    }
}

/// Parses a set by its [name](ParamSet::name).
impl std::str::FromStr for ParamSet {
    type Err = ParseError;

    fn from_str(name: &str) -> Result<Self, ParseError> {
        Self::ALL
            .into_iter()
            .find(|set| set.name() == name)
            .ok_or_else(|| {
                let names: Vec<_> = Self::ALL.iter().map(|s| s.name()).collect();
                ParseError::new(name, format!("one of {}", names.join(", ")))
            })
    }
}

/// Parses a kind by its [name](MatrixKind::name).
impl std::str::FromStr for MatrixKind {
    type Err = ParseError;

    fn from_str(name: &str) -> Result<Self, ParseError> {
        Self::ALL
            .into_iter()
            .find(|kind| kind.name() == name)
            .ok_or_else(|| ParseError::new(name, "negacyclic or uniform"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// SimplePIR's published p for σ = 6.4 (params.csv): the bound must allow the largest power
    /// of two below each of them.
    #[test]
    fn reproduces_simplepir_table() {
        for (log_columns, published_p) in [(13, 991.0), (17, 495.0), (20, 294.0), (21, 247.0)] {
            let columns = 1u64 << log_columns;
            let ln = 41.0 * std::f64::consts::LN_2;
            let p_max = (2f64.powi(32) / (6.4 * (2.0 * columns as f64 * ln).sqrt())).sqrt();
            assert!((p_max - published_p).abs() < 1.0, "{log_columns}: {p_max}");
            let expected = published_p.log2().floor().min(8.0) as u8;
            assert_eq!(max_log_p(columns, 6.4), Some(expected));
        }
    }

    #[test]
    fn default_set_moduli() {
        let set = ParamSet::Ypir1024;
        assert_eq!(set.max_log_p(1 << 15), Some(8));
        assert_eq!(set.max_log_p(1 << 19), Some(8));
        assert_eq!(set.max_log_p(1 << 20), Some(7));
        assert_eq!(ParamSet::Frodo1774.max_log_p(1 << 20), Some(8));
        let kind = MatrixKind::Negacyclic;
        let worst = |log_p| worst_row_norm(1 << 20, log_p);
        assert!(LweParams::new(set, kind, 8, 1 << 20, worst(8)).is_err());
        assert_eq!(
            LweParams::new(set, kind, 7, 1 << 20, worst(7))
                .unwrap()
                .delta(),
            1 << 25
        );
        // Digits spread over [-128, 128) (mean square about 128²/3) pass at p = 256.
        assert!(LweParams::new(set, kind, 8, 1 << 20, (1 << 20) * 5462).is_ok());
        // A norm no row of that many columns can have is refused.
        assert!(LweParams::new(set, kind, 7, 1 << 20, worst(7) + 1).is_err());
        assert!(LweParams::new(ParamSet::Frodo1774, kind, 8, 1 << 10, 0).is_err());
        assert_eq!(
            MatrixKind::default_for(ParamSet::Hintless1408),
            MatrixKind::Uniform
        );
        assert_eq!(MatrixKind::default_for(set), kind);
    }

    /// At the worst norm the row-norm bound is the column bound; smaller norms allow more
    /// columns, and 2^20.8 columns of spread digits still pass at p = 256.
    #[test]
    fn row_norm_bound_extends_the_column_bound() {
        let sigma = ParamSet::Ypir1024.error_subgaussian();
        for log_columns in 10..30 {
            let columns = 1u64 << log_columns;
            for log_p in 1..=MAX_LOG_P {
                let worst = correct_for_row_norm(log_p, worst_row_norm(columns, log_p), sigma);
                assert_eq!(worst, max_log_p(columns, sigma).is_some_and(|m| m >= log_p));
                assert!(
                    !worst
                        || correct_for_row_norm(log_p, worst_row_norm(columns, log_p) / 3, sigma)
                );
            }
        }
        let spread = |columns: f64| (columns * 128.0 * 128.0 / 3.0) as u64;
        assert!(correct_for_row_norm(8, spread(2f64.powf(20.7)), sigma));
        assert!(!correct_for_row_norm(8, spread(2f64.powf(20.9)), sigma));
    }

    #[test]
    fn names_and_codes_round_trip() {
        for set in ParamSet::ALL {
            assert_eq!(set.name().parse::<ParamSet>(), Ok(set));
            assert_eq!(ParamSet::from_code(set.code()), Some(set));
        }
        assert_eq!(ParamSet::from_code(0), None);
        let error = "ypir".parse::<ParamSet>().unwrap_err();
        assert_eq!(
            error.to_string(),
            "\"ypir\": expected one of ypir-1024, hintless-1408, frodo-1774"
        );
        for kind in MatrixKind::ALL {
            assert_eq!(kind.name().parse::<MatrixKind>(), Ok(kind));
            assert_eq!(MatrixKind::from_code(kind.code()), Some(kind));
        }
    }
}
