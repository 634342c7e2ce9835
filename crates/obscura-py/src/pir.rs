//! PIR from Python: building database files (the CLI's format) and fetching from them, locally
//! or from `obscura serve`.

use std::path::PathBuf;
use std::sync::Mutex;
use std::time::Duration;

use obscura_client::blocking::Client as Session;
use obscura_client::http::{default_cache_dir, ClientOptions, HttpClient};
use obscura_client::setup::{DEFAULT_MAX_QUERY_BYTES, DEFAULT_MAX_SETUP_BYTES};
use obscura_client::AuditPath as LibraryAuditPath;
use obscura_pir::batch::merkle::Hash;
use obscura_pir::keyword::fuse::Arity;
use obscura_pir::lwe::{EngineOptions, Layout};
use obscura_pir::params::{MatrixKind, ParamSet};
use obscura_registry::builders::{builder, builders};
use obscura_registry::{Database, Listing, Registry};
use obscura_service::tls;
use obscura_store::build::{self, BuildOptions, Records};
use obscura_store::changes::read_for;
use obscura_store::patches;
use obscura_store::store::{self, WrittenSetup};
use obscura_store::update::{checkpoint_file, update_file, UpdateError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyMapping};

use crate::errors::{error, full_message, Class, PyResultExt};
use crate::items::{self, bytes_of};
use crate::progress::{self, Reporter};
use obscura_math::threads;

/// What a build wrote.
#[pyclass(module = "obscura", frozen, get_all)]
pub struct BuildReport {
    /// The database file.
    path: PathBuf,
    /// The database's kind: `index`, `double`, `ypir`, `keyword` or `treepir`.
    kind: &'static str,
    /// Records, keys or leaves.
    items: u64,
    /// The database's version: 0 as built, one more for each batch of changes applied (YPIR's
    /// setup names none and stays the same: its clients keep theirs).
    version: u64,
    /// Bytes of the file.
    file_bytes: u64,
    /// Bytes of the public setup clients download (none for YPIR's: it holds no hint).
    setup_bytes: u64,
    /// The SHA-256 of the public setup, in hex: clients pin it with `setup_sha256`.
    setup_sha256: String,
    /// A Merkle tree's root, in hex (`None` for other databases).
    root: Option<String>,
}

#[pymethods]
impl BuildReport {
    fn __repr__(&self) -> String {
        format!(
            "BuildReport(path={:?}, kind={:?}, items={}, version={}, file_bytes={}, setup_sha256={:?})",
            self.path.display().to_string(),
            self.kind,
            self.items,
            self.version,
            self.file_bytes,
            self.setup_sha256
        )
    }
}

/// The engine options given by name, checked.
fn engine_options(layout: &str, params: &str, matrix: Option<&str>) -> PyResult<EngineOptions> {
    let invalid =
        |what: &str, reason: String| error(Class::InvalidInput, format!("{what}: {reason}"));
    Ok(EngineOptions {
        layout: layout
            .parse::<Layout>()
            .map_err(|e| invalid("layout", e.to_string()))?,
        params: params
            .parse::<ParamSet>()
            .map_err(|e| invalid("params", e.to_string()))?,
        matrix: matrix
            .map(|m| m.parse::<MatrixKind>())
            .transpose()
            .map_err(|e| invalid("matrix", e.to_string()))?,
        value_bytes: None,
        capacity: None,
    })
}

/// A build's input: its records, and the bytes of the copies they borrow from that their shape
/// does not count (a leaf's `Vec`, a buffer copied out of Python).
struct Input<'a> {
    records: Records<'a>,
    copies_bytes: u64,
}

impl<'a> From<Records<'a>> for Input<'a> {
    fn from(records: Records<'a>) -> Self {
        Self {
            records,
            copies_bytes: 0,
        }
    }
}

/// Checks the memory a build needs (its input's, copies included), then builds and writes the
/// database (GIL released) and says what was written.
fn build_and_write(
    py: Python<'_>,
    input: Input<'_>,
    options: BuildOptions,
    out: PathBuf,
    threads: Option<usize>,
    max_memory: Option<u64>,
    progress: Option<Py<PyAny>>,
) -> PyResult<BuildReport> {
    let Input {
        records,
        copies_bytes,
    } = input;
    let shape = records.shape();
    let name = |layout: Layout| match layout {
        Layout::Square => "layout=\"square\"".to_string(),
        Layout::OnePerColumn => "layout=\"one-per-column\"".to_string(),
        Layout::PerColumn(count) => format!("layout=\"{count}\""),
    };
    if let Some(warning) = options
        .check_memory(
            &shape,
            shape.held_bytes().saturating_add(copies_bytes),
            max_memory,
            "max_memory",
            name,
        )
        .py()?
    {
        warn(py, &warning)?;
    }
    let reporter = Reporter::new(progress);
    let steps = options.steps(&shape);
    let database = py.detach(|| {
        threads::run(threads, || {
            build::build(records, &options, &progress::steps(steps, &reporter))
        })
        .py()
    })?;
    reporter.finish()?;
    let database = database.py()?;
    let written = py.detach(|| store::write_database(&out, &database)).py()?;
    report(out, &database, written)
}

/// What was written to `out`: `database`, whose setup is `written`.
fn report(out: PathBuf, database: &Database, written: WrittenSetup) -> PyResult<BuildReport> {
    let listing = database.listing();
    let root = listing.root.map(hex::encode);
    let file_bytes = std::fs::metadata(&out)
        .map_err(|e| {
            error(
                Class::Storage,
                format!("cannot read {}: {e}", out.display()),
            )
        })?
        .len();
    Ok(BuildReport {
        path: out,
        kind: listing.kind,
        items: listing.items,
        version: listing.version,
        file_bytes,
        setup_bytes: written.bytes,
        setup_sha256: hex::encode(written.sha256),
        root,
    })
}

/// Applies the changes of `changes` (the bytes of a change file: JSON lines, or a Merkle tree's
/// new leaves, one per line) to the database file `db` as its next version, committed to its
/// change log (`db.log`) in one step; nothing is written unless every change applies. Once the
/// log has grown enough, it is folded into the file before the call returns. Patches for
/// clients of the last `keep_patches` versions are kept beside it.
#[pyfunction]
#[pyo3(signature = (db, changes, *, keep_patches=None, progress=None))]
pub fn update(
    py: Python<'_>,
    db: PathBuf,
    changes: &[u8],
    keep_patches: Option<usize>,
    progress: Option<Py<PyAny>>,
) -> PyResult<BuildReport> {
    let reporter = Reporter::new(progress);
    let updated = py.detach(|| {
        let keep = keep_patches.unwrap_or(patches::DEFAULT_KEEP);
        let changes = |listing: &Listing| read_for(listing.lookup, listing.items, changes);
        let updated = update_file(&db, changes, &Registry::default(), keep, &|done, total| {
            reporter.report("updating", done, total)
        })?;
        if updated.checkpoint_due {
            checkpoint_file(&db, &Registry::default())?;
        }
        Ok::<_, UpdateError>(updated)
    });
    reporter.finish()?;
    let updated = updated.py()?;
    report(db, &updated.database, updated.setup)
}

/// Issues a Python `UserWarning`.
fn warn(py: Python<'_>, message: &str) -> PyResult<()> {
    py.import("warnings")?.call_method1("warn", (message,))?;
    Ok(())
}

/// Builds an index database: records fetched by position.
///
/// `records` is either one bytes-like object of fixed-size records laid end to end (with
/// `record_size`; the last may be short) or any iterable of str or bytes (a list, a pandas
/// Series, a pyarrow array), one variable-length record each.
#[pyfunction]
#[pyo3(signature = (records, out, *, record_size=None, value_bytes=None, capacity=None, scheme="index", layout="square", params="ypir-1024", matrix=None, threads=None, max_memory=None, progress=None))]
#[allow(clippy::too_many_arguments)]
pub fn build_index(
    py: Python<'_>,
    records: &Bound<'_, PyAny>,
    out: PathBuf,
    record_size: Option<u64>,
    value_bytes: Option<u64>,
    capacity: Option<u64>,
    scheme: &str,
    layout: &str,
    params: &str,
    matrix: Option<&str>,
    threads: Option<usize>,
    max_memory: Option<u64>,
    progress: Option<Py<PyAny>>,
) -> PyResult<BuildReport> {
    let scheme = builder(scheme).ok_or_else(|| {
        let names: Vec<&str> = builders().iter().map(|b| b.name()).collect();
        error(
            Class::InvalidInput,
            format!("unknown scheme {scheme:?}: use {}", names.join(", ")),
        )
    })?;
    let options = BuildOptions {
        scheme,
        engine: EngineOptions {
            value_bytes,
            capacity,
            ..engine_options(layout, params, matrix)?
        },
        arity: None,
    };
    if value_bytes.is_some() && (record_size.is_some() || !scheme.changes_in_place()) {
        return Err(error(
            Class::InvalidInput,
            "value_bytes applies to index databases of values (scheme=\"index\", no record_size), the databases that change in place",
        ));
    }
    if capacity.is_some() && !scheme.changes_in_place() {
        return Err(error(
            Class::InvalidInput,
            "capacity applies to index databases (scheme=\"index\"), the databases that change in place",
        ));
    }
    match record_size {
        Some(record_size) => {
            // A bytes object is read in place (immutable, and alive for the whole call); other
            // bytes-like objects are copied once.
            let copied;
            let (data, copies_bytes): (&[u8], u64) = match records.cast::<PyBytes>() {
                Ok(bytes) => (bytes.as_bytes(), 0),
                Err(_) => {
                    copied = bytes_of(records, String::new).map_err(|_| {
                        error(
                            Class::InvalidInput,
                            format!(
                                "with record_size, the records are one bytes object of records laid end to end, not {}",
                                items::describe(records)
                            ),
                        )
                    })?;
                    (copied.as_slice(), copied.len() as u64)
                }
            };
            let input = Input {
                records: Records::raw(data, record_size),
                copies_bytes,
            };
            build_and_write(py, input, options, out, threads, max_memory, progress)
        }
        None => {
            if records.is_instance_of::<PyBytes>() {
                return Err(error(
                    Class::InvalidInput,
                    "records given as one bytes object need record_size (or pass a list of records)",
                ));
            }
            let values = items::collect(records)?;
            let input = Records::values(&values).into();
            build_and_write(py, input, options, out, threads, max_memory, progress)
        }
    }
}

/// The key-value pairs of a mapping or of an iterable of `(key, value)` pairs.
fn pairs_of(pairs: &Bound<'_, PyAny>) -> PyResult<Vec<(Vec<u8>, Vec<u8>)>> {
    let iterable = match pairs.cast::<PyMapping>() {
        Ok(mapping) => mapping.items()?.into_any(),
        Err(_) => pairs.clone(),
    };
    let mut out = Vec::with_capacity(iterable.len().unwrap_or(0));
    for (row, pair) in iterable.try_iter()?.enumerate() {
        let pair = pair?;
        let (key, value): (Bound<'_, PyAny>, Bound<'_, PyAny>) = pair.extract().map_err(|_| {
            error(
                Class::InvalidInput,
                format!("pair {row} is not a (key, value) pair"),
            )
        })?;
        out.push((
            bytes_of(&key, || format!("the key of pair {row}"))?,
            bytes_of(&value, || format!("the value of pair {row}"))?,
        ));
    }
    Ok(out)
}

/// Builds a keyword database: values fetched by key, absent keys reported absent.
///
/// `pairs` is a mapping (a dict) or an iterable of `(key, value)` pairs, each str or bytes
/// (e.g. `zip(frame["phone"], frame["name"])`); keys must be distinct.
#[pyfunction]
#[pyo3(signature = (pairs, out, *, arity=None, params="ypir-1024", matrix=None, threads=None, max_memory=None, progress=None))]
#[allow(clippy::too_many_arguments)]
pub fn build_keyword(
    py: Python<'_>,
    pairs: &Bound<'_, PyAny>,
    out: PathBuf,
    arity: Option<u8>,
    params: &str,
    matrix: Option<&str>,
    threads: Option<usize>,
    max_memory: Option<u64>,
    progress: Option<Py<PyAny>>,
) -> PyResult<BuildReport> {
    let arity = match arity {
        None => None,
        Some(3) => Some(Arity::Three),
        Some(4) => Some(Arity::Four),
        Some(other) => {
            return Err(error(
                Class::InvalidInput,
                format!("arity {other}: a key takes 3 or 4 filter slots"),
            ))
        }
    };
    let options = BuildOptions {
        engine: engine_options("one-per-column", params, matrix)?,
        arity,
        ..BuildOptions::default()
    };
    let pairs = pairs_of(pairs)?;
    build_and_write(
        py,
        Records::Pairs(&pairs).into(),
        options,
        out,
        threads,
        max_memory,
        progress,
    )
}

/// Builds a Merkle tree (RFC 6962) of `leaves` (an iterable of str or bytes, one per leaf) for
/// private audit-path retrieval (TreePIR), with room for `capacity` leaves in all (rounded up to
/// a power of two) for `update` to append.
#[pyfunction]
#[pyo3(signature = (leaves, out, *, capacity=None, params="ypir-1024", matrix=None, threads=None, progress=None))]
#[allow(clippy::too_many_arguments)]
pub fn build_merkle(
    py: Python<'_>,
    leaves: &Bound<'_, PyAny>,
    out: PathBuf,
    capacity: Option<u64>,
    params: &str,
    matrix: Option<&str>,
    threads: Option<usize>,
    progress: Option<Py<PyAny>>,
) -> PyResult<BuildReport> {
    let leaves = items::collect(leaves)?;
    if leaves.is_empty() {
        return Err(error(Class::InvalidInput, "there are no leaves"));
    }
    // The tree borrows each leaf from its own `Vec`, whose header the shape does not count.
    let vec_headers = (leaves.len() * std::mem::size_of::<Vec<u8>>()) as u64;
    let leaves: Vec<&[u8]> = leaves.iter().map(Vec::as_slice).collect();
    let options = BuildOptions {
        engine: EngineOptions {
            capacity,
            ..engine_options("square", params, matrix)?
        },
        ..BuildOptions::default()
    };
    let input = Input {
        records: Records::Leaves(&leaves),
        copies_bytes: vec_headers,
    };
    build_and_write(py, input, options, out, threads, None, progress)
}

/// A Merkle leaf's audit path, fetched privately and verified against the tree's root.
#[pyclass(module = "obscura", frozen, get_all)]
pub struct AuditPath {
    /// The leaf's index.
    leaf: u64,
    /// The tree's leaves.
    leaves: u64,
    /// The leaf's hash, in hex.
    leaf_hash: String,
    /// The sibling hashes from the leaf up to the root, in hex.
    path: Vec<String>,
    /// The tree's root, in hex.
    root: String,
}

#[pymethods]
impl AuditPath {
    fn __repr__(&self) -> String {
        format!(
            "AuditPath(leaf={}, leaves={}, path=<{} hashes>, root={:?})",
            self.leaf,
            self.leaves,
            self.path.len(),
            self.root
        )
    }
}

impl From<LibraryAuditPath> for AuditPath {
    fn from(proof: LibraryAuditPath) -> Self {
        Self {
            leaf: proof.leaf,
            leaves: proof.leaves,
            leaf_hash: hex::encode(proof.leaf_hash),
            path: proof.path.iter().map(hex::encode).collect(),
            root: hex::encode(proof.root),
        }
    }
}

/// A verified consistency proof: the tree's earlier version of `first` leaves is a prefix of the
/// tree of `second` leaves with head `root` (RFC 6962: the log only grew).
#[pyclass(module = "obscura", frozen, get_all)]
pub struct Consistency {
    /// The earlier version's leaves.
    first: u64,
    /// The served tree's leaves.
    second: u64,
    /// The served tree's root, in hex.
    root: String,
    /// The proof's hashes, in hex.
    proof: Vec<String>,
}

#[pymethods]
impl Consistency {
    fn __repr__(&self) -> String {
        format!(
            "Consistency(first={}, second={}, proof=<{} hashes>, root={:?})",
            self.first,
            self.second,
            self.proof.len(),
            self.root
        )
    }
}

/// A 32-byte hash given as bytes or as hex text.
fn hash_of(value: &Bound<'_, PyAny>, what: &str) -> PyResult<Hash> {
    let bytes = match value.extract::<String>() {
        Ok(text) => hex::decode(text.trim())
            .map_err(|e| error(Class::InvalidInput, format!("{what}: not hex: {e}")))?,
        Err(_) => bytes_of(value, || what.to_string())?,
    };
    Hash::try_from(bytes).map_err(|bytes| {
        error(
            Class::InvalidInput,
            format!(
                "{what} is {} bytes, not the 32 of a SHA-256 hash",
                bytes.len()
            ),
        )
    })
}

/// A client of one database: a file read in this process, or a database that `obscura serve`
/// serves (its public setup downloaded once, verified and cached).
#[pyclass(module = "obscura")]
pub struct Client {
    session: Mutex<Session>,
    name: String,
}

impl Client {
    fn new(session: Session) -> Self {
        Self {
            name: session.session().database().to_string(),
            session: Mutex::new(session),
        }
    }

    /// Runs `f` on the session with the GIL released.
    fn with<T: Send>(
        &self,
        py: Python<'_>,
        f: impl FnOnce(&mut Session) -> PyResult<T> + Send,
    ) -> PyResult<T> {
        py.detach(|| {
            let mut session = self
                .session
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner());
            f(&mut session)
        })
    }
}

#[pymethods]
impl Client {
    /// A client of the database file at `path` (written by `obscura build` or a `build_*`
    /// function); its checksum is verified on load.
    #[staticmethod]
    fn open(py: Python<'_>, path: PathBuf) -> PyResult<Self> {
        let session = py.detach(|| Session::open(&path)).py()?;
        Ok(Self::new(session))
    }

    /// A client of database `db` on the server at `url` (e.g. `http://127.0.0.1:8080`).
    ///
    /// The public setup is downloaded once, checked against `setup_sha256` (hex, as the build
    /// printed it; without it, against the server's ETag) and cached in `cache_dir` (default:
    /// `$XDG_CACHE_HOME/obscura` or `~/.cache/obscura`; `False` for no cache). `token` is the
    /// bearer token of a database behind tokens; `ca_cert` a PEM file of the roots trusted for
    /// an `https://` server.
    #[staticmethod]
    #[pyo3(signature = (url, db, *, setup_sha256=None, cache_dir=None, token=None, ca_cert=None, timeout=300.0, max_setup_bytes=DEFAULT_MAX_SETUP_BYTES, max_query_bytes=DEFAULT_MAX_QUERY_BYTES))]
    #[allow(clippy::too_many_arguments)]
    fn connect(
        py: Python<'_>,
        url: &str,
        db: &str,
        setup_sha256: Option<&Bound<'_, PyAny>>,
        cache_dir: Option<&Bound<'_, PyAny>>,
        token: Option<String>,
        ca_cert: Option<PathBuf>,
        timeout: f64,
        max_setup_bytes: u64,
        max_query_bytes: u64,
    ) -> PyResult<Self> {
        let cache_dir = match cache_dir {
            None => default_cache_dir(),
            Some(value) if matches!(value.extract::<bool>(), Ok(false)) => None,
            Some(value) => Some(value.extract::<PathBuf>()?),
        };
        let trusted_roots = match ca_cert {
            Some(path) => {
                let pem = std::fs::read(&path).map_err(|e| {
                    error(
                        Class::Storage,
                        format!("cannot read {}: {e}", path.display()),
                    )
                })?;
                let roots = tls::certificates_from_pem(&pem, &path.display().to_string())
                    .map_err(|e| error(Class::InvalidInput, full_message(&e)))?;
                Some(roots.iter().map(|c| c.to_vec()).collect())
            }
            None => None,
        };
        if !(timeout.is_finite() && timeout > 0.0) {
            return Err(error(
                Class::InvalidInput,
                "timeout must be a positive number of seconds",
            ));
        }
        let options = ClientOptions {
            cache_dir,
            setup_sha256: setup_sha256
                .map(|hash| hash_of(hash, "setup_sha256"))
                .transpose()?,
            max_setup_bytes,
            max_query_bytes,
            timeout: Duration::from_secs_f64(timeout),
            token: token.filter(|t| !t.is_empty()),
            trusted_roots,
        };
        let http = HttpClient::with_options(url, options);
        let session = py.detach(|| Session::connect(http, db)).py()?;
        Ok(Self::new(session))
    }

    /// The database: its file, or its name on the server.
    #[getter]
    fn name(&self) -> &str {
        &self.name
    }

    /// The lookup the database serves: `"index"`, `"batch"`, `"keyword"` or `"audit-path"`.
    #[getter]
    fn lookup(&self, py: Python<'_>) -> PyResult<&'static str> {
        self.with(py, |session| Ok(session.session().lookup().name()))
    }

    /// Fetches record `index` (from 0) of an index database privately: the server learns
    /// nothing of `index`; `None` when the record was deleted.
    fn get<'py>(&self, py: Python<'py>, index: u64) -> PyResult<Option<Bound<'py, PyBytes>>> {
        let record = self.with(py, |session| session.get(index).py())?;
        Ok(record.map(|record| PyBytes::new(py, &record)))
    }

    /// Fetches the value under `key` (str or bytes) of a keyword database privately; `None`
    /// when the key is absent.
    fn get_key<'py>(
        &self,
        py: Python<'py>,
        key: &Bound<'py, PyAny>,
    ) -> PyResult<Option<Bound<'py, PyBytes>>> {
        let key = bytes_of(key, || "the key".into())?;
        let value = self.with(py, |session| session.get_key(&key).py())?;
        Ok(value.map(|value| PyBytes::new(py, &value)))
    }

    /// Fetches the audit path of `leaf` of a Merkle tree privately and verifies it against the
    /// tree's root (and `root`, hex or bytes, when given). Give the leaf's data as `leaf_data`
    /// or its hash as `leaf_hash` when known; otherwise the hash is fetched privately too.
    #[pyo3(signature = (leaf, *, leaf_data=None, leaf_hash=None, root=None))]
    fn audit_path(
        &self,
        py: Python<'_>,
        leaf: u64,
        leaf_data: Option<&Bound<'_, PyAny>>,
        leaf_hash: Option<&Bound<'_, PyAny>>,
        root: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<AuditPath> {
        let leaf_hash = match (leaf_data, leaf_hash) {
            (Some(_), Some(_)) => {
                return Err(error(
                    Class::InvalidInput,
                    "give leaf_data or leaf_hash, not both",
                ))
            }
            (Some(data), None) => Some(obscura_pir::batch::merkle::leaf_hash(&bytes_of(
                data,
                || "leaf_data".into(),
            )?)),
            (None, Some(hash)) => Some(hash_of(hash, "leaf_hash")?),
            (None, None) => None,
        };
        let root = root.map(|root| hash_of(root, "root")).transpose()?;
        let proof = self.with(py, |session| session.audit_path(leaf, leaf_hash, root).py())?;
        Ok(proof.into())
    }

    /// Proves that the Merkle tree's earlier version of `first` leaves, whose root was
    /// `first_root` (hex or bytes), is a prefix of the tree served: the log only grew (an
    /// RFC 6962 consistency proof, verified against the root of the setup this client holds,
    /// fetched again first when the served tree has grown since). Raises `MalformedDataError`
    /// when the proof fails.
    fn consistency(
        &self,
        py: Python<'_>,
        first: u64,
        first_root: &Bound<'_, PyAny>,
    ) -> PyResult<Consistency> {
        let first_root = hash_of(first_root, "first_root")?;
        let proved = self.with(py, |session| session.consistency(first, &first_root).py())?;
        Ok(Consistency {
            first: proved.first,
            second: proved.second,
            root: hex::encode(proved.root),
            proof: proved.proof.iter().map(hex::encode).collect(),
        })
    }

    fn __repr__(&self) -> String {
        format!("Client({:?})", self.name)
    }
}
