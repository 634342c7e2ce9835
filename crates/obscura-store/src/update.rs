//! A database file's next version: a batch of [`Change`]s applied to the loaded database and
//! committed by appending it to the file's change log ([`crate::log`]), and the checkpoint that
//! folds the log back into the file.
//!
//! The batch is checked and applied in memory first; it is then appended to `FILE.log` and the
//! log flushed to disk, which commits the version: a crash or `kill -9` at any moment leaves
//! the log ending with the batch whole (the new version) or without it (the previous one),
//! never a version that fails to load. An update holds an exclusive lock on the database file
//! from the moment it opens it until the batch is committed, so two updates of one file run
//! one after the other, the second reading the first's version. A server reading the file picks
//! the new version up when told to reload (`obscura serve` on SIGHUP), answering from the
//! version it holds meanwhile. The patch of the new version is kept beside the file
//! ([`crate::patches`]), written before the batch is appended.
//!
//! Loading replays the log, so it grows no longer than [`CHECKPOINT_VERSIONS`] versions or a
//! [`CHECKPOINT_FRACTION`]th of the file before [`Updated::checkpoint_due`] says so; a
//! checkpoint ([`checkpoint_file`]) then writes the newest version's file in full beside the old
//! one, flushes it, renames it over it and removes the log, holding the same lock. A crash
//! before the rename leaves the old file and its log; one after it leaves the new file, and a
//! log that names the old file's checksum, which no load replays.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::time::Instant;

use obscura_pir::scheme::Progress;
use obscura_pir::{Change, PirError};
use obscura_registry::{setup_sha256, Listing, Registry};

use crate::changes::ChangeFileError;
use crate::log;
use crate::patches::{Patch, Patches};
use crate::store::{self, Database, StoreError, WrittenSetup};

/// The steps [`update_file`] reports: reading the old version, changing it, committing the new.
const STEPS: u64 = 3;

/// Versions a change log holds before a checkpoint is due.
pub const CHECKPOINT_VERSIONS: usize = 8;

/// A change log longer than the database file over this is due for a checkpoint.
pub const CHECKPOINT_FRACTION: u64 = 16;

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
    /// Seconds spent committing the new version: the patches kept, the batch appended to the
    /// change log and the log flushed.
    pub write_seconds: f64,
    /// Versions the change log holds, this one included.
    pub log_versions: usize,
    /// Bytes of the change log.
    pub log_bytes: u64,
    /// Whether the log has grown past [`CHECKPOINT_VERSIONS`] versions or a
    /// [`CHECKPOINT_FRACTION`]th of the database file: every load replays it, and
    /// [`checkpoint_file`] folds it into the file.
    pub checkpoint_due: bool,
}

/// A checkpoint made by [`checkpoint_file`].
#[derive(Clone, Copy, Debug)]
pub struct Checkpointed {
    /// The versions of the log folded into the file (0: there was none; nothing was written).
    pub versions: usize,
    /// The database's version now in the file.
    pub version: u64,
    /// Bytes of the file written.
    pub file_bytes: u64,
    /// Seconds spent reading the file and replaying its log.
    pub load_seconds: f64,
    /// Seconds spent writing, flushing and renaming the new file and removing the log.
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
/// `progress(done, 3)` follows its three steps: reading, changing, committing.
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
    let (mut database, mut log) = store::load(path, &file, registry)?;
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
    let new_sha256 = setup_sha256(&setup);
    let patch_bytes = match patch {
        Some(bytes) if keep_patches > 0 => {
            let len = bytes.len() as u64;
            let patch = Patch {
                from: old_sha256,
                to: new_sha256,
                bytes,
            };
            Patches::append(path, patch, keep_patches, setup.len() as u64)?;
            Some(len)
        }
        _ => {
            Patches::default().write(path)?;
            None
        }
    };
    let setup_changed = new_sha256 != old_sha256;
    log.append(path, &changes)?;
    let write_seconds = started.elapsed().as_secs_f64();
    let file_bytes = file
        .metadata()
        .map_err(|source| StoreError::Io {
            path: path.to_path_buf(),
            source,
        })?
        .len();
    drop(file);
    progress(STEPS, STEPS);
    let log_versions = log.versions();
    Ok(Updated {
        database,
        setup: WrittenSetup {
            bytes: setup.len() as u64,
            sha256: new_sha256,
        },
        setup_changed,
        changes,
        patch_bytes,
        load_seconds,
        apply_seconds,
        write_seconds,
        log_versions,
        log_bytes: log.len(),
        checkpoint_due: log_versions >= CHECKPOINT_VERSIONS
            || log.len() >= file_bytes / CHECKPOINT_FRACTION,
    })
}

/// Folds the change log of the database file at `path` (of a scheme of `registry`) into the
/// file: the newest version is written in full beside it, flushed and renamed over it, and the
/// log removed, under the lock updates take (an update waits for it, and reads the new file).
/// A file with no log to fold is left as it is (a log left by a crash after a checkpoint's
/// rename is removed).
pub fn checkpoint_file(path: &Path, registry: &Registry) -> Result<Checkpointed, StoreError> {
    let started = Instant::now();
    let file = lock_current(path)?;
    let (database, log) = store::load(path, &file, registry)?;
    let load_seconds = started.elapsed().as_secs_f64();
    let started = Instant::now();
    let versions = log.versions();
    let file_bytes = if log.is_empty() {
        0
    } else {
        store::write_with_setup(path, &database, &database.setup_bytes())?;
        std::fs::metadata(path)
            .map_err(|source| StoreError::Io {
                path: path.to_path_buf(),
                source,
            })?
            .len()
    };
    log::remove(path)?;
    drop(file);
    Ok(Checkpointed {
        versions,
        version: database.listing().version,
        file_bytes,
        load_seconds,
        write_seconds: started.elapsed().as_secs_f64(),
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

#[cfg(test)]
mod tests {
    use super::*;
    use obscura_pir::lwe::{EngineOptions, Lwe, Server};

    /// A database of 100 values of 8 bytes, `value {i:02}`, at `path`.
    fn build(path: &Path) {
        let values: Vec<Vec<u8>> = (0..100)
            .map(|i| format!("value {i:02}").into_bytes())
            .collect();
        let server = Server::from_values(&values, EngineOptions::default(), &|_, _| {}).unwrap();
        store::write_database(path, &Database::from(server)).unwrap();
    }

    /// Version `v`'s change: value 7 becomes `v{v}`.
    fn update(path: &Path, v: u64) -> Updated {
        let changes = vec![Change::Set {
            index: 7,
            value: format!("v{v}").into_bytes(),
        }];
        update_file(path, |_| Ok(changes), &Registry::default(), 4, &|_, _| {})
            .unwrap_or_else(|e| panic!("version {v}: {e}"))
    }

    /// The version and setup SHA-256 of the database at `path` as loaded.
    fn loaded(path: &Path) -> (u64, [u8; 32]) {
        let database = store::read_database(path).unwrap();
        (
            database.listing().version,
            setup_sha256(&database.setup_bytes()),
        )
    }

    #[test]
    fn versions_are_committed_to_the_log_and_a_checkpoint_folds_them_in() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("db.obs");
        build(&path);
        let file = std::fs::read(&path).unwrap();
        let mut last = None;
        for v in 1..=CHECKPOINT_VERSIONS as u64 {
            let updated = update(&path, v);
            // The file stays as built; the log holds every version, and loading replays it.
            assert_eq!(std::fs::read(&path).unwrap(), file);
            assert_eq!(updated.log_versions, v as usize);
            assert_eq!(
                updated.checkpoint_due,
                v as usize == CHECKPOINT_VERSIONS,
                "version {v}"
            );
            assert_eq!(loaded(&path), (v, updated.setup.sha256));
            last = Some(updated.setup.sha256);
        }
        let log = std::fs::read(log::path_of(&path)).unwrap();
        let done = checkpoint_file(&path, &Registry::default()).unwrap();
        assert_eq!(done.versions, CHECKPOINT_VERSIONS);
        assert!(!log::path_of(&path).exists());
        assert_ne!(std::fs::read(&path).unwrap(), file);
        let folded = (CHECKPOINT_VERSIONS as u64, last.unwrap());
        assert_eq!(loaded(&path), folded);
        // A log left behind by a crash after the checkpoint's rename names the old file, and
        // no load replays it; the next version replaces it.
        std::fs::write(log::path_of(&path), &log).unwrap();
        assert_eq!(loaded(&path), folded);
        let next = update(&path, 100);
        assert_eq!(next.log_versions, 1);
        let database = store::read_database(&path).unwrap();
        let server = database.server::<Lwe>().unwrap();
        assert_eq!(
            server.public_setup().version(),
            CHECKPOINT_VERSIONS as u64 + 1
        );
        // With no log, a checkpoint writes nothing.
        checkpoint_file(&path, &Registry::default()).unwrap();
        let file = std::fs::read(&path).unwrap();
        assert_eq!(
            checkpoint_file(&path, &Registry::default())
                .unwrap()
                .versions,
            0
        );
        assert_eq!(std::fs::read(&path).unwrap(), file);
    }

    #[test]
    fn a_batch_torn_at_the_end_of_the_log_is_not_a_version() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("db.obs");
        build(&path);
        let first = update(&path, 1).setup.sha256;
        let whole = std::fs::read(log::path_of(&path)).unwrap();
        update(&path, 2);
        let log = std::fs::read(log::path_of(&path)).unwrap();
        for cut in [whole.len() + 1, whole.len() + 40, log.len() - 1] {
            std::fs::write(log::path_of(&path), &log[..cut]).unwrap();
            assert_eq!(loaded(&path), (1, first), "cut at {cut}");
        }
        // The next version follows the last whole one.
        let third = update(&path, 3);
        assert_eq!(third.log_versions, 2);
        assert_eq!(loaded(&path), (2, third.setup.sha256));
    }
}
