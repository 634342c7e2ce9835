//! The database file: one preprocessed LWE database with its public setup.
//!
//! ```text
//! envelope (magic, version, kind = database file, setup digest)   40 bytes
//! payload length: u64 LE
//! SHA-256 of the payload: 32 bytes
//! payload:
//!   public setup length: u64 LE, then the encoded public setup (parameters, geometry, seed, hint)
//!   the database matrix, rows x cols bytes, row-major
//! ```
//!
//! Files are written to a temporary name in the target directory and renamed into place, so a
//! crash never leaves a half-written database under the final name. Loading checks every length
//! against the file size before allocating, verifies the checksum and the setup digest, and
//! refuses a truncated or corrupted file with a [`StoreError`].

use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};

use obscura_math::matrix::PlaintextMatrix;
use obscura_pir::lwe::{PublicSetup, Server};
use obscura_pir::wire::{self, Kind, Reader};
use obscura_pir::PirError;
use sha2::{Digest as _, Sha256};

/// Bytes before the payload: envelope, payload length, checksum.
const PREAMBLE_BYTES: usize = wire::HEADER_BYTES + 8 + 32;

/// What went wrong reading or writing a database file.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The file could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// The file is not a valid database file.
    #[error("{path}: not a valid Obscura database: {reason}")]
    Invalid {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
}

/// Writes `server`'s database and public setup to `path`, atomically.
pub fn write_database(path: &Path, server: &Server) -> Result<(), StoreError> {
    let io = |source| StoreError::Io {
        path: path.to_path_buf(),
        source,
    };
    let setup = server.public_setup().to_bytes();
    let matrix = server.database().as_bytes();
    let payload_len = 8 + setup.len() as u64 + matrix.len() as u64;
    let mut hash = Sha256::new();
    hash.update((setup.len() as u64).to_le_bytes());
    hash.update(&setup);
    hash.update(matrix);
    let checksum: [u8; 32] = hash.finalize().into();

    let mut preamble = Vec::with_capacity(PREAMBLE_BYTES);
    wire::write_header(
        &mut preamble,
        Kind::DatabaseFile,
        server.public_setup().digest(),
    );
    preamble.extend_from_slice(&payload_len.to_le_bytes());
    preamble.extend_from_slice(&checksum);

    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    let temp = tempfile::NamedTempFile::new_in(dir).map_err(io)?;
    {
        let mut out = BufWriter::with_capacity(1 << 20, temp.as_file());
        out.write_all(&preamble).map_err(io)?;
        out.write_all(&(setup.len() as u64).to_le_bytes())
            .map_err(io)?;
        out.write_all(&setup).map_err(io)?;
        out.write_all(matrix).map_err(io)?;
        out.flush().map_err(io)?;
    }
    temp.as_file().sync_all().map_err(io)?;
    temp.persist(path).map_err(|e| io(e.error))?;
    Ok(())
}

/// Loads and verifies the database file at `path`.
pub fn read_database(path: &Path) -> Result<Server, StoreError> {
    let io = |source| StoreError::Io {
        path: path.to_path_buf(),
        source,
    };
    let invalid = |reason: String| StoreError::Invalid {
        path: path.to_path_buf(),
        reason,
    };
    let file = File::open(path).map_err(io)?;
    let file_len = file.metadata().map_err(io)?.len();
    let mut input = BufReader::with_capacity(1 << 20, file);

    if file_len < PREAMBLE_BYTES as u64 {
        return Err(invalid(format!("the file is only {file_len} bytes long")));
    }
    let mut preamble = [0u8; PREAMBLE_BYTES];
    input.read_exact(&mut preamble).map_err(io)?;
    let (mut reader, digest) =
        Reader::open(&preamble, Kind::DatabaseFile).map_err(|e| invalid(e.to_string()))?;
    let payload_len = reader.u64().map_err(|e| invalid(e.to_string()))?;
    let checksum = reader
        .take(32)
        .map_err(|e| invalid(e.to_string()))?
        .to_vec();
    if payload_len != file_len - PREAMBLE_BYTES as u64 {
        return Err(invalid(format!(
            "the header announces {payload_len} payload bytes but the file holds {} (truncated or extended)",
            file_len - PREAMBLE_BYTES as u64
        )));
    }

    let mut hash = Sha256::new();
    let mut setup_len = [0u8; 8];
    input
        .read_exact(&mut setup_len)
        .map_err(|e| invalid(e.to_string()))?;
    hash.update(setup_len);
    let setup_len = u64::from_le_bytes(setup_len);
    if setup_len > payload_len - 8 {
        return Err(invalid(format!(
            "the public setup length {setup_len} exceeds the payload"
        )));
    }
    let mut setup = vec![0u8; setup_len as usize];
    input.read_exact(&mut setup).map_err(io)?;
    hash.update(&setup);
    let matrix_len = payload_len - 8 - setup_len;
    let mut matrix = vec![0u8; matrix_len as usize];
    input.read_exact(&mut matrix).map_err(io)?;
    hash.update(&matrix);
    if hash.finalize().as_slice() != checksum.as_slice() {
        return Err(invalid(
            "the checksum does not match: the file is corrupted".into(),
        ));
    }

    let setup = PublicSetup::from_bytes(&setup).map_err(|e| invalid(e.to_string()))?;
    if setup.digest() != &digest {
        return Err(invalid(
            "the header digest does not match the public setup".into(),
        ));
    }
    let geometry = setup.geometry();
    let matrix =
        PlaintextMatrix::from_vec(geometry.rows() as usize, geometry.cols() as usize, matrix)
            .ok_or_else(|| {
                invalid(format!(
                    "the matrix has {matrix_len} bytes, not {} x {}",
                    geometry.rows(),
                    geometry.cols()
                ))
            })?;
    Server::from_parts(setup, matrix).map_err(|e: PirError| invalid(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use obscura_pir::lwe::{Client, SetupOptions};
    use obscura_pir::{PirClient, PirServer};

    fn server() -> (Server, Vec<u8>) {
        let data: Vec<u8> = (0..1000u32).map(|i| (i * 13 % 256) as u8).collect();
        let server = Server::setup(&data, 24, SetupOptions::default(), &|_, _| {}).unwrap();
        (server, data)
    }

    #[test]
    fn round_trip_serves_the_same_records() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("db.obs");
        let (server, data) = server();
        write_database(&path, &server).unwrap();
        let loaded = read_database(&path).unwrap();
        assert_eq!(loaded.public_setup(), server.public_setup());
        let mut client = Client::new(loaded.public_setup().clone());
        for index in [0u64, 17, 41] {
            let (query, state) = client.query(index).unwrap();
            let record = client
                .decode(state, &loaded.answer(&query).unwrap())
                .unwrap();
            let start = index as usize * 24;
            assert_eq!(record, &data[start..(start + 24).min(1000)]);
        }
        // Only the final file is left behind.
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[test]
    fn truncated_and_corrupted_files_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("db.obs");
        let (server, _) = server();
        write_database(&path, &server).unwrap();
        let bytes = std::fs::read(&path).unwrap();
        let bad = dir.path().join("bad.obs");
        for cut in [0, 10, PREAMBLE_BYTES, bytes.len() / 2, bytes.len() - 1] {
            std::fs::write(&bad, &bytes[..cut]).unwrap();
            assert!(
                matches!(read_database(&bad), Err(StoreError::Invalid { .. })),
                "cut {cut}"
            );
        }
        for position in [0, 5, 50, 90, 200, bytes.len() - 1] {
            let mut corrupted = bytes.clone();
            corrupted[position] ^= 0x10;
            std::fs::write(&bad, &corrupted).unwrap();
            assert!(read_database(&bad).is_err(), "flip at {position}");
        }
        let mut extended = bytes.clone();
        extended.push(0);
        std::fs::write(&bad, &extended).unwrap();
        assert!(read_database(&bad).is_err());
        assert!(matches!(
            read_database(&dir.path().join("missing.obs")),
            Err(StoreError::Io { .. })
        ));
    }
}
