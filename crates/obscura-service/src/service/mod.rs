//! The HTTP service: serves public setups and answers queries it cannot read.
//!
//! | route | what |
//! |---|---|
//! | `GET /v1/databases` | JSON list of the databases (`obscura_client::api::DatabaseInfo`) |
//! | `GET /v1/databases/{name}/setup` | the binary public setup, with `ETag`; `If-None-Match` gets 304 |
//! | `POST /v1/databases/{name}/query` | binary query in, binary answer out (for a batch-code database, one LWE query per sub-database, framed, in, the answers, framed, out) |
//! | `POST /v1/databases/{name}/batch` | several queries ([`framing`](obscura_pir::framing)) in, answers out |
//! | `POST /v1/databases/{name}/audit-path` | the query route of Merkle trees (TreePIR): one LWE query per colour class, framed, in, the answers, framed, out |
//! | `GET /healthz` | `ok` |
//! | `GET /metrics` | Prometheus text |
//! | `GET /`, `GET /ui/{file}` | with [`ServiceConfig::ui`]: the built-in page ([`Ui`]) |
//!
//! Queries that arrive together are answered in one pass over the database: each database has
//! one worker that takes every query waiting (up to [`ServiceConfig::max_batch`], waiting
//! [`ServiceConfig::batch_window`] for more) and runs the scheme's batched answer; the
//! database's scheme decodes and answers the queries (`obscura_registry`). Bodies are bounded in size (by what
//! the database can take) and in time, concurrent queries are bounded (503 beyond), every
//! request has a time limit (408), open connections are bounded, must send their headers in
//! time, and give way to new clients when the server is full ([`ConnectionLimits`]), and query
//! contents are never logged. The databases can be replaced while the service runs
//! ([`Databases::replace`]); requests in flight finish on the databases they started with.

mod batcher;
mod cors;
mod listener;
mod routes;
mod ui;

use std::collections::HashMap;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use axum::middleware;
use axum::routing::{get, post};
use axum::Router;
use tokio::sync::{mpsc, Semaphore};
use tower_http::timeout::TimeoutLayer;

use crate::auth::Tokens;
use crate::catalog::{Catalog, Entry};
use crate::metrics::Metrics;

pub use cors::{CorsOrigins, InvalidOrigin};
pub use listener::{serve, shutdown_signal, BackgroundService};
pub use ui::{Ui, UiUnavailable};

/// Limits and batching of a service.
#[derive(Clone, Debug)]
pub struct ServiceConfig {
    /// Largest request body; `None` sizes it, per database, for the largest request the
    /// database takes: a full batch of its queries, or an audit-path request of a Merkle tree.
    pub max_body_bytes: Option<usize>,
    /// Queries being answered or waiting at once; more get 503.
    pub max_concurrent: usize,
    /// Time limit of a request; slower ones get 408.
    pub request_timeout: Duration,
    /// How long the batcher waits for more queries after the first. Zero (the default) answers
    /// the queries waiting at once: those that arrive during a pass are answered together by
    /// the next, so a lone query waits for nothing and a busy database still batches.
    pub batch_window: Duration,
    /// Most queries answered in one pass; the batch endpoint accepts at most this many, and
    /// never more than `max_concurrent` (a larger batch could never be served).
    pub max_batch: usize,
    /// What a connection may hold: open connections, and the time to send headers and bodies.
    pub connections: ConnectionLimits,
    /// Bearer tokens of the databases that need one (none by default).
    pub tokens: Tokens,
    /// Web origins whose pages may call the service (none by default).
    pub cors: CorsOrigins,
    /// The built-in page, served at `/` (none by default).
    pub ui: Option<Ui>,
}

/// Limits on connections and on how slowly they may send.
#[derive(Clone, Copy, Debug)]
pub struct ConnectionLimits {
    /// Open connections at once. When they are all open and another client connects, the
    /// connection that has moved no byte for the longest time, among those whose requests are
    /// not being answered, is closed to make room.
    pub max_open: usize,
    /// Time a client has to send a request's headers; a slower connection is closed, so idle
    /// or trickling clients cannot hold connections.
    pub header_timeout: Duration,
    /// Time a client has to send a request body, on top of the time its length takes at
    /// `min_body_rate`; a slower body gets 408 and its connection is closed.
    pub body_timeout: Duration,
    /// Slowest body transfer allowed beyond `body_timeout`, in bytes per second.
    pub min_body_rate: u64,
    /// How long a shutdown waits for the requests in flight before it drops them.
    pub shutdown_grace: Duration,
}

impl Default for ConnectionLimits {
    fn default() -> Self {
        Self {
            max_open: 1024,
            header_timeout: Duration::from_secs(10),
            body_timeout: Duration::from_secs(10),
            min_body_rate: 1 << 20,
            shutdown_grace: Duration::from_secs(30),
        }
    }
}

impl ConnectionLimits {
    /// The time a body of `len` bytes may take to arrive.
    fn body_deadline(&self, len: u64) -> Duration {
        self.body_timeout + Duration::from_secs_f64(len as f64 / self.min_body_rate.max(1) as f64)
    }
}

impl Default for ServiceConfig {
    fn default() -> Self {
        Self {
            max_body_bytes: None,
            max_concurrent: 256,
            request_timeout: Duration::from_secs(30),
            batch_window: Duration::ZERO,
            max_batch: 16,
            connections: ConnectionLimits::default(),
            tokens: Tokens::default(),
            cors: CorsOrigins::None,
            ui: None,
        }
    }
}

/// One served database: its entry, its batching worker and its largest request.
struct Served {
    entry: Arc<Entry>,
    batcher: mpsc::Sender<batcher::Job>,
    max_body: usize,
}

/// The databases served at one time: the catalog, and each entry with its batching worker.
#[derive(Default)]
struct Installed {
    catalog: Arc<Catalog>,
    served: HashMap<String, Arc<Served>>,
}

/// What the handlers share.
struct AppState {
    installed: RwLock<Arc<Installed>>,
    tokens: RwLock<Arc<Tokens>>,
    permits: Arc<Semaphore>,
    metrics: Arc<Metrics>,
    config: ServiceConfig,
    runtime: tokio::runtime::Handle,
}

impl AppState {
    /// The databases served now.
    fn current(&self) -> Arc<Installed> {
        self.installed
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// The tokens in force now.
    fn tokens(&self) -> Arc<Tokens> {
        self.tokens
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// The most queries one request or pass may hold.
    fn max_batch(&self) -> usize {
        self.config
            .max_batch
            .clamp(1, self.config.max_concurrent.max(1))
    }

    /// Starts serving `catalog`, with a batching worker for each database.
    fn install(&self, catalog: Catalog) {
        let mut served = HashMap::new();
        for entry in catalog.entries() {
            let (batcher, receiver) = mpsc::channel(self.config.max_concurrent.max(1));
            let batching = batcher::Batching {
                window: self.config.batch_window,
                max_batch: self.config.max_batch.max(1),
                metrics: self.metrics.clone(),
            };
            self.runtime
                .spawn(batcher::run(entry.clone(), receiver, batching));
            let max_body = self
                .config
                .max_body_bytes
                .unwrap_or_else(|| largest_request(entry, self.max_batch()))
                .max(1024);
            served.insert(
                entry.name.clone(),
                Arc::new(Served {
                    entry: entry.clone(),
                    batcher,
                    max_body,
                }),
            );
        }
        *self.installed.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(Installed {
            catalog: Arc::new(catalog),
            served,
        });
    }
}

/// The databases of a running service, which can be replaced without dropping requests.
#[derive(Clone)]
pub struct Databases(Arc<AppState>);

impl Databases {
    /// The catalog served now.
    pub fn catalog(&self) -> Arc<Catalog> {
        self.0.current().catalog.clone()
    }

    /// Serves `catalog` from now on: new requests see it (and the new setups' ETags), while
    /// requests in flight finish on the databases they started with.
    pub fn replace(&self, catalog: Catalog) {
        self.0.install(catalog);
    }

    /// Grants `tokens` from now on, in place of the tokens given before.
    pub fn replace_tokens(&self, tokens: Tokens) {
        *self.0.tokens.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(tokens);
    }
}

/// Builds the service for `catalog`. Must be called inside a tokio runtime (it starts one
/// batching worker per database).
pub fn router(catalog: Catalog, config: ServiceConfig) -> Router {
    router_with_databases(catalog, config).0
}

/// Builds the service for `catalog`, with the handle that replaces its databases later. Must be
/// called inside a tokio runtime.
pub fn router_with_databases(catalog: Catalog, config: ServiceConfig) -> (Router, Databases) {
    let state = Arc::new(AppState {
        installed: RwLock::default(),
        tokens: RwLock::new(Arc::new(config.tokens.clone())),
        permits: Arc::new(Semaphore::new(config.max_concurrent.max(1))),
        metrics: Arc::new(Metrics::default()),
        runtime: tokio::runtime::Handle::current(),
        config: config.clone(),
    });
    state.install(catalog);
    let router = Router::new()
        .route("/v1/databases", get(routes::list))
        .route("/v1/databases/{name}/setup", get(routes::setup))
        .route("/v1/databases/{name}/query", post(routes::query))
        .route("/v1/databases/{name}/batch", post(routes::batch))
        .route("/v1/databases/{name}/audit-path", post(routes::audit_path))
        .route("/v1/databases/{name}/consistency", get(routes::consistency))
        .route("/healthz", get(|| async { "ok\n" }))
        .route("/metrics", get(routes::render_metrics))
        .merge(config.ui.map(Ui::routes).unwrap_or_default())
        .fallback(routes::no_route)
        .layer(middleware::from_fn_with_state(
            state.clone(),
            routes::observe,
        ))
        .layer(TimeoutLayer::with_status_code(
            axum::http::StatusCode::REQUEST_TIMEOUT,
            config.request_timeout,
        ))
        .with_state(state.clone());
    // Outermost, so that preflight requests are answered before anything else and every
    // response, errors included, carries the headers a page needs to read it.
    let router = match config.cors.layer() {
        Some(cors) => router.layer(cors),
        None => router,
    };
    (router, Databases(state))
}

/// The largest body `entry` takes: a full batch of `max_batch` queries, framed.
fn largest_request(entry: &Entry, max_batch: usize) -> usize {
    let framed = (max_batch as u64).saturating_mul(entry.info.query_bytes.saturating_add(4));
    usize::try_from(framed.saturating_add(4)).unwrap_or(usize::MAX)
}
