//! The `streamed-setup` preset: an index database built from a file larger than the setup's
//! memory, streamed to the database file, its time and peak memory set against the disk's own
//! speed measured in the same run (reading the input and writing a file of the database's size,
//! with direct I/O so that the page cache does not flatter either).

use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use obscura_math::memory::LargeBuffer;
use obscura_pir::lwe::{Client, EngineOptions, Lwe, Server, StreamedBuild};
use obscura_pir::{PirClient, PirServer};
use obscura_store::direct::SequentialReader;
use obscura_store::store;
use serde::Serialize;

use crate::lwe::hint_bound;
use crate::measure::{splitmix64, timed};
use crate::memory::peak_of;
use crate::progress::Progress;
use crate::report::{human, human_bytes, print_bandwidth, print_correct, Pair, Params, Tables};
use obscura_math::threads::Pools;

/// Bytes per read or write of the disk probes and of the generated input (a multiple of every
/// direct-I/O alignment).
const CHUNK_BYTES: usize = 16 << 20;

/// Records retrieved from the built database to check it: the first, the last and these many
/// more, in one pass over the database.
const CHECKED_RECORDS: usize = 4;

/// Seconds of the run's steps.
#[derive(Clone, Debug, Default, Serialize)]
pub struct StreamedSeconds {
    /// Reading the input file from the disk (direct I/O).
    pub disk_read: f64,
    /// Writing a file of the database's size to the disk (direct I/O, then `fsync`).
    pub disk_write: f64,
    /// The streamed build: input file to database file, the file synced.
    pub build: f64,
    /// The hint product's NTT butterflies at the rate this machine reaches now.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hint_bound: Option<f64>,
}

/// The JSON object `obscura bench streamed-setup --json` prints.
#[derive(Clone, Debug, Serialize)]
pub struct StreamedReport {
    /// Preset name.
    pub preset: String,
    /// Threads of the build.
    pub threads: usize,
    /// Records in the database.
    pub records: u64,
    /// Bytes per record.
    pub record_bytes: u64,
    /// Matrix shape (rows, columns).
    pub matrix: [u64; 2],
    /// Parameters.
    pub params: Params,
    /// Streaming read bandwidth of the memory.
    pub bandwidth_gbs: Pair,
    /// The resident memory the build added at its peak (see [`crate::memory`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server_peak_bytes: Option<u64>,
    /// Step times.
    pub seconds: StreamedSeconds,
    /// Bytes of the input file and of the database file.
    pub bytes: StreamedBytes,
    /// The build's time over the disk's (reading the input plus writing the database).
    pub build_over_disk: f64,
    /// Whether the disk probes used direct I/O (where the file system refuses it, they read
    /// and write through the page cache, dropped before each probe).
    pub direct_io: bool,
    /// Whether every record retrieved from the built database matched the input.
    pub correct: bool,
}

/// File sizes.
#[derive(Clone, Debug, Default, Serialize)]
pub struct StreamedBytes {
    /// The input file.
    pub input: u64,
    /// The database file.
    pub database: u64,
}

/// Builds a database of `records` random records of `record_bytes` bytes from a file in `dir`
/// (created, and the files removed at the end) and reports it (see the module's docs).
pub fn run(
    records: u64,
    record_bytes: u64,
    dir: &Path,
    options: EngineOptions,
    pools: &Pools,
    progress: &dyn Progress,
    bandwidth_gbs: Pair,
) -> Result<StreamedReport> {
    let data_bytes = records
        .checked_mul(record_bytes)
        .context("--records times --record-bytes overflows")?;
    let plan = StreamedBuild::plan(data_bytes, record_bytes, options)?;
    let database_bytes = store::file_len(plan.setup_bytes(), plan.matrix_bytes());
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let files = Files::new(dir);
    let needed = data_bytes + database_bytes;
    if let Some(free) = free_bytes(dir) {
        anyhow::ensure!(
            free >= needed,
            "{} has {:.1} GiB free; the input and the database need {:.1} GiB",
            dir.display(),
            free as f64 / (1u64 << 30) as f64,
            needed as f64 / (1u64 << 30) as f64
        );
    }
    let result = measure(&plan, data_bytes, &files, pools, progress);
    files.remove();
    let (seconds, peak, direct_io, correct) = result?;
    let g = plan.geometry();
    Ok(StreamedReport {
        preset: "streamed-setup".into(),
        threads: pools.all.current_num_threads(),
        records,
        record_bytes,
        matrix: [g.rows(), g.cols()],
        params: Params::of_params(plan.params()),
        bandwidth_gbs,
        server_peak_bytes: peak,
        build_over_disk: seconds.build / (seconds.disk_read + seconds.disk_write),
        seconds,
        bytes: StreamedBytes {
            input: data_bytes,
            database: database_bytes,
        },
        direct_io,
        correct,
    })
}

/// The files of a run.
struct Files {
    input: PathBuf,
    probe: PathBuf,
    database: PathBuf,
}

impl Files {
    fn new(dir: &Path) -> Self {
        Self {
            input: dir.join("input.bin"),
            probe: dir.join("disk-probe.bin"),
            database: dir.join("database.obs"),
        }
    }

    fn remove(&self) {
        for path in [&self.input, &self.probe, &self.database] {
            let _ = std::fs::remove_file(path);
        }
    }
}

/// Writes the input, measures the disk, builds and checks the database: the step times, the
/// build's peak memory, whether the probes used direct I/O and whether the records matched.
fn measure(
    plan: &StreamedBuild,
    data_bytes: u64,
    files: &Files,
    pools: &Pools,
    progress: &dyn Progress,
) -> Result<(StreamedSeconds, Option<u64>, bool, bool)> {
    write_input(&files.input, data_bytes, progress)?;
    let database_bytes = store::file_len(plan.setup_bytes(), plan.matrix_bytes());
    let (read, disk_read) = timed(|| read_through(&files.input));
    let read_direct = read?;
    let (write, disk_write) = timed(|| write_probe(&files.probe, database_bytes));
    let write_direct = write?;
    std::fs::remove_file(&files.probe)?;
    drop_cached(&files.input)?;

    let ((built, build), peak) = peak_of(|| {
        timed(|| {
            let mut input = SequentialReader::open(&files.input)?;
            let shown = progress.start(&["encode, hint and write the bands"]);
            pools.all.install(|| {
                store::write_streamed(&files.database, plan, &mut input, &*shown)
                    .map_err(anyhow::Error::from)
            })
        })
    });
    built?;
    let database = store::read_database(&files.database)?;
    let server = database
        .server::<Lwe>()
        .context("the built database is not an index database")?;
    let correct = pools
        .all
        .install(|| check_records(server, &files.input, plan))?;
    let seconds = StreamedSeconds {
        disk_read,
        disk_write,
        build,
        hint_bound: hint_bound(server.public_setup(), pools),
    };
    Ok((seconds, peak, read_direct && write_direct, correct))
}

/// Writes `bytes` of pseudo-random records to `path` (unless it already holds that many),
/// synced, showing the progress.
fn write_input(path: &Path, bytes: u64, progress: &dyn Progress) -> Result<()> {
    if std::fs::metadata(path).is_ok_and(|m| m.len() == bytes) {
        return Ok(());
    }
    let shown = progress.start(&["write the input file"]);
    let mut file =
        File::create(path).with_context(|| format!("cannot create {}", path.display()))?;
    let mut chunk = vec![0u8; CHUNK_BYTES];
    let mut written = 0u64;
    while written < bytes {
        let len = (bytes - written).min(CHUNK_BYTES as u64) as usize;
        for (i, word) in chunk[..len].chunks_mut(8).enumerate() {
            let value = splitmix64((written / 8) + i as u64).to_le_bytes();
            word.copy_from_slice(&value[..word.len()]);
        }
        file.write_all(&chunk[..len])?;
        written += len as u64;
        shown(written, bytes);
    }
    file.sync_all()?;
    Ok(())
}

/// Opens `path` for direct I/O where the file system allows it (`true`), else through the page
/// cache with the file's cached pages dropped first (`false`).
fn open_direct(options: &mut OpenOptions, path: &Path) -> Result<(File, bool)> {
    if let Ok(file) = options.clone().custom_flags(libc::O_DIRECT).open(path) {
        return Ok((file, true));
    }
    let file = options
        .open(path)
        .with_context(|| format!("cannot open {}", path.display()))?;
    Ok((file, false))
}

/// Reads all of `path` as the disk delivers it; says whether it used direct I/O.
fn read_through(path: &Path) -> Result<bool> {
    drop_cached(path)?;
    let (mut file, direct) = open_direct(OpenOptions::new().read(true), path)?;
    // Page-aligned, as direct I/O needs.
    let mut buffer = LargeBuffer::zeroed(CHUNK_BYTES);
    while file.read(&mut buffer)? > 0 {}
    Ok(direct)
}

/// Writes `bytes` (rounded up to whole chunks) to a new file at `path` and syncs it; says
/// whether it used direct I/O.
fn write_probe(path: &Path, bytes: u64) -> Result<bool> {
    let (mut file, direct) = open_direct(
        OpenOptions::new().write(true).create(true).truncate(true),
        path,
    )?;
    let buffer = LargeBuffer::zeroed(CHUNK_BYTES);
    for _ in 0..bytes.div_ceil(CHUNK_BYTES as u64) {
        file.write_all(&buffer)?;
    }
    file.sync_all()?;
    Ok(direct)
}

/// Asks the kernel to drop the cached pages of `path` (written and synced, so they are clean).
fn drop_cached(path: &Path) -> Result<()> {
    let file = File::open(path)?;
    // SAFETY: the descriptor is open for the whole call; the advice changes no data.
    #[allow(unsafe_code)]
    let status = unsafe { libc::posix_fadvise(file.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
    anyhow::ensure!(status == 0, "posix_fadvise failed with {status}");
    Ok(())
}

/// Free bytes of the file system holding `dir`, where the system says.
fn free_bytes(dir: &Path) -> Option<u64> {
    let path = std::ffi::CString::new(dir.as_os_str().as_encoded_bytes()).ok()?;
    let mut stats = std::mem::MaybeUninit::<libc::statvfs>::uninit();
    // SAFETY: `path` is a NUL-terminated string and `stats` has room for the answer.
    #[allow(unsafe_code)]
    let status = unsafe { libc::statvfs(path.as_ptr(), stats.as_mut_ptr()) };
    if status != 0 {
        return None;
    }
    // SAFETY: statvfs succeeded, so it filled `stats`.
    #[allow(unsafe_code)]
    let stats = unsafe { stats.assume_init() };
    // The fields' types differ between platforms.
    #[allow(clippy::unnecessary_cast)]
    Some((stats.f_bavail as u64).saturating_mul(stats.f_frsize as u64))
}

/// Retrieves the first and last records and a few in between from `server` in one pass and
/// compares each with the input file's bytes.
fn check_records(server: &Server, input: &Path, plan: &StreamedBuild) -> Result<bool> {
    let g = plan.geometry();
    let records = g.records();
    let mut indices = vec![0, records - 1];
    indices.extend((1..=CHECKED_RECORDS as u64).map(|i| splitmix64(i) % records));
    let mut client = Client::new(server.public_setup().clone());
    let mut queries = Vec::with_capacity(indices.len());
    let mut states = Vec::with_capacity(indices.len());
    for &index in &indices {
        let (query, state) = client.query(index)?;
        queries.push(query);
        states.push(state);
    }
    let answers = server.answer_batch(&queries)?;
    let file = File::open(input)?;
    let mut expected = vec![0u8; g.record_bytes() as usize];
    let mut correct = true;
    for ((index, state), answer) in indices.into_iter().zip(states).zip(&answers) {
        file.read_exact_at(&mut expected, index * g.record_bytes())?;
        correct &= client.decode(state, answer)? == expected;
    }
    Ok(correct)
}

impl Tables for StreamedReport {
    const WRONG: &'static str = "a record retrieved from the streamed database came back wrong";

    fn correct(&self) -> bool {
        self.correct
    }

    fn print_tables(&self) {
        let gib = |bytes: u64| bytes as f64 / (1u64 << 30) as f64;
        println!(
            "preset {}: {} records x {} B ({:.3} GiB) streamed from a file to a database file, {} x {} matrix, {} threads",
            self.preset,
            self.records,
            self.record_bytes,
            gib(self.bytes.input),
            self.matrix[0],
            self.matrix[1],
            self.threads
        );
        let p = &self.params;
        println!(
            "params: {} (n = {}, q = 2^{}, p = {}, {} A)",
            p.set, p.n, p.log_q, p.p, p.matrix
        );
        println!(
            "server memory (resident peak of the build): {}",
            human_bytes(self.server_peak_bytes)
        );
        print_bandwidth(&self.bandwidth_gbs);
        let how = if self.direct_io {
            "direct I/O"
        } else {
            "through the page cache"
        };
        let s = &self.seconds;
        let gbs = |bytes: u64, seconds: f64| bytes as f64 / seconds / 1e9;
        println!("| step | time | |");
        println!("|---|---|---|");
        println!(
            "| disk: read the input ({how}) | {} | {:.2} GB/s |",
            human(s.disk_read),
            gbs(self.bytes.input, s.disk_read)
        );
        println!(
            "| disk: write a file of the database's size ({how}) | {} | {:.2} GB/s |",
            human(s.disk_write),
            gbs(self.bytes.database, s.disk_write)
        );
        println!("| disk: both | {} | |", human(s.disk_read + s.disk_write));
        println!(
            "| streamed build, input file to database file | {} | {:.2}x the disk's time |",
            human(s.build),
            self.build_over_disk
        );
        if let Some(bound) = s.hint_bound {
            println!(
                "| hint product, arithmetic bound (its NTT butterflies at the rate measured now) | {} | |",
                human(bound)
            );
        }
        print_correct(
            self.correct,
            "every retrieved record matched",
            "NO: a record came back wrong",
        );
    }
}
