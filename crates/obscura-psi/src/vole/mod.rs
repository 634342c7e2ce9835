//! Silent VOLE over a GF(2)-subspace: the receiver ends with `A ∈ V^m` and `C ∈ GF(2^128)^m`,
//! the sender with `Δ ∈ GF(2^128)` and `B` such that `C = B ⊕ A · Δ`, where `V` is the span of
//! `1, x, …, x^{ℓ−1}` (the `ℓ`-bit words). This is the subfield VOLE of RR22 §4 with `V` in the
//! role of the subfield: the PSI only needs `A · Δ` to be GF(2)-bilinear and `V` closed under the
//! binary maps applied to it.
//!
//! # Construction (dual LPN, Boyle et al. CCS 2019)
//!
//! 1. **Sparse VOLE of length `N = trees · S`.** The receiver draws, per tree, a point `α_i < S`
//!    (uniform) and a nonzero value `β_i ∈ V` (OS CSPRNG): its sparse noise `e` has
//!    `e_{i·S + α_i} = β_i`. Correlated OT extension ([`crate::ot::iknp`], `Δ` being the
//!    sender's base-OT choices) gives, per tree, `depth` OTs with choice bits the sides the path
//!    to `α_i` does not take, and `ℓ` OTs with choice bits the bits of `β_i`. The sender expands a
//!    random GGM root per tree ([`pprf`]) into leaves `v` and sends each level's two side
//!    sums, masked with `H(j, q_j)` and `H(j, q_j ⊕ Δ)` (`H(j, x)` = first 16 bytes of
//!    `SHA-256("obscura-psi rr22 ot v1\0" ‖ j ‖ x)`, correlation robust), so the receiver learns
//!    exactly the sums it chose and rebuilds every leaf but `α_i`. From the `ℓ` correlated OTs,
//!    `b_i = Σ_k x^k q_k` and `c_i = Σ_k x^k t_k = b_i ⊕ β_i · Δ`; the sender also sends
//!    `τ_i = (⊕ leaves) ⊕ b_i`, and the receiver sets its missing leaf to
//!    `τ_i ⊕ (⊕ known leaves) ⊕ c_i = v_{α_i} ⊕ β_i · Δ`. Both now hold `c' = b' ⊕ e · Δ`.
//! 2. **Compression.** Both apply the expand-accumulate code ([`ea_code`]) to their
//!    length-`N` vectors: `A = EA(e)`, `B = EA(b')`, `C = EA(c')`; linearity keeps
//!    `C = B ⊕ A · Δ`. The sender sends its message before compressing, so both compress at
//!    once; the receiver keeps `e` and `c'` side by side so that each random read of the code
//!    fetches both, and both vectors live in huge pages (fewer TLB misses on those reads).
//!
//! # Parameters and security (κ = 128)
//!
//! `A` is pseudorandom by the dual-LPN assumption for the code: `N ≥ 5 · max(m, 2^14)` (rate
//! 1/5, expander weight 11) and `trees = 400` regular noise positions. Against linear tests, the
//! bias of any fixed combination of `A` is at most `(1 − 2δ)^trees` for a code of relative
//! minimum distance `δ`; with the estimate `δ ≥ 0.1` for weight-11 expanders at rate 1/5
//! (libOTe's `ExAcc11` configuration), `0.8^400 = 2^-128.8`. Each tree has
//! `S = ⌈5 · max(m, 2^14) / 400⌉` leaves (its levels hold only the nodes with a leaf below, so
//! `S` need not be a power of two) and `depth = ⌈log2 S⌉`. Only the first `m`
//! rows of the code are evaluated (fewer samples of the same instance). The sender's `Δ` is
//! hidden by the base OTs; what the receiver sees of the trees is, per level, one side sum
//! masked by a pad it can compute and one masked by a pad that needs `Δ`.
//!
//! # Malicious mode ([`VoleParams::malicious`])
//!
//! `ℓ = 128`; each tree has `S = 2^depth` leaves, `depth` the largest that still gives at least
//! 400 trees (`trees = ⌈N / S⌉`, so the noise bound above only improves), so that any path the
//! receiver chooses ends at a leaf; after the trees' correlated OTs come at least 384 with
//! random choice bits: the first 128 give the mask correlation `c* = b* ⊕ y* · Δ` of the VOLE
//! check, and all of them enter the OT-extension check (module `check`).

use obscura_math::memory::LargeSlice;
use obscura_math::sample::{OsSampler, RngError};
use rayon::prelude::*;
use sha2::{Digest, Sha256};
use zeroize::{Zeroize, ZeroizeOnDrop};

use self::ea_code::EaCode;
use crate::gf128::combine_powers;
use crate::ot::iknp::BLOCK_ROWS;
pub(crate) mod ea_code;
pub(crate) mod pprf;
use crate::block::random_word;
use crate::shuffle::uniform_below;

/// Noise positions (trees): exactly this many in the semi-honest mode, at least this many in the
/// malicious mode.
const TREES: usize = 400;
/// Malicious mode: correlated OTs past the trees' that have random choice bits, at least (the
/// first 128 form the check's mask correlation, all take part in the OT-extension check).
const CHECK_ROWS: usize = 128 + 256;
/// `N / m`: the code's inverse rate.
const EXPANSION: usize = 5;
/// The code has at least this many rows, however few are used.
const MIN_ROWS: usize = 1 << 14;

const PAD_DOMAIN: &[u8] = b"obscura-psi rr22 ot v1\0";

/// The shape of one VOLE.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct VoleParams {
    /// Correlations produced (`m`).
    pub outputs: usize,
    /// Noise positions, one per GGM tree.
    pub trees: usize,
    /// Leaves of each tree (`S`).
    pub tree_leaves: usize,
    /// Depth of each tree: `⌈log2 S⌉`.
    pub depth: u32,
    /// Bits of the subspace `V`.
    pub ell: u32,
    /// Whether the VOLE is checked (see [`super::check`]): trees of `2^depth` leaves, so that
    /// every path the receiver can choose ends at a leaf, and [`CHECK_ROWS`] more OTs.
    pub malicious: bool,
}

impl VoleParams {
    /// The VOLE of `outputs` correlations with `A` in the `ell`-bit subspace (1 ≤ `ell` ≤ 128).
    pub(crate) fn new(outputs: usize, ell: u32) -> Self {
        let tree_leaves = (EXPANSION * outputs.max(MIN_ROWS)).div_ceil(TREES);
        Self {
            outputs,
            trees: TREES,
            tree_leaves,
            depth: pprf::depth(tree_leaves),
            ell,
            malicious: false,
        }
    }

    /// The malicious mode's VOLE of `outputs` correlations over all of GF(2^128): trees of
    /// `S = 2^depth` leaves with `S` the largest power of two such that at least [`TREES`] trees
    /// make `N`.
    pub(crate) fn malicious(outputs: usize) -> Self {
        let target = EXPANSION * outputs.max(MIN_ROWS);
        let depth = (target / TREES).ilog2();
        let tree_leaves = 1 << depth;
        Self {
            outputs,
            trees: target.div_ceil(tree_leaves),
            tree_leaves,
            depth,
            ell: 128,
            malicious: true,
        }
    }

    /// `N`: the length of the sparse vectors.
    pub(crate) fn leaves(&self) -> usize {
        self.trees * self.tree_leaves
    }

    /// Correlated OTs per tree: one per level and one per bit of the noise value.
    fn ots_per_tree(&self) -> usize {
        (self.depth + self.ell) as usize
    }

    /// Correlated OTs of the trees (the first rows of the extension).
    pub(crate) fn tree_rows(&self) -> usize {
        self.trees * self.ots_per_tree()
    }

    /// Blocks of 128 correlated OTs the VOLE consumes.
    pub(crate) fn ot_blocks(&self) -> usize {
        let check_rows = if self.malicious { CHECK_ROWS } else { 0 };
        (self.tree_rows() + check_rows).div_ceil(BLOCK_ROWS)
    }

    /// Words of the sender's message: two side sums per level and `τ`, per tree.
    pub(crate) fn message_words(&self) -> usize {
        self.trees * (2 * self.depth as usize + 1)
    }

    /// The mask of `V`'s words.
    fn subspace_mask(&self) -> u128 {
        u128::MAX >> (128 - self.ell)
    }
}

/// `H(j, x)`: the pad of correlated OT `j` for row `x`.
fn pad(ot: usize, row: u128) -> u128 {
    let digest = Sha256::new()
        .chain_update(PAD_DOMAIN)
        .chain_update((ot as u64).to_le_bytes())
        .chain_update(row.to_le_bytes())
        .finalize();
    u128::from_le_bytes(digest[..16].try_into().expect("16 of 32 bytes"))
}

/// The receiver's secret sparse noise: a point and a nonzero value of `V` per tree; in the
/// malicious mode also the random choice bits of the rows past the trees'. Wiped when dropped.
#[derive(Zeroize, ZeroizeOnDrop)]
pub(crate) struct Noise {
    points: Vec<usize>,
    values: Vec<u128>,
    /// Choice-bit words to start from (random in the malicious mode, zero otherwise).
    background: Vec<u128>,
}

impl Noise {
    /// Fresh noise from the OS CSPRNG.
    pub(crate) fn random(params: &VoleParams, rng: &mut OsSampler) -> Result<Self, RngError> {
        let background = (0..params.ot_blocks())
            .map(|_| match params.malicious {
                true => random_word(rng),
                false => Ok(0),
            })
            .collect::<Result<Vec<_>, _>>()?;
        let mut points = Vec::with_capacity(params.trees);
        let mut values = Vec::with_capacity(params.trees);
        for _ in 0..params.trees {
            points.push(uniform_below(params.tree_leaves as u64, rng)? as usize);
            values.push(loop {
                let value = random_word(rng)? & params.subspace_mask();
                if value != 0 {
                    break value;
                }
            });
        }
        Ok(Self {
            points,
            values,
            background,
        })
    }

    /// The choice bits of the VOLE's correlated OTs, 128 per word: per tree, the levels' sides
    /// then the value's bits; then the random bits of the malicious mode.
    pub(crate) fn choices(&self, params: &VoleParams) -> Vec<u128> {
        let mut words = self.background.clone();
        let bits = self
            .points
            .iter()
            .zip(&self.values)
            .flat_map(|(&point, &value)| {
                pprf::choices(point, params.depth)
                    .chain((0..params.ell).map(move |k| (value >> k) & 1 == 1))
            });
        for (j, bit) in bits.enumerate() {
            let mask = 1 << (j % 128);
            words[j / 128] = (words[j / 128] & !mask) | (u128::from(bit) << (j % 128));
        }
        words
    }

    /// Malicious mode: `y*`, the receiver's value of the check's mask correlation (the choice
    /// bits of the 128 rows after the trees').
    pub(crate) fn check_mask(&self, params: &VoleParams) -> u128 {
        let first = params.tree_rows();
        let (word, shift) = (first / 128, first % 128);
        match shift {
            0 => self.background[word],
            _ => self.background[word] >> shift | self.background[word + 1] << (128 - shift),
        }
    }
}

/// Malicious mode: one party's share of the check's mask correlation, from its correlated-OT
/// rows (`c* = Σ_k x^k · t_k` for the receiver, `b* = Σ_k x^k · q_k` for the sender, over the
/// 128 rows after the trees'), so that `c* = b* ⊕ y* · Δ`.
pub(crate) fn check_mask_share(params: &VoleParams, rows: &[u128]) -> u128 {
    combine_powers(&rows[params.tree_rows()..][..128])
}

/// The sender's first step: from `Δ` and its correlated-OT rows `q` (at least
/// `trees · (depth + ℓ)`), returns its message, to be sent at once, and its sparse-VOLE vector
/// `b'` (`params.leaves()` words) for [`SenderVector::new`].
pub(crate) fn send_trees(
    params: &VoleParams,
    delta: u128,
    q: &[u128],
    rng: &mut OsSampler,
) -> Result<(Vec<u128>, LargeSlice<u128>), RngError> {
    let roots = (0..params.trees)
        .map(|_| random_word(rng))
        .collect::<Result<Vec<_>, _>>()?;
    let per_tree = params.ots_per_tree();
    let depth = params.depth as usize;
    let mut leaves = LargeSlice::zeroed(params.leaves());
    let mut message = vec![0u128; params.message_words()];
    leaves
        .par_chunks_mut(params.tree_leaves)
        .zip(message.par_chunks_mut(2 * depth + 1))
        .enumerate()
        .for_each(|(tree, (leaves, message))| {
            let sums = pprf::expand(roots[tree], leaves);
            let ots = &q[tree * per_tree..][..per_tree];
            for (level, (sums, &row)) in sums.iter().zip(ots).enumerate() {
                let ot = tree * per_tree + level;
                message[2 * level] = sums[0] ^ pad(ot, row);
                message[2 * level + 1] = sums[1] ^ pad(ot, row ^ delta);
            }
            let b = combine_powers(&ots[depth..]);
            message[2 * depth] = leaves.iter().fold(b, |acc, leaf| acc ^ leaf);
        });
    Ok((message, leaves))
}

/// The sender's sparse-VOLE vector, accumulated: any range of its outputs `B` can be computed.
pub(crate) struct SenderVector(LargeSlice<u128>);

impl SenderVector {
    /// The sender's second step: accumulates `b'`.
    pub(crate) fn new(mut leaves: LargeSlice<u128>) -> Self {
        EaCode::accumulate(&mut leaves);
        Self(leaves)
    }

    /// Writes outputs `first .. first + out.len()` of `B` into `out` (zeroed).
    pub(crate) fn outputs(&self, code: &EaCode, first: usize, out: &mut [u128]) {
        code.expand(first, out, &self.0, |word, value| *word ^= value);
    }
}

/// The receiver's sparse-VOLE vectors `e` and `c'`, accumulated and kept side by side per
/// position (32 bytes, aligned in the mapping: one random read fetches both from one cache
/// line): any range of its outputs `A`, `C` can be computed.
pub(crate) struct ReceiverVector(LargeSlice<[u128; 2]>);

impl ReceiverVector {
    /// Writes outputs `first .. first + out.len()` of `(A, C)` into `out` (zeroed) as pairs.
    pub(crate) fn outputs(&self, code: &EaCode, first: usize, out: &mut [[u128; 2]]) {
        code.expand(first, out, &self.0, |out, cell| {
            *out = [out[0] ^ cell[0], out[1] ^ cell[1]];
        });
    }
}

/// The receiver's side: from its noise, its correlated-OT rows `t` and the sender's message
/// (`params.message_words()` words), returns its accumulated vectors.
pub(crate) fn receive(
    params: &VoleParams,
    noise: &Noise,
    t: &[u128],
    message: &[u128],
) -> ReceiverVector {
    let per_tree = params.ots_per_tree();
    let depth = params.depth as usize;
    let mut cells = LargeSlice::<[u128; 2]>::zeroed(params.leaves());
    cells
        .par_chunks_mut(params.tree_leaves)
        .zip(message.par_chunks(2 * depth + 1))
        .enumerate()
        // One buffer of leaves per task, not per tree.
        .for_each_init(
            || vec![0u128; params.tree_leaves],
            |leaves, (tree, (cells, message))| {
                let point = noise.points[tree];
                let ots = &t[tree * per_tree..][..per_tree];
                let sums: Vec<u128> = pprf::choices(point, params.depth)
                    .zip(ots)
                    .enumerate()
                    .map(|(level, (side, &row))| {
                        message[2 * level + usize::from(side)] ^ pad(tree * per_tree + level, row)
                    })
                    .collect();
                pprf::puncture(point, &sums, leaves);
                let c = combine_powers(&ots[depth..]);
                let known = leaves.iter().fold(0, |acc, leaf| acc ^ leaf);
                leaves[point] = message[2 * depth] ^ known ^ c;
                for (cell, &leaf) in cells.iter_mut().zip(leaves.iter()) {
                    cell[1] = leaf;
                }
                cells[point][0] = noise.values[tree];
            },
        );
    let mut sum = [0u128; 2];
    for cell in cells.iter_mut() {
        sum = [sum[0] ^ cell[0], sum[1] ^ cell[1]];
        *cell = sum;
    }
    ReceiverVector(cells)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gf128::mul;
    use crate::ot::iknp::tests::pair;

    #[test]
    fn parameters_meet_the_noise_and_rate_bounds() {
        for outputs in [1, 1000, 1 << 14, 81_691, 1_328_344, 5_313_376] {
            let params = VoleParams::new(outputs, 80);
            let target = EXPANSION * outputs.max(MIN_ROWS);
            assert_eq!(params.trees, TREES);
            assert!(
                params.leaves() >= target && params.leaves() < target + TREES,
                "{params:?}"
            );
            assert_eq!(params.depth, pprf::depth(params.tree_leaves));
        }
        let at_2_20 = VoleParams::new(1_328_344, 80);
        assert_eq!((at_2_20.tree_leaves, at_2_20.depth), (16_605, 15));
        // 400 trees of 15 levels and 80 value bits: 38,000 correlated OTs.
        assert_eq!(at_2_20.ot_blocks(), 297);
    }

    #[test]
    fn malicious_trees_are_full_and_at_least_400() {
        for outputs in [1, 1000, 81_691, 1_328_344, 5_313_376] {
            let params = VoleParams::malicious(outputs);
            let target = EXPANSION * outputs.max(MIN_ROWS);
            assert!(params.tree_leaves.is_power_of_two(), "{params:?}");
            assert_eq!(params.tree_leaves, 1 << params.depth);
            assert!((TREES..2 * TREES).contains(&params.trees), "{params:?}");
            assert!(params.leaves() >= target && params.leaves() < target + params.tree_leaves);
            assert!(params.ot_blocks() * BLOCK_ROWS >= params.tree_rows() + CHECK_ROWS);
        }
        let at_2_20 = VoleParams::malicious(1_328_344);
        assert_eq!((at_2_20.trees, at_2_20.depth, at_2_20.ell), (406, 14, 128));
    }

    /// The malicious mode's VOLE and its mask correlation: `C = B ⊕ A · Δ` and `c* = b* ⊕ y* · Δ`.
    #[test]
    fn malicious_correlations_and_mask_hold() {
        let mut rng = OsSampler::new();
        let delta = random_word(&mut rng).unwrap();
        let (ot_receiver, ot_sender) = pair(delta);
        let params = VoleParams::malicious(5000);
        let noise = Noise::random(&params, &mut rng).unwrap();
        let choices = noise.choices(&params);
        let (mut t, mut q) = (Vec::new(), Vec::new());
        let u = ot_receiver.extend(0, &choices, &mut t);
        ot_sender.extend(0, &u, &mut q);
        let y = noise.check_mask(&params);
        assert_ne!(y, 0);
        assert_eq!(
            check_mask_share(&params, &t),
            check_mask_share(&params, &q) ^ mul(y, delta)
        );
        let code = EaCode::new(params.leaves(), [6; 16]);
        let (message, leaves) = send_trees(&params, delta, &q, &mut rng).unwrap();
        let sender = SenderVector::new(leaves);
        let receiver = receive(&params, &noise, &t, &message);
        let (mut b, mut pairs) = (vec![0u128; 5000], vec![[0u128; 2]; 5000]);
        sender.outputs(&code, 0, &mut b);
        receiver.outputs(&code, 0, &mut pairs);
        for (&[a, c], &b) in pairs.iter().zip(&b) {
            assert_eq!(c, b ^ mul(a, delta));
        }
        // Full-width values.
        assert!(pairs.iter().any(|pair| pair[0] >> 100 != 0));
    }

    /// A whole VOLE through real base OTs and OT extension: `C = B ⊕ A · Δ` everywhere, with
    /// `A` in the subspace and not degenerate.
    #[test]
    fn correlations_hold() {
        let mut rng = OsSampler::new();
        let delta = random_word(&mut rng).unwrap();
        let (ot_receiver, ot_sender) = pair(delta);
        for (outputs, ell) in [(3000, 80), (100, 41), (40_000, 128)] {
            let params = VoleParams::new(outputs, ell);
            let noise = Noise::random(&params, &mut rng).unwrap();
            let choices = noise.choices(&params);
            let (mut t, mut q) = (Vec::new(), Vec::new());
            let u = ot_receiver.extend(0, &choices, &mut t);
            ot_sender.extend(0, &u, &mut q);
            let code = EaCode::new(params.leaves(), [4; 16]);
            let (message, leaves) = send_trees(&params, delta, &q, &mut rng).unwrap();
            assert_eq!(message.len(), params.message_words());
            let sender = SenderVector::new(leaves);
            let receiver = receive(&params, &noise, &t, &message);
            // In two ranges, as the protocol computes them frame by frame.
            let split = outputs / 3;
            let (mut b, mut pairs) = (vec![0u128; outputs], vec![[0u128; 2]; outputs]);
            sender.outputs(&code, 0, &mut b[..split]);
            sender.outputs(&code, split, &mut b[split..]);
            receiver.outputs(&code, 0, &mut pairs[..split]);
            receiver.outputs(&code, split, &mut pairs[split..]);
            for (i, (&[a, c], &b)) in pairs.iter().zip(&b).enumerate() {
                assert_eq!(c, b ^ mul(a, delta), "{outputs} {i}");
                assert_eq!(a & !params.subspace_mask(), 0);
            }
            let zeros = pairs.iter().filter(|pair| pair[0] == 0).count();
            assert!(zeros < outputs / 100 + 2, "{zeros} of {outputs}");
        }
    }
}
