//! `obscura update`: a batch of changes applied to a database file as its next version,
//! committed to its change log; `obscura checkpoint`: the log folded into the file.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{Context, Result};
use clap::{Args, ValueEnum};
use obscura_pir::{Change, PirError};
use obscura_registry::Registry;
use obscura_store::changes::read_for;
use obscura_store::patches;
use obscura_store::update::{checkpoint_file, update_file, UpdateError};

use crate::progress;

/// What a change file holds, as `--help` shows it.
pub const CHANGE_FILE: &str = "\
Change file: one JSON object per line.
  {\"op\":\"set\",\"index\":7,\"value\":\"new text\"}      record 7 of an index database
  {\"op\":\"append\",\"index\":1000,\"value_hex\":\"00ff\"}  the next index past the last record
  {\"op\":\"delete\",\"index\":3}                          record 3 reads as absent (get exits 3)
  {\"op\":\"upsert\",\"key\":\"+15550013\",\"value\":\"Bob\"}  a keyword database's key, new or not
  {\"op\":\"delete\",\"key\":\"+15550013\"}                the key reads as absent
A value is a string's UTF-8 bytes, value_hex's bytes, or other JSON's text. Indexes never
shift. Two lines changing one index are refused, naming both. A Merkle tree's change file is
its new leaves, one per line (as `obscura merkle build` reads them), appended in order.
A change the setup cannot take (a longer value than the slots, an append past the capacity
or to a YPIR database, a norm past the plaintext modulus) is refused: rebuild with `obscura build` or `obscura
merkle build`, whose --capacity (and --value-bytes) leave room. Nothing is written unless every
change applies; the batch is then appended to FILE.log and flushed, which commits the version
(a crash leaves the old or the new version, whole). Loading the file replays its log; once the
log holds 8 versions or a 16th of the file, a checkpoint writes the file of the newest version
and removes the log (in the background unless --checkpoint says otherwise, its report appended
to FILE.checkpoint.txt; `obscura checkpoint` does it on demand). `obscura serve` serves the new version after SIGHUP.";

/// Arguments of `obscura update`.
#[derive(Args)]
pub struct UpdateArgs {
    /// The database file, replaced by its next version.
    #[arg(long)]
    db: PathBuf,
    /// The change file (JSON lines; see below).
    #[arg(long)]
    changes: PathBuf,
    /// Keep patches for clients of this many versions back (in FILE.patches; 0: none), so
    /// they catch up without downloading the whole setup.
    #[arg(long, value_name = "VERSIONS", default_value_t = patches::DEFAULT_KEEP)]
    keep_patches: usize,
    /// When to fold the change log into the database file: `due` once the log has grown
    /// enough (in the background, by `obscura checkpoint`), `now` after this version, `never`.
    #[arg(long, value_enum, default_value_t = Checkpoint::Due)]
    checkpoint: Checkpoint,
}

/// When `obscura update` folds the change log into the file.
#[derive(Clone, Copy, ValueEnum)]
enum Checkpoint {
    /// Once due, in the background.
    Due,
    /// After this version, before exiting.
    Now,
    /// Not (`obscura checkpoint` does it).
    Never,
}

/// Arguments of `obscura checkpoint`.
#[derive(Args)]
pub struct CheckpointArgs {
    /// The database file, rewritten with its change log's versions.
    #[arg(long)]
    db: PathBuf,
}

/// Runs `obscura update`.
pub fn run(args: UpdateArgs) -> Result<()> {
    let data = std::fs::read(&args.changes)
        .with_context(|| format!("cannot read {}", args.changes.display()))?;
    let updated = progress::with_bar("updating", |progress| {
        update_file(
            &args.db,
            |listing| read_for(listing.lookup, listing.items, &data),
            &Registry::default(),
            args.keep_patches,
            progress,
        )
    });
    let updated = match updated {
        Err(UpdateError::Change {
            source: source @ PirError::NeedsNewSetup(_),
            ..
        }) => {
            return Err(anyhow::Error::new(source).context(format!(
                "{}: not updated; rebuild it with `obscura build` (`obscura merkle build` for a tree) from the changed data",
                args.db.display()
            )))
        }
        Err(UpdateError::ChangeFile { source, .. }) => {
            return Err(anyhow::Error::new(source).context(args.changes.display().to_string()))
        }
        updated => updated?,
    };
    let changes = &updated.changes;
    let count = |op: fn(&Change) -> bool| changes.iter().filter(|c| op(c)).count();
    let listing = updated.database.listing();
    let deleted = count(|c| matches!(c, Change::Delete { .. } | Change::Remove { .. }));
    let (what, items) = match listing.lookup {
        obscura_pir::Lookup::AuditPath => (format!("{} leaves appended", changes.len()), "leaves"),
        obscura_pir::Lookup::Key => (
            format!(
                "{} upserted, {deleted} deleted",
                count(|c| matches!(c, Change::Upsert { .. }))
            ),
            "keys",
        ),
        _ => (
            format!(
                "{} set, {} appended, {deleted} deleted",
                count(|c| matches!(c, Change::Set { .. })),
                count(|c| matches!(c, Change::Append { .. })),
            ),
            "records",
        ),
    };
    if updated.setup_changed {
        println!(
            "{}: version {} ({what}), {} {items}",
            args.db.display(),
            listing.version,
            listing.items,
        );
    } else {
        println!(
            "{}: updated ({what}), {} {items}; its setup is unchanged, so clients keep theirs",
            args.db.display(),
            listing.items,
        );
    }
    if let Some(root) = listing.root {
        println!("root: {}", hex::encode(root));
    }
    println!("setup SHA-256: {}", hex::encode(updated.setup.sha256));
    if let Some(bytes) = updated.patch_bytes {
        println!(
            "patch for clients of version {}: {bytes} bytes (the setup: {})",
            listing.version - 1,
            updated.setup.bytes
        );
    }
    let versions = versions(updated.log_versions);
    println!(
        "loaded in {:.2} s, changed in {:.2} s, committed in {:.2} s to {}, which holds {versions} ({} bytes); `obscura serve` serves it on SIGHUP (or by itself with --watch)",
        updated.load_seconds,
        updated.apply_seconds,
        updated.write_seconds,
        obscura_store::log::path_of(&args.db).display(),
        updated.log_bytes,
    );
    match args.checkpoint {
        Checkpoint::Now => run_checkpoint(&args.db)?,
        Checkpoint::Due if updated.checkpoint_due => {
            let report = report_of(&args.db);
            let pid = checkpoint_in_background(&args.db, &report)?;
            println!(
                "checkpoint: folding the log into the file in the background (process {pid}; its report is appended to {})",
                report.display()
            );
        }
        _ => {}
    }
    Ok(())
}

/// Runs `obscura checkpoint`.
pub fn checkpoint(args: CheckpointArgs) -> Result<()> {
    run_checkpoint(&args.db)
}

/// "1 version", "2 versions", ...
fn versions(count: usize) -> String {
    match count {
        1 => "1 version".to_string(),
        n => format!("{n} versions"),
    }
}

/// Folds the change log of `db` into it and says what was done.
fn run_checkpoint(db: &Path) -> Result<()> {
    let done = checkpoint_file(db, &Registry::default())?;
    if done.versions == 0 {
        println!("{}: no change log to fold", db.display());
    } else {
        println!(
            "{}: version {} written ({} bytes, {} of the log folded in) in {:.2} s after {:.2} s loading",
            db.display(),
            done.version,
            done.file_bytes,
            versions(done.versions),
            done.write_seconds,
            done.load_seconds
        );
    }
    Ok(())
}

/// Where a checkpoint run in the background reports, beside the database `db`:
/// `DB.checkpoint.txt`.
fn report_of(db: &Path) -> PathBuf {
    obscura_store::companion(db, ".checkpoint.txt")
}

/// Starts `obscura checkpoint --db DB` as a process of its own, in its own process group (an
/// interrupt of this one's terminal leaves it running), its output and errors appended to
/// `report`, and returns its id.
fn checkpoint_in_background(db: &Path, report: &Path) -> Result<u32> {
    use std::os::unix::process::CommandExt;
    let cannot = || {
        format!(
            "cannot open {} for the checkpoint's report",
            report.display()
        )
    };
    let output = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(report)
        .with_context(cannot)?;
    let errors = output.try_clone().with_context(cannot)?;
    let child = Command::new(std::env::current_exe().context("cannot find this program")?)
        .arg("checkpoint")
        .arg("--db")
        .arg(db)
        .stdin(Stdio::null())
        .stdout(output)
        .stderr(errors)
        .process_group(0)
        .spawn()
        .context("cannot start the checkpoint")?;
    Ok(child.id())
}
