//! The `update-merkle` preset: a Merkle tree of 2^20 leaves (`--records`) built for TreePIR
//! with room for a sixteenth more, then that sixteenth (2^16 leaves) appended in place as one
//! version ([`obscura_pir::PirServer::update`] of TreePIR), set against the same run's full
//! build (leaves hashed, tree, colour classes and every sub-database's setup). The new version
//! is checked: its root against a tree built of all the leaves, audit paths of appended and
//! earlier leaves retrieved and verified, and the consistency proof from the earlier version
//! verified; then made durable as `obscura update` does (the file written, flushed and renamed
//! in `TMPDIR`), timed apart. The version's patch is measured as a client of the tree as built
//! receives it (framed as the service sends it) and applies it: its size against the setup's,
//! and the time from the old setup's bytes to the new one's bytes and SHA-256. Last, one more
//! leaf is appended as a version of its own, as a log that takes its entries one at a time does.

use anyhow::{ensure, Context, Result};
use obscura_pir::batch::merkle::{self, Hash, MerkleTree};
use obscura_pir::batch::treepir::{TreePirClient, TreePirServer};
use obscura_pir::lwe::EngineOptions;
use obscura_pir::{Change, PirServer, SetupMessage};
use serde::Serialize;

use obscura_store::store::{self, Database};

use crate::measure::{generate, timed};
use crate::progress::Progress;
use crate::report::{human, print_correct, print_full_build, Pair, Tables};
use crate::update::{apply_as_client, commit_seconds};
use obscura_math::threads::Pools;

/// The appended leaves, as a fraction of the tree's: 2^16 of 2^20.
const APPENDED: u64 = 16;

/// Bytes of each generated leaf.
const LEAF_BYTES: u64 = 32;

/// The JSON object `obscura bench update-merkle --json` prints.
#[derive(Clone, Debug, Serialize)]
pub struct MerkleUpdateReport {
    /// Preset name.
    pub preset: String,
    /// Threads of the build and the append.
    pub threads: usize,
    /// Leaves of the tree as built.
    pub leaves: u64,
    /// Leaves appended.
    pub appended: u64,
    /// Height of the perfect tree the build embeds it in (its room).
    pub height: u32,
    /// Streaming read bandwidth of the memory.
    pub bandwidth_gbs: Pair,
    /// Seconds of the full build the append is set against.
    pub build_seconds: f64,
    /// Bytes of the encoded public setup.
    pub setup_bytes: u64,
    /// Seconds to append the leaves as the next version (nodes hashed, entries rewritten,
    /// `ΔD·A` added to the sub-databases' hints, the new setup).
    pub append_seconds: f64,
    /// `append_seconds` over `build_seconds`.
    pub over_build: f64,
    /// Seconds to commit the version as `obscura update` does (its leaves appended to the
    /// change log and flushed).
    pub commit_seconds: f64,
    /// `append_seconds` plus `commit_seconds`, over `build_seconds`: the version durable.
    pub durable_over_build: f64,
    /// Seconds a checkpoint takes to write the new version's file (checksum, write, flush,
    /// rename).
    pub write_seconds: f64,
    /// Seconds to append one more leaf as a version of its own, after the others.
    pub one_leaf_seconds: f64,
    /// Bytes of the patch a client of the tree as built downloads instead of the setup.
    pub patch_bytes: u64,
    /// Seconds for that client to apply it (the new setup's bytes and SHA-256 included).
    pub client_seconds: f64,
    /// Whether the new root, the audit paths, the consistency proof and the patched setup
    /// checked out.
    pub correct: bool,
}

/// Builds the tree, appends to it and checks the new version (see the module's docs).
pub fn run(
    leaves: u64,
    options: EngineOptions,
    pools: &Pools,
    progress: &dyn Progress,
    bandwidth_gbs: Pair,
) -> Result<MerkleUpdateReport> {
    ensure!(leaves >= 64, "update-merkle needs at least 64 leaves");
    let appended = leaves / APPENDED;
    let data = generate(leaves + appended, LEAF_BYTES)?;
    let all: Vec<&[u8]> = data.chunks_exact(LEAF_BYTES as usize).collect();
    let options = EngineOptions {
        capacity: Some(leaves + appended),
        ..options
    };
    let shown = progress.start(&["full build"]);
    let (server, build_seconds) = timed(|| {
        pools.all.install(|| {
            let tree = MerkleTree::from_leaves(&all[..leaves as usize]);
            let server = TreePirServer::from_tree(&tree, options, &*shown)?;
            anyhow::Ok((tree.root(), server))
        })
    });
    drop(shown);
    let (first_root, mut server) = server?;
    let old_setup = SetupMessage::to_bytes(server.public_setup());
    let changes: Vec<Change> = (leaves..)
        .zip(&all[leaves as usize..])
        .map(|(index, leaf)| Change::Append {
            index,
            value: leaf.to_vec(),
        })
        .collect();
    let (appending, append_seconds) = timed(|| pools.all.install(|| server.update(&changes)));
    let patch = appending?.context("TreePIR updates make a patch")?;
    let new_setup = SetupMessage::to_bytes(server.public_setup());
    let applied = apply_as_client(&old_setup, patch, &new_setup, pools)?;
    drop(new_setup);
    let correct = check(&server, &all, leaves, &first_root)? && applied.made_new_setup;
    let one_more = [Change::Append {
        index: leaves + appended,
        value: vec![0xa5; LEAF_BYTES as usize],
    }];
    let (appending, one_leaf_seconds) = timed(|| pools.all.install(|| server.update(&one_more)));
    appending?;
    let height = server.public_setup().height();
    let folder = tempfile::tempdir().context("cannot make a folder for the new version's file")?;
    let file = folder.path().join("update-merkle.obs");
    let commit_seconds = commit_seconds(&file, &changes)?;
    let (written, write_seconds) = timed(|| store::write_database(&file, &Database::new(server)));
    written.with_context(|| format!("writing {}", file.display()))?;
    Ok(MerkleUpdateReport {
        preset: "update-merkle".into(),
        threads: pools.all.current_num_threads(),
        leaves,
        appended,
        height,
        bandwidth_gbs,
        build_seconds,
        setup_bytes: old_setup.len() as u64,
        append_seconds,
        over_build: append_seconds / build_seconds,
        commit_seconds,
        durable_over_build: (append_seconds + commit_seconds) / build_seconds,
        write_seconds,
        one_leaf_seconds,
        patch_bytes: applied.bytes,
        client_seconds: applied.seconds,
        correct,
    })
}

/// Whether `server`, grown from the first `leaves` of `all` to all of them, has the root of a
/// tree of all the leaves, proves audit paths of leaves from both parts, and proves the tree
/// of `leaves` leaves (head `first_root`) its prefix.
fn check(server: &TreePirServer, all: &[&[u8]], leaves: u64, first_root: &Hash) -> Result<bool> {
    let setup = server.public_setup();
    let total = all.len() as u64;
    let mut correct = *setup.root() == MerkleTree::from_leaves(all).root();
    let mut client = TreePirClient::new(setup.clone());
    for leaf in [
        0,
        leaves / 2,
        leaves - 1,
        leaves,
        (leaves + total) / 2,
        total - 1,
    ] {
        let (queries, state) = client.query(leaf)?;
        let answers = server.answer(&queries)?;
        let hash = merkle::leaf_hash(all[leaf as usize]);
        correct &= client.decode(state, &answers, &hash).is_ok();
    }
    let proof = server
        .consistency_proof(leaves)
        .context("no consistency proof from the tree as built")?;
    correct &= merkle::verify_consistency(leaves, total, first_root, setup.root(), &proof).is_ok();
    Ok(correct)
}

impl Tables for MerkleUpdateReport {
    const WRONG: &'static str = "the grown tree did not prove its leaves or its growth";

    fn correct(&self) -> bool {
        self.correct
    }

    fn print_tables(&self) {
        println!(
            "{}: a Merkle tree of {} leaves (height {}), {} appended, {} threads",
            self.preset, self.leaves, self.height, self.appended, self.threads
        );
        print_full_build(&self.bandwidth_gbs, self.build_seconds, self.setup_bytes);
        println!(
            "| appended | new version | / full build | committed to the log | durable / full build | checkpoint: file written | one more leaf | patch bytes | / setup | client applies | correct |\n|---|---|---|---|---|---|---|---|---|---|---|"
        );
        println!(
            "| {} | {} | {:.3} | {} | {:.3} | {} | {} | {} | {:.3} | {} | {} |",
            self.appended,
            human(self.append_seconds),
            self.over_build,
            human(self.commit_seconds),
            self.durable_over_build,
            human(self.write_seconds),
            human(self.one_leaf_seconds),
            self.patch_bytes,
            self.patch_bytes as f64 / self.setup_bytes as f64,
            human(self.client_seconds),
            if self.correct { "yes" } else { "no" }
        );
        println!();
        print_correct(
            self.correct,
            "yes (root, audit paths of old and appended leaves, consistency proof, patched setup)",
            "NO",
        );
    }
}
