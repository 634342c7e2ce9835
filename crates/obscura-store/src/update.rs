//! A database file's next version: a batch of [`Change`]s applied to the loaded database and
//! the file replaced in one step.
//!
//! The new version is written in full to a temporary file beside the old one, flushed to disk,
//! renamed over it and the directory flushed ([`crate::partial`]): a crash or `kill -9` at any
//! moment leaves either the old file or the new one under the name, each complete and
//! verified by its checksum on load, never a mix. An update holds an exclusive lock on the file
//! it read from the moment it opens it until the new one is in place, so two updates of one
//! file run one after the other, the second reading the first's version. A server reading the
//! file picks the new version up when told to reload (`obscura serve` on SIGHUP), answering
//! from the version it holds meanwhile. The patch of the new version is kept beside the file
//! ([`crate::patches`]), written before the file is renamed into place.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::time::Instant;

use obscura_pir::scheme::Progress;
use obscura_pir::{Change, PirError};
use obscura_registry::{setup_sha256, Listing, Registry};

use crate::changes::ChangeFileError;
use crate::patches::{Patch, Patches};
use crate::store::{self, Database, StoreError, WrittenSetup};

/// The steps [`update_file`] reports: reading the old version, changing it, writing the new.
const STEPS: u64 = 3;

/// A version written by [`update_file`].
pub struct Updated {
    /// The database as written (its listing names its version).
    pub database: Database,
    /// The public setup written.
    pub setup: WrittenSetup,
    /// Whether the setup changed: a scheme whose setup carries no data (YPIR) keeps it, and
    /// its clients keep theirs.
    pub setup_changed: bool,
    /// The changes applied.
    pub changes: Vec<Change>,
    /// Bytes of the patch kept for clients of the previous version (none when the scheme
    /// makes no patches or none are kept).
    pub patch_bytes: Option<u64>,
    /// Seconds spent reading and verifying the old version.
    pub load_seconds: f64,
    /// Seconds spent applying the changes in memory.
    pub apply_seconds: f64,
    /// Seconds spent writing, flushing and renaming the new file.
    pub write_seconds: f64,
}

/// Why [`update_file`] wrote no new version (the file is then as it was).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum UpdateError {
    /// The file could not be read, verified or written.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The changes could not be read for this database.
    #[error("{}: the changes were not read", path.display())]
    ChangeFile {
        /// The database file.
        path: PathBuf,
        /// Why.
        source: ChangeFileError,
    },
    /// The changes do not apply to the database (why is the source).
    #[error("{}: the changes were not applied", path.display())]
    Change {
        /// The database file.
        path: PathBuf,
        /// Why.
        source: PirError,
    },
}

/// Applies the changes `changes` gives for the database's listing (a change file is read as the
/// database's kind asks, see [`crate::changes::read_for`]) to the database file at `path` (of a
/// scheme of `registry`) as its next version, atomically and durably; everything is checked
/// before anything is written.
/// The patch from the old version's setup to the new one is kept beside the file with the
/// newest `keep_patches` of those before it ([`Patches`]; none with 0).
/// `progress(done, 3)` follows its three steps: reading, changing, writing.
pub fn update_file(
    path: &Path,
    changes: impl FnOnce(&Listing) -> Result<Vec<Change>, ChangeFileError>,
    registry: &Registry,
    keep_patches: usize,
    progress: Progress<'_>,
) -> Result<Updated, UpdateError> {
    progress(0, STEPS);
    let started = Instant::now();
    let file = lock_current(path)?;
    let mut database = store::load(path, &file, registry)?;
    let old_sha256 = setup_sha256(&database.setup_bytes());
    let load_seconds = started.elapsed().as_secs_f64();
    progress(1, STEPS);
    let started = Instant::now();
    let changes = changes(&database.listing()).map_err(|source| UpdateError::ChangeFile {
        path: path.to_path_buf(),
        source,
    })?;
    let patch = database
        .update(&changes)
        .map_err(|source| UpdateError::Change {
            path: path.to_path_buf(),
            source,
        })?;
    let apply_seconds = started.elapsed().as_secs_f64();
    progress(2, STEPS);
    let started = Instant::now();
    let setup = database.setup_bytes();
    // A file of patches that cannot be read is replaced: it only saves clients downloads.
    let mut patches = Patches::read(path).unwrap_or_default();
    let patch_bytes = match patch {
        Some(bytes) if keep_patches > 0 => {
            let len = bytes.len() as u64;
            let patch = Patch {
                from: old_sha256,
                to: setup_sha256(&setup),
                bytes,
            };
            patches.push(patch, keep_patches, setup.len() as u64);
            Some(len)
        }
        _ => {
            patches = Patches::default();
            None
        }
    };
    patches.write(path)?;
    let setup_changed = setup_sha256(&setup) != old_sha256;
    let setup = store::write_with_setup(path, &database, &setup)?;
    let write_seconds = started.elapsed().as_secs_f64();
    drop(file);
    progress(STEPS, STEPS);
    Ok(Updated {
        database,
        setup,
        setup_changed,
        changes,
        patch_bytes,
        load_seconds,
        apply_seconds,
        write_seconds,
    })
}

/// The file now at `path`, open and exclusively locked: an update that renamed a new file
/// over it while this one waited for the lock is followed to the new file.
fn lock_current(path: &Path) -> Result<File, StoreError> {
    let io = |source| StoreError::Io {
        path: path.to_path_buf(),
        source,
    };
    loop {
        let file = store::open_regular(path)?;
        file.lock().map_err(io)?;
        let held = file.metadata().map_err(io)?;
        let named = std::fs::metadata(path).map_err(io)?;
        if same_file(&held, &named) {
            return Ok(file);
        }
    }
}

/// Whether two metadata are of one file.
fn same_file(a: &std::fs::Metadata, b: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::MetadataExt;
    (a.dev(), a.ino()) == (b.dev(), b.ino())
}
