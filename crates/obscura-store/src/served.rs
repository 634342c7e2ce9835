//! A database file as a server follows it: loaded once ([`open_versioned`]), then brought up to
//! the file's newest version without reading the file again ([`catch_up`]).
//!
//! A new version is a batch appended to the file's change log ([`crate::log`]). A server that
//! holds the database as of some batch reads only the batches after it and applies them to a
//! copy of its database, while the database it holds goes on answering; the copy shares the
//! matrices until the batches write them, so what it costs is the update's own work and one
//! copy of each matrix written. A checkpoint renames a new file over the old one, holding the
//! version the log reached: a server whose database has that file's checksum (its own matrices
//! and setup hashed, no read of the file) adopts the new file and goes on with its log.
//! Anything else (a file built anew, a version the server never held, a log that does not
//! continue the batches applied) is loaded again in full.

use std::fs::File;
use std::path::Path;
use std::time::SystemTime;

use obscura_registry::Registry;

use crate::log::{self, ChangeLog};
use crate::store::{checksum_of, load, open_regular, replay, Database, Head, StoreError};

/// How many times a reader opens a database file again when a checkpoint replaced it while it
/// was read.
const REPLACED_RETRIES: usize = 8;

/// The version of a database file a server holds: the file and its change log as they were
/// when it last looked (told from others without reading them), and how much of the log it
/// applied.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FileVersion {
    stat: FileStat,
    applied: ChangeLog,
}

/// A database file and its change log as the file system describes them (identity, length,
/// modification time): two differ when either file changed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FileStat {
    device: u64,
    inode: u64,
    len: u64,
    modified: Option<SystemTime>,
    /// The change log's length and modification time, if there is one.
    log: Option<(u64, Option<SystemTime>)>,
}

impl FileStat {
    /// The file open as `file`, at `path`, with the log now beside `path`.
    fn of_file(path: &Path, file: &File) -> Result<Self, StoreError> {
        let metadata = file.metadata().map_err(|source| StoreError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        Ok(Self::of(path, &metadata))
    }

    /// The file `path` names now and its log, if there is such a file.
    pub fn now(path: &Path) -> Option<Self> {
        std::fs::metadata(path).ok().map(|m| Self::of(path, &m))
    }

    /// The file with `metadata` at `path`, with its change log's now.
    fn of(path: &Path, metadata: &std::fs::Metadata) -> Self {
        use std::os::unix::fs::MetadataExt;
        let log = std::fs::metadata(log::path_of(path))
            .ok()
            .map(|log| (log.len(), log.modified().ok()));
        Self {
            device: metadata.dev(),
            inode: metadata.ino(),
            len: metadata.len(),
            modified: metadata.modified().ok(),
            log,
        }
    }

    /// Whether both describe one file, unchanged (their logs aside).
    fn same_file(&self, other: &Self) -> bool {
        self.same_inode(other) && (self.len, self.modified) == (other.len, other.modified)
    }

    /// Whether both describe one file, changed or not.
    fn same_inode(&self, other: &Self) -> bool {
        (self.device, self.inode) == (other.device, other.inode)
    }
}

impl FileVersion {
    /// Whether `path` still names this very file and its change log is as it was, both
    /// unchanged since they were looked at (same files, lengths and modification times): then a
    /// server holds the file's newest version.
    pub fn is_current(&self, path: &Path) -> bool {
        FileStat::now(path) == Some(self.stat)
    }
}

/// Loads and verifies the database file at `path` for serving, with the versions its change
/// log holds, and the [`FileVersion`] it was read from: [`catch_up`] goes on from it. A file a
/// checkpoint renamed over `path` while it was read (whose log may then be gone) is read
/// again.
pub fn open_versioned(
    path: &Path,
    registry: &Registry,
) -> Result<(Database, FileVersion), StoreError> {
    for _ in 0..REPLACED_RETRIES {
        let file = open_regular(path)?;
        let stat = FileStat::of_file(path, &file)?;
        let (database, applied) = load(path, &file, registry)?;
        if FileStat::now(path).is_some_and(|now| now.same_file(&stat)) {
            return Ok((database, FileVersion { stat, applied }));
        }
    }
    Err(StoreError::Io {
        path: path.to_path_buf(),
        source: std::io::Error::other("the file was replaced again each time it was read"),
    })
}

/// A database brought up to its file's newest version by [`catch_up`].
pub struct CaughtUp {
    /// The database at the newest version (a copy: the one caught up from is as it was).
    pub database: Database,
    /// The file's version it holds.
    pub file: FileVersion,
    /// The versions applied.
    pub versions: usize,
    /// Whether a new file (a checkpoint's) holding the database's version was adopted.
    pub adopted: bool,
}

/// `database`, loaded from the file at `path` as of `version`, brought up to the versions the
/// file's change log holds now: only the batches appended since are read, and applied to a
/// copy. A new file renamed over `path` is adopted when it holds the database's version (its
/// checksum is the database's), and its log followed. `None` when neither holds, or the file
/// was written in place: it must be loaded again ([`open_versioned`]), and verified whole.
pub fn catch_up(
    path: &Path,
    database: &Database,
    version: &FileVersion,
) -> Result<Option<CaughtUp>, StoreError> {
    let file = open_regular(path)?;
    let stat = FileStat::of_file(path, &file)?;
    let adopted = !stat.same_file(&version.stat);
    if adopted && stat.same_inode(&version.stat) {
        // Written in place, not renamed over: damaged, perhaps, and to be verified whole.
        return Ok(None);
    }
    let applied = if adopted {
        let head = Head::read(path, &file)?;
        if head.digest != database.digest()
            || head.checksum != checksum_of(database, &database.setup_bytes())
        {
            return Ok(None);
        }
        ChangeLog::following(&head.checksum)
    } else {
        version.applied
    };
    let Some((log, batches)) = ChangeLog::read_after(path, &applied)? else {
        return Ok(None);
    };
    let mut database = database.clone();
    let versions = batches.len();
    // A checkpoint renaming a new file over `path` meanwhile changes nothing here: the batches
    // read are committed versions all the same, and the next catch-up adopts the new file.
    replay(path, &mut database, batches, applied.versions())?;
    Ok(Some(CaughtUp {
        database,
        file: FileVersion { stat, applied: log },
        versions,
        adopted,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{read_database, write_database};
    use crate::update::{checkpoint_file, update_file};
    use obscura_pir::lwe::{EngineOptions, Server};
    use obscura_pir::Change;
    use proptest::prelude::*;

    /// What happens to the file between two looks of a server.
    #[derive(Clone, Debug)]
    enum Step {
        /// A version setting `value` at each of the indexes.
        Update(Vec<u64>, u8),
        /// A checkpoint folding the log into the file.
        Checkpoint,
        /// Bytes of a batch torn by a crash at the log's end.
        Tear(usize),
        /// The server looks: it catches up, or loads the file again.
        Look,
    }

    fn step() -> impl Strategy<Value = Step> {
        prop_oneof![
            3 => (proptest::collection::btree_set(0u64..40, 1..4), any::<u8>())
                .prop_map(|(indexes, value)| Step::Update(indexes.into_iter().collect(), value)),
            1 => Just(Step::Checkpoint),
            1 => (1usize..60).prop_map(Step::Tear),
            3 => Just(Step::Look),
        ]
    }

    /// The bytes of a database's setup and matrices.
    fn state(database: &Database) -> (Vec<u8>, Vec<Vec<u8>>) {
        let matrices = database.matrices();
        let matrices = matrices.iter().map(|m| m.as_bytes().to_vec()).collect();
        (database.setup_bytes(), matrices)
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(24))]

        /// Whatever happens to the file between looks, a server that catches up (or, when it
        /// cannot, loads the file again) holds what a fresh load of the file gives; a database
        /// it caught up from is left as it was.
        #[test]
        fn a_server_holds_what_a_fresh_load_gives(steps in proptest::collection::vec(step(), 1..12)) {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("db.obs");
            let values: Vec<Vec<u8>> = (0..40u8).map(|i| vec![i; 3]).collect();
            let server = Server::from_values(&values, EngineOptions::default(), &|_, _| {}).unwrap();
            write_database(&path, &Database::from(server)).unwrap();
            let registry = Registry::default();
            let (mut held, mut version) = open_versioned(&path, &registry).unwrap();
            // Whether a checkpoint ran since the server last looked: until one does, the
            // server always catches up.
            let mut checkpointed = false;
            for step in steps.iter().chain([&Step::Look]) {
                match step {
                    Step::Update(indexes, value) => {
                        let changes = indexes
                            .iter()
                            .map(|&index| Change::Set { index, value: vec![*value; 2] })
                            .collect();
                        update_file(&path, |_| Ok(changes), &registry, 2, &|_, _| {}).unwrap();
                    }
                    Step::Checkpoint => {
                        checkpoint_file(&path, &registry).unwrap();
                        checkpointed = true;
                    }
                    Step::Tear(bytes) => {
                        use std::io::Write;
                        let log = log::path_of(&path);
                        if log.exists() {
                            let mut file = std::fs::OpenOptions::new().append(true).open(log).unwrap();
                            file.write_all(&vec![7u8; *bytes]).unwrap();
                        }
                    }
                    Step::Look => {
                        let before = state(&held);
                        match catch_up(&path, &held, &version).unwrap() {
                            Some(caught) => {
                                prop_assert_eq!(state(&held), before);
                                (held, version) = (caught.database, caught.file);
                            }
                            None => {
                                prop_assert!(checkpointed, "loaded again with no checkpoint");
                                (held, version) = open_versioned(&path, &registry).unwrap();
                            }
                        }
                        checkpointed = false;
                        prop_assert_eq!(state(&held), state(&read_database(&path).unwrap()));
                    }
                }
            }
        }
    }
}
