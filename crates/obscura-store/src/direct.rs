//! Sequential file reading and writing that bypass the page cache where the system allows it,
//! for the gigabytes of records a streamed setup reads once and of matrix it writes once: they
//! would otherwise be copied through cache pages (allocated for the purpose and reclaimed
//! again), on the cores the setup needs.
//!
//! Direct I/O wants file offsets, lengths and memory aligned to the device's blocks, and a
//! database file's matrix starts anywhere. So the bytes up to the first aligned offset, and the
//! last partial block, go through the ordinary descriptor; everything between is gathered in an
//! aligned staging buffer and written by a second descriptor opened with `O_DIRECT`. Where that
//! open fails (a file system without direct I/O) or off Linux, every byte goes through the
//! ordinary descriptor.

use std::fs::File;
use std::io::{self, Read};
use std::os::unix::fs::FileExt;
use std::path::Path;

use obscura_math::memory::LargeBuffer;

/// Alignment of direct writes: a page, a multiple of every block size in use.
const ALIGN: u64 = 4096;

/// Bytes gathered before a direct write, or read by one direct read.
const STAGING_BYTES: usize = 16 << 20;

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
            direct: open_direct(path, true)
                .map(|direct| (direct, LargeBuffer::zeroed(STAGING_BYTES))),
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

/// Reads a file from its start to its end, with direct I/O where the system allows it: a
/// block-aligned stretch at a time into an aligned staging buffer, handed out from there.
pub struct SequentialReader {
    file: File,
    /// The staging buffer, when the file is open for direct I/O.
    staging: Option<LargeBuffer>,
    /// The staged bytes not handed out yet.
    staged: std::ops::Range<usize>,
    /// Offset of the next stretch to read.
    offset: u64,
}

impl SequentialReader {
    /// Opens `path` for reading.
    pub fn open(path: &Path) -> io::Result<Self> {
        let (file, staging) = match open_direct(path, false) {
            Some(file) => (file, Some(LargeBuffer::zeroed(STAGING_BYTES))),
            None => (File::open(path)?, None),
        };
        Ok(Self {
            file,
            staging,
            staged: 0..0,
            offset: 0,
        })
    }
}

impl Read for SequentialReader {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let Some(staging) = &mut self.staging else {
            return self.file.read(buf);
        };
        if self.staged.is_empty() {
            // A whole aligned stretch, or the file's tail: direct reads stop at its end.
            let filled = read_blocks(&self.file, staging, self.offset)?;
            self.offset += filled as u64;
            self.staged = 0..filled;
        }
        let take = buf.len().min(self.staged.len());
        buf[..take].copy_from_slice(&staging[self.staged.start..self.staged.start + take]);
        self.staged.start += take;
        Ok(take)
    }
}

/// Bytes of a file read into fresh page-aligned memory by [`read_range`].
pub struct ReadBytes {
    buffer: LargeBuffer,
    len: usize,
}

impl AsRef<[u8]> for ReadBytes {
    fn as_ref(&self) -> &[u8] {
        &self.buffer[..self.len]
    }
}

/// The `len` bytes of `file` from `offset`, read into a fresh [`LargeBuffer`] (anonymous memory
/// on huge pages, where the system has them) from its start: straight from the device where
/// the system allows direct I/O, so that the page cache holds no second copy (then moved down
/// by `offset`'s distance from a block boundary, if any). Fails with
/// [`io::ErrorKind::UnexpectedEof`] if the file ends before.
pub fn read_range(file: &File, offset: u64, len: usize) -> io::Result<ReadBytes> {
    let shift = (offset % ALIGN) as usize;
    let mut buffer = LargeBuffer::zeroed((shift + len).next_multiple_of(ALIGN as usize));
    let aligned = (buffer.as_ptr() as usize).is_multiple_of(ALIGN as usize);
    let Some(direct) = aligned.then(|| reopen_direct(file)).flatten() else {
        file.read_exact_at(&mut buffer[..len], offset)?;
        return Ok(ReadBytes { buffer, len });
    };
    // Whole blocks from the one holding `offset`; what the file's end leaves goes through the
    // ordinary descriptor.
    let (start, end) = (offset - shift as u64, shift + len);
    let filled = read_blocks(&direct, &mut buffer, start)?.clamp(shift, end);
    file.read_exact_at(&mut buffer[filled..end], start + filled as u64)?;
    if shift > 0 {
        buffer.copy_within(shift..end, 0);
    }
    Ok(ReadBytes { buffer, len })
}

/// Fills `buf` from `offset` of `file` (open for direct I/O: `buf` and `offset` block-aligned)
/// with whole blocks, until it is full or a read comes back short (the file's end, or its last
/// partial block); returns the bytes read.
fn read_blocks(file: &File, buf: &mut [u8], offset: u64) -> io::Result<usize> {
    let mut filled = 0;
    while filled < buf.len() {
        let read = file.read_at(&mut buf[filled..], offset + filled as u64)?;
        filled += read;
        if read == 0 || !read.is_multiple_of(ALIGN as usize) {
            break;
        }
    }
    Ok(filled)
}

/// The file open as `file` opened again with direct I/O for reading, where the system allows
/// it: the same file even if its name has since been given to another.
#[cfg(target_os = "linux")]
fn reopen_direct(file: &File) -> Option<File> {
    use std::os::fd::AsRawFd;
    open_direct(
        Path::new(&format!("/proc/self/fd/{}", file.as_raw_fd())),
        false,
    )
}

#[cfg(not(target_os = "linux"))]
fn reopen_direct(_file: &File) -> Option<File> {
    None
}

/// `path` opened with direct I/O, for writing or for reading, where the system allows it.
#[cfg(target_os = "linux")]
fn open_direct(path: &Path, write: bool) -> Option<File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .read(!write)
        .write(write)
        .custom_flags(libc::O_DIRECT)
        .open(path)
        .ok()
}

#[cfg(not(target_os = "linux"))]
fn open_direct(_path: &Path, _write: bool) -> Option<File> {
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A file read through in pieces of every size gives its bytes, whatever its length (whole
    /// stretches, whole blocks, a partial last block, empty).
    #[test]
    fn reading_gives_the_file_whole() {
        for len in [0usize, 1, 4095, 4096, STAGING_BYTES, STAGING_BYTES + 4097] {
            let file = tempfile::NamedTempFile::new().unwrap();
            let bytes: Vec<u8> = (0..len).map(|j| (j * 7 + j / 4096) as u8).collect();
            std::fs::write(file.path(), &bytes).unwrap();
            let mut reader = SequentialReader::open(file.path()).unwrap();
            let mut read = Vec::new();
            let mut piece = vec![0u8; 5000];
            loop {
                let n = reader.read(&mut piece).unwrap();
                if n == 0 {
                    break;
                }
                read.extend_from_slice(&piece[..n]);
            }
            assert_eq!(read.len(), len);
            assert!(read == bytes, "{len} bytes");
            let mut again = Vec::new();
            SequentialReader::open(file.path())
                .unwrap()
                .read_to_end(&mut again)
                .unwrap();
            assert!(again == bytes, "{len} bytes, read to the end");
        }
    }

    /// A stretch of a file read from any offset gives its bytes, whatever its length, and a
    /// file that ends before the stretch does is an error, not zeros.
    #[test]
    fn stretches_of_a_file_are_read_from_any_offset() {
        let file = tempfile::NamedTempFile::new().unwrap();
        let file_len = STAGING_BYTES + (3 << 20) + 4097;
        let bytes: Vec<u8> = (0..file_len).map(|j| (j * 7 + j / 4096) as u8).collect();
        std::fs::write(file.path(), &bytes).unwrap();
        for offset in [0usize, 1, 4095, 4096, 5000] {
            for len in [0usize, 1, 4095, 4096, 3 << 20, file_len - offset] {
                let read = read_range(file.as_file(), offset as u64, len).unwrap();
                assert!(
                    read.as_ref() == &bytes[offset..offset + len],
                    "{len} bytes from {offset}"
                );
            }
            let error = read_range(file.as_file(), offset as u64, file_len - offset + 1)
                .err()
                .unwrap();
            assert_eq!(error.kind(), io::ErrorKind::UnexpectedEof, "from {offset}");
        }
    }

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
