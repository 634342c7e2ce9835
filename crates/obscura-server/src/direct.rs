//! A sequential file writer that bypasses the page cache where the system allows it, for the
//! gigabytes of matrix a streamed setup writes once: they would otherwise be copied into cache
//! pages (allocated and cleared for the purpose) and pushed out again, on the cores the setup
//! needs.
//!
//! Direct I/O wants file offsets, lengths and memory aligned to the device's blocks, and a
//! database file's matrix starts anywhere. So the bytes up to the first aligned offset, and the
//! last partial block, go through the ordinary descriptor; everything between is gathered in an
//! aligned staging buffer and written by a second descriptor opened with `O_DIRECT`. Where that
//! open fails (a file system without direct I/O) or off Linux, every byte goes through the
//! ordinary descriptor.

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::path::Path;

use obscura_math::memory::LargeBuffer;

/// Alignment of direct writes: a page, a multiple of every block size in use.
const ALIGN: u64 = 4096;

/// Bytes gathered before a direct write.
const STAGING_BYTES: usize = 8 << 20;

/// Writes bytes one after another from a file offset (see the module's docs).
pub struct SequentialWriter<'a> {
    file: &'a File,
    direct: Option<(File, LargeBuffer)>,
    /// Offset of the next byte.
    offset: u64,
    /// Bytes gathered in the staging buffer (they belong at `offset - staged`).
    staged: usize,
}

impl<'a> SequentialWriter<'a> {
    /// A writer to `file` (open for writing at `path`) from `offset`, with direct I/O where the
    /// system allows it.
    pub fn new(file: &'a File, path: &Path, offset: u64) -> Self {
        Self {
            file,
            direct: open_direct(path).map(|direct| (direct, LargeBuffer::zeroed(STAGING_BYTES))),
            offset,
            staged: 0,
        }
    }

    /// Appends `bytes`.
    pub fn write(&mut self, mut bytes: &[u8]) -> io::Result<()> {
        let Some((direct, staging)) = &mut self.direct else {
            self.file.write_all_at(bytes, self.offset)?;
            self.offset += bytes.len() as u64;
            return Ok(());
        };
        // Up to the first aligned offset, through the ordinary descriptor.
        if self.staged == 0 && !self.offset.is_multiple_of(ALIGN) {
            let head = ((ALIGN - self.offset % ALIGN) as usize).min(bytes.len());
            self.file.write_all_at(&bytes[..head], self.offset)?;
            self.offset += head as u64;
            bytes = &bytes[head..];
        }
        while !bytes.is_empty() {
            let take = (STAGING_BYTES - self.staged).min(bytes.len());
            staging[self.staged..self.staged + take].copy_from_slice(&bytes[..take]);
            self.staged += take;
            self.offset += take as u64;
            bytes = &bytes[take..];
            if self.staged == STAGING_BYTES {
                direct.write_all_at(staging, self.offset - STAGING_BYTES as u64)?;
                self.staged = 0;
            }
        }
        Ok(())
    }

    /// Writes what is still gathered: its whole blocks directly, the rest through the ordinary
    /// descriptor. The caller syncs the file.
    pub fn finish(mut self) -> io::Result<()> {
        if let Some((direct, staging)) = &mut self.direct {
            let start = self.offset - self.staged as u64;
            let whole = self.staged / ALIGN as usize * ALIGN as usize;
            direct.write_all_at(&staging[..whole], start)?;
            self.file
                .write_all_at(&staging[whole..self.staged], start + whole as u64)?;
            self.staged = 0;
        }
        Ok(())
    }
}

/// `path` opened for writing with direct I/O, where the system allows it.
#[cfg(target_os = "linux")]
fn open_direct(path: &Path) -> Option<File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .write(true)
        .custom_flags(libc::O_DIRECT)
        .open(path)
        .ok()
}

#[cfg(not(target_os = "linux"))]
fn open_direct(_path: &Path) -> Option<File> {
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Pieces of every size, from offsets inside and on a block, end up where a plain write
    /// would put them, on a file system with direct I/O or without.
    #[test]
    fn pieces_land_where_plain_writes_would() {
        for start in [0u64, 1, 4095, 4096, 5000] {
            let file = tempfile::NamedTempFile::new().unwrap();
            let pieces: Vec<Vec<u8>> = [0usize, 1, 4095, 3, STAGING_BYTES + 17, 4096, 9000]
                .iter()
                .enumerate()
                .map(|(i, &len)| (0..len).map(|j| (i * 31 + j * 7) as u8).collect())
                .collect();
            let mut writer = SequentialWriter::new(file.as_file(), file.path(), start);
            for piece in &pieces {
                writer.write(piece).unwrap();
            }
            writer.finish().unwrap();
            let written = std::fs::read(file.path()).unwrap();
            let expected: Vec<u8> = std::iter::repeat_n(0, start as usize)
                .chain(pieces.concat())
                .collect();
            assert_eq!(written.len(), expected.len(), "from {start}");
            assert!(written == expected, "from {start}");
        }
    }
}
