//! The `update-keyword` preset: `chalamet`'s keyword database (2^20 keys of 32 bytes,
//! `--records` and `--record-bytes` of value, 4-wise filter), then 1% of its keys changed as one
//! version ([`obscura_pir::PirServer::update`] of keyword PIR): half of them upserted with new
//! values, a quarter deleted, and as many new keys upserted as a quarter. It is set against the
//! same run's full build and made durable as `obscura update` does (the file written, flushed
//! and renamed in `TMPDIR`), timed apart. Then a batch that takes the delta table past its bound
//! (a sixteenth of the keys upserted) is applied, which compacts: its time is that of a new
//! main table. Lookups of changed, deleted, new, unchanged and absent keys are checked after
//! each version, and the 1% version's patch against its setup.

use anyhow::{ensure, Context, Result};
use obscura_pir::keyword::{Keyword, KeywordClient, KeywordOptions, KeywordServer};
use obscura_pir::{Change, PirClient, PirServer, SetupMessage};
use serde::Serialize;

use obscura_store::store::{self, Database};

use crate::chalamet::pairs;
use crate::measure::timed;
use crate::progress::Progress;
use crate::report::{human, print_correct, print_full_build, Pair, Tables};
use crate::update::commit_seconds;
use obscura_math::threads::Pools;

/// The keys changed, as a fraction of the database's: 1%.
const CHANGED: u64 = 100;

/// The JSON object `obscura bench update-keyword --json` prints.
#[derive(Clone, Debug, Serialize)]
pub struct KeywordUpdateReport {
    /// Preset name.
    pub preset: String,
    /// Threads of the build and the updates.
    pub threads: usize,
    /// Keys of the database as built.
    pub keys: u64,
    /// Bytes of each value.
    pub value_bytes: u64,
    /// Streaming read bandwidth of the memory.
    pub bandwidth_gbs: Pair,
    /// Seconds of the full build the update is set against.
    pub build_seconds: f64,
    /// Bytes of the encoded public setup as built.
    pub setup_bytes: u64,
    /// Keys upserted by the 1% version (new values and new keys).
    pub upserted: u64,
    /// Keys deleted by it.
    pub deleted: u64,
    /// Seconds to make the 1% version (keys checked, the delta table built).
    pub update_seconds: f64,
    /// `update_seconds` over `build_seconds`.
    pub over_build: f64,
    /// Seconds to commit it as `obscura update` does (its batch appended to the change log and
    /// flushed).
    pub commit_seconds: f64,
    /// `update_seconds` plus `commit_seconds`, over `build_seconds`: the version durable.
    pub durable_over_build: f64,
    /// Seconds a checkpoint takes to write its file (checksum, write, flush, rename).
    pub write_seconds: f64,
    /// Bytes of the new version's setup (main and delta tables).
    pub new_setup_bytes: u64,
    /// Bytes of the patch a client of the database as built fetches instead: the delta table.
    pub patch_bytes: u64,
    /// Keys upserted by the batch that compacts.
    pub compacting_changes: u64,
    /// Seconds of that batch: the main table built again.
    pub compact_seconds: f64,
    /// `compact_seconds` over `build_seconds`.
    pub compact_over_build: f64,
    /// Whether every lookup checked read as the data after each version.
    pub correct: bool,
}

/// Builds the database, changes 1% of its keys, then compacts (see the module's docs).
pub fn run(
    keys: u64,
    value_bytes: u64,
    options: KeywordOptions,
    pools: &Pools,
    progress: &dyn Progress,
    bandwidth_gbs: Pair,
) -> Result<KeywordUpdateReport> {
    ensure!(keys >= 1000, "update-keyword needs at least 1000 keys");
    ensure!(
        !keys.is_multiple_of(99_991),
        "update-keyword spreads its changes with a stride of 99,991"
    );
    let changed = keys / CHANGED;
    let (set, deleted, added) = (changed / 2, changed / 4, changed / 4);
    let compacting = keys / 16 + 1;
    // The database's pairs, then the new keys of both batches.
    let mut all = pools
        .all
        .install(|| pairs(keys + added + compacting, value_bytes));
    let built = &all[..keys as usize];
    let shown = progress.start(&["filling the slots", "computing the hint"]);
    let (server, build_seconds) = timed(|| {
        pools
            .all
            .install(|| KeywordServer::from_pairs(built, options, &*shown))
    });
    drop(shown);
    let mut server = server?;
    let setup_bytes = SetupMessage::to_bytes(server.public_setup()).len() as u64;
    // Distinct keys spread over the database: a prime stride modulo a key count it does not divide.
    let spread = |j: u64| (j * 99_991 % keys) as usize;
    let new_value = |i: usize| vec![0x5a ^ i as u8; value_bytes as usize];
    let mut changes: Vec<Change> = (0..set)
        .map(|j| Change::Upsert {
            key: all[spread(j)].0.clone(),
            value: new_value(spread(j)),
        })
        .collect();
    changes.extend((set..set + deleted).map(|j| Change::Remove {
        key: all[spread(j)].0.clone(),
    }));
    changes.extend(
        all[keys as usize..(keys + added) as usize]
            .iter()
            .map(|(key, value)| Change::Upsert {
                key: key.clone(),
                value: value.clone(),
            }),
    );
    let old_setup = server.public_setup().clone();
    let (updated, update_seconds) = timed(|| pools.all.install(|| server.update(&changes)));
    let patch = updated?.context("a version that keeps the main table makes a patch")?;
    // The values as they now are.
    for j in 0..set {
        all[spread(j)].1 = new_value(spread(j));
    }
    let deleted_key = all[spread(set)].0.clone();
    let lookups = |server: &KeywordServer, live: u64| -> Result<bool> {
        let mut client = KeywordClient::new(server.public_setup().clone());
        let mut correct = server.public_setup().keys() == live;
        let is_deleted = |i: usize| (set..set + deleted).any(|j| spread(j) == i);
        let wanted = [
            spread(0),
            spread(set - 1),
            keys as usize,
            keys as usize / 3 + 1,
        ];
        for (key, expected) in wanted
            .iter()
            .map(|&i| (&all[i].0, (!is_deleted(i)).then_some(&all[i].1)))
            .chain([(&deleted_key, None)])
        {
            let (query, state) = client.query(key)?;
            let answer = pools.all.install(|| server.answer(&query))?;
            correct &= client.decode(state, &answer)?.as_ref() == expected;
        }
        let (query, state) = client.query(b"an absent key")?;
        correct &= client.decode(state, &server.answer(&query)?)?.is_none();
        Ok(correct)
    };
    let live = keys - deleted + added;
    let mut correct = lookups(&server, live)?;
    correct &= old_setup.patched(&patch).ok().as_ref() == Some(server.public_setup());
    let new_setup_bytes = SetupMessage::to_bytes(server.public_setup()).len() as u64;
    let folder = tempfile::tempdir().context("cannot make a folder for the new version's file")?;
    let file = folder.path().join("update-keyword.obs");
    let commit_seconds = commit_seconds(&file, &changes)?;
    let mut database = Database::new(server);
    let (written, write_seconds) = timed(|| store::write_database(&file, &database));
    written.with_context(|| format!("writing {}", file.display()))?;
    let first_new = (keys + added) as usize;
    let compacting_changes: Vec<Change> = all[first_new..]
        .iter()
        .map(|(key, value)| Change::Upsert {
            key: key.clone(),
            value: value.clone(),
        })
        .collect();
    let (compacted, compact_seconds) =
        timed(|| pools.all.install(|| database.update(&compacting_changes)));
    compacted?;
    let server = database.server::<Keyword>().context("a keyword database")?;
    correct &= server.public_setup().delta().is_none();
    correct &= lookups(server, live + compacting)?;
    Ok(KeywordUpdateReport {
        preset: "update-keyword".into(),
        threads: pools.all.current_num_threads(),
        keys,
        value_bytes,
        bandwidth_gbs,
        build_seconds,
        setup_bytes,
        upserted: set + added,
        deleted,
        update_seconds,
        over_build: update_seconds / build_seconds,
        commit_seconds,
        durable_over_build: (update_seconds + commit_seconds) / build_seconds,
        write_seconds,
        new_setup_bytes,
        patch_bytes: patch.len() as u64,
        compacting_changes: compacting,
        compact_seconds,
        compact_over_build: compact_seconds / build_seconds,
        correct,
    })
}

impl Tables for KeywordUpdateReport {
    const WRONG: &'static str = "a lookup after an update did not read as the data";

    fn correct(&self) -> bool {
        self.correct
    }

    fn print_tables(&self) {
        println!(
            "{}: {} keys of 32 bytes, {}-byte values, {} threads",
            self.preset, self.keys, self.value_bytes, self.threads
        );
        print_full_build(&self.bandwidth_gbs, self.build_seconds, self.setup_bytes);
        println!(
            "| upserted | deleted | new version | / full build | committed to the log | durable / full build | checkpoint: file written | new setup bytes | patch bytes | compacting batch | compaction | / full build | correct |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|"
        );
        println!(
            "| {} | {} | {} | {:.3} | {} | {:.3} | {} | {} | {} | {} | {} | {:.3} | {} |",
            self.upserted,
            self.deleted,
            human(self.update_seconds),
            self.over_build,
            human(self.commit_seconds),
            self.durable_over_build,
            human(self.write_seconds),
            self.new_setup_bytes,
            self.patch_bytes,
            self.compacting_changes,
            human(self.compact_seconds),
            self.compact_over_build,
            if self.correct { "yes" } else { "no" }
        );
        println!();
        print_correct(
            self.correct,
            "yes (changed, deleted, new, unchanged and absent keys after both versions)",
            "NO",
        );
    }
}
