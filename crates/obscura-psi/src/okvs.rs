//! The oblivious key-value store of RR22 (Raghuraman and Rindal, CCS 2022, §2-3): a vector `P`
//! such that `Decode(P, k) = ⟨row(k), P⟩ = v` for every encoded pair `(k, v)`, where `row(k)` is
//! three pseudorandom positions in a sparse part plus a pseudorandom bit mask over a small dense
//! part. Values are any 128-bit words combined by XOR, so the store is linear over GF(2): the PSI
//! encodes values of its `ℓ`-bit subspace and decodes vectors of GF(2^128) with the same rows.
//!
//! # Layout
//!
//! Keys (128-bit pseudorandom words) go to one of `bins` independent bins by their row; bin `b`
//! owns `P[b·W .. (b+1)·W]` with `W = sparse + dense`: `sparse` columns for the three positions
//! and `dense` (≤ 64) columns for the mask. Rows come from AES-128 under the session's public
//! seed: for key `k`, `AES(k)`, `AES(k ⊕ 1)` and `AES(k ⊕ 2)` give six 64-bit words; word 0 picks the
//! bin, words 1-3 three distinct sparse positions (as [`crate::cuckoo`] picks bins) and word 4 the
//! mask (its low `dense` bits).
//!
//! # Encoding
//!
//! Per bin, in parallel: *peeling* (the paper's triangulation) repeatedly takes a sparse column
//! used by exactly one remaining row, makes it that row's pivot and removes the row; when no
//! such column is left (the hypergraph's 2-core), it takes a column of least degree, makes one of
//! its rows the pivot and sets the others aside as *gap rows*. Back substitution in reverse
//! order then gives each pivot its value; each pivot value is tracked as an affine function of
//! the dense columns (a 64-bit mask beside the value), the gap rows become at most `dense`
//! equations in the dense columns alone, solved by Gaussian elimination, and the dense values
//! are substituted back. Without gap rows the dense columns are zero. Free columns are zero.
//!
//! # Parameters (statistical failure ≤ 2^-40 per encoding)
//!
//! With `n` keys, `bins = ⌈n / 2^17⌉` and every bin sized for `n*` keys, the largest load that
//! is exceeded with probability ≤ 2^-42 (Bernstein, union over bins; [`crate::load`]). In each
//! bin, with `λ = 42 + ⌈log2 bins⌉` (so that the union over bins stays ≤ 2^-42):
//! - `sparse = ⌈e · n*⌉` with the paper's fit for weight 3 (§3.2, equations 2 and 3):
//!   `e = 1.223 + (λ + 9.2) / s` where `log2 s = 0.55 log2 n* + 0.093 w'^3 − 1.01 w'^2 + 2.92 w'
//!   − 0.13` and `w' = log2 3`; the gap exceeds `ĝ = ⌊λ / log2(sparse)⌋` with probability ≤ 2^-λ;
//! - `dense = ĝ + λ` binary columns: given at most `ĝ` gap rows, their system has full rank
//!   except with probability `≤ 2^(ĝ − dense) = 2^-λ` (Lemma 2.1, the dense bits being uniform);
//! - bins of at most `64 − λ` keys get `dense = n* + λ`, so that every row may be a gap row.
//!
//! Three events fail an encoding (an overfull bin, a gap above `ĝ`, a rank-deficient gap
//! system), each with probability ≤ 2^-42, so together < 2^-40; the encoder then reports
//! failure and the caller retries with a fresh seed. At 2^20 keys: 8 bins of `n*` = 133,942, `e`
//! = 1.239, 47 dense columns, `P` of 1.267 n words.

use aes::Aes128;
use rayon::prelude::*;

use crate::block::{cipher, encrypt_each};
use crate::cuckoo::{below, distinct_bins};
use crate::load::max_load;

/// Positions of a row in the sparse part.
pub(crate) const WEIGHT: usize = 3;
/// Bytes of the public seed that picks the rows.
pub(crate) const SEED_BYTES: usize = 16;
/// The expected number of keys per bin.
const BIN_ITEMS: u64 = 1 << 17;
/// Each of the three failure events has probability at most `2^-FAILURE_BITS`.
const FAILURE_BITS: f64 = 42.0;
/// Keys per parallel task when computing rows or decoding.
const TASK_KEYS: usize = 4096;

/// The shape of a store for a given number of keys.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Params {
    bins: u32,
    sparse: u32,
    dense: u32,
    bin_keys: u32,
}

impl Params {
    /// The parameters for `keys` keys (at least one), or `None` if the store would not have
    /// fewer than 2^32 words.
    pub(crate) fn new(keys: u64) -> Option<Self> {
        let keys = keys.max(1);
        let bins = keys.div_ceil(BIN_ITEMS);
        let bin_keys = max_load(keys, bins, FAILURE_BITS);
        let lambda = FAILURE_BITS + (bins as f64).log2().ceil();
        let sparse = ((expansion(bin_keys, lambda) * bin_keys as f64).ceil() as u64).max(8);
        let dense = if bin_keys as f64 + lambda <= 64.0 {
            bin_keys as f64 + lambda
        } else {
            (lambda / (sparse as f64).log2()).floor() + lambda
        };
        let dense = dense.ceil() as u64;
        let params = Self {
            bins: u32::try_from(bins).ok()?,
            sparse: u32::try_from(sparse).ok()?,
            dense: u32::try_from(dense).ok().filter(|&dense| dense <= 64)?,
            bin_keys: u32::try_from(bin_keys).ok()?,
        };
        u32::try_from(params.size()).ok().map(|_| params)
    }

    /// Words of the store.
    pub(crate) fn size(&self) -> usize {
        self.bins as usize * self.width()
    }

    /// Words of one bin.
    fn width(&self) -> usize {
        (self.sparse + self.dense) as usize
    }
}

/// The expansion `e = sparse / n*` for bins of `keys` keys at `lambda` bits (see the module
/// documentation).
fn expansion(keys: u64, lambda: f64) -> f64 {
    let w = (WEIGHT as f64).log2();
    let log_slope =
        0.55 * (keys as f64).log2() + 0.093 * w.powi(3) - 1.01 * w.powi(2) + 2.92 * w - 0.13;
    1.223 + (lambda + 9.2) / log_slope.exp2()
}

/// The row of one key.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Row {
    bin: u32,
    columns: [u32; WEIGHT],
    dense: u64,
}

/// A store's shape and row function for one session.
pub(crate) struct Okvs {
    params: Params,
    cipher: Aes128,
}

impl Okvs {
    /// The store of shape `params` whose rows come from `seed`.
    pub(crate) fn new(params: Params, seed: [u8; SEED_BYTES]) -> Self {
        Self {
            params,
            cipher: cipher(seed),
        }
    }

    /// The rows of `keys`, in parallel.
    fn rows(&self, keys: &[u128]) -> Vec<Row> {
        let Params {
            bins,
            sparse,
            dense,
            ..
        } = self.params;
        // `dense` is between 1 and 64.
        let dense_mask = u64::MAX >> (64 - dense);
        let mut rows = vec![Row::default(); keys.len()];
        keys.par_chunks(TASK_KEYS)
            .zip(rows.par_chunks_mut(TASK_KEYS))
            .for_each(|(keys, rows)| {
                let mut words = [0u64; 6];
                let inputs = keys.iter().flat_map(|&k| [k, k ^ 1, k ^ 2]);
                encrypt_each(&self.cipher, inputs, |i, word| {
                    words[2 * (i % 3)] = word as u64;
                    words[2 * (i % 3) + 1] = (word >> 64) as u64;
                    if i % 3 == 2 {
                        rows[i / 3] = Row {
                            bin: below(words[0], bins),
                            columns: distinct_bins([words[1], words[2], words[3]], sparse),
                            dense: words[4] & dense_mask,
                        };
                    }
                });
            });
        rows
    }

    /// The indices of `rows` grouped by bin: `order[starts[b] .. starts[b + 1]]` are those of
    /// bin `b`, in input order.
    fn group_by_bin(&self, rows: &[Row]) -> (Vec<usize>, Vec<u32>) {
        let bins = self.params.bins as usize;
        let mut starts = vec![0usize; bins + 1];
        for row in rows {
            starts[row.bin as usize + 1] += 1;
        }
        for bin in 0..bins {
            starts[bin + 1] += starts[bin];
        }
        let mut next = starts.clone();
        let mut order = vec![0u32; rows.len()];
        for (i, row) in rows.iter().enumerate() {
            let slot = &mut next[row.bin as usize];
            order[*slot] = i as u32;
            *slot += 1;
        }
        (starts, order)
    }

    /// A store `P` with `Decode(P, keys[i]) = values[i]` for every `i` (keys distinct), or
    /// `None` in the rare case (≤ 2^-40) that this seed cannot encode them.
    pub(crate) fn encode(&self, keys: &[u128], values: &[u128]) -> Option<Vec<u128>> {
        debug_assert_eq!(keys.len(), values.len());
        let rows = self.rows(keys);
        let (starts, order) = self.group_by_bin(&rows);
        if starts
            .windows(2)
            .any(|range| range[1] - range[0] > self.params.bin_keys as usize)
        {
            return None;
        }
        let grouped: Vec<(Row, u128)> = order
            .iter()
            .map(|&i| (rows[i as usize], values[i as usize]))
            .collect();
        let mut store = vec![0u128; self.params.size()];
        let solved = store
            .par_chunks_mut(self.params.width())
            .zip(starts.par_windows(2))
            .all(|(bin, range)| {
                let (sparse, dense) = bin.split_at_mut(self.params.sparse as usize);
                solve_bin(&grouped[range[0]..range[1]], sparse, dense)
            });
        solved.then_some(store)
    }

    /// Writes `Decode(store, keys[i])` into `out[i]`. The keys are taken bin by bin (in
    /// parallel over bins), so that each bin's part of the store stays in cache, and each bin's
    /// dense part is summed through byte tables.
    pub(crate) fn decode(&self, store: &[u128], keys: &[u128], out: &mut [u128]) {
        debug_assert_eq!(store.len(), self.params.size());
        let width = self.params.width();
        let rows = self.rows(keys);
        let (starts, order) = self.group_by_bin(&rows);
        let grouped_rows: Vec<Row> = order.iter().map(|&i| rows[i as usize]).collect();
        drop(rows);
        let mut grouped = vec![0u128; keys.len()];
        let mut parts = Vec::with_capacity(starts.len() - 1);
        let mut rest = grouped.as_mut_slice();
        for range in starts.windows(2) {
            let (part, tail) = rest.split_at_mut(range[1] - range[0]);
            parts.push((part, &grouped_rows[range[0]..range[1]]));
            rest = tail;
        }
        parts
            .into_par_iter()
            .zip(store.par_chunks(width))
            .for_each(|((out, rows), bin)| {
                let (sparse, dense) = bin.split_at(self.params.sparse as usize);
                let dense = DenseSums::new(dense);
                for (out, row) in out.iter_mut().zip(rows) {
                    *out = row
                        .columns
                        .iter()
                        .fold(dense.sum(row.dense), |acc, &c| acc ^ sparse[c as usize]);
                }
            });
        for (&i, &value) in order.iter().zip(&grouped) {
            out[i as usize] = value;
        }
    }
}

/// Sums of subsets of a bin's dense values, eight values per table: `⟨mask, D⟩` in one lookup
/// per byte of the mask.
struct DenseSums {
    tables: Vec<[u128; 256]>,
}

impl DenseSums {
    /// The tables of the dense values `dense` (at most 64).
    fn new(dense: &[u128]) -> Self {
        let tables = dense
            .chunks(8)
            .map(|values| {
                let mut table = [0u128; 256];
                for byte in 1..256usize {
                    let lowest = byte.trailing_zeros() as usize;
                    let value = values.get(lowest).copied().unwrap_or(0);
                    table[byte] = table[byte & (byte - 1)] ^ value;
                }
                table
            })
            .collect();
        Self { tables }
    }

    /// `⊕_{bit i of mask} D_i`.
    fn sum(&self, mask: u64) -> u128 {
        self.tables.iter().enumerate().fold(0, |acc, (i, table)| {
            acc ^ table[(mask >> (8 * i)) as usize & 0xff]
        })
    }
}

/// `⊕_{bit i of mask} values[i]`.
fn masked_sum(mut mask: u64, values: &[u128]) -> u128 {
    let mut sum = 0;
    while mask != 0 {
        sum ^= values[mask.trailing_zeros() as usize];
        mask &= mask - 1;
    }
    sum
}

/// Solves one bin: writes the sparse and dense values so that every row of `pairs` decodes to
/// its value. Returns `false` if the bin cannot be solved with its dense columns.
fn solve_bin(pairs: &[(Row, u128)], sparse: &mut [u128], dense: &mut [u128]) -> bool {
    let Some(Peeling { pivots, gap_rows }) = peel(pairs, sparse.len(), dense.len()) else {
        return false;
    };
    if gap_rows.is_empty() {
        // Reverse peeling order: a pivot's other columns are free or pivots of later rows.
        for &(r, c) in pivots.iter().rev() {
            let (row, value) = &pairs[r as usize];
            sparse[c as usize] = row
                .columns
                .iter()
                .filter(|&&other| other != c)
                .fold(*value, |acc, &other| acc ^ sparse[other as usize]);
        }
        return true;
    }
    // Each pivot value as `value ⊕ ⟨mask, D⟩` for the unknown dense values `D`.
    let mut masks = vec![0u64; sparse.len()];
    for &(r, c) in pivots.iter().rev() {
        let (row, value) = &pairs[r as usize];
        let (mut sum, mut mask) = (*value, row.dense);
        for &other in row.columns.iter().filter(|&&other| other != c) {
            sum ^= sparse[other as usize];
            mask ^= masks[other as usize];
        }
        sparse[c as usize] = sum;
        masks[c as usize] = mask;
    }
    let equations = gap_rows.iter().map(|&r| {
        let (row, value) = &pairs[r as usize];
        row.columns
            .iter()
            .fold((row.dense, *value), |(mask, sum), &c| {
                (mask ^ masks[c as usize], sum ^ sparse[c as usize])
            })
    });
    if !solve_dense(equations, dense) {
        return false;
    }
    for (value, &mask) in sparse.iter_mut().zip(&masks) {
        *value ^= masked_sum(mask, dense);
    }
    true
}

/// The outcome of peeling one bin: pivots `(row, column)` in peeling order, and the gap rows.
struct Peeling {
    pivots: Vec<(u32, u32)>,
    gap_rows: Vec<u32>,
}

/// Peels the rows of one bin (see the module documentation); `None` once more than `max_gap`
/// rows are set aside.
fn peel(pairs: &[(Row, u128)], columns: usize, max_gap: usize) -> Option<Peeling> {
    let mut graph = Hypergraph::new(pairs, columns);
    let mut peeling = Peeling {
        pivots: Vec::with_capacity(pairs.len()),
        gap_rows: Vec::new(),
    };
    loop {
        while let Some(c) = graph.queue.pop() {
            if graph.degree[c as usize] == 1 {
                let r = graph.rows_xor[c as usize];
                peeling.pivots.push((r, c));
                graph.remove(r);
            }
        }
        if graph.left == 0 {
            return Some(peeling);
        }
        // The 2-core: a column of least degree, one of its rows as pivot, the others aside.
        let c = (0..columns as u32)
            .filter(|&c| graph.degree[c as usize] > 0)
            .min_by_key(|&c| graph.degree[c as usize])
            .expect("rows are left, so some column is used");
        let using: Vec<u32> = (0..pairs.len() as u32)
            .filter(|&r| !graph.removed[r as usize] && pairs[r as usize].0.columns.contains(&c))
            .collect();
        peeling.pivots.push((using[0], c));
        peeling.gap_rows.extend(&using[1..]);
        for &r in &using {
            graph.remove(r);
        }
        if peeling.gap_rows.len() > max_gap {
            return None;
        }
    }
}

/// The rows of a bin still to peel, as a hypergraph on its sparse columns.
struct Hypergraph<'a> {
    pairs: &'a [(Row, u128)],
    /// Remaining rows using each column.
    degree: Vec<u32>,
    /// The XOR of the indices of the remaining rows using each column: the row itself at
    /// degree 1.
    rows_xor: Vec<u32>,
    removed: Vec<bool>,
    /// Columns that reached degree 1 (checked again when taken).
    queue: Vec<u32>,
    left: usize,
}

impl<'a> Hypergraph<'a> {
    fn new(pairs: &'a [(Row, u128)], columns: usize) -> Self {
        let mut degree = vec![0u32; columns];
        let mut rows_xor = vec![0u32; columns];
        for (r, (row, _)) in pairs.iter().enumerate() {
            for &c in &row.columns {
                degree[c as usize] += 1;
                rows_xor[c as usize] ^= r as u32;
            }
        }
        let queue = (0..columns as u32)
            .filter(|&c| degree[c as usize] == 1)
            .collect();
        Self {
            pairs,
            degree,
            rows_xor,
            removed: vec![false; pairs.len()],
            queue,
            left: pairs.len(),
        }
    }

    fn remove(&mut self, r: u32) {
        self.removed[r as usize] = true;
        self.left -= 1;
        for &c in &self.pairs[r as usize].0.columns {
            self.degree[c as usize] -= 1;
            self.rows_xor[c as usize] ^= r;
            if self.degree[c as usize] == 1 {
                self.queue.push(c);
            }
        }
    }
}

/// Solves `⟨mask_i, D⟩ = value_i` for the dense values `D` (free ones zero) by Gaussian
/// elimination over GF(2); `false` if the equations are inconsistent.
fn solve_dense(equations: impl Iterator<Item = (u64, u128)>, dense: &mut [u128]) -> bool {
    // Each kept equation has a pivot bit (its lowest) that no equation kept before it has.
    let mut kept: Vec<(u64, u128)> = Vec::new();
    for (mut mask, mut value) in equations {
        for &(pivot_mask, pivot_value) in &kept {
            if mask >> pivot_mask.trailing_zeros() & 1 == 1 {
                mask ^= pivot_mask;
                value ^= pivot_value;
            }
        }
        if mask == 0 {
            if value != 0 {
                return false;
            }
            continue;
        }
        kept.push((mask, value));
    }
    dense.fill(0);
    // Reverse order: an equation holds no pivot bit of an earlier one, so its other bits are
    // later pivots (solved) or free variables (zero).
    for &(mask, value) in kept.iter().rev() {
        let pivot = mask.trailing_zeros() as usize;
        dense[pivot] = value ^ masked_sum(mask & (mask - 1), dense);
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn keys_and_values(count: usize, salt: u128) -> (Vec<u128>, Vec<u128>) {
        let key = |i: u128| (i ^ salt).wrapping_mul(0x9e37_79b9_7f4a_7c15_f39c_c060_5ced_c835);
        let keys: Vec<u128> = (0..count as u128).map(key).collect();
        let values = keys.iter().map(|k| k.rotate_left(17) ^ salt).collect();
        (keys, values)
    }

    fn decoded(okvs: &Okvs, store: &[u128], keys: &[u128]) -> Vec<u128> {
        let mut out = vec![0; keys.len()];
        okvs.decode(store, keys, &mut out);
        out
    }

    #[test]
    fn parameters_follow_the_documented_fit() {
        let params = Params::new(1 << 20).unwrap();
        assert_eq!(params.bins, 8);
        assert_eq!(params.bin_keys, 133_942);
        assert_eq!(params.dense, 47);
        let ratio = params.size() as f64 / (1 << 20) as f64;
        assert!((1.26..1.27).contains(&ratio), "{ratio}");
        // One bin below 2^17 keys, with exactly the keys it holds.
        let small = Params::new(1000).unwrap();
        assert_eq!((small.bins, small.bin_keys), (1, 1000));
        // Tiny sets: every row may be a gap row.
        let tiny = Params::new(5).unwrap();
        assert_eq!(tiny.dense, 5 + 42);
        assert!(Params::new(1 << 40).is_none());
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(24))]

        /// Every encoded key decodes to its value, at every set size's shape.
        #[test]
        fn encoded_keys_decode_to_their_values(count in 1usize..3000, salt in any::<u128>(), seed in any::<[u8; 16]>()) {
            let (keys, values) = keys_and_values(count, salt);
            let okvs = Okvs::new(Params::new(count as u64).unwrap(), seed);
            let store = okvs.encode(&keys, &values).expect("fails with probability 2^-40");
            prop_assert_eq!(store.len(), okvs.params.size());
            prop_assert_eq!(decoded(&okvs, &store, &keys), values);
        }

        /// Below the peeling threshold (`e` = 1.1) the 2-core is large: encodings that succeed
        /// still decode every key, through gap rows and the dense columns.
        #[test]
        fn gap_rows_are_solved_through_the_dense_columns(salt in any::<u128>(), seed in any::<[u8; 16]>()) {
            let (keys, values) = keys_and_values(40, salt);
            let params = Params { bins: 1, sparse: 44, dense: 64, bin_keys: 40 };
            let okvs = Okvs::new(params, seed);
            let store = okvs.encode(&keys, &values).expect("64 dense columns hold the gap");
            prop_assert_eq!(decoded(&okvs, &store, &keys), values);
        }
    }

    /// A repeated key with its value is a consistent gap row; with another value it cannot be
    /// encoded.
    #[test]
    fn duplicate_rows_are_gap_rows() {
        let (mut keys, mut values) = keys_and_values(100, 5);
        keys.push(keys[7]);
        values.push(values[7]);
        let okvs = Okvs::new(Params::new(101).unwrap(), [3; 16]);
        let store = okvs.encode(&keys, &values).unwrap();
        assert_eq!(decoded(&okvs, &store, &keys), values);
        *values.last_mut().unwrap() ^= 1;
        assert!(okvs.encode(&keys, &values).is_none());
    }

    /// Rows follow the documented derivation from `AES(k)`, `AES(k ⊕ 1)`, `AES(k ⊕ 2)`.
    #[test]
    fn rows_follow_the_documented_derivation() {
        let okvs = Okvs::new(
            Params::new(1 << 20).unwrap(),
            std::array::from_fn(|i| i as u8),
        );
        let rows = okvs.rows(&[0, 1, u128::MAX]);
        let mut words = [0u128; 3];
        encrypt_each(&okvs.cipher, [0u128, 1, 2], |i, word| words[i] = word);
        let expected = Row {
            bin: below(words[0] as u64, 8),
            columns: distinct_bins(
                [
                    (words[0] >> 64) as u64,
                    words[1] as u64,
                    (words[1] >> 64) as u64,
                ],
                okvs.params.sparse,
            ),
            dense: words[2] as u64 & ((1 << 47) - 1),
        };
        assert_eq!(rows[0], expected);
        assert_ne!(rows[0], rows[1]);
        assert!(rows.iter().all(|row| row.bin < 8
            && row.columns.iter().all(|&c| c < okvs.params.sparse)
            && row.dense >> 47 == 0));
    }

    /// Known answer: the store of 1,000 fixed pairs under a fixed seed, by its SHA-256, so that
    /// the row function, the peeling order and the layout cannot change unnoticed.
    #[test]
    fn known_answer() {
        use sha2::{Digest, Sha256};
        let (keys, values) = keys_and_values(1000, 0x0b5c);
        let okvs = Okvs::new(Params::new(1000).unwrap(), *b"obscura okvs kat");
        let store = okvs.encode(&keys, &values).unwrap();
        let digest = store
            .iter()
            .fold(Sha256::new(), |hash, word| {
                hash.chain_update(word.to_le_bytes())
            })
            .finalize();
        assert_eq!(hex(&digest), KNOWN_STORE_SHA256);
    }

    const KNOWN_STORE_SHA256: &str =
        "925a7137502badf24bfb019fdb9333f6a66c1d6c8a7b56656efa029e59e11b34";

    fn hex(bytes: &[u8]) -> String {
        bytes.iter().map(|b| format!("{b:02x}")).collect()
    }

    #[test]
    fn dense_systems_are_solved_or_refused() {
        let mut dense = [0u128; 4];
        let equations = [(0b0011, 5u128), (0b0110, 6), (0b0101, 3)];
        assert!(solve_dense(equations.into_iter(), &mut dense));
        for (mask, value) in equations {
            assert_eq!(masked_sum(mask, &dense), value);
        }
        let inconsistent = [(0b0011, 5u128), (0b0110, 6), (0b0101, 4)];
        assert!(!solve_dense(inconsistent.into_iter(), &mut dense));
    }
}
