//! The database file: a database's public setup and the matrix of each of its LWE engines.
//!
//! ```text
//! envelope (magic, version, kind = database file, setup digest)   40 bytes
//! payload length: u64 LE
//! checksum of the payload: 32 bytes (SHA-256 over the setup's length, the setup and the
//!   SHA-256 of the matrices, itself over the SHA-256s of their 64 MiB chunks)
//! payload:
//!   public setup length: u64 LE, then the encoded public setup of the database's scheme
//!     (its envelope's kind names the scheme, see `obscura_registry`)
//!   the plaintext matrices that setup announces, in its order (one per LWE engine: one, or
//!     one per colour class or bucket), rows x cols bytes each, in `PlaintextMatrix` storage
//!     order (`obscura_math::layout`: panels of 2,048 columns, each of groups of four rows,
//!     each of 64-column steps stored row-major)
//! ```
//!
//! Files are written to a temporary name in the target directory and renamed into place, so a
//! crash never leaves a half-written database under the final name. [`write_streamed`] writes
//! a setup as it streams from the records, in bounded memory. Loading checks every length
//! against the file size, reads the matrices into memory (direct I/O into huge pages where the
//! system allows it), verifies the checksum and the setup digest on what it read, and refuses a
//! truncated or corrupted file with a [`StoreError`]; the matrices are then served from that
//! copy, so a file changed on disk afterwards changes nothing served until it is loaded again.

use std::fs::File;
use std::io::{BufWriter, Read, Seek, SeekFrom, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use obscura_math::matrix::{PlaintextMatrix, SharedBytes};
use obscura_pir::lwe::{StreamError, StreamedBuild};
use obscura_pir::scheme::Progress;
use obscura_pir::wire::{self, Kind, Reader};
use obscura_pir::PirError;

use crate::checksum::payload_checksum;
pub use crate::checksum::{checksum_of_payload, MatrixHasher};
use crate::direct::{self, SequentialWriter};
use crate::log::{Batches, ChangeLog, FileChecksum};
use crate::memory;
use crate::partial::Partial;
pub use obscura_registry::Database;
use obscura_registry::{setup_sha256, LoadError, MatricesError, Registry};

/// Bytes before the payload: envelope, payload length, checksum.
const PREAMBLE_BYTES: usize = wire::HEADER_BYTES + 8 + 32;

/// What went wrong reading or writing a database file.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// The file could not be read or written (the OS error is the source).
    #[error("{}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// The machine has too little memory to hold the file.
    #[error("{}: too large to load", path.display())]
    Memory {
        /// The file.
        path: PathBuf,
        /// What it needs and what there is.
        source: memory::MemoryError,
    },
    /// The file is not a valid database file.
    #[error("{}: not a valid Obscura database", path.display())]
    Invalid {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        source: InvalidFile,
    },
}

/// What makes a file not a valid database file.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum InvalidFile {
    /// The path names a directory or another kind of file.
    #[error("this is {0}, not a database file")]
    NotAFile(&'static str),
    /// The file is shorter than a database file's header.
    #[error("the file is only {0} bytes long")]
    Short(u64),
    /// The header, the setup or a matrix does not decode.
    #[error(transparent)]
    Format(#[from] PirError),
    /// The file is not as long as its header says.
    #[error(
        "the header announces {announced} payload bytes but the file holds {held} (truncated or extended)"
    )]
    Length {
        /// The payload bytes announced.
        announced: u64,
        /// The payload bytes there are.
        held: u64,
    },
    /// The public setup's length runs past the payload.
    #[error("the public setup length {0} exceeds the payload")]
    SetupLength(u64),
    /// The file is larger than this machine can address.
    #[error("its {0} bytes exceed the address space")]
    AddressSpace(u64),
    /// The bytes are not those the checksum was made of.
    #[error("the checksum does not match: the file is corrupted")]
    Checksum,
    /// No database of this build's schemes can be made of the setup and matrices.
    #[error(transparent)]
    Load(#[from] LoadError),
    /// The header names another public setup than the file holds.
    #[error("the header digest does not match the public setup")]
    Digest,
    /// A batch of the change log does not apply to the version before it.
    #[error("batch {batch} of the change log does not apply")]
    Replay {
        /// The batch, from 1.
        batch: usize,
        /// Why.
        source: PirError,
    },
}

/// What [`write_database`] wrote of the public setup: its size and its [`setup_sha256`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WrittenSetup {
    /// Bytes of the encoded public setup.
    pub bytes: u64,
    /// Its SHA-256.
    pub sha256: [u8; 32],
}

/// The length of the database file that holds a public setup of `setup_bytes` bytes and
/// matrices of `matrix_bytes` bytes in all: the preamble, the setup's length, the setup and the
/// matrices.
pub fn file_len(setup_bytes: u64, matrix_bytes: u64) -> u64 {
    (PREAMBLE_BYTES as u64 + 8)
        .saturating_add(setup_bytes)
        .saturating_add(matrix_bytes)
}

/// Writes a database and its public setup to `path`, atomically, and says what setup it wrote.
pub fn write_database(path: &Path, database: &Database) -> Result<WrittenSetup, StoreError> {
    write_with_setup(path, database, &database.setup_bytes())
}

/// [`write_database`] with the database's public setup already encoded (`setup`).
pub(crate) fn write_with_setup(
    path: &Path,
    database: &Database,
    setup: &[u8],
) -> Result<WrittenSetup, StoreError> {
    let io = |source| StoreError::Io {
        path: path.to_path_buf(),
        source,
    };
    let matrices: Vec<&[u8]> = database
        .matrices()
        .into_iter()
        .map(PlaintextMatrix::as_bytes)
        .collect();
    let matrix_bytes: u64 = matrices.iter().map(|m| m.len() as u64).sum();
    let preamble = preamble(
        &database.digest(),
        setup,
        matrix_bytes,
        &matrices_digest(&matrices),
    );
    let temp = temporary_beside(path)?;
    {
        let mut out = BufWriter::with_capacity(1 << 20, temp.file());
        out.write_all(&preamble).map_err(io)?;
        out.write_all(&(setup.len() as u64).to_le_bytes())
            .map_err(io)?;
        out.write_all(setup).map_err(io)?;
        for matrix in &matrices {
            out.write_all(matrix).map_err(io)?;
        }
        out.flush().map_err(io)?;
    }
    persist(path, temp)?;
    Ok(WrittenSetup {
        bytes: setup.len() as u64,
        sha256: setup_sha256(setup),
    })
}

/// Streams a setup of an LWE database from `records` (the bytes `plan` was made for, read in
/// order) to a database file at `path`, atomically: the matrix is written band by band as it
/// is encoded, and the public setup and the checksum once the last band is in, so memory holds
/// [`StreamedBuild::peak_bytes`] whatever the size of the database. Says what setup it wrote.
pub fn write_streamed(
    path: &Path,
    plan: &StreamedBuild,
    records: &mut (dyn Read + Send),
    progress: Progress<'_>,
) -> Result<WrittenSetup, StreamedError> {
    let io = |source| StoreError::Io {
        path: path.to_path_buf(),
        source,
    };
    let temp = temporary_beside(path)?;
    let setup_start = PREAMBLE_BYTES as u64 + 8;
    let mut file = temp.file();
    let mut hasher = MatrixHasher::default();
    let mut matrix = SequentialWriter::new(file, temp.path(), setup_start + plan.setup_bytes());
    let setup = plan.run(
        records,
        &mut |bytes| {
            hasher.update(bytes);
            matrix.write(bytes)
        },
        progress,
    )?;
    matrix.finish().map_err(io)?;
    let setup_bytes = setup.to_bytes();
    if setup_bytes.len() as u64 != plan.setup_bytes() {
        return Err(StreamedError::Setup(PirError::InvalidParameters(format!(
            "the setup takes {} bytes, not the {} planned",
            setup_bytes.len(),
            plan.setup_bytes()
        ))));
    }
    let preamble = preamble(
        setup.digest(),
        &setup_bytes,
        plan.matrix_bytes(),
        &hasher.finish(),
    );
    file.seek(SeekFrom::Start(0)).map_err(io)?;
    file.write_all(&preamble).map_err(io)?;
    file.write_all(&(setup_bytes.len() as u64).to_le_bytes())
        .map_err(io)?;
    file.write_all(&setup_bytes).map_err(io)?;
    persist(path, temp)?;
    Ok(WrittenSetup {
        bytes: setup_bytes.len() as u64,
        sha256: setup_sha256(&setup_bytes),
    })
}

/// What went wrong streaming a setup to a database file.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StreamedError {
    /// The database file could not be written.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The setup failed: the records could not be read, or the parameters make no setup.
    #[error(transparent)]
    Setup(#[from] PirError),
    /// The records could not be read or the matrix written.
    #[error(transparent)]
    Stream(#[from] StreamError),
}

/// The bytes before the payload of a database file: the envelope with the setup's digest, the
/// payload's length and its checksum.
fn preamble(
    digest: &wire::Digest,
    setup: &[u8],
    matrix_bytes: u64,
    matrices: &[u8; 32],
) -> Vec<u8> {
    let payload_len = 8 + setup.len() as u64 + matrix_bytes;
    let mut preamble = Vec::with_capacity(PREAMBLE_BYTES);
    wire::write_header(&mut preamble, Kind::DATABASE_FILE, digest);
    preamble.extend_from_slice(&payload_len.to_le_bytes());
    preamble.extend_from_slice(&payload_checksum(setup, matrices));
    preamble
}

/// A temporary file beside `path` (see [`crate::partial`]).
fn temporary_beside(path: &Path) -> Result<Partial, StoreError> {
    Partial::beside(path).map_err(|source| StoreError::Io {
        path: path.to_path_buf(),
        source,
    })
}

/// Flushes the written `temp` to disk and renames it to `path`.
fn persist(path: &Path, temp: Partial) -> Result<(), StoreError> {
    temp.persist(path).map_err(|source| StoreError::Io {
        path: path.to_path_buf(),
        source,
    })
}

/// Loads and verifies the database file at `path`, of any built-in scheme, into memory.
pub fn read_database(path: &Path) -> Result<Database, StoreError> {
    read_database_with(path, &Registry::default())
}

/// Loads and verifies the database file at `path`, of any scheme of `registry`, into memory,
/// with the versions its change log holds ([`crate::log`]).
pub fn read_database_with(path: &Path, registry: &Registry) -> Result<Database, StoreError> {
    crate::served::open_versioned(path, registry).map(|(database, _)| database)
}

/// Opens `path` for reading, refusing what is not a regular file with a clear reason.
pub(crate) fn open_regular(path: &Path) -> Result<File, StoreError> {
    let io = |source| StoreError::Io {
        path: path.to_path_buf(),
        source,
    };
    let file = File::open(path).map_err(io)?;
    let metadata = file.metadata().map_err(io)?;
    if !metadata.is_file() {
        let what = if metadata.is_dir() {
            "a directory"
        } else {
            "not a regular file"
        };
        return Err(StoreError::Invalid {
            path: path.to_path_buf(),
            source: InvalidFile::NotAFile(what),
        });
    }
    Ok(file)
}

/// Reads, verifies and decodes the open database file `file`, read from `path`, and replays
/// the batches of its change log ([`crate::log`]) as its versions. The matrices
/// are read into page-aligned anonymous memory (checked first against the memory the machine
/// has) and the checksum is verified on that copy: the bytes served are the bytes verified,
/// whatever happens to the file afterwards, and answers stream them from huge pages.
pub(crate) fn load(
    path: &Path,
    file: &File,
    registry: &Registry,
) -> Result<(Database, ChangeLog), StoreError> {
    let io = |source| StoreError::Io {
        path: path.to_path_buf(),
        source,
    };
    let invalid = |source: InvalidFile| StoreError::Invalid {
        path: path.to_path_buf(),
        source,
    };
    let Head {
        digest,
        checksum,
        file_len,
        setup_len,
    } = Head::read(path, file)?;
    memory::check_resident(file_len).map_err(|source| StoreError::Memory {
        path: path.to_path_buf(),
        source,
    })?;
    let beyond = |_| invalid(InvalidFile::AddressSpace(file_len));
    let matrices_offset = HEAD_BYTES as u64 + setup_len;
    let matrices_len = usize::try_from(file_len - matrices_offset).map_err(beyond)?;
    let mut setup = vec![0u8; usize::try_from(setup_len).map_err(beyond)?];
    file.read_exact_at(&mut setup, HEAD_BYTES as u64)
        .map_err(io)?;
    let stored = Arc::new(direct::read_range(file, matrices_offset, matrices_len).map_err(io)?);
    let stored_bytes: &[u8] = (*stored).as_ref();
    if payload_checksum(&setup, &MatrixHasher::digest(stored_bytes)) != checksum {
        return Err(invalid(InvalidFile::Checksum));
    }
    let owner: SharedBytes = stored.clone();
    let mut matrices = |shapes: &[(usize, usize)]| {
        let mut start = 0;
        let mut matrices = Vec::with_capacity(shapes.len());
        for (i, &(rows, cols)) in shapes.iter().enumerate() {
            let left = matrices_len - start;
            let len = rows.checked_mul(cols).filter(|&len| len <= left).ok_or(
                MatricesError::TooLarge {
                    index: i,
                    rows,
                    cols,
                    left,
                },
            )?;
            let matrix = PlaintextMatrix::from_shared(rows, cols, owner.clone(), start).ok_or(
                MatricesError::Incomplete {
                    index: i,
                    rows,
                    cols,
                },
            )?;
            matrices.push(matrix);
            start += len;
        }
        if start != matrices_len {
            return Err(MatricesError::Trailing(matrices_len - start));
        }
        Ok(matrices)
    };
    let mut database = registry
        .load(&setup, &mut matrices)
        .map_err(|e| invalid(e.into()))?;
    if database.digest() != digest {
        return Err(invalid(InvalidFile::Digest));
    }
    let (log, batches) = ChangeLog::read(path, &checksum)?;
    replay(path, &mut database, batches, 0)?;
    Ok((database, log))
}

/// Bytes before a database file's public setup: the preamble and the setup's length.
const HEAD_BYTES: usize = PREAMBLE_BYTES + 8;

/// What the first bytes of a database file say, checked against its length.
pub(crate) struct Head {
    /// The setup's digest.
    pub(crate) digest: wire::Digest,
    /// The payload's checksum.
    pub(crate) checksum: FileChecksum,
    /// Bytes of the file.
    pub(crate) file_len: u64,
    /// Bytes of the public setup.
    setup_len: u64,
}

impl Head {
    /// The head of the open database file `file`, read from `path`.
    pub(crate) fn read(path: &Path, file: &File) -> Result<Self, StoreError> {
        let invalid = |source: InvalidFile| StoreError::Invalid {
            path: path.to_path_buf(),
            source,
        };
        let io = |source| StoreError::Io {
            path: path.to_path_buf(),
            source,
        };
        let file_len = file.metadata().map_err(io)?.len();
        let mut head = [0u8; HEAD_BYTES];
        if file_len < head.len() as u64 {
            return Err(invalid(InvalidFile::Short(file_len)));
        }
        file.read_exact_at(&mut head, 0).map_err(io)?;
        let (mut reader, digest) = Reader::open(&head[..PREAMBLE_BYTES], Kind::DATABASE_FILE)
            .map_err(|e| invalid(e.into()))?;
        let payload_len = reader.u64().map_err(|e| invalid(e.into()))?;
        let checksum = reader.take(32).map_err(|e| invalid(e.into()))?;
        let held = file_len - PREAMBLE_BYTES as u64;
        if payload_len != held {
            return Err(invalid(InvalidFile::Length {
                announced: payload_len,
                held,
            }));
        }
        let setup_len = u64::from_le_bytes(head[PREAMBLE_BYTES..].try_into().expect("8 bytes"));
        if setup_len > payload_len - 8 {
            return Err(invalid(InvalidFile::SetupLength(setup_len)));
        }
        Ok(Self {
            digest,
            checksum: checksum.try_into().expect("32 bytes"),
            file_len,
            setup_len,
        })
    }
}

/// The checksum a database file of `database`, with its public setup encoded as `setup`, has.
pub(crate) fn checksum_of(database: &Database, setup: &[u8]) -> FileChecksum {
    let matrices: Vec<&[u8]> = database
        .matrices()
        .into_iter()
        .map(PlaintextMatrix::as_bytes)
        .collect();
    payload_checksum(setup, &matrices_digest(&matrices))
}

/// The [`MatrixHasher`] digest of `matrices`, one after another.
fn matrices_digest(matrices: &[&[u8]]) -> [u8; 32] {
    let mut hasher = MatrixHasher::default();
    for matrix in matrices {
        hasher.update(matrix);
    }
    hasher.finish()
}

/// Applies `batches`, the batches of the change log of the database file at `path` after its
/// first `before`, to `database`, one version each.
pub(crate) fn replay(
    path: &Path,
    database: &mut Database,
    batches: Batches,
    before: usize,
) -> Result<(), StoreError> {
    for (i, batch) in batches.into_iter().enumerate() {
        database
            .replay(&batch)
            .map_err(|source| StoreError::Invalid {
                path: crate::log::path_of(path),
                source: InvalidFile::Replay {
                    batch: before + i + 1,
                    source,
                },
            })?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use obscura_pir::batch::merkle::{leaf_hash, MerkleTree};
    use obscura_pir::batch::treepir::{TreePir, TreePirClient, TreePirServer};
    use obscura_pir::keyword::{Keyword, KeywordServer};
    use obscura_pir::lwe::{Client, EngineOptions, Lwe, Server};
    use obscura_pir::wire::Digest;
    use obscura_pir::{PirClient, PirServer};

    fn server() -> (Server, Vec<u8>) {
        let data: Vec<u8> = (0..1000u32).map(|i| (i * 13 % 256) as u8).collect();
        let server = Server::from_records(&data, 24, EngineOptions::default(), &|_, _| {}).unwrap();
        (server, data)
    }

    #[test]
    fn round_trip_serves_the_same_records() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("db.obs");
        let (server, data) = server();
        let database = Database::from(server);
        write_database(&path, &database).unwrap();
        let matrix_bytes = database.matrices()[0].as_bytes().len() as u64;
        assert_eq!(
            std::fs::metadata(&path).unwrap().len(),
            file_len(database.setup_bytes().len() as u64, matrix_bytes)
        );
        let loaded = read_database(&path).unwrap();
        let loaded = loaded.server::<Lwe>().expect("an index database");
        let original = database.server::<Lwe>().unwrap();
        assert_eq!(loaded.public_setup(), original.public_setup());
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
        let server =
            KeywordServer::from_pairs(&pairs, KeywordOptions::default(), &|_, _| {}).unwrap();
        write_database(&path, &server.into()).unwrap();
        let loaded = read_database(&path).unwrap();
        let loaded = loaded.server::<Keyword>().expect("a keyword database");
        let mut client = KeywordClient::new(loaded.public_setup().clone());
        for (key, value) in &pairs {
            let (query, state) = client.query(key).unwrap();
            let answer = loaded.answer(&query).unwrap();
            assert_eq!(client.decode(state, &answer).unwrap().as_ref(), Some(value));
        }
    }

    /// A batch-code database is stored, loaded through the registry and fetched from in batches.
    #[test]
    fn pbc_databases_round_trip() {
        use obscura_pir::batch::pbc::{Pbc, PbcClient, PbcOptions, PbcServer};
        use obscura_pir::lwe::Records;
        let data: Vec<u8> = (0..100 * 32u32).map(|i| (i * 7 % 251) as u8).collect();
        let records = Records::Raw {
            bytes: &data,
            record_bytes: 32,
        };
        let options = PbcOptions {
            batch: 4,
            seed: 9,
            engine: EngineOptions::default(),
        };
        let server = PbcServer::build(records, options, &|_, _| {}).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("pbc.obs");
        write_database(&path, &server.into()).unwrap();
        let loaded = read_database(&path).unwrap();
        assert_eq!(loaded.listing().kind, "pbc");
        let server = loaded.server::<Pbc>().expect("a batch-code database");
        let mut client = PbcClient::new(server.public_setup().clone());
        let wanted = [3u64, 50, 97];
        let (request, state) = PirClient::query(&mut client, &wanted[..]).unwrap();
        let reply = PirServer::answer(server, &request).unwrap();
        let fetched = PirClient::decode(&client, state, &reply).unwrap();
        for (record, &i) in fetched.iter().zip(&wanted) {
            assert_eq!(record, &data[i as usize * 32..][..32], "record {i}");
        }
    }

    /// A file larger than the memory available (a sparse 8 TiB one whose header announces its
    /// size) is refused, naming what it needs, before anything is read into memory.
    #[cfg(target_os = "linux")]
    #[test]
    fn a_file_larger_than_memory_is_refused_before_it_is_read() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("db.obs");
        write_database(&path, &Database::from(server().0)).unwrap();
        let huge: u64 = 8 << 40;
        let file = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
        let payload_len = (huge - PREAMBLE_BYTES as u64).to_le_bytes();
        file.write_all_at(&payload_len, wire::HEADER_BYTES as u64)
            .unwrap();
        file.set_len(huge).unwrap();
        match read_database(&path) {
            Err(StoreError::Memory { source, .. }) => {
                assert_eq!(source.needed, huge);
                assert!(source.message.contains("8.0 TiB"), "{}", source.message);
            }
            other => panic!(
                "expected a memory refusal, got {:?}",
                other.map(|d| d.kind())
            ),
        }
    }

    #[test]
    fn truncated_and_corrupted_files_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("db.obs");
        let (server, _) = server();
        write_database(&path, &Database::from(server)).unwrap();
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

    fn tree_database(n: usize) -> (Database, MerkleTree, Vec<Vec<u8>>) {
        let leaves: Vec<Vec<u8>> = (0..n).map(|i| format!("entry {i}").into_bytes()).collect();
        let tree = MerkleTree::from_leaves(&leaves);
        let server = TreePirServer::from_tree(&tree, EngineOptions::default(), &|_, _| {}).unwrap();
        (server.into(), tree, leaves)
    }

    #[test]
    fn treepir_databases_round_trip() {
        let dir = tempfile::tempdir().unwrap();
        for n in [1usize, 2, 37] {
            let path = dir.path().join(format!("tree-{n}.obs"));
            let (database, tree, leaves) = tree_database(n);
            write_database(&path, &database).unwrap();
            let loaded = read_database(&path).unwrap();
            let listing = loaded.listing();
            assert_eq!((listing.kind, listing.items), ("treepir", n as u64));
            assert_eq!(loaded.digest(), database.digest());
            assert_eq!(loaded.setup_bytes(), database.setup_bytes());
            let server = loaded.server::<TreePir>().expect("a TreePIR database");
            assert_eq!(server.databases().len(), tree.height() as usize);
            let mut client = TreePirClient::new(server.public_setup().clone());
            for m in [0, n as u64 / 2, n as u64 - 1] {
                let (queries, state) = client.query(m).unwrap();
                let answers = server.answer(&queries).unwrap();
                let leaf = leaf_hash(&leaves[m as usize]);
                let path = client.decode(state, &answers, &leaf).unwrap();
                assert_eq!(Some(path), tree.audit_path(m), "n = {n}, leaf {m}");
            }
        }
    }

    /// A file around `payload` with a valid envelope, length and checksum, so that the checks
    /// behind the checksum are reached.
    fn sealed(digest: &Digest, payload: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        wire::write_header(&mut out, Kind::DATABASE_FILE, digest);
        out.extend_from_slice(&(payload.len() as u64).to_le_bytes());
        out.extend_from_slice(&checksum_of_payload(payload));
        out.extend_from_slice(payload);
        out
    }

    fn refused(dir: &Path, bytes: &[u8]) -> bool {
        let path = dir.join("damaged.obs");
        std::fs::write(&path, bytes).unwrap();
        matches!(read_database(&path), Err(StoreError::Invalid { .. }))
    }

    /// Truncated, extended and altered TreePIR files are refused with a typed error, also when
    /// the checksum is made to match, and huge declared lengths allocate nothing.
    #[test]
    fn damaged_treepir_files_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tree.obs");
        let (database, _, _) = tree_database(37);
        write_database(&path, &database).unwrap();
        let bytes = std::fs::read(&path).unwrap();
        let digest = database.digest();
        let payload = &bytes[PREAMBLE_BYTES..];
        let setup_len = u64::from_le_bytes(payload[..8].try_into().unwrap()) as usize;
        // Cuts through the setup's fields, its hints and the matrices.
        let cuts = (0..200)
            .step_by(7)
            .chain((200..setup_len + 8).step_by(setup_len / 20))
            .chain((setup_len + 8..payload.len()).step_by(payload.len() / 10));
        for cut in cuts {
            assert!(
                refused(dir.path(), &bytes[..PREAMBLE_BYTES + cut]),
                "cut {cut}"
            );
            assert!(
                refused(dir.path(), &sealed(&digest, &payload[..cut])),
                "sealed cut {cut}"
            );
        }
        let mut longer = payload.to_vec();
        longer.push(0);
        assert!(refused(dir.path(), &sealed(&digest, &longer)));
        // The payload: setup length (0), TreePIR envelope (8), leaves (48), root (56), the length
        // of the first colour class's setup (88), then that setup (96).
        for (at, value) in [
            (0, u64::MAX),
            (48, 1 << 63),
            (48, 38),
            (48, 0),
            (88, u64::MAX),
            (88, 1 << 40),
            (96 + 52, 1 << 62),
        ] {
            let mut altered = payload.to_vec();
            altered[at..at + 8].copy_from_slice(&value.to_le_bytes());
            assert!(
                refused(dir.path(), &sealed(&digest, &altered)),
                "{at}: {value}"
            );
        }
        for at in [8, 20, 56, 100] {
            let mut altered = payload.to_vec();
            altered[at] ^= 0x40;
            assert!(
                refused(dir.path(), &sealed(&digest, &altered)),
                "flip at {at}"
            );
        }
        // A setup of the wrong kind for its file, or a tree file without its matrices.
        let index = Database::from(server().0);
        assert!(refused(
            dir.path(),
            &sealed(&index.digest(), &payload[..8 + setup_len])
        ));
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]
        /// Random bytes after a valid TreePIR setup prefix, sealed, never panic.
        #[test]
        fn random_tree_payloads_are_refused(
            keep in 0usize..200,
            tail in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..300),
        ) {
            let (database, _, _) = tree_database(5);
            let setup = database.setup_bytes();
            let mut payload = (setup.len() as u64).to_le_bytes().to_vec();
            payload.extend_from_slice(&setup[..keep]);
            payload.extend_from_slice(&tail);
            let dir = tempfile::tempdir().unwrap();
            proptest::prop_assert!(refused(dir.path(), &sealed(&database.digest(), &payload)));
        }
    }
}
