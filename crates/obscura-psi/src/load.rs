//! Bounds on the fullest bin when items are spread uniformly over bins by a hash.

/// A count that no bin exceeds when `items` items fall independently and uniformly into `bins`
/// bins, except with probability at most `2^-failure_bits` (over all bins together).
///
/// A bin's count X is Binomial(items, 1/bins) with mean μ. Bernstein's inequality gives
/// `P(X ≥ μ + t) ≤ exp(−t² / (2(μ + t/3)))`; with `L = ln(bins) + failure_bits · ln 2` (a union
/// bound over the bins) the bound is `exp(-L)` when `t = L/3 + sqrt(L²/9 + 2Lμ)`. The result is
/// never more than `items`.
pub(crate) fn max_load(items: u64, bins: u64, failure_bits: f64) -> u64 {
    if bins <= 1 {
        return items;
    }
    let mean = items as f64 / bins as f64;
    let l = (bins as f64).ln() + failure_bits * std::f64::consts::LN_2;
    let t = l / 3.0 + (l * l / 9.0 + 2.0 * l * mean).sqrt();
    ((mean + t).floor() as u64 + 1).min(items)
}
