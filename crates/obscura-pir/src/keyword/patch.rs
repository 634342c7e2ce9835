//! Patches of a keyword setup: how a client holding one version makes the next, when the next
//! keeps the main table (a batch of changes builds only the delta table again). The patch is
//! the new key count, version and delta table, which is all that changed; a compaction makes a
//! new main table, and clients fetch that setup whole.
//!
//! ```text
//! envelope (magic, version, kind = keyword setup patch, digest of the setup it makes)  40 bytes
//! digest of the setup it applies to                                                   32 bytes
//! keys: u64 LE | version: u64 LE
//! delta tables: u8 (0 or 1), then the delta table as the setup encodes it
//! ```

use super::index::KeywordIndex;
use super::setup::{Setup, Table};
use crate::wire::{self, Digest, Kind, Reader};
use crate::PirError;

/// The patch that turns the setup of digest `base`, with the same main table, into `next`.
pub(super) fn encode<I: KeywordIndex>(base: &Digest, next: &Setup<I>) -> Vec<u8> {
    let mut out = Vec::new();
    wire::write_header(&mut out, Kind::KEYWORD_SETUP_PATCH, next.digest());
    out.extend_from_slice(base);
    out.extend_from_slice(&next.keys().to_le_bytes());
    out.extend_from_slice(&next.version().to_le_bytes());
    out.push(u8::from(next.delta.is_some()));
    if let Some(delta) = &next.delta {
        delta.write(&mut out);
    }
    out
}

impl<I: KeywordIndex> Setup<I> {
    /// The setup `patch` makes of this one: its next version, the same main table with the
    /// patch's delta table. The patch must name this setup and make the next version, whose
    /// digest it names; anything else is refused ([`PirError::SetupMismatch`] for a patch of
    /// another setup, [`PirError::Malformed`] otherwise).
    pub fn patched(self, patch: &[u8]) -> Result<Self, PirError> {
        let what = Kind::KEYWORD_SETUP_PATCH.describe();
        let (mut reader, digest) = Reader::open(patch, Kind::KEYWORD_SETUP_PATCH)?;
        if reader.take(32)? != self.digest() {
            return Err(PirError::SetupMismatch { what });
        }
        let (keys, version) = (reader.u64()?, reader.u64()?);
        if Some(version) != self.version().checked_add(1) {
            return Err(reader.error(format!(
                "the patch makes version {version} of a setup at version {}",
                self.version()
            )));
        }
        let delta = match reader.u8()? {
            0 => None,
            1 => Some(Table::read(&mut reader)?),
            count => return Err(reader.error(format!("{count} delta tables"))),
        };
        reader.finish()?;
        let next = Setup::new(self.main, delta, keys, version);
        if *next.digest() != digest {
            return Err(PirError::malformed(
                what,
                "the patched setup is not the one the patch names",
            ));
        }
        Ok(next)
    }
}
