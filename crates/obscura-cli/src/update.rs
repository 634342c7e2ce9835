//! `obscura update`: a batch of changes applied to a database file as its next version.

use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::Args;
use obscura_pir::{Change, PirError};
use obscura_registry::Registry;
use obscura_store::changes::read_for;
use obscura_store::patches;
use obscura_store::update::{update_file, UpdateError};

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
change applies; the file is then replaced in one step (a crash leaves the old or the new
version, whole). `obscura serve` serves the new version after SIGHUP.";

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
    println!(
        "loaded in {:.2} s, changed in {:.2} s, written in {:.2} s (send SIGHUP to `obscura serve` to serve it)",
        updated.load_seconds, updated.apply_seconds, updated.write_seconds
    );
    Ok(())
}
