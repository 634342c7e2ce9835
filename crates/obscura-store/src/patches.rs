//! The patches kept beside a database file, for clients of its earlier versions.
//!
//! Each update of a database whose scheme makes patches ([`obscura_pir::PirServer::update`])
//! keeps the patch from the old version's setup to the new one in `FILE.patches`, beside the
//! database file `FILE`, with the setups' SHA-256s (the ETags clients hold). A client that holds
//! version `v` gets the patches from `v` to the current version, in turn ([`Patches::chain`]),
//! instead of the whole setup.
//!
//! ```text
//! envelope (magic, version, kind = kept patches, 32 zero bytes)
//! each patch, oldest first: the SHA-256 of the setup it applies to (32 bytes), of the setup it
//!   makes (32 bytes), how many patches to keep (u32 LE), the setup's size (u64 LE), its length
//!   (u64 LE), its bytes, the SHA-256 of the record's bytes before (32 bytes)
//! ```
//!
//! An update appends its patch and flushes the file ([`Patches::append`]) before the database
//! file or its log commits the version ([`crate::update`]); the file is written again whole,
//! with only what is kept, when what it holds past that outgrows what is kept, so an update
//! writes about its own patch's bytes, not every kept patch's. A record cut short or damaged
//! ends the file there (a crash during an append leaves the patches before it; the next append
//! cuts it off). What is kept is read from the newest patch back: each earlier one that leads
//! to the next (a patch to a version that was never committed, left by a crash before its
//! update committed, leads nowhere and is skipped), the newest `keep` of them, and no more of
//! them than add up to the setup's size (a longer chain costs more than the setup it replaces),
//! both bounds the newest patch's.

use std::io::{Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use obscura_pir::wire::{self, Kind, Reader};
use sha2::{Digest as _, Sha256};

use crate::partial::{sync_folder_of, Partial};
use crate::store::StoreError;

/// How many versions back a database keeps patches for unless told otherwise.
pub const DEFAULT_KEEP: usize = 16;

/// A setup's SHA-256 (its ETag).
pub type SetupSha256 = [u8; 32];

/// One kept patch: the setups it goes between, by SHA-256, and its bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Patch {
    /// The SHA-256 of the setup it applies to.
    pub from: SetupSha256,
    /// The SHA-256 of the setup it makes.
    pub to: SetupSha256,
    /// The encoded patch.
    pub bytes: Vec<u8>,
}

/// Bytes of a record besides its patch's: the two setups' SHA-256s, the two bounds, the
/// length and the record's SHA-256.
const RECORD_BYTES: usize = 32 + 32 + 4 + 8 + 8 + 32;

/// The patches kept for a database, oldest first, with the bounds that keep them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Patches {
    patches: Vec<Patch>,
    keep: u32,
    setup_bytes: u64,
}

impl Patches {
    /// Where the patches of the database file at `database` are kept: `FILE.patches`.
    pub fn path_of(database: &Path) -> PathBuf {
        let mut name = database.as_os_str().to_owned();
        name.push(".patches");
        PathBuf::from(name)
    }

    /// The patches kept for the database file at `database`: none when there is no file of
    /// them or it is not one (it only saves clients downloads).
    pub fn read(database: &Path) -> Result<Self, StoreError> {
        Ok(Stored::read(database)?.kept())
    }

    /// Adds `patch`, the newest, and keeps what the database still needs: the patches that
    /// lead to `patch.from` in turn (dropping any to a version that was never written), the
    /// newest `keep` of them, and no more than add up to `setup_bytes`.
    pub fn push(&mut self, patch: Patch, keep: usize, setup_bytes: u64) {
        let mut all = std::mem::take(&mut self.patches);
        all.push(patch);
        *self = Self::kept_of(all, u32::try_from(keep).unwrap_or(u32::MAX), setup_bytes);
    }

    /// Keeps `patch` for the database file at `database` as [`Patches::push`] does, durably:
    /// appended to the file and flushed, or the file written again whole with what is kept
    /// when what it holds besides outgrows it. Returns what is now kept.
    pub fn append(
        database: &Path,
        patch: Patch,
        keep: usize,
        setup_bytes: u64,
    ) -> Result<Self, StoreError> {
        let path = Self::path_of(database);
        let io = |source| StoreError::Io {
            path: path.clone(),
            source,
        };
        let stored = Stored::read(database)?;
        let (end, held) = (stored.end, stored.records_bytes);
        let mut kept = stored.kept();
        kept.push(patch.clone(), keep, setup_bytes);
        let record = kept.record(&patch);
        let held = held + record.len() as u64;
        if end == 0 || held > 2 * kept.records_bytes() {
            kept.write(database)?;
            return Ok(kept);
        }
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .open(&path)
            .map_err(io)?;
        file.set_len(end).map_err(io)?;
        file.seek(SeekFrom::Start(end)).map_err(io)?;
        file.write_all(&record).map_err(io)?;
        file.sync_data().map_err(io)?;
        Ok(kept)
    }

    /// Keeps these patches for the database file at `database`, replacing what was kept
    /// atomically and durably; with no patches, the file is removed.
    pub fn write(&self, database: &Path) -> Result<(), StoreError> {
        let path = Self::path_of(database);
        let io = |source| StoreError::Io {
            path: path.clone(),
            source,
        };
        if self.patches.is_empty() {
            return match std::fs::remove_file(&path) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(io(e)),
                Err(_) => Ok(()),
                Ok(()) => sync_folder_of(&path).map_err(io),
            };
        }
        let temp = Partial::beside(&path).map_err(io)?;
        temp.file().write_all(&self.to_bytes()).map_err(io)?;
        temp.persist(&path).map_err(io)
    }

    /// The patches that take the setup with SHA-256 `from` to the one with SHA-256 `to`, in
    /// turn; `None` when no kept patches do.
    pub fn chain(&self, from: &SetupSha256, to: &SetupSha256) -> Option<Vec<&[u8]>> {
        let start = self.patches.iter().position(|p| p.from == *from)?;
        let mut chain = Vec::new();
        let mut at = from;
        for patch in &self.patches[start..] {
            if patch.from != *at {
                return None;
            }
            chain.push(patch.bytes.as_slice());
            if patch.to == *to {
                return Some(chain);
            }
            at = &patch.to;
        }
        None
    }

    /// The patches, oldest first.
    pub fn iter(&self) -> impl Iterator<Item = &Patch> {
        self.patches.iter()
    }

    /// What of `all` (oldest first) is kept under the bounds `keep` and `setup_bytes`: the
    /// newest, and from it back each earlier patch that leads to the next, while they number
    /// at most `keep` and add up to at most `setup_bytes` (the newest is kept whatever its size).
    fn kept_of(all: Vec<Patch>, keep: u32, setup_bytes: u64) -> Self {
        let mut kept: Vec<Patch> = Vec::new();
        let mut total = 0u64;
        for earlier in all.into_iter().rev() {
            if kept.len() >= keep as usize {
                break;
            }
            if let Some(last) = kept.last() {
                if earlier.to != last.from {
                    continue;
                }
                if total + earlier.bytes.len() as u64 > setup_bytes {
                    break;
                }
            }
            total += earlier.bytes.len() as u64;
            kept.push(earlier);
        }
        kept.reverse();
        Self {
            patches: kept,
            keep,
            setup_bytes,
        }
    }

    /// `patch`'s record, with these bounds.
    fn record(&self, patch: &Patch) -> Vec<u8> {
        let mut out = Vec::with_capacity(RECORD_BYTES + patch.bytes.len());
        out.extend_from_slice(&patch.from);
        out.extend_from_slice(&patch.to);
        out.extend_from_slice(&self.keep.to_le_bytes());
        out.extend_from_slice(&self.setup_bytes.to_le_bytes());
        out.extend_from_slice(&(patch.bytes.len() as u64).to_le_bytes());
        out.extend_from_slice(&patch.bytes);
        let sum: [u8; 32] = Sha256::digest(&out).into();
        out.extend_from_slice(&sum);
        out
    }

    /// Bytes of the kept patches' records.
    fn records_bytes(&self) -> u64 {
        self.patches
            .iter()
            .map(|p| (RECORD_BYTES + p.bytes.len()) as u64)
            .sum()
    }

    /// The encoded file.
    fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::new();
        wire::write_header(&mut out, Kind::KEPT_PATCHES, &[0; 32]);
        for patch in &self.patches {
            out.extend_from_slice(&self.record(patch));
        }
        out
    }
}

/// A file of kept patches as it lies: every whole record, in turn, and where the last ends.
#[derive(Default)]
struct Stored {
    /// The records' patches and their bounds, oldest first.
    records: Vec<(Patch, u32, u64)>,
    /// Bytes of the records.
    records_bytes: u64,
    /// Where the last whole record ends; 0 when there is no file or its header is not one.
    end: u64,
}

impl Stored {
    /// The file of the database file at `database`.
    fn read(database: &Path) -> Result<Self, StoreError> {
        let path = Patches::path_of(database);
        match std::fs::read(&path) {
            Ok(bytes) => Ok(Self::from_bytes(&bytes)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Self::default()),
            Err(source) => Err(StoreError::Io { path, source }),
        }
    }

    /// Decodes a file of kept patches up to its first record cut short or damaged; every
    /// length is checked before it is read.
    fn from_bytes(bytes: &[u8]) -> Self {
        let (mut reader, zeros) = match Reader::open(bytes, Kind::KEPT_PATCHES) {
            Ok(opened) => opened,
            Err(_) => return Self::default(),
        };
        if zeros != [0; 32] {
            return Self::default();
        }
        let mut stored = Self {
            end: wire::HEADER_BYTES as u64,
            ..Self::default()
        };
        while let Some((record, len)) = Self::record(&mut reader) {
            stored.records.push(record);
            stored.records_bytes += len as u64;
            stored.end += len as u64;
        }
        stored
    }

    /// The next record and its length, if whole and undamaged.
    fn record(reader: &mut Reader<'_>) -> Option<((Patch, u32, u64), usize)> {
        let rest = reader.rest();
        let fixed = RECORD_BYTES - 32;
        let head = rest.get(..fixed)?;
        let len = u64::from_le_bytes(head[fixed - 8..].try_into().expect("8 bytes"));
        let body_len = usize::try_from(len).ok()?.checked_add(fixed)?;
        let body = rest.get(..body_len)?;
        let sum = rest.get(body_len..body_len.checked_add(32)?)?;
        if Sha256::digest(body).as_slice() != sum {
            return None;
        }
        reader.take(body_len + 32).ok()?;
        let patch = Patch {
            from: head[..32].try_into().expect("32 bytes"),
            to: head[32..64].try_into().expect("32 bytes"),
            bytes: body[fixed..].to_vec(),
        };
        let keep = u32::from_le_bytes(head[64..68].try_into().expect("4 bytes"));
        let setup_bytes = u64::from_le_bytes(head[68..76].try_into().expect("8 bytes"));
        Some(((patch, keep, setup_bytes), body_len + 32))
    }

    /// What is kept of the records, under the newest one's bounds.
    fn kept(self) -> Patches {
        let Some(&(_, keep, setup_bytes)) = self.records.last() else {
            return Patches::default();
        };
        Patches::kept_of(
            self.records
                .into_iter()
                .map(|(patch, _, _)| patch)
                .collect(),
            keep,
            setup_bytes,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A patch from the setup numbered `from` to `to`, of `len` bytes.
    fn patch(from: u8, to: u8, len: usize) -> Patch {
        Patch {
            from: [from; 32],
            to: [to; 32],
            bytes: vec![from ^ to; len],
        }
    }

    #[test]
    fn chains_lead_from_a_kept_version_to_the_current_one() {
        let mut patches = Patches::default();
        for v in 0..5 {
            patches.push(patch(v, v + 1, 10), 16, 1000);
        }
        let chain = patches.chain(&[1; 32], &[5; 32]).unwrap();
        assert_eq!(chain, [[1 ^ 2; 10], [2 ^ 3; 10], [3 ^ 4; 10], [4 ^ 5; 10]]);
        assert_eq!(patches.chain(&[4; 32], &[5; 32]).unwrap().len(), 1);
        assert!(patches.chain(&[5; 32], &[5; 32]).is_none());
        assert!(patches.chain(&[9; 32], &[5; 32]).is_none());
        assert!(patches.chain(&[1; 32], &[9; 32]).is_none());
    }

    #[test]
    fn what_is_kept_is_bounded_by_count_and_by_the_setup_size() {
        let mut patches = Patches::default();
        for v in 0..10 {
            patches.push(patch(v, v + 1, 10), 4, 1000);
        }
        assert_eq!(patches.iter().count(), 4);
        assert_eq!(patches.iter().next().unwrap().from, [6; 32]);
        let mut patches = Patches::default();
        for v in 0..10 {
            patches.push(patch(v, v + 1, 10), 16, 35);
        }
        assert_eq!(patches.iter().count(), 3);
        patches.push(patch(10, 11, 50), 16, 35);
        assert_eq!(
            patches.iter().count(),
            1,
            "a patch larger than the setup is kept alone"
        );
    }

    #[test]
    fn a_patch_to_a_version_never_written_is_dropped() {
        let mut patches = Patches::default();
        patches.push(patch(0, 1, 10), 16, 1000);
        // An update wrote its patch 1 -> 2, then died before renaming its database file.
        patches.push(patch(1, 2, 10), 16, 1000);
        // The next update starts from version 1 again.
        patches.push(patch(1, 3, 10), 16, 1000);
        let kept: Vec<_> = patches.iter().map(|p| (p.from[0], p.to[0])).collect();
        assert_eq!(kept, [(0, 1), (1, 3)]);
        assert_eq!(patches.chain(&[0; 32], &[3; 32]).unwrap().len(), 2);
    }

    /// The (from, to) of the kept patches, by their setups' numbers.
    fn kept(patches: &Patches) -> Vec<(u8, u8)> {
        patches.iter().map(|p| (p.from[0], p.to[0])).collect()
    }

    #[test]
    fn files_round_trip_and_end_at_their_first_damaged_record() {
        let dir = tempfile::tempdir().unwrap();
        let database = dir.path().join("db.obs");
        assert_eq!(Patches::read(&database).unwrap(), Patches::default());
        let mut patches = Patches::default();
        for v in 0..3 {
            patches.push(patch(v, v + 1, 10 + v as usize), 16, 1000);
        }
        patches.write(&database).unwrap();
        assert_eq!(Patches::read(&database).unwrap(), patches);
        let bytes = std::fs::read(Patches::path_of(&database)).unwrap();
        // Where each record ends.
        let ends: Vec<usize> = (0..3)
            .scan(wire::HEADER_BYTES, |end, v| {
                *end += RECORD_BYTES + 10 + v;
                Some(*end)
            })
            .collect();
        assert_eq!(ends[2], bytes.len());
        let whole_before = |at: usize| ends.iter().filter(|&&end| end <= at).count();
        for at in 0..bytes.len() {
            let mut bad = bytes.clone();
            bad[at] ^= 1;
            let read = Stored::from_bytes(&bad).kept();
            let whole = if at < wire::HEADER_BYTES {
                0
            } else {
                whole_before(at)
            };
            assert_eq!(kept(&read), kept(&patches)[..whole], "byte {at}");
        }
        for len in 0..bytes.len() {
            let read = Stored::from_bytes(&bytes[..len]).kept();
            assert_eq!(
                kept(&read),
                kept(&patches)[..whole_before(len)],
                "cut at {len}"
            );
        }
        Patches::default().write(&database).unwrap();
        assert!(!Patches::path_of(&database).exists());
    }

    #[test]
    fn appends_add_a_record_until_what_is_dropped_outgrows_what_is_kept() {
        let dir = tempfile::tempdir().unwrap();
        let database = dir.path().join("db.obs");
        let path = Patches::path_of(&database);
        let record = (RECORD_BYTES + 10) as u64;
        let mut expected = Patches::default();
        let mut sizes = Vec::new();
        for v in 0..12 {
            let kept = Patches::append(&database, patch(v, v + 1, 10), 4, 1000).unwrap();
            expected.push(patch(v, v + 1, 10), 4, 1000);
            assert_eq!(kept, expected);
            assert_eq!(Patches::read(&database).unwrap(), expected);
            sizes.push(
                (std::fs::metadata(&path).unwrap().len() - wire::HEADER_BYTES as u64) / record,
            );
        }
        // Four kept; the file grows a record at a time up to twice that, then holds the four.
        assert_eq!(sizes, [1, 2, 3, 4, 5, 6, 7, 8, 4, 5, 6, 7]);
        // A record cut short by a crash is cut off by the next append.
        let bytes = std::fs::read(&path).unwrap();
        std::fs::write(&path, [&bytes[..], &bytes[bytes.len() - 20..]].concat()).unwrap();
        assert_eq!(Patches::read(&database).unwrap(), expected);
        Patches::append(&database, patch(12, 13, 10), 4, 1000).unwrap();
        expected.push(patch(12, 13, 10), 4, 1000);
        assert_eq!(Patches::read(&database).unwrap(), expected);
        assert_eq!(
            std::fs::metadata(&path).unwrap().len(),
            bytes.len() as u64 + record
        );
        // A patch to a version never committed is passed over by the next version's.
        Patches::append(&database, patch(13, 99, 10), 4, 1000).unwrap();
        Patches::append(&database, patch(13, 14, 10), 4, 1000).unwrap();
        assert_eq!(
            kept(&Patches::read(&database).unwrap()),
            [(10, 11), (11, 12), (12, 13), (13, 14)]
        );
        // A file that is not one is replaced.
        std::fs::write(&path, b"not patches").unwrap();
        assert_eq!(Patches::read(&database).unwrap(), Patches::default());
        Patches::append(&database, patch(14, 15, 10), 4, 1000).unwrap();
        assert_eq!(kept(&Patches::read(&database).unwrap()), [(14, 15)]);
    }
}
