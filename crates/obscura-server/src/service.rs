//! The HTTP service: serves public setups and answers queries it cannot read.
//!
//! | route | what |
//! |---|---|
//! | `GET /v1/databases` | JSON list of the databases ([`DatabaseInfo`](crate::catalog::DatabaseInfo)) |
//! | `GET /v1/databases/{name}/setup` | the binary public setup, with `ETag`; `If-None-Match` gets 304 |
//! | `POST /v1/databases/{name}/query` | binary query in, binary answer out |
//! | `POST /v1/databases/{name}/batch` | several queries ([`framing`]) in, answers out |
//! | `POST /v1/databases/{name}/proof` | Merkle tree (TreePIR) databases only: one query per colour class, framed, in; the answers, framed, out |
//! | `GET /healthz` | `ok` |
//! | `GET /metrics` | Prometheus text |
//!
//! Queries that arrive together are answered in one pass over the database: each database has
//! one worker that takes every query waiting (up to [`ServiceConfig::max_batch`], waiting at most
//! [`ServiceConfig::batch_window`] for more) and runs the batch kernel; a proof request is one
//! pass over a Merkle tree's colour classes, one query each. Bodies are bounded,
//! concurrent queries are bounded (503 beyond), every request has a time limit (408), open
//! connections are bounded and must send their headers in time ([`ConnectionLimits`]), and query
//! contents are never logged.

use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, Path, Request, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use obscura_pir::lwe::{Answer, Query, Server};
use obscura_pir::{PirError, PirServer};
use tokio::sync::{mpsc, oneshot, Semaphore};
use tower_http::timeout::TimeoutLayer;

use crate::catalog::{Catalog, Entry};
use crate::framing;
use crate::metrics::{Metrics, ENDPOINTS};
use crate::store::Database;

/// Limits and batching of a service.
#[derive(Clone, Debug)]
pub struct ServiceConfig {
    /// Largest request body; `None` sizes it for the largest request a database takes: a full
    /// batch of its queries, or a proof request of a Merkle tree.
    pub max_body_bytes: Option<usize>,
    /// Queries being answered or waiting at once; more get 503.
    pub max_concurrent: usize,
    /// Time limit of a request; slower ones get 408.
    pub request_timeout: Duration,
    /// How long the batcher waits for more queries after the first.
    pub batch_window: Duration,
    /// Most queries answered in one pass; the batch endpoint accepts at most this many, and
    /// never more than `max_concurrent` (a larger batch could never be served).
    pub max_batch: usize,
    /// What a connection may hold: the server's open connections and the time to send headers.
    pub connections: ConnectionLimits,
}

/// Limits on connections, enforced before any request is read.
#[derive(Clone, Copy, Debug)]
pub struct ConnectionLimits {
    /// Open connections at once; more wait in the kernel's accept queue.
    pub max_open: usize,
    /// Time a client has to send a request's headers; a slower connection is closed, so idle
    /// or trickling clients cannot hold connections.
    pub header_timeout: Duration,
    /// How long a shutdown waits for the requests in flight before it drops them.
    pub shutdown_grace: Duration,
}

impl Default for ConnectionLimits {
    fn default() -> Self {
        Self {
            max_open: 1024,
            header_timeout: Duration::from_secs(10),
            shutdown_grace: Duration::from_secs(30),
        }
    }
}

impl Default for ServiceConfig {
    fn default() -> Self {
        Self {
            max_body_bytes: None,
            max_concurrent: 256,
            request_timeout: Duration::from_secs(30),
            batch_window: Duration::from_millis(1),
            max_batch: 16,
            connections: ConnectionLimits::default(),
        }
    }
}

/// A query waiting for its answer.
struct Job {
    query: Query,
    reply: oneshot::Sender<Result<Answer, PirError>>,
}

/// What the handlers share.
struct AppState {
    catalog: Catalog,
    batchers: HashMap<String, mpsc::Sender<Job>>,
    permits: Arc<Semaphore>,
    metrics: Arc<Metrics>,
    max_batch: usize,
}

/// An error response: a status and a one-line message.
struct Failure(StatusCode, String);

impl IntoResponse for Failure {
    fn into_response(self) -> Response {
        (
            self.0,
            [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
            self.1 + "\n",
        )
            .into_response()
    }
}

impl Failure {
    fn unknown(name: &str) -> Self {
        Self(StatusCode::NOT_FOUND, format!("unknown database {name:?}"))
    }

    fn busy() -> Self {
        Self(
            StatusCode::SERVICE_UNAVAILABLE,
            "the server is busy: retry later".into(),
        )
    }

    fn internal(message: &str) -> Self {
        Self(StatusCode::INTERNAL_SERVER_ERROR, message.into())
    }

    fn bad_request(message: String) -> Self {
        Self(StatusCode::BAD_REQUEST, message)
    }

    fn from_pir(error: PirError, name: &str) -> Self {
        match error {
            PirError::SetupMismatch { what } => Self(
                StatusCode::CONFLICT,
                format!(
                    "the {what} belongs to a different setup of {name:?}: fetch the setup again"
                ),
            ),
            PirError::Malformed { .. }
            | PirError::IndexOutOfRange { .. }
            | PirError::InvalidParameters(_)
            | PirError::InvalidProof(_) => Self(StatusCode::BAD_REQUEST, error.to_string()),
            PirError::Rng(_) => Self(StatusCode::INTERNAL_SERVER_ERROR, error.to_string()),
        }
    }
}

/// Builds the service for `catalog`. Must be called inside a tokio runtime (it starts one
/// batching worker per index or keyword database).
pub fn router(catalog: Catalog, config: ServiceConfig) -> Router {
    let largest_request = catalog
        .entries()
        .map(|e| largest_request(e, config.max_batch.max(1)))
        .max()
        .unwrap_or(0);
    let max_body = config.max_body_bytes.unwrap_or(largest_request).max(1024);
    let metrics = Arc::new(Metrics::default());
    let mut batchers = HashMap::new();
    // Merkle trees answer proof requests directly: one query per colour class, all at once.
    for entry in catalog.entries().filter(|e| e.database.engine().is_some()) {
        let (sender, receiver) = mpsc::channel(config.max_concurrent.max(1));
        batchers.insert(entry.name.clone(), sender);
        let batching = Batching {
            window: config.batch_window,
            max_batch: config.max_batch.max(1),
            metrics: metrics.clone(),
        };
        tokio::spawn(batch_worker(entry.clone(), receiver, batching));
    }
    let state = Arc::new(AppState {
        catalog,
        batchers,
        permits: Arc::new(Semaphore::new(config.max_concurrent.max(1))),
        metrics,
        max_batch: config.max_batch.clamp(1, config.max_concurrent.max(1)),
    });
    Router::new()
        .route("/v1/databases", get(list))
        .route("/v1/databases/{name}/setup", get(setup))
        .route("/v1/databases/{name}/query", post(query))
        .route("/v1/databases/{name}/batch", post(batch))
        .route("/v1/databases/{name}/proof", post(proof))
        .route("/healthz", get(|| async { "ok\n" }))
        .route("/metrics", get(render_metrics))
        .fallback(|uri: axum::http::Uri| async move {
            Failure(
                StatusCode::NOT_FOUND,
                format!("no route {:?}: see /v1/databases", uri.path()),
            )
        })
        .layer(middleware::from_fn_with_state(state.clone(), observe))
        .layer(DefaultBodyLimit::max(max_body))
        .layer(TimeoutLayer::with_status_code(
            StatusCode::REQUEST_TIMEOUT,
            config.request_timeout,
        ))
        .with_state(state)
}

/// The largest framed body `entry` takes: a full batch of `max_batch` queries, or for a Merkle
/// tree one proof request (a query per colour class).
fn largest_request(entry: &Entry, max_batch: usize) -> usize {
    let info = &entry.info;
    let framed = match info.height {
        Some(h) => info.query_bytes + 4 * u64::from(h),
        None => max_batch as u64 * (info.query_bytes + 4),
    };
    usize::try_from(framed + 4).unwrap_or(usize::MAX)
}

/// Serves `router` (HTTP/1.1) on `listener` until `shutdown` completes, then finishes the
/// requests in flight within [`ConnectionLimits::shutdown_grace`].
pub async fn serve(
    listener: tokio::net::TcpListener,
    router: Router,
    limits: ConnectionLimits,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let graceful = GracefulShutdown::new();
    let open = Arc::new(Semaphore::new(limits.max_open.max(1)));
    tokio::pin!(shutdown);
    loop {
        let permit = tokio::select! {
            permit = open.clone().acquire_owned() => match permit {
                Ok(permit) => permit,
                Err(_) => break, // the semaphore is never closed
            },
            () = &mut shutdown => break,
        };
        let stream = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                // Out of file descriptors and the like: wait instead of spinning.
                Err(_) => {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        // Answers are small and latency matters: no Nagle delay.
        let _ = stream.set_nodelay(true);
        let mut builder = http1::Builder::new();
        builder
            .timer(TokioTimer::new())
            .header_read_timeout(limits.header_timeout);
        let connection = builder.serve_connection(
            TokioIo::new(stream),
            TowerToHyperService::new(router.clone()),
        );
        let connection = graceful.watch(connection);
        tokio::spawn(async move {
            let _ = connection.await;
            drop(permit);
        });
    }
    drop(listener);
    let _ = tokio::time::timeout(limits.shutdown_grace, graceful.shutdown()).await;
    Ok(())
}

/// Completes on ctrl-c or SIGTERM.
pub async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {},
        () = terminate => {},
    }
}

/// Counts every request, its latency and whether it failed, by endpoint (never its contents).
async fn observe(State(state): State<Arc<AppState>>, request: Request, next: Next) -> Response {
    let path = request.uri().path();
    let endpoint = ENDPOINTS
        .iter()
        .position(|e| path.ends_with(&format!("/{e}")) || path == format!("/v1/{e}"))
        .unwrap_or(0);
    let incoming = request
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok()?.parse().ok())
        .unwrap_or(0);
    let started = Instant::now();
    let response = next.run(request).await;
    let outgoing = response
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok()?.parse().ok())
        .unwrap_or(0);
    let failed = response.status().is_client_error() || response.status().is_server_error();
    state.metrics.record(endpoint, failed, started.elapsed());
    state.metrics.add_bytes(incoming, outgoing);
    response
}

async fn list(State(state): State<Arc<AppState>>) -> impl IntoResponse {
    Json(
        state
            .catalog
            .entries()
            .map(|e| e.info.clone())
            .collect::<Vec<_>>(),
    )
}

/// The database called `name`, or 404.
fn lookup<'a>(state: &'a AppState, name: &str) -> Result<&'a Arc<Entry>, Failure> {
    state
        .catalog
        .get(name)
        .ok_or_else(|| Failure::unknown(name))
}

async fn render_metrics(State(state): State<Arc<AppState>>) -> impl IntoResponse {
    (
        [(header::CONTENT_TYPE, "text/plain; version=0.0.4")],
        state.metrics.render(),
    )
}

async fn setup(
    State(state): State<Arc<AppState>>,
    Path(name): Path<String>,
    headers: HeaderMap,
) -> Result<Response, Failure> {
    let entry = lookup(&state, &name)?;
    let cache = [
        (header::ETAG, entry.etag.clone()),
        (header::CACHE_CONTROL, "no-cache".to_string()),
    ];
    let unchanged = headers
        .get(header::IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|tags| {
            tags.split(',')
                .any(|t| t.trim() == entry.etag || t.trim() == "*")
        });
    if unchanged {
        return Ok((StatusCode::NOT_MODIFIED, cache).into_response());
    }
    let body = Bytes::from_owner(SetupBytes(entry.setup_bytes.clone()));
    Ok((
        cache,
        [(header::CONTENT_TYPE, "application/octet-stream")],
        body,
    )
        .into_response())
}

/// The engine that answers the queries of `entry`, or 400 for a Merkle tree (proofs only).
fn single_engine<'a>(entry: &'a Entry, name: &str) -> Result<&'a Server, Failure> {
    entry.database.engine().ok_or_else(|| {
        Failure::bad_request(format!(
            "{name:?} is a Merkle tree (TreePIR) database: send proof requests to /v1/databases/{name}/proof"
        ))
    })
}

/// Shares the encoded setup with the response body without copying it.
struct SetupBytes(Arc<[u8]>);

impl AsRef<[u8]> for SetupBytes {
    fn as_ref(&self) -> &[u8] {
        &self.0
    }
}

async fn query(
    State(state): State<Arc<AppState>>,
    Path(name): Path<String>,
    body: Bytes,
) -> Result<Response, Failure> {
    let entry = lookup(&state, &name)?;
    let query = Query::from_bytes(&body, single_engine(entry, &name)?.public_setup())
        .map_err(|e| Failure::from_pir(e, &name))?;
    let answers = answer_all(&state, entry, vec![query]).await?;
    Ok(octets(answers[0].to_bytes()))
}

async fn batch(
    State(state): State<Arc<AppState>>,
    Path(name): Path<String>,
    body: Bytes,
) -> Result<Response, Failure> {
    let entry = lookup(&state, &name)?;
    let setup = single_engine(entry, &name)?.public_setup();
    let messages = framing::decode(&body, state.max_batch).map_err(Failure::bad_request)?;
    let queries = messages
        .into_iter()
        .map(|m| Query::from_bytes(m, setup))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| Failure::from_pir(e, &name))?;
    let answers = answer_all(&state, entry, queries).await?;
    Ok(framed_answers(&answers))
}

/// A Merkle audit path: one query per colour class of the tree, answered in one pass (a proof
/// takes one concurrency permit, the work of one query over a database of the tree's size).
async fn proof(
    State(state): State<Arc<AppState>>,
    Path(name): Path<String>,
    body: Bytes,
) -> Result<Response, Failure> {
    let entry = lookup(&state, &name)?;
    let Database::TreePir(tree) = &entry.database else {
        return Err(Failure::bad_request(format!(
            "{name:?} is not a Merkle tree: send its queries to /v1/databases/{name}/query or /batch"
        )));
    };
    let classes = tree.databases();
    if classes.is_empty() {
        return Err(Failure::bad_request(format!(
            "{name:?} is a tree of one leaf: its audit path is empty and its root is the leaf hash"
        )));
    }
    let messages = framing::decode(&body, classes.len()).map_err(Failure::bad_request)?;
    if messages.len() != classes.len() {
        return Err(Failure::bad_request(format!(
            "a proof request holds {} queries, one per colour class, not {}",
            classes.len(),
            messages.len()
        )));
    }
    let queries = messages
        .into_iter()
        .zip(classes)
        .map(|(m, class)| Query::from_bytes(m, class.public_setup()))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| Failure::from_pir(e, &name))?;
    let _permit = state
        .permits
        .clone()
        .try_acquire_owned()
        .map_err(|_| Failure::busy())?;
    let tree = tree.clone();
    let answers = tokio::task::spawn_blocking(move || tree.answer(&queries))
        .await
        .map_err(|_| Failure::internal("the answering task stopped"))?
        .map_err(|e| Failure::from_pir(e, &name))?;
    Ok(framed_answers(&answers))
}

fn framed_answers(answers: &[Answer]) -> Response {
    octets(framing::encode(
        &answers.iter().map(Answer::to_bytes).collect::<Vec<_>>(),
    ))
}

fn octets(body: Vec<u8>) -> Response {
    ([(header::CONTENT_TYPE, "application/octet-stream")], body).into_response()
}

/// Hands the queries to the database's batcher and waits for their answers; refuses with 503
/// when too many queries are in flight.
async fn answer_all(
    state: &AppState,
    entry: &Entry,
    queries: Vec<Query>,
) -> Result<Vec<Answer>, Failure> {
    let _permits = state
        .permits
        .clone()
        .try_acquire_many_owned(queries.len() as u32)
        .map_err(|_| Failure::busy())?;
    let sender = &state.batchers[&entry.name];
    let mut replies = Vec::with_capacity(queries.len());
    for query in queries {
        let (reply, receiver) = oneshot::channel();
        sender
            .try_send(Job { query, reply })
            .map_err(|_| Failure::busy())?;
        replies.push(receiver);
    }
    let mut answers = Vec::with_capacity(replies.len());
    for receiver in replies {
        let answer = receiver
            .await
            .map_err(|_| Failure::internal("the answering worker stopped"))?;
        answers.push(answer.map_err(|e| Failure::from_pir(e, &entry.name))?);
    }
    Ok(answers)
}

/// How a batching worker groups queries.
struct Batching {
    window: Duration,
    max_batch: usize,
    metrics: Arc<Metrics>,
}

/// Answers the queries of one database with a single engine, as many per pass as are waiting.
async fn batch_worker(entry: Arc<Entry>, mut receiver: mpsc::Receiver<Job>, batching: Batching) {
    while let Some(first) = receiver.recv().await {
        let mut jobs = vec![first];
        let deadline = tokio::time::Instant::now() + batching.window;
        while jobs.len() < batching.max_batch {
            match receiver.try_recv() {
                Ok(job) => jobs.push(job),
                Err(_) => match tokio::time::timeout_at(deadline, receiver.recv()).await {
                    Ok(Some(job)) => jobs.push(job),
                    _ => break,
                },
            }
        }
        batching.metrics.add_batch(jobs.len());
        let (queries, replies): (Vec<Query>, Vec<_>) =
            jobs.into_iter().map(|j| (j.query, j.reply)).unzip();
        let entry = entry.clone();
        let result = tokio::task::spawn_blocking(move || match entry.database.engine() {
            Some(engine) => engine.answer_batch(&queries),
            None => Err(PirError::InvalidParameters(
                "a Merkle tree takes proof requests only".into(),
            )),
        })
        .await;
        match result {
            Ok(Ok(answers)) => {
                for (reply, answer) in replies.into_iter().zip(answers) {
                    let _ = reply.send(Ok(answer));
                }
            }
            Ok(Err(error)) => {
                let message = error.to_string();
                for reply in replies {
                    let _ = reply.send(Err(PirError::InvalidParameters(message.clone())));
                }
            }
            Err(_) => {} // The task panicked; dropping the replies tells each waiter.
        }
    }
}

/// A service running on its own thread and runtime (for demos, tests and embedding); stopped
/// gracefully when dropped.
pub struct BackgroundService {
    address: std::net::SocketAddr,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<std::io::Result<()>>>,
}

impl BackgroundService {
    /// Binds `address` (port 0 picks a free one) and serves `catalog` until dropped.
    pub fn start(
        catalog: Catalog,
        config: ServiceConfig,
        address: std::net::SocketAddr,
    ) -> std::io::Result<Self> {
        let (bound_tx, bound_rx) = std::sync::mpsc::channel();
        let (stop, stopped) = oneshot::channel::<()>();
        let thread = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .enable_all()
                .build()?;
            runtime.block_on(async move {
                let listener = match tokio::net::TcpListener::bind(address).await {
                    Ok(listener) => listener,
                    Err(error) => {
                        let _ = bound_tx
                            .send(Err(std::io::Error::new(error.kind(), error.to_string())));
                        return Err(error);
                    }
                };
                let _ = bound_tx.send(listener.local_addr());
                let limits = config.connections;
                serve(listener, router(catalog, config), limits, async {
                    let _ = stopped.await;
                })
                .await
            })
        });
        let address = bound_rx
            .recv()
            .map_err(|_| std::io::Error::other("the service thread stopped"))??;
        Ok(Self {
            address,
            stop: Some(stop),
            thread: Some(thread),
        })
    }

    /// The base URL of the service, e.g. `http://127.0.0.1:41234`.
    pub fn url(&self) -> String {
        format!("http://{}", self.address)
    }
}

impl Drop for BackgroundService {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
