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
//! ends the file there for a reader, which checks every record's checksum; an append reads the
//! records' fields alone and checks the last record's checksum, as a crash during an append
//! leaves only the last one cut short, and cuts it off. What is kept is read from the newest patch back: each earlier one that leads
//! to the next (a patch to a version that was never committed, left by a crash before its
//! update committed, leads nowhere and is skipped), the newest `keep` of them, and no more of
//! them than add up to the setup's size (a longer chain costs more than the setup it replaces),
//! both bounds the newest patch's.

use std::io::{Read, Seek, SeekFrom, Write};
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
        crate::companion(database, ".patches")
    }

    /// The patches kept for the database file at `database`: none when there is no file of
    /// them or it is not one (it only saves clients downloads).
    pub fn read(database: &Path) -> Result<Self, StoreError> {
        let path = Self::path_of(database);
        match std::fs::read(&path) {
            Ok(bytes) => Ok(Self::from_bytes(&bytes)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Self::default()),
            Err(source) => Err(StoreError::Io { path, source }),
        }
    }

    /// Adds `patch`, the newest, and keeps what the database still needs: the patches that
    /// lead to `patch.from` in turn (dropping any to a version that was never written), the
    /// newest `keep` of them, and no more than add up to `setup_bytes`.
    pub fn push(&mut self, patch: Patch, keep: usize, setup_bytes: u64) {
        let mut all = std::mem::take(&mut self.patches);
        all.push(patch);
        *self = Self::kept_of(all, u32::try_from(keep).unwrap_or(u32::MAX), setup_bytes);
    }

    /// Of `all` (oldest first), those kept under the bounds `keep` and `setup_bytes`.
    fn kept_of(all: Vec<Patch>, keep: u32, setup_bytes: u64) -> Self {
        let links: Vec<Link> = all.iter().map(Link::of).collect();
        let kept = kept_indexes(&links, keep, setup_bytes);
        let mut all: Vec<Option<Patch>> = all.into_iter().map(Some).collect();
        Self {
            patches: kept.iter().filter_map(|&i| all[i].take()).collect(),
            keep,
            setup_bytes,
        }
    }

    /// Keeps `patch` for the database file at `database` as [`Patches::push`] does, durably:
    /// appended to the file and flushed, or the file written again whole with what is kept
    /// when what it holds besides outgrows it (or is not a file of patches).
    pub fn append(
        database: &Path,
        patch: Patch,
        keep: usize,
        setup_bytes: u64,
    ) -> Result<(), StoreError> {
        let path = Self::path_of(database);
        let io = |source| StoreError::Io {
            path: path.clone(),
            source,
        };
        let keep = u32::try_from(keep).unwrap_or(u32::MAX);
        let stored = Stored::scan(&path).map_err(io)?;
        let mut links: Vec<Link> = stored.records.iter().map(|r| r.link).collect();
        links.push(Link::of(&patch));
        let kept = kept_indexes(&links, keep, setup_bytes);
        let bytes_of = |i: usize| RECORD_BYTES as u64 + links[i].len;
        let kept_bytes: u64 = kept.iter().map(|&i| bytes_of(i)).sum();
        let held: u64 = (0..links.len()).map(bytes_of).sum();
        if stored.end == 0 || held > 2 * kept_bytes {
            // Written again whole with what is kept, the earlier patches read back.
            let mut file = None;
            let mut patches = Vec::with_capacity(kept.len());
            for &i in &kept {
                let Some(record) = stored.records.get(i) else {
                    patches.push(patch.clone());
                    continue;
                };
                let file = match &mut file {
                    Some(file) => file,
                    None => file.insert(std::fs::File::open(&path).map_err(io)?),
                };
                patches.push(record.read(file).map_err(io)?);
            }
            return Self {
                patches,
                keep,
                setup_bytes,
            }
            .write(database);
        }
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .open(&path)
            .map_err(io)?;
        file.set_len(stored.end).map_err(io)?;
        file.seek(SeekFrom::Start(stored.end)).map_err(io)?;
        file.write_all(&record(&patch, keep, setup_bytes))
            .map_err(io)?;
        file.sync_data().map_err(io)
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

    /// The encoded file.
    fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::new();
        wire::write_header(&mut out, Kind::KEPT_PATCHES, &[0; 32]);
        for patch in &self.patches {
            out.extend_from_slice(&record(patch, self.keep, self.setup_bytes));
        }
        out
    }
}

/// `patch`'s record, with the bounds `keep` and `setup_bytes`.
fn record(patch: &Patch, keep: u32, setup_bytes: u64) -> Vec<u8> {
    let mut out = Vec::with_capacity(RECORD_BYTES + patch.bytes.len());
    out.extend_from_slice(&patch.from);
    out.extend_from_slice(&patch.to);
    out.extend_from_slice(&keep.to_le_bytes());
    out.extend_from_slice(&setup_bytes.to_le_bytes());
    out.extend_from_slice(&(patch.bytes.len() as u64).to_le_bytes());
    out.extend_from_slice(&patch.bytes);
    let sum: [u8; 32] = Sha256::digest(&out).into();
    out.extend_from_slice(&sum);
    out
}

/// Whether `record`'s bytes (a whole record's length) end with the SHA-256 of those before.
fn undamaged(record: &[u8]) -> bool {
    let (body, sum) = record.split_at(record.len() - 32);
    Sha256::digest(body).as_slice() == sum
}

/// The setups a patch goes between and its length: what decides whether it is kept.
#[derive(Clone, Copy, Debug)]
struct Link {
    from: SetupSha256,
    to: SetupSha256,
    len: u64,
}

impl Link {
    fn of(patch: &Patch) -> Self {
        Self {
            from: patch.from,
            to: patch.to,
            len: patch.bytes.len() as u64,
        }
    }
}

/// Which of the patches `links` (oldest first) are kept under the bounds `keep` and
/// `setup_bytes`, oldest first: the newest, and from it back each earlier patch that leads to
/// the next, while they number at most `keep` and add up to at most `setup_bytes` (the newest is
/// kept whatever its size).
fn kept_indexes(links: &[Link], keep: u32, setup_bytes: u64) -> Vec<usize> {
    let mut kept: Vec<usize> = Vec::new();
    let mut total = 0u64;
    for (i, earlier) in links.iter().enumerate().rev() {
        if kept.len() >= keep as usize {
            break;
        }
        if let Some(&last) = kept.last() {
            if earlier.to != links[last].from {
                continue;
            }
            if total + earlier.len > setup_bytes {
                break;
            }
        }
        total += earlier.len;
        kept.push(i);
    }
    kept.reverse();
    kept
}

impl Patches {
    /// Decodes a file of kept patches up to its first record cut short or damaged (every
    /// record's checksum checked, every length before it is read): what is kept of them, under
    /// the newest one's bounds.
    fn from_bytes(bytes: &[u8]) -> Self {
        let (mut reader, zeros) = match Reader::open(bytes, Kind::KEPT_PATCHES) {
            Ok(opened) => opened,
            Err(_) => return Self::default(),
        };
        if zeros != [0; 32] {
            return Self::default();
        }
        let mut all = Vec::new();
        let mut bounds = (0, 0);
        while let Some((head, body)) = Head::parse(reader.rest()) {
            if !undamaged(&reader.rest()[..head.record_bytes()]) {
                break;
            }
            all.push(Patch {
                from: head.link.from,
                to: head.link.to,
                bytes: body.to_vec(),
            });
            bounds = (head.keep, head.setup_bytes);
            if reader.take(head.record_bytes()).is_err() {
                break;
            }
        }
        Self::kept_of(all, bounds.0, bounds.1)
    }
}

/// A record's fixed fields.
#[derive(Clone, Copy, Debug)]
struct Head {
    link: Link,
    keep: u32,
    setup_bytes: u64,
}

/// Bytes of a record's fields before its patch.
const HEAD_BYTES: usize = RECORD_BYTES - 32;

impl Head {
    /// The record at the start of `rest` if all its bytes are there: its fields and its
    /// patch's bytes.
    fn parse(rest: &[u8]) -> Option<(Self, &[u8])> {
        let head = Self::decode(rest.get(..HEAD_BYTES)?.try_into().expect("a head"));
        let body = rest
            .get(HEAD_BYTES..)?
            .get(..usize::try_from(head.link.len).ok()?)?;
        (rest.len() as u64 >= head.record_bytes() as u64).then_some((head, body))
    }

    /// The fields of a record's first [`HEAD_BYTES`].
    fn decode(bytes: &[u8; HEAD_BYTES]) -> Self {
        let word = |at: usize, n: usize| {
            let mut le = [0u8; 8];
            le[..n].copy_from_slice(&bytes[at..at + n]);
            u64::from_le_bytes(le)
        };
        Self {
            link: Link {
                from: bytes[..32].try_into().expect("32 bytes"),
                to: bytes[32..64].try_into().expect("32 bytes"),
                len: word(76, 8),
            },
            keep: word(64, 4) as u32,
            setup_bytes: word(68, 8),
        }
    }

    /// Bytes of the whole record (saturating: a length past memory is never whole).
    fn record_bytes(&self) -> usize {
        usize::try_from(self.link.len)
            .unwrap_or(usize::MAX)
            .saturating_add(RECORD_BYTES)
    }
}

/// A file of kept patches as an append finds it, read record head by record head: the last
/// record's checksum is checked (a crash during an append leaves only the last one cut short;
/// a damaged one before it costs clients a download, as their patched setup fails its ETag).
#[derive(Default)]
struct Stored {
    /// The whole records, oldest first, each with where it starts.
    records: Vec<StoredRecord>,
    /// Where the last whole record ends; 0 when there is no file or its header is not one.
    end: u64,
}

/// A record of a [`Stored`] file.
struct StoredRecord {
    link: Link,
    start: u64,
}

impl StoredRecord {
    /// Its patch, read from `file`.
    fn read(&self, file: &mut std::fs::File) -> std::io::Result<Patch> {
        let mut bytes = vec![0u8; (RECORD_BYTES as u64 + self.link.len) as usize];
        file.seek(SeekFrom::Start(self.start))?;
        file.read_exact(&mut bytes)?;
        Ok(Patch {
            from: self.link.from,
            to: self.link.to,
            bytes: bytes[HEAD_BYTES..bytes.len() - 32].to_vec(),
        })
    }
}

impl Stored {
    /// The file at `path`.
    fn scan(path: &Path) -> std::io::Result<Self> {
        let mut file = match std::fs::File::open(path) {
            Ok(file) => file,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Self::default()),
            Err(e) => return Err(e),
        };
        let len = file.metadata()?.len();
        let mut header = [0u8; wire::HEADER_BYTES];
        if file.read_exact(&mut header).is_err() {
            return Ok(Self::default());
        }
        match Reader::open(&header, Kind::KEPT_PATCHES) {
            Ok((_, zeros)) if zeros == [0; 32] => {}
            _ => return Ok(Self::default()),
        }
        let mut stored = Self {
            records: Vec::new(),
            end: wire::HEADER_BYTES as u64,
        };
        let mut head = [0u8; HEAD_BYTES];
        loop {
            file.seek(SeekFrom::Start(stored.end))?;
            if file.read_exact(&mut head).is_err() {
                break;
            }
            let link = Head::decode(&head).link;
            let Some(end) = stored
                .end
                .checked_add(RECORD_BYTES as u64)
                .and_then(|e| e.checked_add(link.len))
                .filter(|&e| e <= len)
            else {
                break;
            };
            stored.records.push(StoredRecord {
                link,
                start: stored.end,
            });
            stored.end = end;
        }
        if let Some(last) = stored.records.last() {
            let mut bytes = vec![0u8; (stored.end - last.start) as usize];
            file.seek(SeekFrom::Start(last.start))?;
            file.read_exact(&mut bytes)?;
            if !undamaged(&bytes) {
                stored.end = last.start;
                stored.records.pop();
            }
        }
        Ok(stored)
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
            let read = Patches::from_bytes(&bad);
            let whole = if at < wire::HEADER_BYTES {
                0
            } else {
                whole_before(at)
            };
            assert_eq!(kept(&read), kept(&patches)[..whole], "byte {at}");
        }
        for len in 0..bytes.len() {
            let read = Patches::from_bytes(&bytes[..len]);
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
            Patches::append(&database, patch(v, v + 1, 10), 4, 1000).unwrap();
            expected.push(patch(v, v + 1, 10), 4, 1000);
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
        // So is a last record whose bytes are all there but damaged: the update that wrote it
        // did not commit, and the next one writes its patch again.
        let bytes = std::fs::read(&path).unwrap();
        let mut bad = bytes.clone();
        *bad.last_mut().unwrap() ^= 1;
        std::fs::write(&path, &bad).unwrap();
        assert_eq!(
            kept(&Patches::read(&database).unwrap()),
            [(8, 9), (9, 10), (10, 11), (11, 12)]
        );
        Patches::append(&database, patch(12, 13, 10), 4, 1000).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), bytes);
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
