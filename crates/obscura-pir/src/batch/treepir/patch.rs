//! Patches of a TreePIR setup: how a client holding one version of a tree makes the next one
//! (leaves appended, [`super::append`]) itself. Appending changes the leaf count, the version,
//! the root and the entries of some sub-databases; the patch carries the first three and the
//! LWE engine's patch of each changed sub-database ([`crate::lwe::patch`]), which the client
//! applies to that sub-database's setup. A client of a growing log so downloads about the
//! appended entries, not the whole setup.
//!
//! ```text
//! envelope (magic, version, kind = TreePIR setup patch, digest of the setup it makes)  40 bytes
//! digest of the setup it applies to                                                     32 bytes
//! leaves: u64 LE | version: u64 LE | root: 32 bytes
//! sub-database patches: their count (u8), then each: its colour (u8, increasing), its length
//!   (u64 LE) and an LWE setup patch
//! ```

use super::TreePirSetup;
use crate::batch::merkle::Hash;
use crate::lwe::PublicSetup;
use crate::wire::{self, Digest, Kind, Reader};
use crate::PirError;

/// The patch that turns the setup of digest `base` into `next`, whose sub-databases of the
/// colours in `patches` changed by those LWE patches (in increasing colour order).
pub(super) fn encode(base: &Digest, next: &TreePirSetup, patches: &[(u8, Vec<u8>)]) -> Vec<u8> {
    let mut out = Vec::new();
    wire::write_header(&mut out, Kind::TREEPIR_SETUP_PATCH, next.digest());
    out.extend_from_slice(base);
    out.extend_from_slice(&next.leaves().to_le_bytes());
    out.extend_from_slice(&next.version().to_le_bytes());
    out.extend_from_slice(next.root());
    out.push(u8::try_from(patches.len()).expect("at most one patch per colour, fewer than 256"));
    for (color, patch) in patches {
        out.push(*color);
        out.extend_from_slice(&(patch.len() as u64).to_le_bytes());
        out.extend_from_slice(patch);
    }
    out
}

impl TreePirSetup {
    /// The setup `patch` makes of this one: its next version, as the server that made the patch
    /// holds it. The patch must name this setup, grow the tree within its height, patch each
    /// changed sub-database's setup (each patch checked as [`PublicSetup::patched`] checks it)
    /// and make the setup whose digest it names; anything else is refused
    /// ([`PirError::SetupMismatch`] for a patch of another setup, [`PirError::Malformed`]
    /// otherwise).
    pub fn patched(self, patch: &[u8]) -> Result<TreePirSetup, PirError> {
        let what = Kind::TREEPIR_SETUP_PATCH.describe();
        let (mut reader, digest) = Reader::open(patch, Kind::TREEPIR_SETUP_PATCH)?;
        if reader.take(32)? != self.digest() {
            return Err(PirError::SetupMismatch { what });
        }
        let leaves = reader.u64()?;
        let version = reader.u64()?;
        let root: Hash = reader.take(32)?.try_into().expect("32 bytes");
        if leaves <= self.leaves() || leaves > self.capacity() {
            return Err(reader.error(format!(
                "{leaves} leaves do not grow a tree of {} within its {}",
                self.leaves(),
                self.capacity()
            )));
        }
        if Some(version) != self.version().checked_add(1) {
            return Err(reader.error(format!(
                "the patch makes version {version} of a tree at version {}",
                self.version()
            )));
        }
        let height = self.height();
        let mut databases: Vec<Option<PublicSetup>> =
            self.databases.into_iter().map(Some).collect();
        let count = reader.u8()?;
        let mut next_color = 0;
        for _ in 0..count {
            let color = usize::from(reader.u8()?);
            if color < next_color || color >= databases.len() {
                return Err(reader.error(format!(
                    "sub-database {color} is patched out of order or does not exist"
                )));
            }
            next_color = color + 1;
            let len = usize::try_from(reader.u64()?)
                .map_err(|_| reader.error("a sub-database patch longer than memory"))?;
            let bytes = reader.take(len)?;
            let old = databases[color].take().expect("each colour patched once");
            databases[color] = Some(old.patched(bytes)?);
        }
        reader.finish()?;
        let databases = databases
            .into_iter()
            .map(|d| d.expect("every colour"))
            .collect();
        let next = TreePirSetup::new(leaves, height, version, root, databases);
        if *next.digest() != digest {
            return Err(PirError::malformed(
                what,
                "the patched setup is not the one the patch names",
            ));
        }
        Ok(next)
    }
}
