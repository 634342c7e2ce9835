//! Buckets on disk: each party reads its input once, writing every row to one of [`PARTS`]
//! files by the top bits of its bucketing hash, then reads the buckets back one at a time, each
//! from the files whose hash range it meets, so only one bucket is ever in memory.
//!
//! The files are cut by hash before the bucket count is known (it depends on both parties' row
//! counts); a bucket is a range of hashes, so it is the union of whole files, plus part of a
//! file at either end when its bounds fall inside one (whose rows are then hashed again).
//!
//! A record is the row's distance from the file's previous row and the item's length (both
//! LEB128: two or three bytes for most rows), then the item: writing is what the split costs
//! beyond reading the input, so records are kept small.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use super::plan::{BucketKey, BucketPlan};
use crate::PsiError;

/// Files the input is written to: one per value of a hash's top [`PART_BITS`] bits (few
/// enough to keep open at once under any usual limit on open files).
const PARTS: usize = 1 << PART_BITS;
const PART_BITS: u32 = 8;

/// Write buffer per file (all of them together fit in a core's cache, which larger buffers
/// would not: each row goes to a random one).
const WRITE_BUFFER_BYTES: usize = 8 << 10;

/// The most bytes of a LEB128 `u64`.
const MAX_LEB128_BYTES: usize = 10;

/// The longest item a file holds (its length is a `u32`).
pub const MAX_ITEM_BYTES: usize = u32::MAX as usize;

/// The rows of one bucket: their input row numbers and items (one buffer for all of them, not
/// an allocation per item).
#[derive(Debug, Default)]
pub(crate) struct Bucket {
    pub rows: Vec<u64>,
    bytes: Vec<u8>,
    ends: Vec<usize>,
}

impl Bucket {
    fn push(&mut self, row: u64, item: &[u8]) {
        self.rows.push(row);
        self.bytes.extend_from_slice(item);
        self.ends.push(self.bytes.len());
    }

    /// The items, in the order of [`Bucket::rows`].
    pub(crate) fn items(&self) -> Vec<&[u8]> {
        let mut start = 0;
        self.ends
            .iter()
            .map(|&end| {
                let item = &self.bytes[start..end];
                start = end;
                item
            })
            .collect()
    }
}

/// A party's input split by hash, in a temporary folder removed when this is dropped.
pub(crate) struct SpilledRows {
    folder: tempfile::TempDir,
    key: BucketKey,
    /// Rows of each file.
    counts: Vec<u64>,
    /// Item bytes of each file.
    item_bytes: Vec<u64>,
    rows: u64,
}

impl SpilledRows {
    /// Reads `source` once, writing each row (row numbers count from 0 in source order) to the
    /// file of the top bits of its hash under `key`, in a new temporary folder under `parent`.
    pub(crate) fn write<S: super::ItemSource + ?Sized>(
        parent: &Path,
        key: &BucketKey,
        source: &S,
    ) -> Result<Self, PsiError> {
        let folder = tempfile::Builder::new()
            .prefix("obscura-psi-buckets-")
            .tempdir_in(parent)
            .map_err(|e| PsiError::io(parent, e))?;
        let mut files = (0..PARTS)
            .map(|part| {
                let path = part_path(folder.path(), part);
                File::create(&path)
                    .map(|file| BufWriter::with_capacity(WRITE_BUFFER_BYTES, file))
                    .map_err(|e| PsiError::io(&path, e))
            })
            .collect::<Result<Vec<_>, _>>()?;
        let mut counts = vec![0u64; PARTS];
        let mut item_bytes = vec![0u64; PARTS];
        let mut last_rows = vec![0u64; PARTS];
        let mut row = 0u64;
        source.for_each(&mut |item| {
            let length = u32::try_from(item.len()).map_err(|_| PsiError::ItemTooLong {
                row,
                len: item.len(),
                max: MAX_ITEM_BYTES,
            })?;
            let part = (key.hash(item) >> (u64::BITS - PART_BITS)) as usize;
            let mut header = [0u8; 2 * MAX_LEB128_BYTES];
            let mut used = put_leb128(&mut header, row - last_rows[part]);
            used += put_leb128(&mut header[used..], u64::from(length));
            let file = &mut files[part];
            file.write_all(&header[..used])
                .and_then(|()| file.write_all(item))
                .map_err(|e| PsiError::io(&part_path(folder.path(), part), e))?;
            counts[part] += 1;
            item_bytes[part] += u64::from(length);
            last_rows[part] = row;
            row += 1;
            Ok(())
        })?;
        // The files are read back by this process only: flushing to the OS is enough (a
        // failure to write shows here, or as a short file when read back).
        for (part, file) in files.into_iter().enumerate() {
            file.into_inner()
                .map_err(|e| PsiError::io(&part_path(folder.path(), part), e.into_error()))?;
        }
        Ok(Self {
            folder,
            key: *key,
            counts,
            item_bytes,
            rows: row,
        })
    }

    /// The number of rows read.
    pub(crate) fn rows(&self) -> u64 {
        self.rows
    }

    /// Reads bucket `b` of `plan` back, in order of file then row (the files were written by
    /// us; their records are still checked).
    pub(crate) fn read(&self, plan: &BucketPlan, b: u64) -> Result<Bucket, PsiError> {
        let parts: Vec<usize> = (0..PARTS).filter(|&part| meets(plan, part, b)).collect();
        let total = |of: &[u64]| parts.iter().map(|&part| of[part]).sum::<u64>() as usize;
        let rows = total(&self.counts);
        let mut bucket = Bucket {
            rows: Vec::with_capacity(rows),
            bytes: Vec::with_capacity(total(&self.item_bytes)),
            ends: Vec::with_capacity(rows),
        };
        for part in parts {
            let path = part_path(self.folder.path(), part);
            let bytes = std::fs::read(&path).map_err(|e| PsiError::io(&path, e))?;
            // A file that holds other buckets' rows too is filtered by hash.
            let whole = !(meets(plan, part, b.wrapping_sub(1)) || meets(plan, part, b + 1));
            let keep = |item: &[u8]| whole || plan.bucket_of_hash(self.key.hash(item)) == b;
            read_part(&bytes, self.counts[part], keep, &mut bucket)
                .ok_or_else(|| PsiError::io(&path, std::io::ErrorKind::InvalidData.into()))?;
        }
        Ok(bucket)
    }
}

/// Appends to `bucket` those of the `rows` records of a file's `bytes` whose item `keep`
/// accepts; `None` if the records are malformed.
fn read_part(
    mut bytes: &[u8],
    rows: u64,
    keep: impl Fn(&[u8]) -> bool,
    bucket: &mut Bucket,
) -> Option<()> {
    let mut row = 0u64;
    for _ in 0..rows {
        row = row.checked_add(take_leb128(&mut bytes)?)?;
        let length = usize::try_from(take_leb128(&mut bytes)?).ok()?;
        let item = bytes.get(..length)?;
        bytes = &bytes[length..];
        if keep(item) {
            bucket.push(row, item);
        }
    }
    bytes.is_empty().then_some(())
}

/// Writes `value` as LEB128 (seven bits per byte, low first, the top bit set on all bytes but
/// the last) at the start of `out`; returns the bytes used.
fn put_leb128(out: &mut [u8], mut value: u64) -> usize {
    let mut used = 0;
    while value >= 0x80 {
        out[used] = value as u8 | 0x80;
        value >>= 7;
        used += 1;
    }
    out[used] = value as u8;
    used + 1
}

/// Reads a LEB128 value from the start of `bytes` and advances past it; `None` if it is cut
/// short or does not fit a `u64`.
fn take_leb128(bytes: &mut &[u8]) -> Option<u64> {
    let mut value = 0u64;
    for (at, &byte) in bytes.iter().enumerate().take(MAX_LEB128_BYTES) {
        let bits = u64::from(byte & 0x7f);
        let shift = 7 * at as u32;
        if shift == 63 && bits > 1 {
            return None;
        }
        value |= bits << shift;
        if byte & 0x80 == 0 {
            *bytes = &bytes[at + 1..];
            return Some(value);
        }
    }
    None
}

/// Whether file `part`'s range of hashes meets bucket `b` of `plan` (buckets and files are both
/// ranges of hashes, in the same order).
fn meets(plan: &BucketPlan, part: usize, b: u64) -> bool {
    let first = (part as u64) << (u64::BITS - PART_BITS);
    let last = first | (u64::MAX >> PART_BITS);
    (plan.bucket_of_hash(first)..=plan.bucket_of_hash(last)).contains(&b)
}

fn part_path(folder: &Path, part: usize) -> PathBuf {
    folder.join(format!("part-{part:03}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn leb128_round_trips(value: u64, tail: Vec<u8>) {
            let mut bytes = [0u8; MAX_LEB128_BYTES].to_vec();
            let used = put_leb128(&mut bytes, value);
            bytes.truncate(used);
            bytes.extend_from_slice(&tail);
            let mut rest = bytes.as_slice();
            prop_assert_eq!(take_leb128(&mut rest), Some(value));
            prop_assert_eq!(rest, tail.as_slice());
            prop_assert!(take_leb128(&mut &bytes[..used - 1]).is_none());
        }
    }

    #[test]
    fn overlong_leb128_is_refused() {
        assert_eq!(take_leb128(&mut [0xff; 9].as_slice()), None);
        let mut too_big = [0xff; 10];
        too_big[9] = 0x02;
        assert_eq!(take_leb128(&mut too_big.as_slice()), None);
        let mut max = [0xff; 10];
        max[9] = 0x01;
        assert_eq!(take_leb128(&mut max.as_slice()), Some(u64::MAX));
    }

    /// Every file meets one bucket or a run of consecutive ones, and every bucket meets at
    /// least one file, whatever the bucket count.
    #[test]
    fn files_cover_the_buckets() {
        for buckets in [1u64, 2, 3, 16, 255, 256, 257, 1000, 1024] {
            let plan = BucketPlan::new(buckets * 100, 1, 100);
            assert_eq!(plan.buckets(), buckets);
            for b in 0..buckets {
                assert!(
                    (0..PARTS).any(|part| meets(&plan, part, b)),
                    "{buckets}: {b}"
                );
            }
            if buckets <= PARTS as u64 {
                // No file is cut by more than one bucket boundary.
                for part in 0..PARTS {
                    let met = (0..buckets).filter(|&b| meets(&plan, part, b)).count();
                    assert!((1..=2).contains(&met), "{buckets}: {part} meets {met}");
                }
            }
        }
    }
}
