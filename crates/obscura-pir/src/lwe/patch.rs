//! Patches: how a client holding one version of a setup makes the next one itself.
//!
//! A new version ([`super::update`]) changes the layer (records, row norm), the version and
//! the hint, by `ΔH = ΔD·A`. A patch carries the first two and `ΔD`: the database entries that
//! changed, each by its `δ` (new digit minus old, both read as signed, so `|δ| < p`). The
//! client adds `δ·A[c]` to row `r` of its hint for each ([`obscura_math::hint_delta`]), checks
//! the result against the hint's hash and the new setup's digest, both in the patch, and
//! holds the setup a download would have given it. A record's digits lie down one column, so
//! the entries come as runs down a column: a changed record of `b` bytes costs about
//! `b·(log p + 1) / log p` bytes and a few bytes of position, whatever the layout.
//!
//! ```text
//! envelope (magic, version, kind = LWE setup patch, digest of the setup it makes)  40 bytes
//! digest of the setup it applies to                                                32 bytes
//! the new setup's layer (Layer::ENCODED_BYTES), version (u64 LE), hint hash (32 bytes)
//! runs: their count (varint), then each run:
//!   its column minus the previous run's (varint; the first run's column itself)
//!   its first row (varint), its entries (varint, at least 1)
//!   the entries' δ, top to bottom, (log p + 1)-bit two's complement packed LSB first,
//!   the last byte padded with zero bits
//! ```
//!
//! Runs are in column order, a column's runs top to bottom without overlapping. Entries a few
//! rows apart in one column share a run (the rows between with `δ = 0`), which costs less than
//! a run's position.

use obscura_math::hint_delta::{self, ColumnRuns};

use super::setup::{Encoded, Layer, PublicSetup};
use crate::wire::{self, Digest, Kind, Reader};
use crate::PirError;

/// Unchanged entries between two changed ones of a column that are sent as zeros rather than
/// starting a new run (a run's position takes about this many entries' bits).
const MAX_GAP: usize = 8;

/// The patch that turns the setup of digest `base` into `next`, whose databases differ by
/// `changes`: runs in column order, a column's top to bottom without overlapping, every `δ`
/// within `(-p, p)`.
pub(super) fn encode(base: &Digest, next: &PublicSetup, changes: &ColumnRuns) -> Vec<u8> {
    let width = delta_width(next.layer());
    let mut out = Vec::new();
    wire::write_header(&mut out, Kind::LWE_SETUP_PATCH, next.digest());
    out.extend_from_slice(base);
    next.layer().write(&mut out);
    out.extend_from_slice(&next.version().to_le_bytes());
    out.extend_from_slice(next.hint_hash());
    let runs = runs(changes);
    wire::write_varint(&mut out, runs.len() as u64);
    let mut column = 0;
    for run in runs {
        wire::write_varint(&mut out, (run.col - column) as u64);
        column = run.col;
        wire::write_varint(&mut out, run.first_row as u64);
        wire::write_varint(&mut out, run.deltas.len() as u64);
        let values = run.deltas.iter().map(|&delta| two_complement(delta, width));
        wire::write_packed(&mut out, values, width);
    }
    out
}

/// The runs a patch sends for `changes`: each run of `changes` without the unchanged entries
/// at its ends, cut where more than [`MAX_GAP`] unchanged entries lie between two changed
/// ones.
fn runs(changes: &ColumnRuns) -> Vec<hint_delta::Run<'_>> {
    // Each piece of consecutive changed entries with no more than `MAX_GAP` unchanged between.
    let mut pieces: Vec<hint_delta::Run<'_>> = Vec::new();
    for run in changes.iter() {
        let mut k = 0;
        while let Some(skip) = run.deltas[k..].iter().position(|&d| d != 0) {
            let start = k + skip;
            let mut end = start + 1;
            while let Some(next) = run.deltas[end..].iter().position(|&d| d != 0) {
                if next > MAX_GAP {
                    break;
                }
                end += next + 1;
            }
            pieces.push(hint_delta::Run {
                col: run.col,
                first_row: run.first_row + start,
                deltas: &run.deltas[start..end],
            });
            k = end;
        }
    }
    pieces
}

/// Bits of one `δ` in a patch of `layer`: `log p` and a sign.
fn delta_width(layer: &Layer) -> u32 {
    u32::from(layer.geometry().log_p()) + 1
}

/// `delta` as a `width`-bit two's complement field.
fn two_complement(delta: i16, width: u32) -> u64 {
    u64::from(delta as u16) & ((1 << width) - 1)
}

impl PublicSetup {
    /// The setup `patch` makes of this one: its next version, as the server that made the
    /// patch holds it. The patch must name this setup, keep its parameters, seed and matrix
    /// shape, and make a hint with the hash and a setup with the digest it names; anything
    /// else is refused ([`PirError::SetupMismatch`] for a patch of another setup,
    /// [`PirError::Malformed`] otherwise).
    pub fn patched(self, patch: &[u8]) -> Result<PublicSetup, PirError> {
        let (mut reader, head) = Head::read(patch, self.digest(), self.layer(), self.version())?;
        let mut hint = self.into_hint();
        let a = head.layer.matrix_a();
        read_runs(&mut reader, &head.layer, &mut |deltas| {
            hint_delta::apply(&mut hint, &a, deltas)
        })?;
        reader.finish()?;
        let next = PublicSetup::versioned(head.layer.clone(), head.version, hint)?;
        head.check(next.hint_hash(), next.digest())?;
        Ok(next)
    }
}

/// The encoded setup `patch` makes of the encoded setup `setup`: the encoding of
/// [`PublicSetup::patched`]'s setup, made in `setup`'s own bytes where its hint's bytes can be
/// taken as words (the hint changed where it lies and the fields before it written again, with
/// no copy of the setup decoded or encoded), and by decoding, patching and encoding it
/// otherwise. On an error the bytes are dropped: they may be half patched.
pub(super) fn patch_encoded(mut setup: Vec<u8>, patch: &[u8]) -> Result<Vec<u8>, PirError> {
    let encoded = Encoded::read(&setup)?;
    let Some(words) = encoded.hint_words_mut(&mut setup) else {
        return Ok(PublicSetup::from_bytes(&setup)?.patched(patch)?.to_bytes());
    };
    let (mut reader, head) = Head::read(patch, &encoded.digest, &encoded.layer, encoded.version)?;
    let a = head.layer.matrix_a();
    read_runs(&mut reader, &head.layer, &mut |deltas| {
        hint_delta::apply_to_rows(words, &a, deltas)
    })?;
    reader.finish()?;
    let (hint_hash, digest) = encoded.rewrite(&mut setup, &head.layer, head.version)?;
    head.check(&hint_hash, &digest)?;
    Ok(setup)
}

/// What a patch says of the setup it makes, read and checked against the setup it applies to.
struct Head {
    /// The digest of the setup it makes.
    digest: Digest,
    /// The new setup's layer.
    layer: Layer,
    /// The new setup's version.
    version: u64,
    /// The new setup's hint's hash.
    hint_hash: [u8; 32],
}

impl Head {
    /// The head of `patch`, and its reader at the runs, for the setup of digest `base`, layer
    /// `old` and version `version`: the patch must name that setup, keep its parameters, seed
    /// and matrix shape, and make the next version.
    fn read<'a>(
        patch: &'a [u8],
        base: &Digest,
        old: &Layer,
        version: u64,
    ) -> Result<(Reader<'a>, Self), PirError> {
        let what = Kind::LWE_SETUP_PATCH.describe();
        let (mut reader, digest) = Reader::open(patch, Kind::LWE_SETUP_PATCH)?;
        if reader.take(32)? != base {
            return Err(PirError::SetupMismatch { what });
        }
        let layer = Layer::read(&mut reader)?;
        let next = reader.u64()?;
        let hint_hash: [u8; 32] = reader.take(32)?.try_into().expect("32 bytes");
        let new = &layer;
        let same_matrix = old.params().set == new.params().set
            && old.params().matrix == new.params().matrix
            && old.format() == new.format()
            && old.seed() == new.seed()
            && old.geometry().rows() == new.geometry().rows()
            && old.geometry().cols() == new.geometry().cols()
            && old.geometry().log_p() == new.geometry().log_p();
        if !same_matrix {
            return Err(reader.error("the patch changes the parameters, seed or matrix shape"));
        }
        if Some(next) != version.checked_add(1) {
            return Err(reader.error(format!(
                "the patch makes version {next} of a setup at version {version}"
            )));
        }
        let head = Self {
            digest,
            layer,
            version: next,
            hint_hash,
        };
        Ok((reader, head))
    }

    /// Whether the setup patched has the hint's hash and the digest the patch names.
    fn check(&self, hint_hash: &[u8; 32], digest: &Digest) -> Result<(), PirError> {
        if *hint_hash != self.hint_hash || *digest != self.digest {
            return Err(PirError::malformed(
                Kind::LWE_SETUP_PATCH.describe(),
                "the patched setup is not the one the patch names",
            ));
        }
        Ok(())
    }
}

/// Entry changes held at a time while a patch is read (two bytes each, with a run's position):
/// a patch of any size is applied in batches of about this many.
const BATCH: usize = 1 << 24;

/// Hands the entry changes of a patch's runs to `apply`, a batch at a time, each checked to
/// lie inside the matrix of `layer`, in column order without overlaps, its `δ` within
/// `(-p, p)`. The batches before a malformed run have been handed over when the error is
/// returned.
fn read_runs(
    reader: &mut Reader<'_>,
    layer: &Layer,
    apply: &mut dyn FnMut(&ColumnRuns),
) -> Result<(), PirError> {
    let (rows, cols) = (layer.geometry().rows(), layer.geometry().cols());
    let width = delta_width(layer);
    let p = 1i64 << layer.geometry().log_p();
    let count = reader.varint()?;
    // A run takes at least four bytes: three varints and one byte of δ.
    if count > reader.rest().len() as u64 / 4 {
        return Err(reader.error(format!("{count} runs do not fit the patch")));
    }
    let mut batch = ColumnRuns::new();
    let mut deltas = Vec::new();
    let (mut column, mut end) = (0u64, 0u64);
    for k in 0..count {
        let step = reader.varint()?;
        column = column
            .checked_add(step)
            .filter(|&c| c < cols)
            .ok_or_else(|| reader.error("a run lies past the matrix's columns"))?;
        let (first, len) = (reader.varint()?, reader.varint()?);
        let last = first
            .checked_add(len)
            .filter(|&last| len > 0 && last <= rows);
        let last = last.ok_or_else(|| reader.error("a run is empty or lies past the rows"))?;
        if k > 0 && step == 0 && first < end {
            return Err(reader.error("runs of a column overlap or are out of order"));
        }
        end = last;
        deltas.clear();
        for value in reader.packed(len as usize, width)? {
            let delta = value as i64 - (((value >> (width - 1)) & 1) << width) as i64;
            if delta <= -p {
                return Err(reader.error(format!("a change of {delta} exceeds the digits")));
            }
            deltas.push(delta as i16);
        }
        batch.push(column as usize, first as usize, &deltas);
        if batch.entries() >= BATCH {
            apply(&batch);
            batch = ColumnRuns::new();
        }
    }
    apply(&batch);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::setup::EngineOptions;
    use super::super::{Layout, Server};
    use super::*;
    use crate::{Change, PirServer};

    /// A server of 64 records of 32 bytes in the near-square layout, and the patch of setting
    /// records 5 and 40, with the setups before and after.
    fn patched_server() -> (PublicSetup, Vec<u8>, PublicSetup) {
        let data: Vec<u8> = (0..64 * 32).map(|i| (i * 7 % 251) as u8).collect();
        let options = EngineOptions {
            layout: Layout::Square,
            ..EngineOptions::default()
        };
        let mut server = Server::from_records(&data, 32, options, &|_, _| {}).unwrap();
        let before = server.public_setup().clone();
        let changes = [5u64, 40].map(|index| Change::Set {
            index,
            value: vec![index as u8 ^ 0xa5; 32],
        });
        let patch = server.update(&changes).unwrap().unwrap();
        (before, patch, server.public_setup().clone())
    }

    #[test]
    fn a_patch_makes_the_next_setup_and_costs_about_the_changed_digits() {
        let (before, patch, after) = patched_server();
        assert_eq!(before.clone().patched(&patch).unwrap(), after);
        // Made in the encoded setup's own bytes, the hint changed where it lies (a vector's
        // bytes hold its words aligned), it is the same setup's encoding.
        let mut bytes = before.to_bytes();
        let encoded = Encoded::read(&bytes).unwrap();
        assert!(encoded.hint_words_mut(&mut bytes).is_some());
        assert_eq!(patch_encoded(bytes, &patch).unwrap(), after.to_bytes());
        // Two records of 32 bytes, each (8 + 1) / 8 of its bytes as δ with p = 2^8 or a little
        // more with a smaller p, and the envelope, digests and layer.
        let log_p = u64::from(after.geometry().log_p());
        let digits = 2 * (32 * 8u64).div_ceil(log_p) + 2;
        let fixed = (wire::HEADER_BYTES + 32 + Layer::ENCODED_BYTES + 8 + 32) as u64;
        let bound = fixed + (digits * (log_p + 1)).div_ceil(8) + 2 * 8;
        assert!(patch.len() as u64 <= bound, "{} > {bound}", patch.len());
    }

    #[test]
    fn a_patch_of_another_setup_or_version_is_refused() {
        let (before, patch, after) = patched_server();
        assert!(matches!(
            after.clone().patched(&patch),
            Err(PirError::SetupMismatch { .. })
        ));
        let data = vec![1u8; 64 * 32];
        let other = Server::from_records(&data, 32, EngineOptions::default(), &|_, _| {});
        let other = other.unwrap().public_setup().clone();
        assert!(matches!(
            other.patched(&patch),
            Err(PirError::SetupMismatch { .. })
        ));
        assert!(before.clone().patched(&patch[..patch.len() - 1]).is_err());
        assert!(matches!(
            patch_encoded(after.to_bytes(), &patch),
            Err(PirError::SetupMismatch { .. })
        ));
        assert!(patch_encoded(before.to_bytes(), &patch[..patch.len() - 1]).is_err());
    }

    #[test]
    fn every_corrupted_byte_is_refused_without_a_panic() {
        let (before, patch, after) = patched_server();
        for at in 0..patch.len() {
            for flip in [0x01u8, 0x80] {
                let mut bad = patch.clone();
                bad[at] ^= flip;
                let result = before.clone().patched(&bad);
                assert!(
                    result.is_err(),
                    "byte {at} flipped by {flip:#x}: {:?}",
                    result.map(|s| s == after)
                );
                assert!(patch_encoded(before.to_bytes(), &bad).is_err(), "byte {at}");
            }
        }
        for len in 0..patch.len() {
            assert!(before.clone().patched(&patch[..len]).is_err());
        }
    }

    #[test]
    fn entries_a_few_rows_apart_share_a_run() {
        // Column 0 from row 2: changed at rows 3, 4, 4 + MAX_GAP + 1 and 4 + 2·MAX_GAP + 3,
        // unchanged around them; column 1 changed at row 0.
        let mut deltas = vec![0i16; 2 * MAX_GAP + 6];
        for row in [3, 4, 4 + MAX_GAP + 1, 4 + 2 * MAX_GAP + 3] {
            deltas[row - 2] = 1;
        }
        let mut changes = ColumnRuns::new();
        changes.push(0, 2, &deltas);
        changes.push(1, 0, &[-1]);
        let runs: Vec<(usize, usize, usize)> = runs(&changes)
            .iter()
            .map(|r| (r.col, r.first_row, r.deltas.len()))
            .collect();
        assert_eq!(
            runs,
            [(0, 3, MAX_GAP + 3), (0, 4 + 2 * MAX_GAP + 3, 1), (1, 0, 1)]
        );
    }
}
