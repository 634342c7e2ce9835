//! The `update-ypir` preset: YPIR over `ypir-1g`'s database (2^30 records of 1 byte,
//! `--records`, `--record-bytes`) and YPIR+SP over the same bytes in records of 32 KiB
//! (`ypir-sp`'s; a 32nd of a database under 1 MiB), each set up once and then changed in place ([`ypir::Server::update_phases`]):
//! 1% of the records at random, then one record. Each version is set against the same run's
//! full setup, its two parts apart (the records' entries with, for YPIR, the first hint and
//! its chunks; the packing plans made again), and made durable as `obscura update` does (the
//! file written, flushed and renamed in `TMPDIR`). Changed and kept records are retrieved
//! after each version with the setup clients held before it, which must be unchanged.

use anyhow::{ensure, Context, Result};
use obscura_pir::ypir::{self, Variant, YpirOptions};
use obscura_pir::{Change, PirClient, PirServer};
use serde::Serialize;

use obscura_store::store::{self, Database};

use crate::measure::{generate, timed};
use crate::progress::Progress;
use crate::report::{human, print_bandwidth, print_correct, Pair, Tables};
use crate::update::{chosen, commit_seconds};
use obscura_math::threads::Pools;

/// YPIR+SP's records: `ypir-sp`'s 32 KiB, or a 32nd of a database under 1 MiB.
const SP_RECORD_BYTES: u64 = 32 << 10;

/// YPIR+SP's records in a database of `bytes` bytes.
fn sp_record_bytes(bytes: u64) -> u64 {
    SP_RECORD_BYTES.min(bytes / 32).max(1)
}

/// One version made in place.
#[derive(Clone, Debug, Serialize)]
pub struct YpirVersion {
    /// What changed: `1% at random` or `one record`.
    pub changes: String,
    /// Records changed.
    pub records: u64,
    /// Entries of the records' matrix changed (YPIR's first-layer digits, YPIR+SP's words).
    pub entries: u64,
    /// Seconds to write the records' entries and, for YPIR, to add `ΔD·A1` to the first hint
    /// and cut its chunks again.
    pub records_seconds: f64,
    /// `records_seconds` over the full setup's.
    pub records_over_build: f64,
    /// Seconds to make the touched groups' masks and packing plans again.
    pub packing_seconds: f64,
    /// Plans made again.
    pub plans: usize,
    /// Seconds of the whole version in memory.
    pub update_seconds: f64,
    /// `update_seconds` over the full setup's.
    pub over_build: f64,
    /// Seconds to commit it as `obscura update` does (its batch appended to the change log and
    /// flushed).
    pub commit_seconds: f64,
    /// `update_seconds` plus `commit_seconds`, over the full setup's: the version durable.
    pub durable_over_build: f64,
    /// Seconds a checkpoint takes to write its file (checksum, write, flush, rename).
    pub write_seconds: f64,
}

/// The JSON object (one per variant) `obscura bench update-ypir --json` prints.
#[derive(Clone, Debug, Serialize)]
pub struct YpirUpdateReport {
    /// Preset name.
    pub preset: String,
    /// `ypir` or `ypir-sp`.
    pub variant: String,
    /// Threads of the setup and the updates.
    pub threads: usize,
    /// Records of the database.
    pub records: u64,
    /// Bytes per record.
    pub record_bytes: u64,
    /// Streaming read bandwidth of the memory.
    pub bandwidth_gbs: Pair,
    /// Seconds of the full setup the versions are set against.
    pub build_seconds: f64,
    /// Packing plans the database has.
    pub plans: usize,
    /// The versions, in the order made.
    pub versions: Vec<YpirVersion>,
    /// Whether the setup stayed the one clients held, and every record retrieved with it read
    /// as the data after each version.
    pub correct: bool,
}

/// Sets up both variants and changes them in place (see the module's docs).
pub fn run(
    records: u64,
    record_bytes: u64,
    pools: &Pools,
    progress: &dyn Progress,
    bandwidth_gbs: Pair,
) -> Result<Vec<YpirUpdateReport>> {
    let bytes = records * record_bytes;
    ensure!(
        bytes >= 1000,
        "update-ypir needs at least 1000 bytes of records"
    );
    let mut reports = Vec::new();
    for (variant, record_bytes) in [
        (Variant::Ypir, record_bytes),
        (Variant::YpirSp, sp_record_bytes(bytes)),
    ] {
        let records = bytes / record_bytes;
        reports.push(run_variant(
            variant,
            records,
            record_bytes,
            pools,
            progress,
            bandwidth_gbs,
        )?);
    }
    Ok(reports)
}

/// One variant's setup and versions.
fn run_variant(
    variant: Variant,
    records: u64,
    record_bytes: u64,
    pools: &Pools,
    progress: &dyn Progress,
    bandwidth_gbs: Pair,
) -> Result<YpirUpdateReport> {
    let mut data = generate(records, record_bytes)?;
    let options = YpirOptions {
        variant: Some(variant),
    };
    let shown = progress.start(<ypir::Server as obscura_pir::scheme::IndexServer>::STEPS);
    let (server, build_seconds) = timed(|| {
        pools
            .all
            .install(|| ypir::Server::from_records(&data, record_bytes, options, &*shown))
    });
    drop(shown);
    let mut database = Database::new(server?);
    let setup = database
        .server::<obscura_pir::ypir::Ypir>()
        .context("a YPIR database")?
        .public_setup()
        .clone();
    let folder = tempfile::tempdir().context("cannot make a folder for the versions' files")?;
    let file = folder.path().join("update-ypir.obs");
    let mut correct = true;
    let mut versions = Vec::new();
    let mut plans = 0;
    for (k, (name, count)) in [("1% at random", (records / 100).max(1)), ("one record", 1)]
        .into_iter()
        .enumerate()
    {
        let indexes = chosen(records, count, false, 0x5950_4952 + k as u64);
        let changes: Vec<Change> = indexes
            .iter()
            .map(|&index| Change::Set {
                index,
                value: record_of(&data, record_bytes, index)
                    .iter()
                    .map(|b| b ^ (0x5a + k as u8))
                    .collect(),
            })
            .collect();
        let server = database
            .server_mut::<obscura_pir::ypir::Ypir>()
            .context("a YPIR database")?;
        let (phases, update_seconds) =
            timed(|| pools.all.install(|| server.update_phases(&changes)));
        let phases = phases?;
        plans = phases.plans.1;
        for change in &changes {
            if let Change::Set { index, value } = change {
                let start = (index * record_bytes) as usize;
                data[start..start + value.len()].copy_from_slice(value);
            }
        }
        if server.public_setup() != &setup {
            correct = false;
            eprintln!("{name}: the setup changed");
        }
        let mut client = ypir::Client::new(setup.clone());
        let kept = (indexes[0] + records / 2 + 1) % records;
        for index in [indexes[0], indexes[indexes.len() - 1], kept] {
            let (query, state) = client.query(index)?;
            let answer = pools.all.install(|| server.answer(&query))?;
            let got = client.decode(state, &answer)?;
            let expected = record_of(&data, record_bytes, index);
            if got != expected {
                correct = false;
                let wrong = got.iter().zip(expected).filter(|(a, b)| a != b).count();
                eprintln!("{name}: record {index} read with {wrong} of its bytes wrong");
            }
        }
        let commit_seconds = commit_seconds(&file, &changes)?;
        let (written, write_seconds) = timed(|| store::write_database(&file, &database));
        written.with_context(|| format!("writing {}", file.display()))?;
        versions.push(YpirVersion {
            changes: name.into(),
            records: count,
            entries: phases.entries as u64,
            records_seconds: phases.records_seconds.as_secs_f64(),
            records_over_build: phases.records_seconds.as_secs_f64() / build_seconds,
            packing_seconds: phases.packing_seconds.as_secs_f64(),
            plans: phases.plans.0,
            update_seconds,
            over_build: update_seconds / build_seconds,
            commit_seconds,
            durable_over_build: (update_seconds + commit_seconds) / build_seconds,
            write_seconds,
        });
    }
    Ok(YpirUpdateReport {
        preset: "update-ypir".into(),
        variant: variant.name().into(),
        threads: pools.all.current_num_threads(),
        records,
        record_bytes,
        bandwidth_gbs,
        build_seconds,
        plans,
        versions,
        correct,
    })
}

/// Record `index` of `data`.
fn record_of(data: &[u8], record_bytes: u64, index: u64) -> &[u8] {
    let start = (index * record_bytes) as usize;
    &data[start..(start + record_bytes as usize).min(data.len())]
}

impl Tables for YpirUpdateReport {
    const WRONG: &'static str =
        "a record retrieved after an update did not read as the data, or the setup changed";

    fn correct(&self) -> bool {
        self.correct
    }

    fn print_tables(&self) {
        println!(
            "{} ({}): {} records of {} bytes, {} threads",
            self.preset, self.variant, self.records, self.record_bytes, self.threads
        );
        print_bandwidth(&self.bandwidth_gbs);
        println!(
            "full setup: {} ({} packing plans); the setup clients hold stays as it is",
            human(self.build_seconds),
            self.plans
        );
        println!(
            "| changes | records | entries | records and hint | / full setup | plans made again | in memory | / full setup | committed to the log | durable / full setup | checkpoint: file written |\n|---|---|---|---|---|---|---|---|---|---|---|"
        );
        for v in &self.versions {
            println!(
                "| {} | {} | {} | {} | {:.3} | {} ({}) | {} | {:.3} | {} | {:.3} | {} |",
                v.changes,
                v.records,
                v.entries,
                human(v.records_seconds),
                v.records_over_build,
                v.plans,
                human(v.packing_seconds),
                human(v.update_seconds),
                v.over_build,
                human(v.commit_seconds),
                v.durable_over_build,
                human(v.write_seconds),
            );
        }
        print_correct(
            self.correct,
            "yes (changed and kept records retrieved with the setup held before each version)",
            "NO",
        );
    }
}
