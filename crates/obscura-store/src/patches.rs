//! The patches kept beside a database file, for clients of its earlier versions.
//!
//! Each update of a database whose scheme makes patches ([`obscura_pir::PirServer::update`])
//! keeps the patch from the old version's setup to the new one in `FILE.patches`, beside the
//! database file `FILE`, with the setups' SHA-256s (the ETags clients hold). A client that holds
//! version `v` gets the patches from `v` to the current version, in turn ([`Patches::chain`]),
//! instead of the whole setup.
//!
//! ```text
//! envelope (magic, version, kind = kept patches, the SHA-256 of the setup the last one makes)
//! count: u32 LE
//! each patch, oldest first: the SHA-256 of the setup it applies to (32 bytes), of the setup it
//!   makes (32 bytes), its length (u64 LE), its bytes
//! the SHA-256 of every byte before (32 bytes)
//! ```
//!
//! The file is replaced whole before the database file is ([`crate::update`]): a crash between
//! the two leaves a patch to a version that was never written, which no client holds and no
//! chain to the current setup passes through; the next update drops it. What is kept is
//! bounded twice: the newest `keep` patches, and no more of them than add up to the setup's
//! size (a longer chain costs more than the setup it replaces).

use std::io::Write;
use std::path::{Path, PathBuf};

use obscura_pir::wire::{self, Kind, Reader};
use obscura_pir::PirError;
use sha2::{Digest as _, Sha256};

use crate::partial::Partial;
use crate::store::{InvalidFile, StoreError};

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

/// The patches kept for a database, oldest first.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Patches {
    patches: Vec<Patch>,
}

impl Patches {
    /// Where the patches of the database file at `database` are kept: `FILE.patches`.
    pub fn path_of(database: &Path) -> PathBuf {
        let mut name = database.as_os_str().to_owned();
        name.push(".patches");
        PathBuf::from(name)
    }

    /// The patches kept for the database file at `database`: none when there is no file of
    /// them; a file that is not a valid one is an error.
    pub fn read(database: &Path) -> Result<Self, StoreError> {
        let path = Self::path_of(database);
        let bytes = match std::fs::read(&path) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Self::default()),
            Err(source) => return Err(StoreError::Io { path, source }),
        };
        Self::from_bytes(&bytes).map_err(|source| StoreError::Invalid {
            path,
            source: InvalidFile::Format(source),
        })
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
                _ => Ok(()),
            };
        }
        let temp = Partial::beside(&path).map_err(io)?;
        temp.file().write_all(&self.to_bytes()).map_err(io)?;
        temp.persist(&path).map_err(io)
    }

    /// Adds `patch`, the newest, and keeps what the database still needs: the patches that
    /// lead to `patch.from` in turn (dropping any to a version that was never written), the
    /// newest `keep` of them, and no more than add up to `setup_bytes`.
    pub fn push(&mut self, patch: Patch, keep: usize, setup_bytes: u64) {
        let mut kept = vec![patch];
        let mut total = kept[0].bytes.len() as u64;
        for earlier in self.patches.drain(..).rev() {
            let last = kept.last().expect("one patch at least");
            if earlier.to != last.from {
                continue;
            }
            let size = total + earlier.bytes.len() as u64;
            if kept.len() >= keep || size > setup_bytes {
                break;
            }
            total = size;
            kept.push(earlier);
        }
        kept.truncate(keep);
        kept.reverse();
        self.patches = kept;
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
        let last = self.patches.last().map_or([0; 32], |p| p.to);
        let mut out = Vec::new();
        wire::write_header(&mut out, Kind::KEPT_PATCHES, &last);
        out.extend_from_slice(&(self.patches.len() as u32).to_le_bytes());
        for patch in &self.patches {
            out.extend_from_slice(&patch.from);
            out.extend_from_slice(&patch.to);
            out.extend_from_slice(&(patch.bytes.len() as u64).to_le_bytes());
            out.extend_from_slice(&patch.bytes);
        }
        let sum: [u8; 32] = Sha256::digest(&out).into();
        out.extend_from_slice(&sum);
        out
    }

    /// Decodes a file of kept patches, its checksum and every length checked.
    fn from_bytes(bytes: &[u8]) -> Result<Self, PirError> {
        let what = Kind::KEPT_PATCHES.describe();
        let (body, sum) = bytes
            .split_last_chunk::<32>()
            .ok_or_else(|| PirError::malformed(what, "shorter than its checksum"))?;
        if Sha256::digest(body).as_slice() != sum {
            return Err(PirError::malformed(what, "the checksum does not match"));
        }
        let (mut reader, last) = Reader::open(body, Kind::KEPT_PATCHES)?;
        let count = u32::from_le_bytes(reader.take(4)?.try_into().expect("4 bytes"));
        if u64::from(count) > reader.rest().len() as u64 / 72 {
            return Err(reader.error(format!("{count} patches do not fit the file")));
        }
        let mut patches = Vec::with_capacity(count as usize);
        for _ in 0..count {
            let from = reader.take(32)?.try_into().expect("32 bytes");
            let to = reader.take(32)?.try_into().expect("32 bytes");
            let len = usize::try_from(reader.u64()?)
                .map_err(|_| reader.error("a patch's length overflows"))?;
            let bytes = reader.take(len)?.to_vec();
            patches.push(Patch { from, to, bytes });
        }
        reader.finish()?;
        if patches.last().map_or([0; 32], |p| p.to) != last {
            return Err(PirError::malformed(what, "the header names another setup"));
        }
        Ok(Self { patches })
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

    #[test]
    fn files_round_trip_and_damage_is_refused() {
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
        for at in (0..bytes.len()).step_by(7) {
            let mut bad = bytes.clone();
            bad[at] ^= 1;
            assert!(Patches::from_bytes(&bad).is_err(), "byte {at}");
        }
        for len in 0..bytes.len() {
            assert!(Patches::from_bytes(&bytes[..len]).is_err(), "cut at {len}");
        }
        Patches::default().write(&database).unwrap();
        assert!(!Patches::path_of(&database).exists());
    }
}
