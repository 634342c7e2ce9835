//! The change log beside a database file: the batches of changes made since the file was
//! written, each one version, appended and flushed to disk as it is committed.
//!
//! A version is committed by appending its batch to `FILE.log` and flushing the log, not by
//! writing the database file again: a version of 1% of a gigabyte's records costs the
//! megabytes of its changes on disk instead of the whole file. Loading the file replays the
//! log ([`crate::store::read_database`]), and a checkpoint ([`crate::update::checkpoint_file`])
//! folds it back into the file: the file of the newest version is written beside the old one
//! and renamed over it, and the log is removed.
//!
//! ```text
//! envelope (magic, version, kind = change log, the checksum of the database file it follows)
//! each batch: its length (u64 LE), the SHA-256 of its bytes (32 bytes), its bytes:
//!   count (varint), then each change: its operation (1 byte: 0 set, 1 append, 2 delete,
//!   3 upsert, 4 delete a key), then an index (varint) or a key (length varint, bytes),
//!   then for set, append and upsert the value (length varint, bytes)
//! (varints as the wire's: 7 bits a byte, low first, so a change of a 1-byte record costs
//! about 7 bytes)
//! ```
//!
//! A log names the file it follows by that file's checksum: after a checkpoint the log left
//! behind by a crash before its removal names the previous file and is not replayed (the new
//! file holds its batches). A crash while a batch is appended leaves a batch cut short or
//! failing its SHA-256 at the end; the log is read up to the last whole batch, and the next
//! batch appended cuts it off first. A batch is committed once the log is flushed after it.

use std::fs::OpenOptions;
use std::io::Write;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use obscura_pir::wire::{self, Kind, Reader};
use obscura_pir::{Change, PirError};
use sha2::{Digest as _, Sha256};

use crate::partial::{self, Partial};
use crate::store::{InvalidFile, StoreError};

/// The checksum of a database file's payload, as its preamble holds it.
pub type FileChecksum = [u8; 32];

/// Bytes before a batch's bytes: its length and SHA-256.
const BATCH_HEADER_BYTES: usize = 8 + 32;

/// Where the change log of the database file at `database` is kept: `FILE.log`.
pub fn path_of(database: &Path) -> PathBuf {
    crate::companion(database, ".log")
}

/// The change log of a database file: the file it follows, how many versions it holds and
/// where the last whole one ends (where the next is appended). A log read earlier tells a later
/// reader where to go on from ([`ChangeLog::read_after`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ChangeLog {
    /// The file's checksum the log follows.
    base: FileChecksum,
    /// Its whole batches.
    versions: usize,
    /// Bytes of the log up to the end of its last whole batch (0: no log for this file).
    valid_len: u64,
    /// The SHA-256 of its last whole batch (zero without one).
    last: [u8; 32],
}

/// The batches of a change log, oldest first, as [`ChangeLog::read`] decodes them to replay.
pub type Batches = Vec<Vec<Change>>;

impl ChangeLog {
    /// The log of the database file at `database`, whose checksum is `base`, and its batches:
    /// none when there is no log or it follows another file; the batches up to the last whole
    /// one otherwise. A log whose envelope does not decode is an error: it may hold committed
    /// versions.
    pub fn read(database: &Path, base: &FileChecksum) -> Result<(Self, Batches), StoreError> {
        let read = Self::read_after(database, &Self::following(base))?;
        Ok(read.expect("every log continues one with no batch"))
    }

    /// The log of the database file at `database` now, and the batches appended since `seen`
    /// was read (a log of the same file): `None` when the log no longer continues `seen` (it
    /// is gone, shorter, follows another file, or its batch where `seen` ended differs).
    pub fn read_after(database: &Path, seen: &Self) -> Result<Option<(Self, Batches)>, StoreError> {
        let path = path_of(database);
        let bytes = match std::fs::read(&path) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Ok((seen.valid_len == 0).then(|| (*seen, Vec::new())));
            }
            Err(source) => return Err(StoreError::Io { path, source }),
        };
        Self::continued(&bytes, seen).map_err(|source| StoreError::Invalid {
            path,
            source: InvalidFile::Format(source),
        })
    }

    /// No log yet, for the file with checksum `base`.
    pub(crate) fn following(base: &FileChecksum) -> Self {
        Self {
            base: *base,
            ..Self::default()
        }
    }

    /// The log of `bytes` and the batches it holds after `seen`, if it continues `seen`. The
    /// batches `seen` holds are neither hashed nor decoded again; the SHA-256 of its last one
    /// is compared with the log's.
    fn continued(bytes: &[u8], seen: &Self) -> Result<Option<(Self, Batches)>, PirError> {
        let (mut reader, follows) = Reader::open(bytes, Kind::CHANGE_LOG)?;
        let mut batches = Vec::new();
        if follows != seen.base {
            return Ok((seen.valid_len == 0).then_some((*seen, batches)));
        }
        let mut log = Self {
            valid_len: wire::HEADER_BYTES as u64,
            ..Self::following(&seen.base)
        };
        while let Some((sum, batch)) = next_batch(reader.rest()) {
            let end = log.valid_len + (BATCH_HEADER_BYTES + batch.len()) as u64;
            if end > seen.valid_len {
                if log.valid_len < seen.valid_len {
                    return Ok(None);
                }
                if Sha256::digest(batch).as_slice() != sum {
                    // Torn by a crash while it was appended: not committed.
                    break;
                }
                batches.push(decode_batch(batch)?);
            } else if end == seen.valid_len && sum != seen.last {
                return Ok(None);
            }
            reader.take(BATCH_HEADER_BYTES + batch.len())?;
            (log.valid_len, log.last) = (end, sum);
            log.versions += 1;
        }
        Ok((log.valid_len >= seen.valid_len).then_some((log, batches)))
    }

    /// Bytes of the log's whole batches and envelope (0 when there is none).
    pub fn len(&self) -> u64 {
        self.valid_len
    }

    /// The versions (whole batches) the log holds.
    pub fn versions(&self) -> usize {
        self.versions
    }

    /// Whether the log holds no batch.
    pub fn is_empty(&self) -> bool {
        self.versions == 0
    }

    /// Appends `changes` as the next batch of the log of the database file at `database` and
    /// flushes it to disk: the version is then committed. A log that follows another file is
    /// replaced (atomically, by a new log renamed over it), and one with a torn batch at its end
    /// is cut back to its last whole batch first. The caller holds the database file's lock.
    pub fn append(&mut self, database: &Path, changes: &[Change]) -> Result<(), StoreError> {
        let path = path_of(database);
        let io = |source| StoreError::Io {
            path: path.clone(),
            source,
        };
        let record = batch_record(changes);
        if self.valid_len == 0 {
            let mut header = Vec::with_capacity(wire::HEADER_BYTES);
            wire::write_header(&mut header, Kind::CHANGE_LOG, &self.base);
            let temp = Partial::beside(&path).map_err(io)?;
            temp.file().write_all(&header).map_err(io)?;
            temp.file().write_all(&record).map_err(io)?;
            temp.persist(&path).map_err(io)?;
            self.valid_len = (header.len() + record.len()) as u64;
        } else {
            let file = OpenOptions::new().write(true).open(&path).map_err(io)?;
            file.set_len(self.valid_len).map_err(io)?;
            file.write_all_at(&record, self.valid_len).map_err(io)?;
            file.sync_data().map_err(io)?;
            self.valid_len += record.len() as u64;
        }
        self.versions += 1;
        self.last.copy_from_slice(&record[8..BATCH_HEADER_BYTES]);
        Ok(())
    }
}

/// The batch at the start of `rest` and the SHA-256 its header gives, unless it is cut short
/// (its SHA-256 is not checked here).
fn next_batch(rest: &[u8]) -> Option<([u8; 32], &[u8])> {
    let header = rest.get(..BATCH_HEADER_BYTES)?;
    let len = usize::try_from(u64::from_le_bytes(header[..8].try_into().ok()?)).ok()?;
    let batch = rest[BATCH_HEADER_BYTES..].get(..len)?;
    Some((header[8..].try_into().ok()?, batch))
}

/// Removes the change log of the database file at `database`, if any, and flushes its folder.
pub fn remove(database: &Path) -> Result<(), StoreError> {
    let path = path_of(database);
    match std::fs::remove_file(&path) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(source) => return Err(StoreError::Io { path, source }),
    }
    partial::sync_folder_of(&path).map_err(|source| StoreError::Io { path, source })
}

/// Operation codes of a batch's changes.
const SET: u8 = 0;
const APPEND: u8 = 1;
const DELETE: u8 = 2;
const UPSERT: u8 = 3;
const REMOVE: u8 = 4;

/// A batch of changes as the log holds it: its length, its SHA-256 and its bytes (the module's
/// format), encoded in place after room for the first two.
fn batch_record(changes: &[Change]) -> Vec<u8> {
    let mut out = vec![0u8; BATCH_HEADER_BYTES];
    wire::write_varint(&mut out, changes.len() as u64);
    let bytes = |out: &mut Vec<u8>, bytes: &[u8]| {
        wire::write_varint(out, bytes.len() as u64);
        out.extend_from_slice(bytes);
    };
    for change in changes {
        match change {
            Change::Set { index, value } | Change::Append { index, value } => {
                let op = if matches!(change, Change::Set { .. }) {
                    SET
                } else {
                    APPEND
                };
                out.push(op);
                wire::write_varint(&mut out, *index);
                bytes(&mut out, value);
            }
            Change::Delete { index } => {
                out.push(DELETE);
                wire::write_varint(&mut out, *index);
            }
            Change::Upsert { key, value } => {
                out.push(UPSERT);
                bytes(&mut out, key);
                bytes(&mut out, value);
            }
            Change::Remove { key } => {
                out.push(REMOVE);
                bytes(&mut out, key);
            }
        }
    }
    let len = (out.len() - BATCH_HEADER_BYTES) as u64;
    let sum = Sha256::digest(&out[BATCH_HEADER_BYTES..]);
    out[..8].copy_from_slice(&len.to_le_bytes());
    out[8..BATCH_HEADER_BYTES].copy_from_slice(&sum);
    out
}

/// The changes of a batch's bytes, every length checked against what is left.
fn decode_batch(batch: &[u8]) -> Result<Vec<Change>, PirError> {
    let mut reader = Reader::new(batch, Kind::CHANGE_LOG);
    let count = reader.varint()?;
    // Each change takes 2 bytes at least.
    if count > batch.len() as u64 / 2 {
        return Err(reader.error(format!("{count} changes do not fit the batch")));
    }
    let bytes = |reader: &mut Reader<'_>| -> Result<Vec<u8>, PirError> {
        let len =
            usize::try_from(reader.varint()?).map_err(|_| reader.error("a length overflows"))?;
        Ok(reader.take(len)?.to_vec())
    };
    let mut changes = Vec::with_capacity(count as usize);
    for _ in 0..count {
        let op = reader.take(1)?[0];
        changes.push(match op {
            SET => Change::Set {
                index: reader.varint()?,
                value: bytes(&mut reader)?,
            },
            APPEND => Change::Append {
                index: reader.varint()?,
                value: bytes(&mut reader)?,
            },
            DELETE => Change::Delete {
                index: reader.varint()?,
            },
            UPSERT => Change::Upsert {
                key: bytes(&mut reader)?,
                value: bytes(&mut reader)?,
            },
            REMOVE => Change::Remove {
                key: bytes(&mut reader)?,
            },
            other => return Err(reader.error(format!("unknown operation {other}"))),
        });
    }
    reader.finish()?;
    Ok(changes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn change() -> impl Strategy<Value = Change> {
        let bytes = || proptest::collection::vec(any::<u8>(), 0..40);
        prop_oneof![
            (any::<u64>(), bytes()).prop_map(|(index, value)| Change::Set { index, value }),
            (any::<u64>(), bytes()).prop_map(|(index, value)| Change::Append { index, value }),
            any::<u64>().prop_map(|index| Change::Delete { index }),
            (bytes(), bytes()).prop_map(|(key, value)| Change::Upsert { key, value }),
            bytes().prop_map(|key| Change::Remove { key }),
        ]
    }

    proptest! {
        /// Batches appended come back in order; a log cut anywhere reads as the batches wholly
        /// before the cut, and the next append cuts the torn one off; a log of another file
        /// reads as none.
        #[test]
        fn batches_come_back_and_a_cut_log_reads_as_its_whole_batches(
            batches in proptest::collection::vec(proptest::collection::vec(change(), 0..6), 1..5),
            cut in any::<proptest::sample::Index>(),
        ) {
            let dir = tempfile::tempdir().unwrap();
            let db = dir.path().join("db.obs");
            let base = [7u8; 32];
            let (mut log, none) = ChangeLog::read(&db, &base).unwrap();
            prop_assert!(log.is_empty() && none.is_empty());
            let mut ends = Vec::new();
            let mut seen = vec![log];
            for batch in &batches {
                log.append(&db, batch).unwrap();
                ends.push(log.len());
                seen.push(log);
            }
            let (read, back) = ChangeLog::read(&db, &base).unwrap();
            prop_assert_eq!(read.versions(), batches.len());
            prop_assert_eq!(&back, &batches);
            prop_assert_eq!(read, log);
            // A reader that had read some of the batches gets the rest, and the log as a whole
            // reader gets it; one whose last batch is not the log's gets nothing.
            for (k, seen) in seen.iter().enumerate() {
                let after = ChangeLog::read_after(&db, seen).unwrap();
                prop_assert_eq!(after, Some((read, batches[k..].to_vec())));
                if k > 0 {
                    let mut other = *seen;
                    other.last[0] ^= 1;
                    prop_assert_eq!(ChangeLog::read_after(&db, &other).unwrap(), None);
                    let other = ChangeLog { valid_len: seen.valid_len - 1, ..*seen };
                    prop_assert_eq!(ChangeLog::read_after(&db, &other).unwrap(), None);
                }
            }
            let longer = ChangeLog { valid_len: log.valid_len + 1, ..log };
            prop_assert_eq!(ChangeLog::read_after(&db, &longer).unwrap(), None);
            prop_assert!(ChangeLog::read(&db, &[8u8; 32]).unwrap().1.is_empty());
            let bytes = std::fs::read(path_of(&db)).unwrap();
            let cut = wire::HEADER_BYTES + cut.index(bytes.len() - wire::HEADER_BYTES + 1);
            std::fs::write(path_of(&db), &bytes[..cut]).unwrap();
            let whole = ends.iter().filter(|&&end| end <= cut as u64).count();
            let (mut read, back) = ChangeLog::read(&db, &base).unwrap();
            prop_assert_eq!(&back[..], &batches[..whole]);
            read.append(&db, &batches[0]).unwrap();
            let (again, back) = ChangeLog::read(&db, &base).unwrap();
            prop_assert_eq!(again.versions(), whole + 1);
            prop_assert_eq!(back.len(), whole + 1);
            prop_assert_eq!(&back[whole], &batches[0]);
        }
    }

    #[test]
    fn a_batch_that_does_not_decode_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("db.obs");
        let base = [1u8; 32];
        // One change, of operation 9.
        let batch = [1u8, 9];
        let mut bytes = Vec::new();
        wire::write_header(&mut bytes, Kind::CHANGE_LOG, &base);
        bytes.extend_from_slice(&(batch.len() as u64).to_le_bytes());
        bytes.extend_from_slice(&Sha256::digest(batch));
        bytes.extend_from_slice(&batch);
        std::fs::write(path_of(&db), &bytes).unwrap();
        assert!(ChangeLog::read(&db, &base).is_err());
        std::fs::write(path_of(&db), b"not a log").unwrap();
        assert!(ChangeLog::read(&db, &base).is_err());
    }
}
