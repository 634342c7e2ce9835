//! A setup that streams: the records are read a band of columns at a time, and each band is
//! encoded, added to the hint and handed on in the matrix's storage order, so that memory holds
//! a few bands and the hint whatever the size of the database (see [`StreamedBuild`]).
//!
//! The storage order cuts the matrix into panels of whole columns ([`obscura_math::layout`]),
//! and a column holds consecutive records, so a band of panels is one contiguous stretch of the
//! records and one contiguous stretch of the matrix: both files are read and written in order.
//! Reading the next band, encoding and multiplying this one, and writing the last one overlap.
//!
//! A streamed setup uses the plaintext modulus that is correct for any data
//! ([`Geometry::plan`]): choosing a larger one from the data's own row norms, as
//! [`Server::from_records`](super::Server::setup) does, needs every row whole before the first byte of
//! the matrix is written.

use std::io::Read;
use std::ops::Range;
use std::sync::mpsc;

use obscura_math::expand::MatrixSeed;
use obscura_math::hint;
use obscura_math::layout::PANEL_COLS;
use obscura_math::matrix::{Matrix, PlaintextMatrix};
use obscura_math::memory::LargeBuffer;

use super::layout::Geometry;
use super::server::encode_block;
use super::setup::{matrix_a, EngineOptions, PublicSetup, RecordFormat};
use crate::params::{worst_row_norm, LweParams, MatrixKind};
use crate::scheme::Progress;
use crate::PirError;

/// Bytes of matrix a band holds by default, about (a band starts at a panel, and at a block of a
/// negacyclic `A`; it is at least one of each).
const BAND_BYTES: u64 = 256 << 20;

/// Bands held at once on each side: one being read (or written) while another is encoded.
const BANDS_IN_FLIGHT: u64 = 2;

/// What went wrong streaming a setup.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StreamError {
    /// The records could not be read.
    #[error("cannot read the records")]
    Read(#[source] std::io::Error),
    /// The matrix could not be written.
    #[error("cannot write the matrix")]
    Write(#[source] std::io::Error),
    /// The parameters do not make a setup.
    #[error(transparent)]
    Pir(#[from] PirError),
}

/// The plan of a streamed setup of an LWE database of fixed-size records: its geometry, the
/// sizes of what it writes and the memory it holds, known before a byte is read.
#[derive(Clone, Debug)]
pub struct StreamedBuild {
    geometry: Geometry,
    /// Checked at the worst row norm the geometry allows, before a band is read.
    params: LweParams,
    band_cols: u64,
}

impl StreamedBuild {
    /// Plans the setup of `data_bytes` bytes of records of `record_bytes` bytes (the last one
    /// may be short).
    pub fn plan(
        data_bytes: u64,
        record_bytes: u64,
        options: EngineOptions,
    ) -> Result<Self, PirError> {
        let geometry = Geometry::plan(data_bytes, record_bytes, options.layout, options.params)?;
        let matrix = options
            .matrix
            .unwrap_or(MatrixKind::default_for(options.params));
        let (cols, log_p) = (geometry.cols(), geometry.log_p());
        let params = LweParams::new(
            options.params,
            matrix,
            log_p,
            cols,
            worst_row_norm(cols, log_p),
        )?;
        Ok(Self {
            geometry,
            params,
            band_cols: 1,
        }
        .with_band_bytes(BAND_BYTES))
    }

    /// This plan with bands of about `bytes` bytes of matrix (of records, for digits of 8
    /// bits), rounded down to whole panels (and blocks of a negacyclic `A`), at least one:
    /// smaller bands hold less memory, larger ones make fewer passes. 256 MiB by default.
    pub fn with_band_bytes(self, bytes: u64) -> Self {
        let unit = match self.params.matrix {
            MatrixKind::Negacyclic => lcm(PANEL_COLS as u64, self.params.n() as u64),
            MatrixKind::Uniform => PANEL_COLS as u64,
        };
        let units = (bytes / self.geometry.rows().max(1) / unit).max(1);
        Self {
            band_cols: (units * unit).min(self.geometry.cols()),
            ..self
        }
    }

    /// The geometry of the database.
    pub fn geometry(&self) -> &Geometry {
        &self.geometry
    }

    /// The parameter set, how its public matrix is expanded and the plaintext modulus.
    pub fn params(&self) -> &LweParams {
        &self.params
    }

    /// Bytes of the encoded public setup it produces.
    pub fn setup_bytes(&self) -> u64 {
        PublicSetup::encoded_len(&self.geometry, self.params.set)
    }

    /// Bytes of the matrix it writes.
    pub fn matrix_bytes(&self) -> u64 {
        self.geometry.rows() * self.geometry.cols()
    }

    /// The most memory it holds: the hint and the row norms throughout, with the bands of
    /// records and of matrix in flight and the hint product's working memory while it streams,
    /// then the public setup encoded at the end.
    pub fn peak_bytes(&self) -> u64 {
        let g = &self.geometry;
        let column_bytes = g.per_column() * g.record_bytes();
        let bands = BANDS_IN_FLIGHT * self.band_cols * (column_bytes + g.rows());
        let hint_bytes = g.rows() * self.params.n() as u64 * 4;
        let working = hint::working_bytes(
            self.band_cols as usize,
            self.params.n(),
            rayon::current_num_threads(),
        );
        hint_bytes + g.rows() * 8 + (bands + working).max(self.setup_bytes())
    }

    /// Runs the setup: reads the records in order from `records` (exactly the planned bytes)
    /// and hands the matrix, in storage order, to `matrix` a band at a time; returns the public
    /// setup. `progress(done, total)` follows the columns.
    pub fn run(
        &self,
        records: &mut (dyn Read + Send),
        matrix: &mut (dyn FnMut(&[u8]) -> std::io::Result<()> + Send),
        progress: Progress<'_>,
    ) -> Result<PublicSetup, StreamError> {
        let g = self.geometry;
        let seed = MatrixSeed::random().map_err(PirError::from)?;
        let a = matrix_a(&self.params, seed, &g);
        let mut hint = Matrix::zeros(g.rows() as usize, self.params.n());
        let mut norms = vec![0u64; g.rows() as usize];
        let bands: Vec<Range<u64>> = (0..g.cols())
            .step_by(self.band_cols as usize)
            .map(|first| first..(first + self.band_cols).min(g.cols()))
            .collect();
        let column_bytes = g.per_column() * g.record_bytes();
        let band_bytes =
            |c: &Range<u64>| (c.end * column_bytes).min(g.data_bytes()) - c.start * column_bytes;

        std::thread::scope(|scope| {
            // Records flow reader → encoder in buffers that come back to be filled again.
            let (filled, read) = mpsc::sync_channel::<std::io::Result<Vec<u8>>>(0);
            let (give_back, free) = mpsc::sync_channel::<Vec<u8>>(BANDS_IN_FLIGHT as usize);
            for _ in 0..BANDS_IN_FLIGHT {
                give_back.send(Vec::new()).expect("room for every buffer");
            }
            let sizes: Vec<u64> = bands.iter().map(band_bytes).collect();
            scope.spawn(move || {
                for size in sizes {
                    let Ok(mut buffer) = free.recv() else { return };
                    buffer.resize(size as usize, 0);
                    let result = records.read_exact(&mut buffer).map(|()| buffer);
                    let failed = result.is_err();
                    if filled.send(result).is_err() || failed {
                        return;
                    }
                }
            });
            // Encoded bands flow encoder → writer, one waiting while one is written; their
            // buffers come back to be encoded over.
            let (encoded, to_write) = mpsc::sync_channel::<PlaintextMatrix>(0);
            let (written, spares) = mpsc::sync_channel::<LargeBuffer>(BANDS_IN_FLIGHT as usize);
            let writer = scope.spawn(move || -> std::io::Result<()> {
                for band in to_write {
                    matrix(band.as_bytes())?;
                    if let Some(buffer) = band.into_buffer() {
                        let _ = written.try_send(buffer);
                    }
                }
                Ok(())
            });

            for (index, columns) in bands.iter().enumerate() {
                let Ok(bytes) = read.recv() else { break };
                let bytes = bytes.map_err(StreamError::Read)?;
                // Past the first bands, wait for the writer to hand one back.
                let spare = if index < BANDS_IN_FLIGHT as usize {
                    None
                } else {
                    spares.recv().ok()
                };
                let offset = columns.start * column_bytes;
                let band = encode_block(&bytes, offset, &g, 0..g.rows(), columns.clone(), spare);
                let _ = give_back.send(bytes);
                hint::hint_accumulate(&band, &a, columns.start as usize, &mut hint, &|_, _| {});
                band.add_row_norms(&mut norms);
                if encoded.send(band).is_err() {
                    break; // the writer failed: its error is reported below
                }
                progress(columns.end, g.cols());
            }
            drop(encoded);
            writer
                .join()
                .expect("the writer does not panic")
                .map_err(StreamError::Write)
        })?;

        let row_norm = norms.into_iter().max().unwrap_or(0);
        Ok(PublicSetup::new(
            self.params.set,
            self.params.matrix,
            RecordFormat::Raw,
            g,
            row_norm,
            seed,
            hint,
        )?)
    }
}

/// The least common multiple of two positive numbers.
fn lcm(a: u64, b: u64) -> u64 {
    let (mut x, mut y) = (a, b);
    while y != 0 {
        (x, y) = (y, x % y);
    }
    a / x * b
}
