//! The `update` preset: an index database of `simple-1g`'s shape (near-square layout, 2^20
//! records of 1 KiB unless `--records` / `--record-bytes` say otherwise) set up once with room
//! for 1% more records, then new versions made in place ([`obscura_pir::lwe::Server::update`]):
//! 0.1%, 1% and 10% of the records changed at random, 1% in one contiguous run, and 1% appended
//! into the room. `update-double` does the same for a DoublePIR database of `double-1g`'s shape
//! (2^30 records of 1 byte), with the cases of changed records at 0.1% and 1% (its builds
//! reserve no room). Each version's time is set against
//! the same run's full setup, and each version is checked: records it changed and records it
//! kept are retrieved with its new setup and compared with the data. Each version is then made
//! durable as `obscura update` does: its batch appended to a change log and flushed (in the
//! temporary folder, `TMPDIR`); and a checkpoint's work is timed apart: the matrix checksummed
//! and the database file written, flushed and renamed into place. Each version's patch is measured as a client holding the setup as set
//! up receives it (one patch, framed as the service sends it) and applies it: its size against
//! the changed records' bytes and indexes, and the time from the old setup's bytes to the new
//! one's bytes and SHA-256, checked against the server's.

use std::path::Path;

use anyhow::{ensure, Context, Result};
use obscura_pir::double;
use obscura_pir::lwe::{EngineOptions, Records, Server};
use obscura_pir::scheme::{QueryOf, Scheme};
use obscura_pir::{
    framing, Change, Encode, Found, Message, PirClient, PirServer, SetupMessage, Target,
};
use obscura_registry::{setup_sha256, Registry};
use serde::Serialize;

use obscura_store::log::ChangeLog;
use obscura_store::store::{self, Database, MatrixHasher};

use crate::measure::{generate, splitmix64, timed};
use crate::progress::Progress;
use crate::report::{human, print_bandwidth, print_correct, Pair, Tables};
use obscura_math::matrix::PlaintextMatrix;
use obscura_math::threads::Pools;

/// Seconds to commit `changes` as `obscura update` does: appended to the change log of the
/// database file at `file` (a new log, as after a checkpoint) and flushed. The log is then
/// removed.
pub(crate) fn commit_seconds(file: &Path, changes: &[Change]) -> Result<f64> {
    let (committed, seconds) = timed(|| {
        let (mut log, _) = ChangeLog::read(file, &[0; 32])?;
        log.append(file, changes)
    });
    committed.with_context(|| format!("committing to {}'s log", file.display()))?;
    obscura_store::log::remove(file)?;
    Ok(seconds)
}

/// Which records a case changes.
#[derive(Clone, Copy)]
enum Picked {
    /// Records at random.
    Random,
    /// One run of records from a random start.
    Run,
    /// New records appended past the last, into the room the build reserved.
    Appended,
}

/// The changes measured: a name, the fraction of records, and which records.
const CASES: [(&str, f64, Picked); 5] = [
    ("0.1% at random", 0.001, Picked::Random),
    ("1% at random", 0.01, Picked::Random),
    ("10% at random", 0.1, Picked::Random),
    ("1% in one run", 0.01, Picked::Run),
    ("1% appended", 0.01, Picked::Appended),
];

/// Room the build reserves past the records, as a fraction of them: the appended case's.
const ROOM: f64 = 0.01;

/// Records retrieved from each version to check it: changed ones and kept ones.
const CHECKED: usize = 3;

/// One version made in place.
#[derive(Clone, Debug, Serialize)]
pub struct UpdateCase {
    /// What changed.
    pub name: String,
    /// Records changed.
    pub records: u64,
    /// Entries of the database matrix whose digit changed.
    pub entries: u64,
    /// Seconds to make the version in a database held alone (digits rewritten, `ΔD·A` added
    /// to the hint, the setup's new digest).
    pub seconds: f64,
    /// `seconds` over the full setup's.
    pub over_setup: f64,
    /// Seconds to make the version beside the one answering, as `obscura serve` replays it when
    /// it catches up: `seconds`' work without the patch, plus the copy of each matrix written
    /// (a clone shares them until then).
    pub served_seconds: f64,
    /// `served_seconds` over the full setup's.
    pub served_over_setup: f64,
    /// Seconds to commit the version as `obscura update` does: its batch appended to the
    /// database file's change log and the log flushed to disk.
    pub commit_seconds: f64,
    /// `seconds` plus `commit_seconds`, over the full setup's: the version durable.
    pub durable_over_setup: f64,
    /// Seconds to checksum the new version's matrix (SHA-256 of its 64 MiB chunks), part of a
    /// checkpoint.
    pub checksum_seconds: f64,
    /// Seconds a checkpoint takes to write the new version's file: checksum, write, flush,
    /// rename, flush of the folder (in the background, once the log is due).
    pub write_seconds: f64,
    /// The patch a client of the previous version applies, for a scheme that makes patches.
    #[serde(flatten)]
    pub patch: Option<Patched>,
    /// Whether every record retrieved with the new setup matched the data.
    pub correct: bool,
}

/// A version's patch, as a client of the previous version receives and applies it.
#[derive(Clone, Debug, Serialize)]
pub struct Patched {
    /// Bytes of the patch (framed as the service sends it).
    #[serde(rename = "patch_bytes")]
    pub bytes: u64,
    /// `bytes` over the changed records' bytes and their indexes (8 bytes each).
    #[serde(rename = "patch_over_changed")]
    pub over_changed: f64,
    /// Seconds for a client to apply the patch to the old setup's bytes (`ΔD·A` added to its
    /// hint where the scheme patches in place, decoded and encoded again otherwise), the new
    /// setup checked and hashed (its ETag).
    pub client_seconds: f64,
}

/// The JSON object `obscura bench update --json` prints.
#[derive(Clone, Debug, Serialize)]
pub struct UpdateReport {
    /// Preset name.
    pub preset: String,
    /// Threads of the setup and the updates.
    pub threads: usize,
    /// Records in the database.
    pub records: u64,
    /// Bytes per record.
    pub record_bytes: u64,
    /// Matrix shape (rows, columns).
    pub matrix: [u64; 2],
    /// Streaming read bandwidth of the memory.
    pub bandwidth_gbs: Pair,
    /// Seconds of the full setup (encoding and hint) the versions are set against.
    pub setup_seconds: f64,
    /// Bytes of the encoded public setup (what a client without a patch downloads).
    pub setup_bytes: u64,
    /// The versions, each made from the database as set up.
    pub cases: Vec<UpdateCase>,
    /// Whether every version's retrievals were correct.
    pub correct: bool,
}

/// The schemes whose versions the preset makes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UpdatedScheme {
    /// The LWE engine (`update`): every case, the appended one into room the build reserves.
    Index,
    /// DoublePIR (`update-double`): the cases of changed records (its builds reserve no room).
    Double,
}

/// Sets up the database and makes each version from it (see the module's docs).
pub fn run(
    scheme: UpdatedScheme,
    records: u64,
    record_bytes: u64,
    options: EngineOptions,
    pools: &Pools,
    progress: &dyn Progress,
    bandwidth_gbs: Pair,
) -> Result<UpdateReport> {
    let run = Run {
        records,
        record_bytes,
        pools,
        progress,
    };
    let report = match scheme {
        UpdatedScheme::Index => {
            let room = (records as f64 * ROOM).round() as u64;
            let options = EngineOptions {
                capacity: Some(records + room),
                ..options
            };
            run.versions::<Server>("update", options, room, &CASES)?
        }
        UpdatedScheme::Double => {
            run.versions::<double::Server>("update-double", options, 0, &CASES[..2])?
        }
    };
    Ok(UpdateReport {
        bandwidth_gbs,
        ..report
    })
}

/// What every case of a run shares.
struct Run<'a> {
    records: u64,
    record_bytes: u64,
    pools: &'a Pools,
    progress: &'a dyn Progress,
}

impl Run<'_> {
    /// Sets a database of scheme `T` up (with room for `room` more records) and makes the
    /// version of each of `cases` from it.
    fn versions<T>(
        &self,
        preset: &str,
        options: EngineOptions,
        room: u64,
        cases: &[(&str, f64, Picked)],
    ) -> Result<UpdateReport>
    where
        T: for<'b> PirServer<Data<'b> = Records<'b>, Options = EngineOptions> + Clone,
    {
        let (records, record_bytes, pools) = (self.records, self.record_bytes, self.pools);
        ensure!(records >= 1000, "update needs at least 1000 records");
        let data = generate(records, record_bytes)?;
        let shown = self.progress.start(&["full setup"]);
        let build = || {
            let records = Records::Raw {
                bytes: &data,
                record_bytes,
            };
            T::build(records, options, &*shown)
        };
        let (server, setup_seconds) = timed(|| pools.all.install(build));
        drop(shown);
        let server = server?;
        let matrix = {
            let first = server.matrices()[0];
            [first.rows() as u64, first.cols() as u64]
        };
        let old_setup = SetupMessage::to_bytes(server.public_setup());
        let folder = tempfile::tempdir().context("cannot make a folder for the versions' files")?;
        let mut measured = Vec::new();
        for (i, &(name, fraction, picked)) in cases.iter().enumerate() {
            let count = ((records as f64 * fraction).round() as u64).clamp(1, records);
            let indices = match picked {
                Picked::Appended => (records..records + count.min(room)).collect(),
                Picked::Random => chosen(records, count, false, i as u64),
                Picked::Run => chosen(records, count, true, i as u64),
            };
            let values: Vec<Vec<u8>> = indices
                .iter()
                .map(|&index| {
                    (0..record_bytes)
                        .map(|k| splitmix64(index ^ (k << 32) ^ (i as u64) << 60) as u8)
                        .collect()
                })
                .collect();
            let changes: Vec<Change> = indices
                .iter()
                .zip(&values)
                .map(|(&index, value)| match picked {
                    Picked::Appended => Change::Append {
                        index,
                        value: value.clone(),
                    },
                    _ => Change::Set {
                        index,
                        value: value.clone(),
                    },
                })
                .collect();
            // Made in a database held alone, its matrices its own (copied before the clock
            // starts), and beside the version answering, as a server catching up replays it
            // (the clone shares the matrices until the update writes them; no patch is made).
            let mut version = held_alone(&server)?;
            let mut beside = server.clone();
            let (replayed, served_seconds) =
                timed(|| pools.all.install(|| beside.replay(&changes)));
            replayed?;
            drop(beside);
            let (updated, seconds) = timed(|| pools.all.install(|| version.update(&changes)));
            let patch = updated?;
            let entries = changed_entries(server.matrices()[0], version.matrices()[0]);
            let mut correct = check(&version, &data, record_bytes, &indices, &values)?;
            let new_setup = SetupMessage::to_bytes(version.public_setup());
            let patched = match patch {
                Some(patch) => {
                    let applied = apply_as_client(&old_setup, patch, &new_setup, pools)?;
                    correct &= applied.made_new_setup;
                    let changed_bytes = indices.len() as u64 * (record_bytes + 8);
                    Some(Patched {
                        bytes: applied.bytes,
                        over_changed: applied.bytes as f64 / changed_bytes as f64,
                        client_seconds: applied.seconds,
                    })
                }
                None => None,
            };
            drop(new_setup);
            let (_, checksum_seconds) = timed(|| {
                let mut hasher = MatrixHasher::default();
                for matrix in version.matrices() {
                    hasher.update(matrix.as_bytes());
                }
                hasher.finish()
            });
            let file = folder.path().join("update.obs");
            let commit_seconds = commit_seconds(&file, &changes)?;
            let (written, write_seconds) =
                timed(|| store::write_database(&file, &Database::new(version)));
            written.with_context(|| format!("writing {}", file.display()))?;
            std::fs::remove_file(&file).with_context(|| format!("removing {}", file.display()))?;
            measured.push(UpdateCase {
                name: name.into(),
                records: indices.len() as u64,
                entries,
                seconds,
                over_setup: seconds / setup_seconds,
                served_seconds,
                served_over_setup: served_seconds / setup_seconds,
                commit_seconds,
                durable_over_setup: (seconds + commit_seconds) / setup_seconds,
                checksum_seconds,
                write_seconds,
                patch: patched,
                correct,
            });
        }
        Ok(UpdateReport {
            preset: preset.into(),
            threads: pools.all.current_num_threads(),
            records,
            record_bytes,
            matrix,
            bandwidth_gbs: Pair::default(),
            setup_seconds,
            setup_bytes: old_setup.len() as u64,
            correct: measured.iter().all(|case| case.correct),
            cases: measured,
        })
    }
}

/// A copy of `server` that holds its matrices alone (its setup's hint is still shared, and
/// copied at the first change).
fn held_alone<T: PirServer>(server: &T) -> Result<T> {
    let matrices = server
        .matrices()
        .into_iter()
        .map(PlaintextMatrix::copied)
        .collect();
    Ok(T::from_parts(server.public_setup().clone(), matrices)?)
}

/// A patch as a client of the previous version receives it (framed, as the service sends it)
/// and applies it.
pub(crate) struct ClientPatch {
    /// Bytes of the framed patch.
    pub bytes: u64,
    /// Seconds from the old setup's bytes to the new setup's bytes and SHA-256.
    pub seconds: f64,
    /// Whether the setup made is the server's new one, byte for byte and by SHA-256.
    pub made_new_setup: bool,
}

/// A client holding `old_setup` applies `patch` (see [`ClientPatch`]); `new_setup` is the
/// server's.
pub(crate) fn apply_as_client(
    old_setup: &[u8],
    patch: Vec<u8>,
    new_setup: &[u8],
    pools: &Pools,
) -> Result<ClientPatch> {
    let chain = framing::encode(&[patch]);
    // The client holds its setup's bytes (read from its cache) and patches them.
    let held = old_setup.to_vec();
    let (patched, seconds) = timed(|| {
        pools.all.install(|| {
            let patched = Registry::default().patch_setup(held, &chain)?;
            let sha256 = setup_sha256(&patched);
            anyhow::Ok((patched, sha256))
        })
    });
    let (patched, sha256) = patched?;
    Ok(ClientPatch {
        bytes: chain.len() as u64,
        seconds,
        made_new_setup: patched == new_setup && sha256 == setup_sha256(new_setup),
    })
}

/// `count` distinct record indices below `records`: pseudo-random ones, or one run from a
/// pseudo-random start.
pub(crate) fn chosen(records: u64, count: u64, run: bool, salt: u64) -> Vec<u64> {
    if run {
        let start = splitmix64(salt) % (records - count + 1);
        return (start..start + count).collect();
    }
    let mut picked = std::collections::BTreeSet::new();
    let mut x = salt;
    while (picked.len() as u64) < count {
        x = x.wrapping_add(1);
        picked.insert(splitmix64(x) % records);
    }
    picked.into_iter().collect()
}

/// Entries whose digit differs between `a` and `b`.
fn changed_entries(
    a: &obscura_math::matrix::PlaintextMatrix,
    b: &obscura_math::matrix::PlaintextMatrix,
) -> u64 {
    a.as_bytes()
        .iter()
        .zip(b.as_bytes())
        .filter(|(x, y)| x != y)
        .count() as u64
}

/// Retrieves a few changed records and a few kept ones with `version`'s setup; whether each is
/// its new value or its value in `data`.
fn check<T: PirServer>(
    version: &T,
    data: &[u8],
    record_bytes: u64,
    indices: &[u64],
    values: &[Vec<u8>],
) -> Result<bool> {
    let mut client = <T::Scheme as Scheme>::Client::new(version.public_setup().clone());
    let mut correct = true;
    let changed = indices
        .iter()
        .zip(values)
        .step_by((indices.len() / CHECKED).max(1));
    for (&index, value) in changed.take(CHECKED) {
        correct &= retrieve(version, &mut client, index)? == *value;
    }
    let records = (data.len() as u64).div_ceil(record_bytes);
    // Records spread over the database, each the first one from there that was not changed.
    let kept = (0..CHECKED as u64).filter_map(|k| {
        (k * records / CHECKED as u64..records).find(|index| indices.binary_search(index).is_err())
    });
    for index in kept {
        let start = (index * record_bytes) as usize;
        let end = (start + record_bytes as usize).min(data.len());
        correct &= retrieve(version, &mut client, index)? == data[start..end];
    }
    Ok(correct)
}

/// Record `index` of `server` through `client`, as a front end looks it up.
fn retrieve<T: PirServer>(
    server: &T,
    client: &mut <T::Scheme as Scheme>::Client,
    index: u64,
) -> Result<Vec<u8>> {
    let (request, pending) = client.lookup(Target::Index(index))?;
    let query = QueryOf::<T::Scheme>::from_bytes(&request, server.public_setup())?;
    let answer = server.answer(&query)?.to_bytes();
    match client.found(pending, &answer)? {
        Found::Record(record) => Ok(record),
        other => anyhow::bail!("record {index} came back as {other:?}"),
    }
}

impl Tables for UpdateReport {
    const WRONG: &'static str = "a record retrieved after an update did not match";

    fn correct(&self) -> bool {
        self.correct
    }

    fn print_tables(&self) {
        println!(
            "{}: {} records x {} bytes, {} x {} matrix, {} threads",
            self.preset,
            self.records,
            self.record_bytes,
            self.matrix[0],
            self.matrix[1],
            self.threads
        );
        print_bandwidth(&self.bandwidth_gbs);
        println!(
            "full setup: {}; public setup: {} bytes",
            human(self.setup_seconds),
            self.setup_bytes
        );
        println!(
            "| change | records | entries | new version | / full setup | served beside the old | / full setup | committed to the log | durable / full setup | checkpoint: checksum | checkpoint: file written | patch bytes | / changed | client applies | correct |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
        );
        for case in &self.cases {
            let (patch, over, client) = match &case.patch {
                Some(p) => (
                    p.bytes.to_string(),
                    format!("{:.3}", p.over_changed),
                    human(p.client_seconds),
                ),
                None => ("none (new setup)".into(), "-".into(), "-".into()),
            };
            println!(
                "| {} | {} | {} | {} | {:.3} | {} | {:.3} | {} | {:.3} | {} | {} | {patch} | {over} | {client} | {} |",
                case.name,
                case.records,
                case.entries,
                human(case.seconds),
                case.over_setup,
                human(case.served_seconds),
                case.served_over_setup,
                human(case.commit_seconds),
                case.durable_over_setup,
                human(case.checksum_seconds),
                human(case.write_seconds),
                if case.correct { "yes" } else { "no" }
            );
        }
        println!();
        print_correct(
            self.correct,
            "yes (changed and kept records retrieved from every version; every patch made its setup)",
            "NO",
        );
    }
}
