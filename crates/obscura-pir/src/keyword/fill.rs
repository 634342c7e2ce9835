//! The parallel fill: the database matrix whose slots, for every stored key, sum with the key's
//! mask to its row.

use std::ops::Range;
use std::sync::Mutex;

use obscura_math::layout::GROUP_ROWS;
use obscura_math::matrix::{ColumnBand, PlaintextMatrix};
use obscura_math::memory::prefetch;
use obscura_math::pack;
use rayon::prelude::*;

use super::fuse::FuseShape;
use super::row::{mask_digits, row_header, CHECK_BYTES};
use crate::lwe::{self, Geometry};

/// The values of a keyword table and their peeled filter, ready to be encoded.
pub(super) struct Filled<'a, V> {
    pub(super) values: &'a [V],
    pub(super) checks: &'a [[u8; CHECK_BYTES]],
    pub(super) hashes: &'a [u64],
    pub(super) order: &'a [(u32, u8)],
    pub(super) shape: &'a FuseShape,
    pub(super) length_bytes: u8,
    pub(super) row_bytes: usize,
}

/// The most digit rows per block of the fill (see [`Filled::matrix`]). Each block reads every
/// key's pair and slots again, from anywhere in memory, so fewer and larger blocks cost less; a
/// block of 256 rows puts each slot's digits in four cache lines side by side, and its slice of
/// a panel (512 KiB) is reordered in the L2 cache.
pub(super) const MAX_FILL_BLOCK_ROWS: usize = 256;
const _: () = assert!(MAX_FILL_BLOCK_ROWS.is_multiple_of(GROUP_ROWS));

/// The rows per fill block for a matrix of `rows` rows on `threads` threads: the fewest
/// blocks of at most [`MAX_FILL_BLOCK_ROWS`] rows, a multiple of the thread count of them, of
/// (nearly) equal size, so that every thread has the same work.
pub(super) fn fill_block_rows(rows: usize, threads: usize) -> usize {
    let threads = threads.max(1);
    let blocks = rows.div_ceil(threads * MAX_FILL_BLOCK_ROWS).max(1) * threads;
    rows.div_ceil(blocks)
        .next_multiple_of(GROUP_ROWS)
        .clamp(GROUP_ROWS, MAX_FILL_BLOCK_ROWS)
}

/// How many keys ahead the fill starts loading a key's slots.
const PREFETCH_KEYS: usize = 16;

/// Keys a fill block goes through between progress reports.
const PROGRESS_KEYS: usize = 1 << 16;

impl<V: AsRef<[u8]> + Sync> Filled<'_, V> {
    /// The database matrix of `geometry` (one slot per column), filled in reverse
    /// peeling order so that each key's slots and mask sum to its row.
    ///
    /// Digit rows are independent of each other, so they are cut into blocks of `block_rows`
    /// (whole groups of the matrix's storage order; at most [`MAX_FILL_BLOCK_ROWS`]), each
    /// filled by one task in the matrix's own memory with each slot's digits together (see
    /// [`PlaintextMatrix::from_column_bands`]).
    ///
    /// `progress(done, total)` counts the keys filled in every block (`total` is the key count).
    pub(super) fn matrix(
        &self,
        geometry: &Geometry,
        block_rows: usize,
        progress: &(dyn Fn(u64, u64) + Sync),
    ) -> PlaintextMatrix {
        assert!(
            block_rows.is_multiple_of(GROUP_ROWS)
                && (1..=MAX_FILL_BLOCK_ROWS).contains(&block_rows),
            "fill block"
        );
        let width = u32::from(geometry.log_p());
        let (rows, size) = (geometry.rows() as usize, geometry.cols() as usize);
        // Progress counts keys (keys times blocks done, over the blocks), the same total at
        // every digit width; reports are serialized so that they only grow.
        let (keys, blocks_count) = (self.order.len() as u64, rows.div_ceil(block_rows) as u64);
        let filled = Mutex::new(0u64);
        let steps = self.steps();
        PlaintextMatrix::from_column_bands(rows, size, block_rows, |band| {
            fill_block(&steps, self.row_shape(), band, width, &|done_here| {
                let mut done = filled
                    .lock()
                    .unwrap_or_else(|poisoned| poisoned.into_inner());
                *done += done_here;
                progress(*done / blocks_count, keys);
            });
        })
    }

    /// What the fill needs of each key, in the order it fills them (reverse peeling order), so
    /// that every block reads it as one sequential stream.
    fn steps(&self) -> Vec<Step<'_>> {
        self.order
            .par_iter()
            .rev()
            .map(|&(key, t)| {
                let hash = self.hashes[key as usize];
                Step {
                    value: self.values[key as usize].as_ref(),
                    check: self.checks[key as usize],
                    hash,
                    slots: self.shape.positions(hash),
                    filled: t,
                }
            })
            .collect()
    }

    /// The shape every key's row and slots share.
    fn row_shape(&self) -> RowShape {
        RowShape {
            arity: self.shape.arity().get(),
            length_bytes: self.length_bytes,
            row_bytes: self.row_bytes,
        }
    }
}

/// Bytes the fill holds besides the matrix for `keys` keys: a step per key (and, not counted,
/// a panel's stretch of a block per thread, at most 512 KiB each).
pub(super) fn working_bytes(keys: u64) -> u64 {
    keys.saturating_mul(std::mem::size_of::<Step<'_>>() as u64)
}

/// One key of the fill: its row's parts, its filter hash, its slots and the one it fills.
struct Step<'a> {
    value: &'a [u8],
    check: [u8; CHECK_BYTES],
    hash: u64,
    /// The key's slots (the first `arity` of them).
    slots: [u64; 4],
    /// Which of its slots the key fills.
    filled: u8,
}

/// The shape every key's row and slots share.
#[derive(Clone, Copy)]
struct RowShape {
    arity: usize,
    length_bytes: u8,
    row_bytes: usize,
}

/// Fills the band's rows of every slot, step by step, telling `filled` how many keys it has
/// done every [`PROGRESS_KEYS`] keys and at the end. Slots hold centered digits (see
/// [`lwe::centered`]); digits are computed with wrapping byte arithmetic (p divides 256), so a
/// centered digit adds like the residue it stands for.
fn fill_block(
    steps: &[Step<'_>],
    shape: RowShape,
    band: &mut ColumnBand<'_>,
    width: u32,
    filled: &dyn Fn(u64),
) {
    let (first, count) = (band.first_row(), band.rows());
    let reduce = ((1u16 << width) - 1) as u8;
    let centered: [u8; 256] = std::array::from_fn(|byte| lwe::centered(byte as u8 & reduce, width));
    // The row bytes that hold this block's digits, and the stream's end in those bytes.
    let bytes = first * width as usize / 8
        ..((first + count) * width as usize)
            .div_ceil(8)
            .min(shape.row_bytes);
    let limit = 8 * (shape.row_bytes - bytes.start) as u64;
    let mut window = vec![0u8; bytes.len()];
    let (mut wanted, mut masks) = ([0u8; MAX_FILL_BLOCK_ROWS], [0u8; MAX_FILL_BLOCK_ROWS]);
    let (wanted, masks) = (&mut wanted[..count], &mut masks[..count]);
    let header = row_header(shape.length_bytes);
    for (i, step) in steps.iter().enumerate() {
        // Keys lie anywhere in memory and each one's work is too short to wait for them: the
        // slots and value bytes of the key PREFETCH_KEYS steps ahead start loading.
        if let Some(ahead) = steps.get(i + PREFETCH_KEYS) {
            for &slot in &ahead.slots[..shape.arity] {
                prefetch(band.column(slot as usize));
            }
            let part = |at: usize| at.saturating_sub(header).min(ahead.value.len());
            prefetch(&ahead.value[part(bytes.start)..part(bytes.end)]);
        }
        row_bytes_into(step, shape.length_bytes, bytes.clone(), &mut window);
        // What the key's slot must hold: its row's digits minus its mask and its other slots
        // (filled already, or never).
        if width == 8 {
            // Digits are the row's bytes; those past the row's end are zero.
            wanted[..window.len()].copy_from_slice(&window);
            wanted[window.len()..].fill(0);
        } else {
            for (j, digit) in wanted.iter_mut().enumerate() {
                let offset = (first + j) as u64 * u64::from(width) - 8 * bytes.start as u64;
                *digit = pack::digit_at(&window, offset, width, limit);
            }
        }
        mask_digits(step.hash, first, width as u8, masks);
        for (digit, &mask) in wanted.iter_mut().zip(&*masks) {
            *digit = digit.wrapping_sub(mask);
        }
        let t = usize::from(step.filled);
        for (u, &other) in step.slots[..shape.arity].iter().enumerate() {
            if u != t {
                for (digit, &x) in wanted.iter_mut().zip(band.column(other as usize)) {
                    *digit = digit.wrapping_sub(x);
                }
            }
        }
        let slot = band.column_mut(step.slots[t] as usize);
        for (slot, &digit) in slot.iter_mut().zip(&*wanted) {
            *slot = centered[usize::from(digit)];
        }
        if (i + 1) % PROGRESS_KEYS == 0 {
            filled(PROGRESS_KEYS as u64);
        }
    }
    filled((steps.len() % PROGRESS_KEYS) as u64);
}

/// Bytes `range` of the row of a step's key (check ‖ length ‖ value ‖ zero padding).
fn row_bytes_into(step: &Step<'_>, length_bytes: u8, range: Range<usize>, out: &mut [u8]) {
    out.fill(0);
    let length = (step.value.len() as u64).to_le_bytes();
    let header = row_header(length_bytes);
    let parts: [(usize, &[u8]); 3] = [
        (0, &step.check),
        (CHECK_BYTES, &length[..usize::from(length_bytes)]),
        (header, step.value),
    ];
    for (start, part) in parts {
        let (low, high) = (start.max(range.start), (start + part.len()).min(range.end));
        if low < high {
            out[low - range.start..high - range.start]
                .copy_from_slice(&part[low - start..high - start]);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::keyword::fuse::Arity;
    use crate::keyword::row::{filter_hash, key_digest, length_bytes, mask_digit, row_check};
    use crate::lwe::Layout;

    #[test]
    fn fill_blocks_share_the_rows_evenly() {
        // (rows, threads, rows per block, blocks)
        for (rows, threads, expected, blocks) in [
            (1040, 2, 176, 6),
            (1040, 1, 208, 5),
            (1040, 16, 68, 16),
            (3, 2, 4, 1),
            (1 << 16, 4, 256, 256),
        ] {
            let block = fill_block_rows(rows, threads);
            assert_eq!(block, expected, "{rows} rows on {threads} threads");
            assert_eq!(
                rows.div_ceil(block),
                blocks,
                "{rows} rows on {threads} threads"
            );
        }
    }

    /// Every key's slots and mask sum to its row's digits in every matrix row, at every digit
    /// width and for both arities, with rows (up to 717 bytes) cut into fill blocks of 4, 12 or
    /// 64 rows (blocks that start inside a byte of the row included).
    #[test]
    fn filled_slots_sum_to_every_row_at_every_width() {
        let pairs: Vec<(Vec<u8>, Vec<u8>)> = (0..300usize)
            .map(|i| {
                let value = (0..i * 7 % 700).map(|j| (i * 31 + j * 7) as u8).collect();
                (i.to_le_bytes().to_vec(), value)
            })
            .collect();
        let digests: Vec<_> = pairs.iter().map(|(k, _)| key_digest(k)).collect();
        let checks: Vec<_> = pairs
            .iter()
            .zip(&digests)
            .map(|((_, v), d)| row_check(d, v))
            .collect();
        let max_value = pairs.iter().map(|(_, v)| v.len()).max().unwrap();
        let length_bytes = length_bytes(max_value as u64, false);
        let row_bytes = row_header(length_bytes) + max_value;
        for arity in [Arity::Three, Arity::Four] {
            let shape = FuseShape::new(pairs.len() as u64, arity).unwrap();
            let (hashes, order) = (0..=u8::MAX)
                .find_map(|s| {
                    let hashes: Vec<u64> =
                        digests.iter().map(|d| filter_hash(&[s; 32], d)).collect();
                    shape.peel(&hashes).map(|order| (hashes, order))
                })
                .unwrap();
            let values: Vec<&[u8]> = pairs.iter().map(|(_, v)| v.as_slice()).collect();
            let filled = Filled {
                values: &values,
                checks: &checks,
                hashes: &hashes,
                order: &order,
                shape: &shape,
                length_bytes,
                row_bytes,
            };
            for log_p in 1..=8u8 {
                let bytes = shape.size() * row_bytes as u64;
                let geometry =
                    Geometry::with_log_p(bytes, row_bytes as u64, Layout::OnePerColumn, log_p)
                        .unwrap();
                let block_rows = [4, 12, 64, 256][usize::from(log_p) % 4];
                let reported = std::sync::Mutex::new((0, 0));
                let matrix = filled.matrix(&geometry, block_rows, &|done, total| {
                    let mut reported = reported.lock().unwrap();
                    *reported = (reported.0.max(done), total);
                });
                let keys = pairs.len() as u64;
                assert_eq!(reported.into_inner().unwrap(), (keys, keys));
                let p = 1i16 << log_p;
                for (key, (_, value)) in pairs.iter().enumerate() {
                    let mut row = checks[key].to_vec();
                    row.extend(&(value.len() as u64).to_le_bytes()[..usize::from(length_bytes)]);
                    row.extend(value);
                    row.resize(row_bytes, 0);
                    let digits = pack::pack(&row, u32::from(log_p));
                    assert_eq!(digits.len(), matrix.rows());
                    let slots = &shape.positions(hashes[key])[..arity.get()];
                    for (j, &digit) in digits.iter().enumerate() {
                        let sum = slots
                            .iter()
                            .map(|&c| i16::from(matrix.get(j, c as usize) as i8))
                            .sum::<i16>()
                            + i16::from(mask_digit(hashes[key], j, log_p));
                        assert_eq!(sum.rem_euclid(p), i16::from(digit), "{arity:?} 2^{log_p}");
                    }
                }
            }
        }
    }
}
