//! PSI from Python: a session with a peer over TCP (any protocol, in memory or bucketed on
//! disk), and ECDH-PSI as messages the caller carries.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::time::Duration;

use obscura_psi::bucketed::{run_bucketed, BucketOptions, ItemSource};
use obscura_psi::ecdh::messages::{MessageClient, MessageServer, DEFAULT_FPR};
use obscura_psi::transport::mailbox::{MailboxError, MailboxTransport};
use obscura_psi::transport::tcp::{self, TcpTransport};
use obscura_psi::{Options, Protocol, PsiError, Role, Stage, Transport};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyIterator};

use crate::errors::{error, Class, IntoPyErr, PyResultExt};
use crate::items::{self, bytes_of};
use crate::progress::Reporter;
use obscura_math::threads;

/// What a PSI session did, and the intersection when this party learns it.
#[pyclass(module = "obscura", frozen, get_all)]
pub struct PsiResult {
    /// The positions (from 0, ascending) of this party's items that are in the intersection,
    /// every duplicate included; `None` for a server that does not learn it.
    intersection: Option<Vec<u64>>,
    /// Distinct items in the intersection; `None` for a server that does not learn it.
    intersection_size: Option<u64>,
    /// Items read.
    items: u64,
    /// Items dropped because an earlier item was equal.
    duplicates_dropped: u64,
    /// The peer's items (distinct ones; all its rows in a bucketed session).
    peer_items: u64,
    /// Bytes sent to the peer.
    bytes_sent: u64,
    /// Bytes received from the peer.
    bytes_received: u64,
    /// Seconds the session took.
    seconds: f64,
    /// Buckets of a bucketed session (`None` otherwise).
    buckets: Option<u64>,
}

#[pymethods]
impl PsiResult {
    fn __repr__(&self) -> String {
        let size = self
            .intersection_size
            .map_or("not learned".to_string(), |size| size.to_string());
        format!(
            "PsiResult(items={}, peer_items={}, intersection_size={size}, seconds={:.3})",
            self.items, self.peer_items, self.seconds
        )
    }
}

/// The protocol named `name`.
fn protocol_of(name: &str) -> PyResult<Protocol> {
    match name {
        "ecdh" => Ok(Protocol::Ecdh),
        "kkrt" => Ok(Protocol::Kkrt),
        "rr22" => Ok(Protocol::Rr22),
        "rr22-malicious" => Ok(Protocol::Rr22Malicious),
        _ => Err(error(
            Class::InvalidInput,
            format!(
                "unknown protocol {name:?}: use \"ecdh\", \"kkrt\", \"rr22\" or \"rr22-malicious\""
            ),
        )),
    }
}

/// A party's items read from Python as a bucketed session streams them: any iterable of
/// `str` or `bytes` (a list, a pandas Series, a pyarrow array, a generator), read once.
struct PythonItems {
    iterator: Py<PyIterator>,
}

impl PythonItems {
    fn new(items: &Bound<'_, PyAny>) -> PyResult<Self> {
        Ok(Self {
            iterator: items::iterate(items)?.unbind(),
        })
    }
}

impl ItemSource for PythonItems {
    fn for_each(
        &self,
        visit: &mut dyn FnMut(&[u8]) -> Result<(), PsiError>,
    ) -> Result<(), PsiError> {
        Python::attach(|py| {
            let failed = |e: PyErr| PsiError::Input(Box::new(e));
            for (row, item) in self.iterator.bind(py).clone().enumerate() {
                let item = item.map_err(failed)?;
                let bytes = bytes_of(&item, || format!("item {row}")).map_err(failed)?;
                visit(&bytes)?;
            }
            Ok(())
        })
    }
}

/// Where the peer is reached: `listen` (the server) or `connect` (the client), or a mailbox
/// folder (either role).
struct Endpoint<'a> {
    listen: Option<&'a str>,
    connect: Option<&'a str>,
    mailbox: Option<&'a Path>,
    session: Option<&'a str>,
    attempt: u32,
}

/// Reaches the peer at `endpoint`: a connection, or the mailbox session opened.
fn link(
    py: Python<'_>,
    role: Role,
    endpoint: &Endpoint<'_>,
    timeout: Duration,
    ready: Option<&Bound<'_, PyAny>>,
) -> PyResult<Box<dyn Transport>> {
    match (endpoint.listen, endpoint.connect, endpoint.mailbox) {
        (None, None, Some(folder)) => {
            let session = endpoint.session.ok_or_else(|| {
                error(
                    Class::InvalidInput,
                    "a mailbox session needs session=\"NAME\"",
                )
            })?;
            let mailbox = MailboxTransport::open(folder, session, endpoint.attempt, role, timeout)
                .map_err(|e| {
                    let class = match e {
                        MailboxError::Folder { .. } => Class::Storage,
                        _ => Class::InvalidInput,
                    };
                    error(class, crate::errors::full_message(&e))
                })?;
            Ok(Box::new(mailbox))
        }
        (listen, connect, None) => Ok(Box::new(connect_tcp(
            py, role, listen, connect, timeout, ready,
        )?)),
        _ => Err(error(
            Class::InvalidInput,
            "give a mailbox folder or an address (listen= or connect=), not both",
        )),
    }
}

/// Waits for the peer: listens on `listen` (the server) or connects to `connect` (the client).
fn connect_tcp(
    py: Python<'_>,
    role: Role,
    listen: Option<&str>,
    connect: Option<&str>,
    timeout: Duration,
    ready: Option<&Bound<'_, PyAny>>,
) -> PyResult<TcpTransport> {
    let timed_out = |what: String| error(Class::PeerTimeout, what);
    match (role, listen, connect) {
        (Role::Server, Some(addr), None) => {
            let listener = TcpListener::bind(addr)
                .map_err(|e| error(Class::Peer, format!("cannot listen on {addr}: {e}")))?;
            let local = listener
                .local_addr()
                .map_err(|e| error(Class::Peer, format!("cannot listen on {addr}: {e}")))?;
            if let Some(ready) = ready {
                ready.call1((local.to_string(),))?;
            }
            py.detach(|| tcp::accept(&listener, timeout))
                .map(|(link, _)| link)
                .map_err(|e| match e.kind() {
                    std::io::ErrorKind::TimedOut => timed_out(format!(
                        "no client connected to {local} within {}s",
                        timeout.as_secs_f64()
                    )),
                    _ => error(Class::Peer, format!("cannot accept the client: {e}")),
                })
        }
        (Role::Client, None, Some(addr)) => {
            py.detach(|| tcp::connect(addr, timeout))
                .map_err(|e| match e.kind() {
                    std::io::ErrorKind::TimedOut => timed_out(format!(
                        "cannot connect to {addr} within {}s",
                        timeout.as_secs_f64()
                    )),
                    _ => error(Class::Peer, format!("cannot connect to {addr}: {e}")),
                })
        }
        (Role::Server, ..) => Err(error(
            Class::InvalidInput,
            "the server waits for the client: give listen=\"HOST:PORT\" or a mailbox folder",
        )),
        (Role::Client, ..) => Err(error(
            Class::InvalidInput,
            "the client connects to the server: give connect=\"HOST:PORT\" or a mailbox folder",
        )),
    }
}

/// Runs one PSI session with a peer over TCP or through a mailbox folder (see
/// `obscura.psi_server` and `obscura.psi_client`, which wrap it).
#[pyfunction]
#[pyo3(signature = (items, *, role, protocol="kkrt", listen=None, connect=None, mailbox=None, session=None, attempt=1, both_learn=false, timeout=60.0, threads=None, bucket_items=None, spill_dir=None, progress=None, ready=None))]
#[allow(clippy::too_many_arguments)]
pub fn run_psi(
    py: Python<'_>,
    items: &Bound<'_, PyAny>,
    role: &str,
    protocol: &str,
    listen: Option<&str>,
    connect: Option<&str>,
    mailbox: Option<PathBuf>,
    session: Option<&str>,
    attempt: i64,
    both_learn: bool,
    timeout: f64,
    threads: Option<usize>,
    bucket_items: Option<u64>,
    spill_dir: Option<PathBuf>,
    progress: Option<Py<PyAny>>,
    ready: Option<&Bound<'_, PyAny>>,
) -> PyResult<PsiResult> {
    let role = match role {
        "server" => Role::Server,
        "client" => Role::Client,
        _ => {
            return Err(error(
                Class::InvalidInput,
                format!("unknown role {role:?}: use \"server\" or \"client\""),
            ))
        }
    };
    let options = Options {
        protocol: protocol_of(protocol)?,
        role,
        both_learn,
    };
    options.check().map_err(IntoPyErr::into_py_err)?;
    if !(timeout.is_finite() && timeout >= 0.001) {
        return Err(error(
            Class::InvalidInput,
            "timeout must be a positive number of seconds",
        ));
    }
    if bucket_items == Some(0) {
        return Err(error(
            Class::InvalidInput,
            "bucket_items must be at least 1",
        ));
    }
    let timeout = Duration::from_secs_f64(timeout);
    let attempt = u32::try_from(attempt)
        .ok()
        .filter(|&a| a >= 1)
        .ok_or_else(|| {
            error(
                Class::InvalidInput,
                format!("attempt must be from 1 to {}, not {attempt}", u32::MAX),
            )
        })?;
    let endpoint = Endpoint {
        listen,
        connect,
        mailbox: mailbox.as_deref(),
        session,
        attempt,
    };
    let reporter = Reporter::new(progress);
    let label = |stage: Stage| stage.label(options.protocol);
    let result = match bucket_items {
        None => {
            // Read the items before waiting for the peer.
            let items = items::collect(items)?;
            let mut link = link(py, role, &endpoint, timeout, ready)?;
            let outcome = py.detach(|| {
                threads::run(threads, || {
                    obscura_psi::run(link.as_mut(), &items, options, &|stage, done, total| {
                        reporter.report(label(stage), done, total)
                    })
                })
                .py()
            })?;
            let outcome = outcome.py()?;
            PsiResult {
                intersection_size: outcome.intersection.as_ref().map(|i| i.size as u64),
                intersection: outcome
                    .intersection
                    .map(|i| i.rows.into_iter().map(|row| row as u64).collect()),
                items: outcome.rows as u64,
                duplicates_dropped: outcome.duplicates_dropped as u64,
                peer_items: outcome.peer_items,
                bytes_sent: outcome.bytes_sent,
                bytes_received: outcome.bytes_received,
                seconds: outcome.elapsed.as_secs_f64(),
                buckets: None,
            }
        }
        Some(bucket_items) => {
            let source = PythonItems::new(items)?;
            let folder = spill_dir.unwrap_or_else(std::env::temp_dir);
            let mut link = link(py, role, &endpoint, timeout, ready)?;
            let bucketed = BucketOptions {
                session: options,
                bucket_items,
            };
            let outcome = py.detach(|| {
                threads::run(threads, || {
                    run_bucketed(
                        link.as_mut(),
                        &source,
                        bucketed,
                        &folder,
                        &|bucket, buckets, stage, done, total| {
                            let stage =
                                format!("bucket {}/{buckets}: {}", bucket + 1, label(stage));
                            reporter.report(&stage, done, total)
                        },
                    )
                })
                .py()
            })?;
            let outcome = outcome.py()?;
            PsiResult {
                intersection: outcome.intersection.map(|rows| rows.iter().collect()),
                intersection_size: outcome.intersection_size,
                items: outcome.rows,
                duplicates_dropped: outcome.duplicates_dropped,
                peer_items: outcome.peer_rows,
                bytes_sent: outcome.bytes_sent,
                bytes_received: outcome.bytes_received,
                seconds: outcome.elapsed.as_secs_f64(),
                buckets: Some(outcome.plan.buckets()),
            }
        }
    };
    reporter.finish()?;
    Ok(result)
}

/// The server of ECDH-PSI as messages (openmined-psi's shape): one secret key for its lifetime;
/// one setup message serves any number of clients.
#[pyclass(module = "obscura", frozen)]
pub struct EcdhPsiServer {
    inner: MessageServer,
}

#[pymethods]
impl EcdhPsiServer {
    /// A server with a fresh key. With `reveal_intersection` clients learn the intersection;
    /// without, only its size (responses are shuffled).
    #[new]
    #[pyo3(signature = (reveal_intersection=true))]
    fn new(reveal_intersection: bool) -> PyResult<Self> {
        Ok(Self {
            inner: MessageServer::new(reveal_intersection).py()?,
        })
    }

    /// Whether clients learn the intersection (else only its size).
    #[getter]
    fn reveal_intersection(&self) -> bool {
        self.inner.reveals_intersection()
    }

    /// The setup message for the server's `items` (any iterable of str or bytes), for requests
    /// of at most `num_client_inputs` distinct items, with false-positive rate `fpr` for the
    /// whole intersection.
    #[pyo3(signature = (items, num_client_inputs, fpr=DEFAULT_FPR))]
    fn create_setup_message<'py>(
        &self,
        py: Python<'py>,
        items: &Bound<'py, PyAny>,
        num_client_inputs: u64,
        fpr: f64,
    ) -> PyResult<Bound<'py, PyBytes>> {
        let items = items::collect(items)?;
        let setup = py
            .detach(|| {
                self.inner
                    .create_setup_message(&items, num_client_inputs, fpr)
            })
            .py()?;
        Ok(PyBytes::new(py, &setup))
    }

    /// The response to a client's `request`.
    fn process_request<'py>(
        &self,
        py: Python<'py>,
        request: &[u8],
    ) -> PyResult<Bound<'py, PyBytes>> {
        let response = py.detach(|| self.inner.process_request(request)).py()?;
        Ok(PyBytes::new(py, &response))
    }
}

/// The client of ECDH-PSI as messages: a secret key, and its last request.
#[pyclass(module = "obscura")]
pub struct EcdhPsiClient {
    inner: MessageClient,
}

#[pymethods]
impl EcdhPsiClient {
    /// A client with a fresh key.
    #[new]
    fn new() -> PyResult<Self> {
        Ok(Self {
            inner: MessageClient::new().py()?,
        })
    }

    /// The request for the client's `items` (any iterable of str or bytes). The response read
    /// next must answer this request.
    fn create_request<'py>(
        &mut self,
        py: Python<'py>,
        items: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyBytes>> {
        let items = items::collect(items)?;
        let inner = &mut self.inner;
        let request = py.detach(|| inner.create_request(&items));
        Ok(PyBytes::new(py, &request))
    }

    /// The positions (ascending) of the last request's items that the server holds, from its
    /// `setup` message and its `response`.
    fn get_intersection(
        &self,
        py: Python<'_>,
        setup: &[u8],
        response: &[u8],
    ) -> PyResult<Vec<usize>> {
        py.detach(|| self.inner.get_intersection(setup, response))
            .py()
    }

    /// The number of distinct items of the last request that the server holds.
    fn get_intersection_size(
        &self,
        py: Python<'_>,
        setup: &[u8],
        response: &[u8],
    ) -> PyResult<usize> {
        py.detach(|| self.inner.get_intersection_size(setup, response))
            .py()
    }
}
