//! Dense matrices over Z_{2^32} (row-major), and of plaintext digits (in column panels).

use std::ops::Range;
use std::sync::Arc;

use rayon::prelude::*;

use crate::backend::{vectorized, Backend};
use crate::kernels;
use crate::layout::{self, Group, Panel, GROUP_ROWS, PANEL_COLS, STEP_COLS};
use crate::memory::LargeBuffer;

/// A dense row-major matrix over Z_{2^32} (wrapping arithmetic).
#[derive(Debug, PartialEq, Eq)]
pub struct Matrix {
    rows: usize,
    cols: usize,
    data: Vec<u32>,
}

/// A copy; a large one is written on the rayon pool, as [`Matrix::zeros`] writes its zeros.
impl Clone for Matrix {
    fn clone(&self) -> Self {
        let data = if self.data.len() * 4 < kernels::SEQUENTIAL_BYTES {
            self.data.clone()
        } else {
            let mut data = Vec::with_capacity(self.data.len());
            data.par_extend(self.data.par_iter().copied());
            data
        };
        Self {
            rows: self.rows,
            cols: self.cols,
            data,
        }
    }
}

impl Matrix {
    /// The all-zero `rows x cols` matrix, every entry written (those of a large one on the
    /// rayon pool): a product that adds into fresh memory would read it first, which maps the
    /// shared zero page, then copy that page at its first write, flushing every core's TLB once
    /// per page.
    pub fn zeros(rows: usize, cols: usize) -> Self {
        let len = rows * cols;
        let data = if len * 4 < kernels::SEQUENTIAL_BYTES {
            crate::memory::written(len, 0)
        } else {
            let mut data = Vec::with_capacity(len);
            data.par_extend(rayon::iter::repeat_n(0, len));
            data
        };
        Self { rows, cols, data }
    }

    /// A matrix over existing row-major data; `None` if the length does not match the shape.
    pub fn from_vec(rows: usize, cols: usize, data: Vec<u32>) -> Option<Self> {
        (rows.checked_mul(cols)? == data.len()).then_some(Self { rows, cols, data })
    }

    /// Number of rows.
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// Number of columns.
    pub fn cols(&self) -> usize {
        self.cols
    }

    /// The row-major entries.
    pub fn as_slice(&self) -> &[u32] {
        &self.data
    }

    /// The row-major entries, mutable.
    pub fn as_mut_slice(&mut self) -> &mut [u32] {
        &mut self.data
    }

    /// Row `r`.
    pub fn row(&self, r: usize) -> &[u32] {
        &self.data[r * self.cols..(r + 1) * self.cols]
    }

    /// `self · v` over Z_{2^32}.
    ///
    /// # Panics
    /// If `v.len() != self.cols()`.
    pub fn mul_vec(&self, v: &[u32]) -> Vec<u32> {
        assert_eq!(v.len(), self.cols, "vector length");
        let mut out = vec![0u32; self.rows];
        kernels::mat_vec(&self.data, v, &mut out);
        out
    }

    /// `M · v` for every vector of `vs` (each of length `cols`), in one pass over the matrix.
    pub fn mul_vecs(&self, vs: &[&[u32]]) -> Vec<Vec<u32>> {
        assert!(vs.iter().all(|v| v.len() == self.cols), "vector length");
        if self.cols == 0 {
            return vec![vec![0; self.rows]; vs.len()];
        }
        kernels::mat_vecs(&self.data, vs)
    }
}

/// A fill of one row's stretch at a time as a fill of a group of rows (see
/// [`PlaintextMatrix::from_group_fn`]).
fn row_by_row(
    fill: impl Fn(usize, usize, &mut [u8]) + Sync,
) -> impl Fn(usize, usize, usize, &mut [u8]) + Sync {
    move |r, c, width, digits| {
        for (i, row) in digits.chunks_exact_mut(width).enumerate() {
            fill(r + i, c, row);
        }
    }
}

/// Rows `first_row() .. first_row() + rows()` of a matrix being built by
/// [`PlaintextMatrix::from_column_bands`], each column's digits in these rows held together: a
/// fill that writes a column's digits at once touches one run of memory per column.
pub struct ColumnBand<'a> {
    first_row: usize,
    rows: usize,
    panel_cols: usize,
    /// Per panel, the runs of its columns one after another.
    panels: Vec<&'a mut [u8]>,
}

impl ColumnBand<'_> {
    /// The matrix row of the band's first row.
    pub fn first_row(&self) -> usize {
        self.first_row
    }

    /// Rows in the band.
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// The band's digits of column `c`, top to bottom.
    ///
    /// # Panics
    /// If `c` is outside the matrix.
    pub fn column(&self, c: usize) -> &[u8] {
        &self.panels[c / self.panel_cols][(c % self.panel_cols) * self.rows..][..self.rows]
    }

    /// The band's digits of column `c`, top to bottom, to write.
    ///
    /// # Panics
    /// If `c` is outside the matrix.
    pub fn column_mut(&mut self, c: usize) -> &mut [u8] {
        &mut self.panels[c / self.panel_cols][(c % self.panel_cols) * self.rows..][..self.rows]
    }
}

/// Rows `rows()` of an existing [`PlaintextMatrix`] across all its columns, writable apart
/// from the other bands (from [`PlaintextMatrix::par_row_bands_mut`]): per panel, the band's
/// part of it, which storage order keeps in one piece.
pub struct RowBand<'a> {
    rows: Range<usize>,
    place: Place,
    panels: Vec<&'a mut [u8]>,
}

impl RowBand<'_> {
    /// The matrix rows the band holds.
    pub fn rows(&self) -> Range<usize> {
        self.rows.clone()
    }

    /// Writes `digit` at row `r`, column `c` and returns the digit it replaces.
    ///
    /// # Panics
    /// If the position is outside the band.
    pub fn replace(&mut self, r: usize, c: usize, digit: u8) -> u8 {
        assert!(self.rows.contains(&r), "a row outside the band");
        assert!(c < self.place.cols, "position outside the matrix");
        let (panel, first, width) = self.place.panel_of(c);
        let at = self.place.in_panel(r, c - first, width) - self.rows.start * width;
        std::mem::replace(&mut self.panels[panel][at], digit)
    }
}

/// The `rows x cols` digits `bytes`, in panels of `panel_cols` columns, cut into bands of
/// `band_rows` rows (the last one shorter): per band, its stretch of each panel, which is one
/// run as a panel's rows lie top to bottom.
fn band_stretches(
    bytes: &mut [u8],
    rows: usize,
    cols: usize,
    panel_cols: usize,
    band_rows: usize,
) -> Vec<Vec<&mut [u8]>> {
    let mut bands: Vec<Vec<&mut [u8]>> = (0..rows.div_ceil(band_rows))
        .map(|_| Vec::with_capacity(cols.div_ceil(panel_cols)))
        .collect();
    let mut rest = bytes;
    for first in (0..cols).step_by(panel_cols) {
        let width = panel_cols.min(cols - first);
        let (panel, tail) = std::mem::take(&mut rest).split_at_mut(rows * width);
        rest = tail;
        for (band, stretch) in bands.iter_mut().zip(panel.chunks_mut(band_rows * width)) {
            band.push(stretch);
        }
    }
    bands
}

/// Rows of a panel tiled by one task of [`PlaintextMatrix::from_column_runs_reusing`]: a cache
/// line of each column.
pub const RUN_BAND_ROWS: usize = 64;
const _: () = assert!(RUN_BAND_ROWS.is_multiple_of(GROUP_ROWS));

/// Bytes kept alive by someone else (for instance a database file read into memory whole).
pub type SharedBytes = Arc<dyn AsRef<[u8]> + Send + Sync>;

/// Where the bytes of a plaintext matrix live. A clone shares them; whichever copy is written
/// first copies them (a served database's next version is made beside the one answering).
#[derive(Clone)]
enum Storage {
    Owned(Arc<LargeBuffer>),
    Shared {
        owner: SharedBytes,
        start: usize,
        len: usize,
    },
}

/// A dense matrix of plaintext digits, one centered digit per byte (two's-complement `i8`), the
/// form in which databases are stored and streamed. The bytes are owned, or shared with their
/// owner (a database file read whole is served without copying each matrix out of it).
///
/// The storage order is that of [`crate::layout`]: column panels, each of groups of four rows,
/// each of steps of 64 columns stored row-major. A matrix-vector product reads the whole matrix
/// as one sequential stream while the panel's slice of the vector stays in cache.
#[derive(Clone)]
pub struct PlaintextMatrix {
    rows: usize,
    cols: usize,
    panel_cols: usize,
    storage: Storage,
}

impl PlaintextMatrix {
    /// A matrix over existing bytes in storage order (see the type's docs); `None` if the length
    /// does not match the shape.
    pub fn from_vec(rows: usize, cols: usize, data: Vec<u8>) -> Option<Self> {
        (rows.checked_mul(cols)? == data.len()).then_some(Self {
            rows,
            cols,
            panel_cols: PANEL_COLS,
            storage: Storage::Owned(Arc::new(data.into())),
        })
    }

    /// A matrix over the `rows · cols` bytes of `owner` from `start`, in storage order; `None`
    /// if they are not all there.
    pub fn from_shared(rows: usize, cols: usize, owner: SharedBytes, start: usize) -> Option<Self> {
        let len = rows.checked_mul(cols)?;
        let available = (*owner).as_ref().len().checked_sub(start)?;
        (available >= len).then_some(Self {
            rows,
            cols,
            panel_cols: PANEL_COLS,
            storage: Storage::Shared { owner, start, len },
        })
    }

    /// A `rows x cols` matrix filled in parallel: `fill(r, c, digits)` writes the digits of row
    /// `r`, columns `c .. c + digits.len()` (a row's stretch inside one panel).
    ///
    /// # Panics
    /// If `rows · cols` overflows.
    pub fn from_fn(
        rows: usize,
        cols: usize,
        fill: impl Fn(usize, usize, &mut [u8]) + Sync,
    ) -> Self {
        Self::from_group_fn(rows, cols, row_by_row(fill))
    }

    /// A `rows x cols` matrix filled in parallel a few rows at a time: `fill(r, c, width,
    /// digits)` writes rows `r .. r + digits.len() / width` (at most [`GROUP_ROWS`]), columns
    /// `c .. c + width`, row-major into `digits`. For sources that hold a column's digits
    /// together, where reading them one row at a time would touch each of them once per row.
    ///
    /// # Panics
    /// If `rows · cols` overflows.
    pub fn from_group_fn(
        rows: usize,
        cols: usize,
        fill: impl Fn(usize, usize, usize, &mut [u8]) + Sync,
    ) -> Self {
        Self::from_fn_in_panels(rows, cols, PANEL_COLS, None, fill)
    }

    /// [`PlaintextMatrix::from_group_fn`] written over `spare`, the buffer of a matrix no
    /// longer needed ([`PlaintextMatrix::into_buffer`]), when it has the size: a setup that
    /// makes many matrices of one shape in turn then reuses their memory instead of having
    /// fresh pages cleared for each.
    ///
    /// # Panics
    /// If `rows · cols` overflows.
    pub fn from_group_fn_reusing(
        rows: usize,
        cols: usize,
        spare: Option<LargeBuffer>,
        fill: impl Fn(usize, usize, usize, &mut [u8]) + Sync,
    ) -> Self {
        Self::from_fn_in_panels(rows, cols, PANEL_COLS, spare, fill)
    }

    /// A `rows x cols` matrix filled in bands of `band_rows` rows (a multiple of
    /// [`GROUP_ROWS`]; the last band may be shorter), one task per band, in parallel:
    /// `fill(band)` writes the band's digits column by column, in any order of columns, and
    /// digits it does not write are zero. For sources that write whole columns at random (a
    /// keyword filter's slots).
    ///
    /// The bands lie in the matrix's own memory, each panel's stretch of a band in one run, and
    /// are put into storage order in place one stretch at a time: the build needs no second
    /// buffer the size of the matrix.
    ///
    /// # Panics
    /// If `band_rows` is not a positive multiple of [`GROUP_ROWS`] or `rows · cols` overflows.
    pub fn from_column_bands(
        rows: usize,
        cols: usize,
        band_rows: usize,
        fill: impl Fn(&mut ColumnBand<'_>) + Sync,
    ) -> Self {
        Self::from_column_bands_in_panels(rows, cols, PANEL_COLS, band_rows, fill)
    }

    /// [`PlaintextMatrix::from_column_bands`] with panels of `panel_cols` columns (tests use
    /// narrow ones).
    pub(crate) fn from_column_bands_in_panels(
        rows: usize,
        cols: usize,
        panel_cols: usize,
        band_rows: usize,
        fill: impl Fn(&mut ColumnBand<'_>) + Sync,
    ) -> Self {
        assert!(panel_cols > 0, "panel width");
        assert!(
            band_rows > 0 && band_rows.is_multiple_of(GROUP_ROWS),
            "bands of whole groups"
        );
        let mut bytes = LargeBuffer::zeroed(rows.checked_mul(cols).expect("matrix size"));
        let mut bands: Vec<ColumnBand<'_>> =
            band_stretches(&mut bytes, rows, cols, panel_cols, band_rows)
                .into_iter()
                .zip((0..rows).step_by(band_rows))
                .map(|(panels, first_row)| ColumnBand {
                    first_row,
                    rows: band_rows.min(rows - first_row),
                    panel_cols,
                    panels,
                })
                .collect();
        bands.par_iter_mut().for_each(&fill);
        let stretches: Vec<(usize, &mut [u8])> = bands
            .into_iter()
            .flat_map(|band| band.panels.into_iter().map(move |run| (band.rows, run)))
            .collect();
        stretches
            .into_par_iter()
            .for_each_init(Vec::new, |columns, (rows, stretch)| {
                columns.clear();
                columns.extend_from_slice(stretch);
                layout::tile_columns(columns, rows, stretch.len() / rows, stretch);
            });
        Self {
            rows,
            cols,
            panel_cols,
            storage: Storage::Owned(Arc::new(bytes)),
        }
    }

    /// A `rows x cols` matrix whose column `c` holds the digits `column(c)` top to bottom (zero
    /// past their end), written over `spare` when it has the size (see
    /// [`PlaintextMatrix::from_group_fn_reusing`]). For sources that hold each column's digits
    /// together (a database's records one after another): each task tiles a band of
    /// [`RUN_BAND_ROWS`] rows of a panel, reading a cache line of each column's run.
    ///
    /// # Panics
    /// If `rows · cols` overflows.
    pub fn from_column_runs_reusing<'d>(
        rows: usize,
        cols: usize,
        spare: Option<LargeBuffer>,
        column: impl Fn(usize) -> &'d [u8] + Sync,
    ) -> Self {
        Self::panel_by_panel(rows, cols, PANEL_COLS, spare, |first, width, panel| {
            panel
                .par_chunks_mut(RUN_BAND_ROWS * width)
                .enumerate()
                .for_each(|(band, stretch)| {
                    let (top, band_rows) = (band * RUN_BAND_ROWS, stretch.len() / width);
                    layout::tile_column_runs(band_rows, width, stretch, |c| {
                        let run = column(first + c);
                        &run[top.min(run.len())..(top + band_rows).min(run.len())]
                    });
                });
        })
    }

    /// A `rows x cols` matrix in panels of `panel_cols` columns, over `spare` when it has the
    /// size: `write(first, width, panel)` writes every byte of the panel of columns `first ..
    /// first + width`, panels left to right.
    fn panel_by_panel(
        rows: usize,
        cols: usize,
        panel_cols: usize,
        spare: Option<LargeBuffer>,
        mut write: impl FnMut(usize, usize, &mut [u8]),
    ) -> Self {
        assert!(panel_cols > 0, "panel width");
        let len = rows.checked_mul(cols).expect("matrix size");
        let mut bytes = match spare {
            Some(spare) if spare.len() == len => spare,
            _ => LargeBuffer::zeroed(len),
        };
        let mut rest: &mut [u8] = &mut bytes;
        for first in (0..cols).step_by(panel_cols) {
            let width = panel_cols.min(cols - first);
            let (panel, tail) = rest.split_at_mut(rows * width);
            rest = tail;
            write(first, width, panel);
        }
        Self {
            rows,
            cols,
            panel_cols,
            storage: Storage::Owned(Arc::new(bytes)),
        }
    }

    /// A copy that holds its bytes alone, copied now (a clone shares them until one of the two
    /// is written).
    pub fn copied(&self) -> Self {
        Self {
            storage: Storage::Owned(Arc::new(LargeBuffer::copy_of(self.as_bytes()))),
            ..self.clone()
        }
    }

    /// The buffer of a matrix that owns its bytes alone (`None` for one over shared bytes or
    /// sharing them with a clone).
    pub fn into_buffer(self) -> Option<LargeBuffer> {
        match self.storage {
            Storage::Owned(bytes) => Arc::into_inner(bytes),
            Storage::Shared { .. } => None,
        }
    }

    /// [`PlaintextMatrix::from_group_fn`] with panels of `panel_cols` columns (tests use narrow
    /// ones).
    pub(crate) fn from_fn_in_panels(
        rows: usize,
        cols: usize,
        panel_cols: usize,
        spare: Option<LargeBuffer>,
        fill: impl Fn(usize, usize, usize, &mut [u8]) + Sync,
    ) -> Self {
        // Every byte is written: each group's rows are filled row-major, then put in step order.
        Self::panel_by_panel(rows, cols, panel_cols, spare, |first, width, panel| {
            panel
                .par_chunks_mut(GROUP_ROWS * width)
                .enumerate()
                .for_each(|(g, group)| {
                    let group_rows = group.len() / width;
                    let mut row_major = vec![0u8; group.len()];
                    fill(g * GROUP_ROWS, first, width, &mut row_major);
                    layout::tile(&row_major, group_rows, width, group);
                });
        })
    }

    /// The row-major `digits` as a matrix with panels of `panel_cols` columns.
    #[cfg(test)]
    pub(crate) fn from_row_major_in_panels(
        rows: usize,
        cols: usize,
        panel_cols: usize,
        digits: &[u8],
    ) -> Self {
        let fill = |r: usize, c: usize, out: &mut [u8]| {
            out.copy_from_slice(&digits[r * cols + c..r * cols + c + out.len()]);
        };
        Self::from_fn_in_panels(rows, cols, panel_cols, None, row_by_row(fill))
    }

    /// Number of rows.
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// Number of columns.
    pub fn cols(&self) -> usize {
        self.cols
    }

    /// The bytes in storage order (see the type's docs).
    pub fn as_bytes(&self) -> &[u8] {
        match &self.storage {
            Storage::Owned(data) => data,
            Storage::Shared { owner, start, len } => &(**owner).as_ref()[*start..*start + *len],
        }
    }

    /// The panels, left to right.
    pub fn panels(&self) -> impl Iterator<Item = Panel<'_>> {
        (0..self.cols.div_ceil(self.panel_cols)).map(|p| self.panel(p))
    }

    /// Panel `p` (the one holding columns from `p · panel_cols`, which must be inside the
    /// matrix).
    fn panel(&self, p: usize) -> Panel<'_> {
        let (rows, first) = (self.rows, p * self.panel_cols);
        let width = self.panel_cols.min(self.cols - first);
        let start = rows * first;
        Panel {
            first,
            width,
            rows,
            bytes: &self.as_bytes()[start..start + rows * width],
        }
    }

    /// Copies the digits of rows `rows` (starting on a group boundary, see
    /// [`GROUP_ROWS`]) and columns `cols` into `out`, row-major with
    /// row stride `cols.len()`.
    ///
    /// # Panics
    /// If the block is outside the matrix, `rows` starts inside a group or `out` is too short.
    pub fn copy_block(&self, rows: Range<usize>, cols: Range<usize>, out: &mut [u8]) {
        assert!(
            rows.end <= self.rows && cols.end <= self.cols,
            "block outside the matrix"
        );
        let width = cols.len();
        for panel in self.panels() {
            let (start, end) = (
                cols.start.max(panel.first),
                cols.end.min(panel.first + panel.width),
            );
            if start >= end {
                continue;
            }
            let mut rows_out = vec![0u8; GROUP_ROWS * (end - start)];
            for (first, group) in panel.groups(rows.clone()) {
                let part = &mut rows_out[..group.rows * (end - start)];
                group.untile(start - panel.first..end - panel.first, part);
                let wanted = rows.end - first;
                for (i, row) in part.chunks_exact(end - start).take(wanted).enumerate() {
                    let at = (first + i - rows.start) * width + start - cols.start;
                    out[at..at + row.len()].copy_from_slice(row);
                }
            }
        }
    }

    /// Copies the digits of rows `rows` (starting on a group boundary, see [`GROUP_ROWS`]) of
    /// every column into `out`, column by column: `out[c · rows.len() + i]` is row
    /// `rows.start + i` of column `c`. Panels are copied in parallel on the rayon pool; the
    /// reads run down the matrix's storage order, the writes of a panel stay in its stretch of
    /// `out`. For readers of whole columns at random (a keyword table's rows read back).
    ///
    /// # Panics
    /// If `rows` is outside the matrix or starts inside a group, or `out` does not hold
    /// `rows.len() · cols` digits.
    pub fn copy_columns(&self, rows: Range<usize>, out: &mut [u8]) {
        assert!(
            rows.end <= self.rows && rows.start.is_multiple_of(GROUP_ROWS),
            "rows outside the matrix or inside a group"
        );
        let len = rows.len();
        assert_eq!(out.len(), len * self.cols, "a digit per row and column");
        let mut stretches = Vec::new();
        let mut rest = out;
        for panel in self.panels() {
            let (stretch, tail) = rest.split_at_mut(panel.width * len);
            stretches.push((panel, stretch));
            rest = tail;
        }
        stretches.into_par_iter().for_each(|(panel, out)| {
            for (first, group) in panel.groups(rows.clone()) {
                for i in 0..group.rows.min(rows.end - first) {
                    let at = first + i - rows.start;
                    for (c, stretch) in group.stretches(i) {
                        for (k, &digit) in stretch.iter().enumerate() {
                            out[(c + k) * len + at] = digit;
                        }
                    }
                }
            }
        });
    }

    /// The digit at row `r`, column `c`.
    ///
    /// # Panics
    /// If the position is outside the matrix.
    pub fn get(&self, r: usize, c: usize) -> u8 {
        self.as_bytes()[self.offset(r, c)]
    }

    /// Writes `digit` at row `r`, column `c`; a matrix over shared bytes, or sharing its bytes
    /// with a clone, first copies them into a buffer of its own (once).
    ///
    /// # Panics
    /// If the position is outside the matrix.
    pub fn set(&mut self, r: usize, c: usize, digit: u8) {
        let offset = self.offset(r, c);
        self.owned_bytes_mut()[offset] = digit;
    }

    /// Writes each `(r, c, digit)` of `writes` (positions inside the matrix, each at most once),
    /// panel by panel in parallel on the rayon pool; shared bytes are first copied as by
    /// [`PlaintextMatrix::set`].
    ///
    /// # Panics
    /// If a position is outside the matrix.
    pub fn set_many(&mut self, writes: impl IntoIterator<Item = (usize, usize, u8)>) {
        let panels = self.cols.div_ceil(self.panel_cols).max(1);
        let mut by_panel: Vec<Vec<(usize, u8)>> = vec![Vec::new(); panels];
        for (r, c, digit) in writes {
            by_panel[c / self.panel_cols].push((self.offset(r, c), digit));
        }
        let panel_bytes = self.rows * self.panel_cols;
        self.owned_bytes_mut()
            .par_chunks_mut(panel_bytes.max(1))
            .zip(by_panel.par_iter())
            .enumerate()
            .for_each(|(p, (bytes, writes))| {
                for &(offset, digit) in writes {
                    bytes[offset - p * panel_bytes] = digit;
                }
            });
    }

    /// Runs `f` on each band of `band_rows` rows (the last one shorter), on the rayon pool, and
    /// returns its results in band order: each band writes its own rows, as a change listed
    /// in row order is cut. Shared bytes are first copied as by [`PlaintextMatrix::set`].
    ///
    /// # Panics
    /// If `band_rows` is not a positive multiple of [`GROUP_ROWS`].
    pub fn par_row_bands_mut<T: Send>(
        &mut self,
        band_rows: usize,
        f: impl Fn(RowBand<'_>) -> T + Sync,
    ) -> Vec<T> {
        assert!(
            band_rows > 0 && band_rows.is_multiple_of(GROUP_ROWS),
            "bands of whole row groups"
        );
        let place = self.place();
        let (rows, cols, panel_cols) = (self.rows, self.cols, self.panel_cols);
        band_stretches(self.owned_bytes_mut(), rows, cols, panel_cols, band_rows)
            .into_par_iter()
            .enumerate()
            .map(|(k, panels)| {
                f(RowBand {
                    rows: k * band_rows..((k + 1) * band_rows).min(rows),
                    place,
                    panels,
                })
            })
            .collect()
    }

    /// Copies the digits of column `c` over `rows` into `out` (as long as `rows`).
    ///
    /// # Panics
    /// If the digits are outside the matrix or `out` has another length.
    pub fn read_column(&self, c: usize, rows: Range<usize>, out: &mut [u8]) {
        assert!(rows.end <= self.rows, "rows outside the matrix");
        assert_eq!(out.len(), rows.len(), "a digit per row");
        let offset = self.place().column_offsets(c);
        let bytes = self.as_bytes();
        for (r, digit) in rows.zip(out) {
            *digit = bytes[offset(r)];
        }
    }

    /// Writes runs of digits down columns: each `(c, first_row, digits)` of `runs` (sorted by
    /// column) puts `digits` in column `c` from row `first_row` on, panel by panel in parallel
    /// on the rayon pool; shared bytes are first copied as by [`PlaintextMatrix::set`].
    ///
    /// # Panics
    /// If a run lies outside the matrix, or the runs are not sorted by column.
    pub fn write_columns(&mut self, runs: &[(usize, usize, &[u8])]) {
        assert!(
            runs.iter()
                .all(|&(c, first, digits)| c < self.cols && first + digits.len() <= self.rows),
            "a run outside the matrix"
        );
        assert!(runs.is_sorted_by_key(|run| run.0), "runs sorted by column");
        let place = self.place();
        let panel_bytes = (self.rows * self.panel_cols).max(1);
        let write = |bytes: &mut [u8], base: usize, runs: &[(usize, usize, &[u8])]| {
            for &(c, first, digits) in runs {
                let offset = place.column_offsets(c);
                for (r, &digit) in (first..).zip(digits) {
                    bytes[offset(r) - base] = digit;
                }
            }
        };
        self.owned_bytes_mut()
            .par_chunks_mut(panel_bytes)
            .enumerate()
            .for_each(|(p, bytes)| {
                let start = runs.partition_point(|run| run.0 < p * place.panel_cols);
                let end = runs.partition_point(|run| run.0 < (p + 1) * place.panel_cols);
                write(bytes, p * panel_bytes, &runs[start..end]);
            });
    }

    /// The bytes in storage order, to write: bytes shared with their owner or a clone are
    /// copied into a buffer of the matrix's own first.
    fn owned_bytes_mut(&mut self) -> &mut [u8] {
        let alone = match &mut self.storage {
            Storage::Owned(bytes) => Arc::get_mut(bytes).is_some(),
            Storage::Shared { .. } => false,
        };
        if !alone {
            self.storage = Storage::Owned(Arc::new(LargeBuffer::copy_of(self.as_bytes())));
        }
        match &mut self.storage {
            Storage::Owned(bytes) => Arc::get_mut(bytes).expect("held alone"),
            Storage::Shared { .. } => unreachable!("copied above"),
        }
    }

    /// Where the digit at row `r`, column `c` lies in storage order (see [`crate::layout`]).
    ///
    /// # Panics
    /// If the position is outside the matrix.
    fn offset(&self, r: usize, c: usize) -> usize {
        self.place().offset(r, c)
    }

    /// The matrix's shape and panel width, which place its digits in storage order.
    fn place(&self) -> Place {
        Place {
            rows: self.rows,
            cols: self.cols,
            panel_cols: self.panel_cols,
        }
    }

    /// The largest squared Euclidean norm of a row, digits read as signed (`0` for an empty
    /// matrix): the noise of an LWE answer grows with it.
    pub fn max_row_norm(&self) -> u64 {
        let mut norms = vec![0u64; self.rows];
        self.add_row_norms(&mut norms);
        norms.into_iter().max().unwrap_or(0)
    }

    /// Adds the squared Euclidean norm of each row, digits read as signed, to `norms` (one per
    /// row): the norms of a wider matrix's rows, summed over bands of its columns.
    ///
    /// # Panics
    /// If `norms` does not have one entry per row.
    pub fn add_row_norms(&self, norms: &mut [u64]) {
        assert_eq!(norms.len(), self.rows, "a norm per row");
        let backend = Backend::selected();
        for panel in self.panels() {
            let groups: Vec<_> = panel.groups(0..self.rows).collect();
            norms
                .par_chunks_mut(GROUP_ROWS)
                .zip(groups)
                .for_each(|(norms, (_, group))| add_group_norms(backend, &group, norms));
        }
    }

    /// `self · v` over Z_{2^32}, digits read as signed.
    ///
    /// # Panics
    /// If `v.len() != self.cols()`.
    pub fn mul_vec(&self, v: &[u32]) -> Vec<u32> {
        assert_eq!(v.len(), self.cols, "vector length");
        kernels::plaintext_mat_vecs(self, &[v]).remove(0)
    }
}

/// Adds each row's squared norm over `group` (digits read as signed) to `norms`, one per row:
/// the whole steps as one stream of bytes, each byte's square summed in the lane of its place
/// in a step (which names its row), then the narrower last step row by row.
fn add_group_norms(backend: Backend, group: &Group<'_>, norms: &mut [u64]) {
    vectorized!(backend, fn(group: &Group<'_> = group, norms: &mut [u64] = norms) {
        let step_bytes = group.rows * STEP_COLS;
        let whole = group.full_steps() * step_bytes;
        // A lane takes at most 2^14 per step: 2^16 steps keep its u32 sum exact.
        for steps in group.bytes[..whole].chunks(step_bytes << 16) {
            let mut lanes = [0u32; GROUP_ROWS * STEP_COLS];
            for step in steps.chunks_exact(step_bytes) {
                for (lane, &digit) in lanes.iter_mut().zip(step) {
                    let digit = i32::from(digit as i8);
                    *lane += (digit * digit) as u32;
                }
            }
            for (norm, row) in norms.iter_mut().zip(lanes.chunks_exact(STEP_COLS)) {
                *norm += row.iter().map(|&x| u64::from(x)).sum::<u64>();
            }
        }
        if !group.width.is_multiple_of(STEP_COLS) {
            for (i, norm) in norms.iter_mut().enumerate().take(group.rows) {
                let stretch = group.stretch(i, group.full_steps());
                *norm += stretch
                    .iter()
                    .map(|&d| (i32::from(d as i8) * i32::from(d as i8)) as u64)
                    .sum::<u64>();
            }
        }
    })
}

/// Where a [`PlaintextMatrix`]'s digits lie in storage order: its shape and panel width.
#[derive(Clone, Copy, Debug)]
struct Place {
    rows: usize,
    cols: usize,
    panel_cols: usize,
}

impl Place {
    /// Where the digit at row `r`, column `c` lies in storage order (see [`crate::layout`]).
    ///
    /// # Panics
    /// If the position is outside the matrix.
    fn offset(&self, r: usize, c: usize) -> usize {
        assert!(
            r < self.rows && c < self.cols,
            "position outside the matrix"
        );
        let (_, first, width) = self.panel_of(c);
        self.rows * first + self.in_panel(r, c - first, width)
    }

    /// The panel holding column `c`: its number, first column and width.
    fn panel_of(&self, c: usize) -> (usize, usize, usize) {
        let panel = c / self.panel_cols;
        let first = panel * self.panel_cols;
        (panel, first, self.panel_cols.min(self.cols - first))
    }

    /// Where the digit at row `r`, column `column` of a panel `width` columns wide lies in the
    /// panel's storage.
    fn in_panel(&self, r: usize, column: usize, width: usize) -> usize {
        let first_row = r / GROUP_ROWS * GROUP_ROWS;
        let group_rows = GROUP_ROWS.min(self.rows - first_row);
        let step = column / STEP_COLS * STEP_COLS;
        let step_width = STEP_COLS.min(width - step);
        first_row * width + step * group_rows + (r - first_row) * step_width + column % STEP_COLS
    }

    /// Where each row of column `c` lies in storage order: [`Place::offset`] for
    /// that column, with the column's part of it worked out once.
    ///
    /// # Panics
    /// If `c` is outside the matrix (and the offset, if the row is).
    fn column_offsets(&self, c: usize) -> impl Fn(usize) -> usize {
        assert!(c < self.cols, "position outside the matrix");
        let (_, first, width) = self.panel_of(c);
        let column = c - first;
        let step = column / STEP_COLS * STEP_COLS;
        let step_width = STEP_COLS.min(width - step);
        let whole_groups = self.rows / GROUP_ROWS * GROUP_ROWS;
        let base = self.rows * first + step * GROUP_ROWS + column % STEP_COLS;
        let place = *self;
        move |r| {
            if r < whole_groups {
                base + r / GROUP_ROWS * GROUP_ROWS * width + r % GROUP_ROWS * step_width
            } else {
                place.offset(r, c)
            }
        }
    }
}

impl PartialEq for PlaintextMatrix {
    fn eq(&self, other: &Self) -> bool {
        (self.rows, self.cols, self.panel_cols) == (other.rows, other.cols, other.panel_cols)
            && self.as_bytes() == other.as_bytes()
    }
}

impl Eq for PlaintextMatrix {}

impl std::fmt::Debug for PlaintextMatrix {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PlaintextMatrix")
            .field("rows", &self.rows)
            .field("cols", &self.cols)
            .field("panel_cols", &self.panel_cols)
            .field("shared", &matches!(self.storage, Storage::Shared { .. }))
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::portable::widen;
    use proptest::prelude::*;

    proptest! {
        /// Columns copied from any group-aligned rows hold the digits `get` reads, in panels
        /// of any width.
        #[test]
        fn copied_columns_hold_each_digit(rows in 1usize..30, cols in 1usize..300, panel in 1usize..130, start in 0usize..8, seed in any::<u8>()) {
            let digit = |r: usize, c: usize| (r * 31 + c * 7) as u8 ^ seed;
            let matrix = PlaintextMatrix::from_column_bands_in_panels(rows, cols, panel, 4, |band| {
                let first = band.first_row();
                for c in 0..cols {
                    for (i, d) in band.column_mut(c).iter_mut().enumerate() {
                        *d = digit(first + i, c);
                    }
                }
            });
            let start = (4 * start).min(rows / 4 * 4);
            let mut out = vec![0u8; (rows - start) * cols];
            matrix.copy_columns(start..rows, &mut out);
            for c in 0..cols {
                for r in start..rows {
                    prop_assert_eq!(out[c * (rows - start) + r - start], digit(r, c));
                    prop_assert_eq!(matrix.get(r, c), digit(r, c));
                }
            }
        }
    }

    proptest! {
        /// Digits replaced band by band come back as they were, and the matrix then holds the
        /// new ones where written and the old ones elsewhere, in panels and bands of any width.
        #[test]
        fn digits_replaced_by_row_bands_come_back_and_the_new_ones_stay(rows in 1usize..30, cols in 1usize..300, panel in 1usize..130, band in 1usize..5, picks in proptest::collection::vec((any::<usize>(), any::<usize>(), any::<u8>()), 0..200)) {
            let digit = |r: usize, c: usize| (r * 31 + c * 7) as u8;
            let before: Vec<u8> = (0..rows * cols).map(|x| digit(x / cols, x % cols)).collect();
            let mut matrix = PlaintextMatrix::from_row_major_in_panels(rows, cols, panel, &before);
            let mut writes: Vec<(usize, usize, u8)> =
                picks.into_iter().map(|(r, c, d)| (r % rows, c % cols, d)).collect();
            writes.sort_by_key(|&(r, c, _)| (r, c));
            writes.dedup_by_key(|&mut (r, c, _)| (r, c));
            let mut expected = before.clone();
            for &(r, c, d) in &writes {
                expected[r * cols + c] = d;
            }
            let olds: Vec<Vec<(usize, usize, u8)>> = matrix.par_row_bands_mut(4 * band, |mut band| {
                let rows = band.rows();
                writes
                    .iter()
                    .filter(|w| rows.contains(&w.0))
                    .map(|&(r, c, d)| (r, c, band.replace(r, c, d)))
                    .collect()
            });
            let olds: Vec<(usize, usize, u8)> = olds.into_iter().flatten().collect();
            let want: Vec<(usize, usize, u8)> = writes.iter().map(|&(r, c, _)| (r, c, digit(r, c))).collect();
            prop_assert_eq!(olds, want);
            prop_assert_eq!(matrix, PlaintextMatrix::from_row_major_in_panels(rows, cols, panel, &expected));
        }
    }

    proptest! {
        /// Runs written down columns land where a row-major copy puts them and read back, in
        /// panels of any width, sorted by column (panels in parallel) or not.
        #[test]
        fn runs_down_columns_are_written_and_read_back(rows in 1usize..40, cols in 1usize..300, panel in 1usize..130, picks in proptest::collection::vec((any::<usize>(), any::<usize>(), proptest::collection::vec(any::<u8>(), 1..12)), 0..30)) {
            let before: Vec<u8> = (0..rows * cols).map(|x| (x * 31 + 7) as u8).collect();
            let mut matrix = PlaintextMatrix::from_row_major_in_panels(rows, cols, panel, &before);
            let mut expected = before.clone();
            let mut runs: Vec<(usize, usize, &[u8])> = Vec::new();
            for (r, c, digits) in &picks {
                let (first, c) = (r % rows, c % cols);
                let digits = &digits[..digits.len().min(rows - first)];
                // Runs do not overlap.
                if runs.iter().any(|&(c2, f2, d2)| c2 == c && first < f2 + d2.len() && f2 < first + digits.len()) {
                    continue;
                }
                for (i, &d) in digits.iter().enumerate() {
                    expected[(first + i) * cols + c] = d;
                }
                runs.push((c, first, digits));
            }
            runs.sort_by_key(|run| run.0);
            matrix.write_columns(&runs);
            prop_assert_eq!(&matrix, &PlaintextMatrix::from_row_major_in_panels(rows, cols, panel, &expected));
            for c in 0..cols {
                let mut column = vec![0u8; rows - rows / 3];
                matrix.read_column(c, rows / 3..rows, &mut column);
                let want: Vec<u8> = (rows / 3..rows).map(|r| expected[r * cols + c]).collect();
                prop_assert_eq!(column, want);
            }
        }
    }

    fn naive(rows: usize, cols: usize, m: &[u32], v: &[u32]) -> Vec<u32> {
        (0..rows)
            .map(|r| {
                (0..cols).fold(0u32, |acc, c| {
                    acc.wrapping_add(m[r * cols + c].wrapping_mul(v[c]))
                })
            })
            .collect()
    }

    proptest! {
        #[test]
        fn column_bands_hold_the_digits_written_by_column(rows in 0usize..30, cols in 0usize..90, panel in 1usize..40, band_groups in 1usize..5, seed in any::<u8>()) {
            let digit = |r: usize, c: usize| ((r * 131 + c * 7) as u8).wrapping_add(seed);
            let band_rows = band_groups * GROUP_ROWS;
            let matrix = PlaintextMatrix::from_column_bands_in_panels(rows, cols, panel, band_rows, |band| {
                assert!(band.first_row().is_multiple_of(band_rows) && band.rows() <= band_rows);
                // Every other column is left as it was: zero.
                for c in (0..cols).step_by(2) {
                    let first = band.first_row();
                    for (i, d) in band.column_mut(c).iter_mut().enumerate() {
                        *d = digit(first + i, c);
                    }
                    let written = band.column(c).to_vec();
                    assert_eq!(written.len(), band.rows());
                }
            });
            let expected: Vec<u8> = (0..rows * cols)
                .map(|x| if x % cols % 2 == 0 { digit(x / cols, x % cols) } else { 0 })
                .collect();
            prop_assert_eq!(matrix, PlaintextMatrix::from_row_major_in_panels(rows, cols, panel, &expected));
        }

        #[test]
        fn column_runs_fill_their_columns(rows in 0usize..150, cols in 0usize..2100, short in 0usize..150, seed in any::<u8>()) {
            let digit = |r: usize, c: usize| ((r * 131 + c * 7) as u8).wrapping_add(seed);
            // Every third column's run stops after `short` digits; zeros follow.
            let runs: Vec<Vec<u8>> = (0..cols)
                .map(|c| {
                    let len = if c % 3 == 0 { short.min(rows) } else { rows };
                    (0..len).map(|r| digit(r, c)).collect()
                })
                .collect();
            let matrix = PlaintextMatrix::from_column_runs_reusing(rows, cols, None, |c| &runs[c]);
            let expected: Vec<u8> = (0..rows * cols)
                .map(|x| runs[x % cols].get(x / cols).copied().unwrap_or(0))
                .collect();
            prop_assert_eq!(matrix, PlaintextMatrix::from_row_major_in_panels(rows, cols, PANEL_COLS, &expected));
        }

        #[test]
        fn row_norms_match_naive(rows in 0usize..11, cols in 0usize..100_000, panel in 1usize..50_000, seed in any::<u64>()) {
            let mut x = seed | 1;
            let bytes: Vec<u8> = (0..rows * cols).map(|_| { x ^= x << 13; x ^= x >> 7; x ^= x << 17; x as u8 }).collect();
            let expected: Vec<u64> = bytes
                .chunks(cols.max(1))
                .map(|row| row.iter().map(|&d| (i64::from(d as i8)).pow(2) as u64).sum::<u64>())
                .collect();
            let matrix = PlaintextMatrix::from_row_major_in_panels(rows, cols, panel, &bytes);
            let mut norms = vec![7u64; rows];
            matrix.add_row_norms(&mut norms);
            let added: Vec<u64> = expected.iter().map(|n| n + 7).collect();
            prop_assert_eq!(norms, if cols == 0 { vec![7; rows] } else { added });
            prop_assert_eq!(matrix.max_row_norm(), expected.iter().copied().max().unwrap_or(0));
        }

        #[test]
        fn panels_hold_the_row_major_digits(rows in 0usize..9, cols in 0usize..90, panel in 1usize..40, seed in any::<u64>()) {
            let mut x = seed | 1;
            let bytes: Vec<u8> = (0..rows * cols).map(|_| { x ^= x << 13; x ^= x >> 7; x ^= x << 17; x as u8 }).collect();
            let matrix = PlaintextMatrix::from_row_major_in_panels(rows, cols, panel, &bytes);
            for r in 0..rows {
                for c in 0..cols {
                    prop_assert_eq!(matrix.get(r, c), bytes[r * cols + c]);
                }
            }
            let mut next_first = 0;
            for p in matrix.panels() {
                prop_assert_eq!(p.first, next_first);
                prop_assert_eq!(p.bytes.len(), rows * p.width);
                next_first += p.width;
            }
            prop_assert_eq!(next_first, cols);
        }

        #[test]
        fn set_digits_read_back_in_place(rows in 1usize..9, cols in 1usize..150, panel in 1usize..70, seed in any::<u64>()) {
            let mut x = seed | 1;
            let mut next = move || { x ^= x << 13; x ^= x >> 7; x ^= x << 17; x };
            let mut bytes: Vec<u8> = (0..rows * cols).map(|_| next() as u8).collect();
            let mut matrix = PlaintextMatrix::from_row_major_in_panels(rows, cols, panel, &bytes);
            for _ in 0..20 {
                let (r, c, digit) = (next() as usize % rows, next() as usize % cols, next() as u8);
                matrix.set(r, c, digit);
                bytes[r * cols + c] = digit;
            }
            let mut many: Vec<(usize, usize, u8)> = Vec::new();
            for r in 0..rows {
                for c in (next() as usize % cols..cols).step_by(3) {
                    many.push((r, c, next() as u8));
                    bytes[r * cols + c] = many.last().unwrap().2;
                }
            }
            matrix.set_many(many);
            prop_assert_eq!(matrix, PlaintextMatrix::from_row_major_in_panels(rows, cols, panel, &bytes));
        }

        #[test]
        fn mat_vec_matches_naive(rows in 0usize..40, cols in 0usize..70, seed in any::<u64>()) {
            let mut x = seed | 1;
            let mut next = move || { x ^= x << 13; x ^= x >> 7; x ^= x << 17; x as u32 };
            let m: Vec<u32> = (0..rows * cols).map(|_| next()).collect();
            let v: Vec<u32> = (0..cols).map(|_| next()).collect();
            let matrix = Matrix::from_vec(rows, cols, m.clone()).unwrap();
            prop_assert_eq!(matrix.mul_vec(&v), naive(rows, cols, &m, &v));
            let others: Vec<Vec<u32>> = (0..3).map(|_| (0..cols).map(|_| next()).collect()).collect();
            let vs: Vec<&[u32]> = std::iter::once(&v[..]).chain(others.iter().map(|o| &o[..])).collect();
            let batch = matrix.mul_vecs(&vs);
            prop_assert_eq!(batch.len(), vs.len());
            for (product, v) in batch.iter().zip(&vs) {
                prop_assert_eq!(product, &naive(rows, cols, &m, v));
            }
        }

        #[test]
        fn large_batches_match_one_at_a_time(k in 1usize..5, seed in any::<u64>()) {
            // 300 x 300 words: past the size multiplied on the calling thread.
            let (rows, cols) = (300, 300);
            let mut x = seed | 1;
            let mut next = move || { x ^= x << 13; x ^= x >> 7; x ^= x << 17; x as u32 };
            let matrix = Matrix::from_vec(rows, cols, (0..rows * cols).map(|_| next()).collect()).unwrap();
            let vs: Vec<Vec<u32>> = (0..k).map(|_| (0..cols).map(|_| next()).collect()).collect();
            let refs: Vec<&[u32]> = vs.iter().map(|v| &v[..]).collect();
            let batch = matrix.mul_vecs(&refs);
            for (product, v) in batch.iter().zip(&vs) {
                prop_assert_eq!(product, &matrix.mul_vec(v));
            }
        }

        #[test]
        fn plaintext_mat_vec_matches_naive(rows in 0usize..40, cols in 0usize..70, panel in 1usize..30, seed in any::<u64>()) {
            let mut x = seed | 1;
            let mut next = move || { x ^= x << 13; x ^= x >> 7; x ^= x << 17; x as u32 };
            let d: Vec<u8> = (0..rows * cols).map(|_| next() as u8).collect();
            let v: Vec<u32> = (0..cols).map(|_| next()).collect();
            let wide: Vec<u32> = d.iter().map(|&b| widen(b)).collect();
            let matrix = PlaintextMatrix::from_row_major_in_panels(rows, cols, panel, &d);
            prop_assert_eq!(matrix.mul_vec(&v), naive(rows, cols, &wide, &v));
        }

        #[test]
        fn blocked_product_matches_naive(rows in 1usize..20, cols in 1usize..40, panel in 1usize..30, n in 1usize..24, block in 1usize..16, seed in any::<u64>()) {
            let mut x = seed | 1;
            let mut next = move || { x ^= x << 13; x ^= x >> 7; x ^= x << 17; x as u32 };
            let d: Vec<u8> = (0..rows * cols).map(|_| next() as u8).collect();
            let a: Vec<u32> = (0..cols * n).map(|_| next()).collect();
            let matrix = PlaintextMatrix::from_row_major_in_panels(rows, cols, panel, &d);
            let mut h = vec![0u32; rows * n];
            let mut first = 0;
            while first < cols {
                let b = block.min(cols - first);
                kernels::plaintext_mat_mul_acc(&matrix, first, &a[first * n..(first + b) * n], n, &mut h);
                first += b;
            }
            for r in 0..rows {
                for k in 0..n {
                    let expected = (0..cols).fold(0u32, |acc, c| acc.wrapping_add(widen(d[r * cols + c]).wrapping_mul(a[c * n + k])));
                    prop_assert_eq!(h[r * n + k], expected);
                }
            }
        }
    }

    #[test]
    fn shape_checks() {
        assert!(Matrix::from_vec(2, 3, vec![0; 5]).is_none());
        assert!(PlaintextMatrix::from_vec(usize::MAX, 2, vec![]).is_none());
        assert_eq!(Matrix::zeros(2, 3).row(1), &[0, 0, 0]);
        let owner: SharedBytes = Arc::new(vec![1u8, 2, 3, 4, 5, 6, 7]);
        let shared = PlaintextMatrix::from_shared(2, 3, owner.clone(), 1).unwrap();
        assert_eq!(shared.as_bytes(), &[2, 3, 4, 5, 6, 7]);
        assert_eq!(
            shared,
            PlaintextMatrix::from_vec(2, 3, vec![2, 3, 4, 5, 6, 7]).unwrap()
        );
        assert!(PlaintextMatrix::from_shared(2, 3, owner.clone(), 2).is_none());
        assert!(PlaintextMatrix::from_shared(1, 1, owner.clone(), 9).is_none());
        // A write copies the shared bytes first; the owner's stay as they were.
        let mut written = shared.clone();
        written.set(1, 2, 9);
        assert_eq!(written.as_bytes(), &[2, 3, 4, 5, 6, 9]);
        assert_eq!(shared.as_bytes(), &[2, 3, 4, 5, 6, 7]);
        assert_eq!((*owner).as_ref(), &[1, 2, 3, 4, 5, 6, 7]);
        // Owned bytes are shared by a clone until one of them writes: the writer copies them,
        // and a matrix that holds its bytes alone then writes in place.
        let clone = written.clone();
        assert_eq!(clone.as_bytes().as_ptr(), written.as_bytes().as_ptr());
        written.set(0, 0, 5);
        assert_ne!(clone.as_bytes().as_ptr(), written.as_bytes().as_ptr());
        assert_eq!(written.as_bytes(), &[5, 3, 4, 5, 6, 9]);
        assert_eq!(clone.as_bytes(), &[2, 3, 4, 5, 6, 9]);
        let alone = written.as_bytes().as_ptr();
        written.set(0, 1, 1);
        assert_eq!(written.as_bytes().as_ptr(), alone);
        let copy = clone.copied();
        assert_ne!(copy.as_bytes().as_ptr(), clone.as_bytes().as_ptr());
        assert_eq!(copy, clone);
        assert!(clone.into_buffer().is_some());
    }
}
