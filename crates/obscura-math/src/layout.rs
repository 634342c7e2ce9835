//! The storage order of plaintext matrices: column panels of row groups of tiles.
//!
//! An answer streams the whole database once while the query vector is read from cache, so the
//! order is chosen for that stream:
//!
//! - the columns are cut into **panels** of [`PANEL_COLS`] (the last one narrower), stored one
//!   after another: a panel's slice of a prepared query (4 bytes per column, 8 KiB) stays in
//!   the L1 cache while the panel streams past it;
//! - a panel's rows are cut into **groups** of [`GROUP_ROWS`] (the last one smaller), stored one
//!   after another: the kernels sum a group's rows together, each vector of the query read
//!   once for all of them;
//! - a group's columns are cut into **steps** of [`STEP_COLS`] (the last one narrower), stored
//!   one after another, each step row-major: the `g · 64` bytes the kernel reads together are
//!   contiguous, so a core reads the whole matrix as one sequential stream.
//!
//! In a harness on Zen 4 that alternates streaming reads with the AVX-512 kernel alone, the
//! kernel reached 94-96% of the read in this order with one thread, against 52-56% over the
//! same tiles with a 128 KiB query slice (32K-column panels), which has to come from L2
//! alongside the stream; `obscura bench simple-1g` and `frodo` answers went from 55-67% to
//! 79-84% of the bandwidth with one thread (see the README for the figures).

use std::ops::Range;

/// Columns per panel.
pub const PANEL_COLS: usize = 2048;

/// Rows per group.
pub const GROUP_ROWS: usize = 4;

/// Columns per step of a group (one 64-byte cache line per row).
pub const STEP_COLS: usize = 64;

/// One panel of a plaintext matrix: columns `first .. first + width`, all rows, in groups.
#[derive(Clone, Copy)]
pub struct Panel<'a> {
    /// The matrix column of the panel's first column.
    pub first: usize,
    /// Columns in the panel.
    pub width: usize,
    /// Rows of the matrix.
    pub rows: usize,
    /// The `rows x width` digits in group order.
    pub bytes: &'a [u8],
}

impl<'a> Panel<'a> {
    /// The groups whose rows start in `rows` (which must start on a group boundary), top to
    /// bottom, each with its first row.
    pub fn groups(&self, rows: Range<usize>) -> impl Iterator<Item = (usize, Group<'a>)> + 'a {
        debug_assert!(rows.start.is_multiple_of(GROUP_ROWS) && rows.end <= self.rows);
        let (width, all, bytes) = (self.width, self.rows, self.bytes);
        rows.step_by(GROUP_ROWS).map(move |first| {
            let group_rows = GROUP_ROWS.min(all - first);
            let start = first * width;
            let group = Group {
                rows: group_rows,
                width,
                bytes: &bytes[start..start + group_rows * width],
            };
            (first, group)
        })
    }
}

/// Up to [`GROUP_ROWS`] rows of a panel, in steps of [`STEP_COLS`] columns, each step
/// row-major.
#[derive(Clone, Copy)]
pub struct Group<'a> {
    /// Rows in the group.
    pub rows: usize,
    /// Columns in the group (the panel's width).
    pub width: usize,
    /// The `rows x width` digits in step order.
    pub bytes: &'a [u8],
}

impl Group<'_> {
    /// Whole steps of [`STEP_COLS`] columns (a narrower last step may follow).
    pub fn full_steps(&self) -> usize {
        self.width / STEP_COLS
    }

    /// Row `i`'s digits in the columns of step `s`.
    pub fn stretch(&self, i: usize, s: usize) -> &[u8] {
        let (start, len) = step_at(self.rows, self.width, s);
        &self.bytes[start + i * len..start + (i + 1) * len]
    }

    /// The digit of row `i`, column `c` (a panel column).
    pub fn digit(&self, i: usize, c: usize) -> u8 {
        self.stretch(i, c / STEP_COLS)[c % STEP_COLS]
    }

    /// Row `i`'s digits, step by step, each with the panel column where it starts.
    pub fn stretches(&self, i: usize) -> impl Iterator<Item = (usize, &[u8])> {
        (0..self.width.div_ceil(STEP_COLS)).map(move |s| (s * STEP_COLS, self.stretch(i, s)))
    }

    /// Copies the digits of columns `cols` into `out`, row-major with row stride `cols.len()`.
    pub fn untile(&self, cols: Range<usize>, out: &mut [u8]) {
        let len = cols.len();
        let steps = cols.start / STEP_COLS..cols.end.div_ceil(STEP_COLS);
        for s in steps {
            let start = s * STEP_COLS;
            for i in 0..self.rows {
                let stretch = self.stretch(i, s);
                let row = &mut out[i * len..(i + 1) * len];
                let (from, to) = (start.max(cols.start), (start + stretch.len()).min(cols.end));
                let (source, target) = (
                    &stretch[from - start..to - start],
                    &mut row[from - cols.start..to - cols.start],
                );
                // Whole steps, the common case, as fixed-size copies (vector moves, no call).
                match (
                    <&[u8; STEP_COLS]>::try_from(source),
                    <&mut [u8; STEP_COLS]>::try_from(&mut *target),
                ) {
                    (Ok(source), Ok(target)) => *target = *source,
                    _ => target.copy_from_slice(source),
                }
            }
        }
    }
}

/// Where step `s` of a group of `rows x width` starts, and its width.
fn step_at(rows: usize, width: usize, s: usize) -> (usize, usize) {
    let first = s * STEP_COLS;
    (first * rows, STEP_COLS.min(width - first))
}

/// Writes the row-major `rows x width` digits of `row_major` into `group` in step order.
pub fn tile(row_major: &[u8], rows: usize, width: usize, group: &mut [u8]) {
    for s in 0..width.div_ceil(STEP_COLS) {
        let (start, len) = step_at(rows, width, s);
        for i in 0..rows {
            let from = i * width + s * STEP_COLS;
            group[start + i * len..start + (i + 1) * len]
                .copy_from_slice(&row_major[from..from + len]);
        }
    }
}

/// Writes `rows x width` digits held column by column (`columns[c · rows + i]` is row `i`,
/// column `c`) into `tiled`, their groups one after another in step order: the storage order of
/// a panel's stretch of whole groups.
pub fn tile_columns(columns: &[u8], rows: usize, width: usize, tiled: &mut [u8]) {
    assert_eq!(columns.len(), rows * width, "a digit per row and column");
    tile_column_runs(rows, width, tiled, |c| &columns[c * rows..(c + 1) * rows]);
}

/// [`tile_columns`] for columns held anywhere: `column(c)` gives column `c`'s digits from the
/// stretch's first row (zero past the run's end).
pub fn tile_column_runs<'a>(
    rows: usize,
    width: usize,
    tiled: &mut [u8],
    column: impl Fn(usize) -> &'a [u8],
) {
    assert_eq!(tiled.len(), rows * width, "a digit per row and column");
    // One step of columns at a time: its runs are read from the L1 cache while every group's
    // stretch of the step is written.
    for s in 0..width.div_ceil(STEP_COLS) {
        let (first, len) = (s * STEP_COLS, STEP_COLS.min(width - s * STEP_COLS));
        let runs: [&[u8]; STEP_COLS] =
            std::array::from_fn(|c| if c < len { column(first + c) } else { &[] });
        for g in 0..rows.div_ceil(GROUP_ROWS) {
            let group_rows = GROUP_ROWS.min(rows - g * GROUP_ROWS);
            let (start, _) = step_at(group_rows, width, s);
            let stretch = &mut tiled[g * GROUP_ROWS * width + start..][..group_rows * len];
            let top = g * GROUP_ROWS;
            if group_rows == GROUP_ROWS
                && len == STEP_COLS
                && runs.iter().all(|run| run.len() >= top + GROUP_ROWS)
            {
                // The common case: a word of each run holds the group's four digits of its
                // column, and row `i` is byte `i` of every word (shifts and narrowing, which
                // vectorize).
                let words: [u32; STEP_COLS] = std::array::from_fn(|c| {
                    u32::from_le_bytes(
                        runs[c][top..top + GROUP_ROWS]
                            .try_into()
                            .expect("four digits"),
                    )
                });
                for (i, row) in stretch.chunks_exact_mut(STEP_COLS).enumerate() {
                    for (digit, &word) in row.iter_mut().zip(&words) {
                        *digit = (word >> (8 * i)) as u8;
                    }
                }
                continue;
            }
            for (i, row) in stretch.chunks_exact_mut(len).enumerate() {
                for (digit, run) in row.iter_mut().zip(&runs) {
                    *digit = run.get(top + i).copied().unwrap_or(0);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn tiling_round_trips(rows in 1usize..=GROUP_ROWS, width in 1usize..300, from in 0usize..300, len in 0usize..300, seed in any::<u8>()) {
            let digits: Vec<u8> = (0..rows * width).map(|x| (x as u8).wrapping_mul(31).wrapping_add(seed)).collect();
            let mut tiled = vec![0u8; digits.len()];
            tile(&digits, rows, width, &mut tiled);
            let group = Group { rows, width, bytes: &tiled };
            for i in 0..rows {
                for c in 0..width {
                    prop_assert_eq!(group.digit(i, c), digits[i * width + c]);
                }
                let joined: Vec<u8> = group.stretches(i).flat_map(|(_, s)| s.iter().copied()).collect();
                prop_assert_eq!(&joined[..], &digits[i * width..(i + 1) * width]);
            }
            let from = from.min(width);
            let cols = from..(from + len).min(width);
            let mut out = vec![0u8; rows * cols.len()];
            group.untile(cols.clone(), &mut out);
            for i in 0..rows {
                prop_assert_eq!(&out[i * cols.len()..(i + 1) * cols.len()], &digits[i * width + cols.start..i * width + cols.end]);
            }
        }
    }

    proptest! {
        #[test]
        fn digits_held_by_column_tile_like_rows(rows in 1usize..40, width in 1usize..300, seed in any::<u8>()) {
            let columns: Vec<u8> = (0..rows * width).map(|x| (x as u8).wrapping_mul(37).wrapping_add(seed)).collect();
            let mut tiled = vec![0u8; columns.len()];
            tile_columns(&columns, rows, width, &mut tiled);
            // The same digits row-major, tiled group by group.
            let row_major: Vec<u8> = (0..rows * width).map(|x| columns[(x % width) * rows + x / width]).collect();
            let mut expected = vec![0u8; columns.len()];
            for (g, group) in expected.chunks_mut(GROUP_ROWS * width).enumerate() {
                let group_rows = group.len() / width;
                tile(&row_major[g * GROUP_ROWS * width..][..group.len()], group_rows, width, group);
            }
            prop_assert_eq!(tiled, expected);
        }
    }

    #[test]
    fn a_step_is_row_major() {
        // Two rows of 70 columns: the first step holds 64 columns of row 0, then of row 1; the
        // second step the last 6 of each.
        let digits: Vec<u8> = (0..140).map(|x| x as u8).collect();
        let mut tiled = vec![0u8; 140];
        tile(&digits, 2, 70, &mut tiled);
        assert_eq!(&tiled[..64], &digits[..64]);
        assert_eq!(&tiled[64..128], &digits[70..134]);
        assert_eq!(&tiled[128..134], &digits[64..70]);
        assert_eq!(&tiled[134..], &digits[134..]);
    }
}
