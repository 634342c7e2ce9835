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
//! crash never leaves a half-written database under the final name. Loading memory-maps the
//! file, checks every length against the file size, verifies the checksum and the setup digest,
//! and refuses a truncated or corrupted file with a [`StoreError`]; the matrix is then served
//! straight from the mapping.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use obscura_math::matrix::{PlaintextMatrix, SharedBytes};
use obscura_pir::keyword::{KeywordServer, KeywordSetup};
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

/// A stored database: index PIR over records, or keyword PIR over key-value pairs.
pub enum Database {
    /// Records fetched by index.
    Index(Server),
    /// Values fetched by key.
    Keyword(Box<KeywordServer>),
}

impl Database {
    /// The LWE engine that answers its queries.
    pub fn engine(&self) -> &Server {
        match self {
            Self::Index(server) => server,
            Self::Keyword(server) => server.engine(),
        }
    }

    /// The encoded public setup clients download (the keyword setup wraps the engine's).
    pub fn setup_bytes(&self) -> Vec<u8> {
        match self {
            Self::Index(server) => server.public_setup().to_bytes(),
            Self::Keyword(server) => server.public_setup().to_bytes(),
        }
    }

    /// What a user counts: records of an index database, keys of a keyword database (whose
    /// matrix has more columns, the filter's slots).
    pub fn items(&self) -> u64 {
        match self {
            Self::Index(server) => server.public_setup().geometry().records(),
            Self::Keyword(server) => server.public_setup().keys(),
        }
    }

    /// `index` or `keyword`.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Index(_) => "index",
            Self::Keyword(_) => "keyword",
        }
    }
}

impl From<Server> for Database {
    fn from(server: Server) -> Self {
        Self::Index(server)
    }
}

impl From<KeywordServer> for Database {
    fn from(server: KeywordServer) -> Self {
        Self::Keyword(Box::new(server))
    }
}

/// Writes a database and its public setup to `path`, atomically.
pub fn write_database(path: &Path, database: &Database) -> Result<(), StoreError> {
    let io = |source| StoreError::Io {
        path: path.to_path_buf(),
        source,
    };
    let setup = database.setup_bytes();
    let server = database.engine();
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

/// Loads and verifies the database file at `path`. The file is memory-mapped and the matrix is
/// served from the mapping without a copy.
pub fn read_database(path: &Path) -> Result<Database, StoreError> {
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
    if file_len < PREAMBLE_BYTES as u64 {
        return Err(invalid(format!("the file is only {file_len} bytes long")));
    }
    let map = map_read_only(&file).map_err(io)?;
    let bytes: &[u8] = &map;

    let (mut reader, digest) = Reader::open(&bytes[..PREAMBLE_BYTES], Kind::DatabaseFile)
        .map_err(|e| invalid(e.to_string()))?;
    let payload_len = reader.u64().map_err(|e| invalid(e.to_string()))?;
    let checksum = reader.take(32).map_err(|e| invalid(e.to_string()))?;
    let payload = &bytes[PREAMBLE_BYTES..];
    if payload_len != payload.len() as u64 {
        return Err(invalid(format!(
            "the header announces {payload_len} payload bytes but the file holds {} (truncated or extended)",
            payload.len()
        )));
    }
    if Sha256::digest(payload).as_slice() != checksum {
        return Err(invalid(
            "the checksum does not match: the file is corrupted".into(),
        ));
    }
    let setup_len = payload
        .get(..8)
        .map(|b| u64::from_le_bytes(b.try_into().expect("8 bytes")))
        .ok_or_else(|| invalid("the payload is shorter than its setup length".into()))?;
    if setup_len > payload_len - 8 {
        return Err(invalid(format!(
            "the public setup length {setup_len} exceeds the payload"
        )));
    }
    let setup_end = 8 + setup_len as usize;
    let setup_bytes = &payload[8..setup_end];
    // A keyword setup wraps the engine's setup with the filter parameters.
    let keyword = match Reader::open(setup_bytes, Kind::KeywordSetup) {
        Ok(_) => Some(KeywordSetup::from_bytes(setup_bytes).map_err(|e| invalid(e.to_string()))?),
        Err(_) => None,
    };
    let setup = match &keyword {
        Some(keyword) => keyword.lwe().clone(),
        None => PublicSetup::from_bytes(setup_bytes).map_err(|e| invalid(e.to_string()))?,
    };
    if setup.digest() != &digest {
        return Err(invalid(
            "the header digest does not match the public setup".into(),
        ));
    }
    let geometry = setup.geometry();
    let (rows, cols) = (geometry.rows() as usize, geometry.cols() as usize);
    let matrix_len = payload.len() - setup_end;
    if Some(matrix_len) != rows.checked_mul(cols) {
        return Err(invalid(format!(
            "the matrix has {matrix_len} bytes, not {rows} x {cols}"
        )));
    }
    let owner: SharedBytes = Arc::new(map);
    let matrix = PlaintextMatrix::from_shared(rows, cols, owner, PREAMBLE_BYTES + setup_end)
        .expect("length checked above");
    let server = Server::from_parts(setup, matrix).map_err(|e: PirError| invalid(e.to_string()))?;
    Ok(match keyword {
        Some(keyword) => KeywordServer::from_parts(server, keyword)
            .map_err(|e| invalid(e.to_string()))?
            .into(),
        None => Database::Index(server),
    })
}

/// Maps `file` read-only.
#[allow(unsafe_code)]
fn map_read_only(file: &File) -> std::io::Result<memmap2::Mmap> {
    // SAFETY: the mapping is read-only, and Obscura never modifies a database file in place:
    // `write_database` writes a new file and renames it over the old one, which leaves existing
    // mappings on the old contents. Truncating a served file by other means is unsupported (the
    // OS would fault the process on access).
    unsafe { memmap2::Mmap::map(file) }
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
        let database = Database::Index(server);
        write_database(&path, &database).unwrap();
        let Database::Index(loaded) = read_database(&path).unwrap() else {
            panic!("an index database");
        };
        assert_eq!(loaded.public_setup(), database.engine().public_setup());
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
    fn keyword_databases_round_trip() {
        use obscura_pir::keyword::{KeywordClient, KeywordOptions};
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("kv.obs");
        let pairs = vec![
            (b"k1".to_vec(), b"one".to_vec()),
            (b"k2".to_vec(), b"".to_vec()),
        ];
        let server = KeywordServer::setup(&pairs, KeywordOptions::default(), &|_, _| {}).unwrap();
        write_database(&path, &server.into()).unwrap();
        let Database::Keyword(loaded) = read_database(&path).unwrap() else {
            panic!("a keyword database");
        };
        let mut client = KeywordClient::new(loaded.public_setup().clone());
        for (key, value) in &pairs {
            let (query, state) = client.query(key).unwrap();
            let answer = loaded.answer(&query).unwrap();
            assert_eq!(client.decode(state, &answer).unwrap().as_ref(), Some(value));
        }
    }

    #[test]
    fn truncated_and_corrupted_files_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("db.obs");
        let (server, _) = server();
        write_database(&path, &Database::Index(server)).unwrap();
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
