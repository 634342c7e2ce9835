//! Buckets on disk: each party writes its rows to one file per bucket, then reads the buckets
//! back one at a time, so only one bucket is ever in memory.

use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Write};
use std::path::Path;

use super::plan::BucketPlan;
use crate::PsiError;

/// Write buffer per bucket file.
const BUFFER_BYTES: usize = 64 << 10;

/// The longest item a bucket file holds (its length is a `u32`).
pub const MAX_ITEM_BYTES: usize = u32::MAX as usize;

/// The rows of one bucket: their input row numbers and items.
#[derive(Debug, Default)]
pub(crate) struct Bucket {
    pub rows: Vec<u64>,
    pub items: Vec<Vec<u8>>,
}

/// The bucket files of one party, in a temporary folder removed when this is dropped.
pub(crate) struct SpilledBuckets {
    folder: tempfile::TempDir,
    counts: Vec<u64>,
}

impl SpilledBuckets {
    /// Writes each row of `source` (row numbers count from 0 in source order) to the file of its
    /// bucket, in a new temporary folder under `parent`.
    pub(crate) fn write<S: super::ItemSource + ?Sized>(
        parent: &Path,
        plan: &BucketPlan,
        source: &S,
    ) -> Result<Self, PsiError> {
        let folder = tempfile::Builder::new()
            .prefix("obscura-psi-buckets-")
            .tempdir_in(parent)
            .map_err(|e| PsiError::io(parent, e))?;
        let mut files = (0..plan.buckets())
            .map(|b| {
                let path = bucket_path(folder.path(), b);
                File::create(&path)
                    .map(|file| BufWriter::with_capacity(BUFFER_BYTES, file))
                    .map_err(|e| PsiError::io(&path, e))
            })
            .collect::<Result<Vec<_>, _>>()?;
        let mut counts = vec![0u64; files.len()];
        let mut row = 0u64;
        source.for_each(&mut |item| {
            let length = u32::try_from(item.len()).map_err(|_| {
                PsiError::Input(format!(
                    "row {row}: an item of {} bytes is longer than {MAX_ITEM_BYTES}",
                    item.len()
                ))
            })?;
            let bucket = plan.bucket_of(item) as usize;
            let file = &mut files[bucket];
            let written = file
                .write_all(&row.to_le_bytes())
                .and_then(|()| file.write_all(&length.to_le_bytes()))
                .and_then(|()| file.write_all(item));
            written.map_err(|e| PsiError::io(&bucket_path(folder.path(), bucket as u64), e))?;
            counts[bucket] += 1;
            row += 1;
            Ok(())
        })?;
        for (b, file) in files.into_iter().enumerate() {
            file.into_inner()
                .map_err(|e| e.into_error())
                .and_then(|file| file.sync_data())
                .map_err(|e| PsiError::io(&bucket_path(folder.path(), b as u64), e))?;
        }
        Ok(Self { folder, counts })
    }

    /// Reads bucket `b` back (the file was written by us; its records are still checked).
    pub(crate) fn read(&self, b: u64) -> Result<Bucket, PsiError> {
        let path = bucket_path(self.folder.path(), b);
        let io = |e| PsiError::io(&path, e);
        let file = File::open(&path).map_err(io)?;
        let mut left = file.metadata().map_err(io)?.len();
        let mut reader = BufReader::new(file);
        let rows = self.counts[b as usize] as usize;
        let mut bucket = Bucket {
            rows: Vec::with_capacity(rows),
            items: Vec::with_capacity(rows),
        };
        let mut header = [0u8; 12];
        for _ in 0..rows {
            reader.read_exact(&mut header).map_err(io)?;
            let (row, length) = header.split_at(8);
            let row = u64::from_le_bytes(row.try_into().expect("8 bytes"));
            let length = u32::from_le_bytes(length.try_into().expect("4 bytes"));
            left = left.saturating_sub(header.len() as u64);
            if u64::from(length) > left {
                return Err(io(std::io::ErrorKind::UnexpectedEof.into()));
            }
            left -= u64::from(length);
            let mut item = vec![0u8; length as usize];
            reader.read_exact(&mut item).map_err(io)?;
            bucket.rows.push(row);
            bucket.items.push(item);
        }
        Ok(bucket)
    }
}

fn bucket_path(folder: &Path, b: u64) -> std::path::PathBuf {
    folder.join(format!("bucket-{b:05}"))
}
