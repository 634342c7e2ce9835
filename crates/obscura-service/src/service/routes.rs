//! The route handlers and the errors they answer with.

use std::sync::Arc;
use std::time::Instant;

use axum::body::{Body, Bytes};
use axum::extract::rejection::QueryRejection;
use axum::extract::{Path, Query, Request, State};
use axum::http::{header, HeaderMap, HeaderName, HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::Json;
use obscura_pir::PirError;
use tokio::sync::oneshot;

use super::batcher::Job;
use super::{AppState, Served};
use crate::catalog::Entry;
use crate::connections::Tracker;
use crate::metrics::ENDPOINTS;
use obscura_client::api::ConsistencyInfo;
use obscura_client::setup::{etag_of, sha256_of_etag, PATCH_IM};
use obscura_pir::batch::treepir::TreePir;
use obscura_pir::framing;
use obscura_registry::DecodedQuery;

/// An error response: a status and a one-line message, and whether the connection must close
/// after it (a client too slow to send its body).
#[derive(Clone, Debug)]
pub(super) struct Failure {
    status: StatusCode,
    message: String,
    close: bool,
}

impl IntoResponse for Failure {
    fn into_response(self) -> Response {
        let mut response = (
            self.status,
            [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
            self.message + "\n",
        )
            .into_response();
        if self.status == StatusCode::UNAUTHORIZED {
            response.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                HeaderValue::from_static("Bearer realm=\"obscura\""),
            );
        }
        if self.close {
            response
                .headers_mut()
                .insert(header::CONNECTION, HeaderValue::from_static("close"));
        }
        response
    }
}

impl Failure {
    fn new(status: StatusCode, message: String) -> Self {
        Self {
            status,
            message,
            close: false,
        }
    }

    fn unknown(name: &str) -> Self {
        Self::new(StatusCode::NOT_FOUND, format!("unknown database {name:?}"))
    }

    fn unauthorized(name: &str) -> Self {
        Self::new(
            StatusCode::UNAUTHORIZED,
            format!("database {name:?} needs a bearer token (Authorization: Bearer TOKEN)"),
        )
    }

    fn busy() -> Self {
        Self::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "the server is busy: retry later".into(),
        )
    }

    pub(super) fn internal(message: &str) -> Self {
        Self::new(StatusCode::INTERNAL_SERVER_ERROR, message.into())
    }

    fn bad_request(message: String) -> Self {
        Self::new(StatusCode::BAD_REQUEST, message)
    }

    /// The reply to a failed lookup: a stale query is a 409, one that is not valid a 400 with
    /// its reason (and the reason's causes, on one line), a part of the database out of reach a
    /// 503, anything else a 500.
    pub(super) fn from_pir(error: PirError, name: &str) -> Self {
        match error {
            PirError::SetupMismatch { what } => Self::new(
                StatusCode::CONFLICT,
                format!(
                    "the {what} belongs to a different setup of {name:?}: fetch the setup again"
                ),
            ),
            PirError::Malformed { .. }
            | PirError::Inconsistent { .. }
            | PirError::IndexOutOfRange { .. }
            | PirError::InvalidParameters(_)
            | PirError::Coloring(_)
            | PirError::InvalidProof(_) => Self::bad_request(with_causes(&error)),
            PirError::Unavailable(reason) => Self::new(
                StatusCode::SERVICE_UNAVAILABLE,
                format!("{name:?} cannot answer now: {reason}"),
            ),
            _ => Self::internal(&error.to_string()),
        }
    }
}

/// `error`'s message followed by each of its causes, on one line.
fn with_causes(error: &dyn std::error::Error) -> String {
    let mut message = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        message = format!("{message}: {cause}");
        source = cause.source();
    }
    message
}

/// Counts every request, its latency and whether it failed, by endpoint (never its contents).
pub(super) async fn observe(
    State(state): State<Arc<AppState>>,
    request: Request,
    next: Next,
) -> Response {
    let path = request.uri().path();
    let endpoint = ENDPOINTS
        .iter()
        .position(|e| path.ends_with(&format!("/{e}")) || path == format!("/v1/{e}"))
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
    state.metrics.add_bytes(0, outgoing);
    response
}

pub(super) async fn no_route(uri: axum::http::Uri) -> Failure {
    Failure::new(
        StatusCode::NOT_FOUND,
        format!("no route {:?}: see /v1/databases", uri.path()),
    )
}

/// The databases the request's token (if any) opens.
pub(super) async fn list(
    State(state): State<Arc<AppState>>,
    headers: HeaderMap,
) -> impl IntoResponse {
    let (tokens, authorization) = (state.tokens(), authorization(&headers));
    let mut list: Vec<_> = state
        .current()
        .served
        .values()
        .filter(|s| tokens.allows(&s.entry.name, authorization))
        .map(|s| s.entry.info.clone())
        .collect();
    list.sort_by(|a, b| a.name.cmp(&b.name));
    Json(list)
}

pub(super) async fn render_metrics(State(state): State<Arc<AppState>>) -> impl IntoResponse {
    let mut text = state.metrics.render();
    for entry in state.current().catalog.entries() {
        text.push_str(&entry.database.metrics(&entry.name));
    }
    ([(header::CONTENT_TYPE, "text/plain; version=0.0.4")], text)
}

/// The database called `name` (404 if there is none), if the request's headers carry a token
/// that opens it (401 otherwise).
fn lookup(state: &AppState, name: &str, headers: &HeaderMap) -> Result<Arc<Served>, Failure> {
    let served = state
        .current()
        .served
        .get(name)
        .cloned()
        .ok_or_else(|| Failure::unknown(name))?;
    if !state.tokens().allows(name, authorization(headers)) {
        return Err(Failure::unauthorized(name));
    }
    Ok(served)
}

/// The `Authorization` header's value, if it is text.
fn authorization(headers: &HeaderMap) -> Option<&str> {
    headers.get(header::AUTHORIZATION)?.to_str().ok()
}

pub(super) async fn setup(
    State(state): State<Arc<AppState>>,
    Path(name): Path<String>,
    headers: HeaderMap,
) -> Result<Response, Failure> {
    let served = lookup(&state, &name, &headers)?;
    let entry = &served.entry;
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
    if let Some((base, chain)) = patch_for(entry, &headers) {
        state.metrics.add_patched_setup();
        return Ok((
            StatusCode::IM_USED,
            [
                (header::ETAG, entry.etag.clone()),
                (header::CACHE_CONTROL, "no-store".to_string()),
                (header::CONTENT_TYPE, "application/octet-stream".to_string()),
                (HeaderName::from_static("im"), PATCH_IM.to_string()),
                (HeaderName::from_static("delta-base"), etag_of(&base)),
            ],
            chain,
        )
            .into_response());
    }
    let body = entry.setup_bytes.clone();
    Ok((
        cache,
        [(header::CONTENT_TYPE, "application/octet-stream")],
        body,
    )
        .into_response())
}

/// The setup a request names as held (its one `If-None-Match` ETag) and the patch chain from
/// it to `entry`'s setup, when the request asks for patches (`A-IM: obscura-patch`) and the
/// chain is kept and smaller than the setup.
fn patch_for(entry: &Entry, headers: &HeaderMap) -> Option<([u8; 32], Vec<u8>)> {
    let asks = headers.get_all("a-im").iter().any(|value| {
        value.to_str().is_ok_and(|text| {
            text.split(',').any(|im| {
                im.split(';')
                    .next()
                    .unwrap_or("")
                    .trim()
                    .eq_ignore_ascii_case(PATCH_IM)
            })
        })
    });
    if !asks {
        return None;
    }
    let held = headers.get(header::IF_NONE_MATCH)?.to_str().ok()?;
    let base = sha256_of_etag(held)?;
    Some((base, entry.patch_chain(&base)?))
}

/// Reads the body of `request`, of at most `served.max_body` bytes (413 beyond), within the
/// time its announced length allows (408 and a closed connection beyond), then marks the
/// connection as being answered.
async fn read_body(state: &AppState, served: &Served, request: Request) -> Result<Bytes, Failure> {
    let limit = served.max_body;
    let too_large = || {
        Failure::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            format!(
                "the request body exceeds the {limit} bytes that {:?} takes",
                served.entry.name
            ),
        )
    };
    let announced = request
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok()?.parse::<u64>().ok());
    if announced.is_some_and(|len| len > limit as u64) {
        return Err(too_large());
    }
    let tracker = request.extensions().get::<Arc<Tracker>>().cloned();
    let deadline = state
        .config
        .connections
        .body_deadline(announced.unwrap_or(limit as u64));
    let read = axum::body::to_bytes(request.into_body(), limit);
    let body = match tokio::time::timeout(deadline, read).await {
        Ok(Ok(body)) => body,
        Ok(Err(error)) => {
            let limit_hit = std::error::Error::source(&error)
                .is_some_and(|source| source.is::<http_body_util::LengthLimitError>());
            return Err(if limit_hit {
                too_large()
            } else {
                Failure::bad_request(format!("the request body could not be read: {error}"))
            });
        }
        Err(_) => {
            return Err(Failure {
                close: true,
                ..Failure::new(
                    StatusCode::REQUEST_TIMEOUT,
                    format!(
                        "the request body did not arrive within {:.1} s",
                        deadline.as_secs_f64()
                    ),
                )
            })
        }
    };
    state.metrics.add_bytes(body.len() as u64, 0);
    if let Some(tracker) = tracker {
        tracker.set_answering(true);
    }
    Ok(body)
}

pub(super) async fn query(
    State(state): State<Arc<AppState>>,
    Path(name): Path<String>,
    request: Request,
) -> Result<Response, Failure> {
    let served = lookup(&state, &name, request.headers())?;
    check_route(&served, &name, "query")?;
    answer_one(&state, &served, &name, request).await
}

/// Refuses a lookup posted to `route` of a database whose lookups go to another route (see
/// [`Lookup::route`](obscura_pir::Lookup::route)).
fn check_route(served: &Served, name: &str, route: &str) -> Result<(), Failure> {
    let lookup = served.entry.lookup;
    if lookup.route() == route {
        return Ok(());
    }
    Err(Failure::bad_request(format!(
        "{name:?} serves {lookup} lookups: post them to /v1/databases/{name}/{}",
        lookup.route()
    )))
}

/// Reads one query of the database `served` (called `name`) from `request` and answers it.
async fn answer_one(
    state: &AppState,
    served: &Served,
    name: &str,
    request: Request,
) -> Result<Response, Failure> {
    let body = read_body(state, served, request).await?;
    let query = served
        .entry
        .database
        .decode_query(&body)
        .map_err(|e| Failure::from_pir(e, name))?;
    let answer = answer_all(state, served, vec![query])
        .await?
        .pop()
        .ok_or_else(|| Failure::internal("the answering worker returned no answer"))?;
    Ok(octets(answer))
}

pub(super) async fn batch(
    State(state): State<Arc<AppState>>,
    Path(name): Path<String>,
    request: Request,
) -> Result<Response, Failure> {
    let served = lookup(&state, &name, request.headers())?;
    let body = read_body(&state, &served, request).await?;
    let messages = framing::decode(&body, state.max_batch()).map_err(Failure::bad_request)?;
    let queries = messages
        .into_iter()
        .map(|m| served.entry.database.decode_query(m))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| Failure::from_pir(e, &name))?;
    let answers = answer_all(&state, &served, queries).await?;
    Ok(octets(framing::encode(&answers)))
}

/// A Merkle tree's audit path: one LWE query per colour class of the tree in one framed
/// request, answered in one pass.
pub(super) async fn audit_path(
    State(state): State<Arc<AppState>>,
    Path(name): Path<String>,
    request: Request,
) -> Result<Response, Failure> {
    let served = lookup(&state, &name, request.headers())?;
    check_route(&served, &name, "audit-path")?;
    answer_one(&state, &served, &name, request).await
}

/// The query of a consistency request: the size of the earlier tree.
#[derive(serde::Deserialize)]
pub(super) struct ConsistencyQuery {
    first: u64,
}

/// A Merkle tree's RFC 6962 consistency proof from its first `first` leaves to the tree served
/// (public: it reveals nothing a client asks for privately).
pub(super) async fn consistency(
    State(state): State<Arc<AppState>>,
    Path(name): Path<String>,
    query: Result<Query<ConsistencyQuery>, QueryRejection>,
    headers: HeaderMap,
) -> Result<Json<ConsistencyInfo>, Failure> {
    let served = lookup(&state, &name, &headers)?;
    let Query(ConsistencyQuery { first }) = query.map_err(|rejection| {
        Failure::bad_request(format!(
            "name the earlier tree's size: ?first=LEAVES ({})",
            rejection.body_text()
        ))
    })?;
    let tree = served.entry.database.server::<TreePir>().ok_or_else(|| {
        Failure::bad_request(format!(
            "{name:?} is not a Merkle tree: it serves {} lookups",
            served.entry.lookup
        ))
    })?;
    let setup = tree.public_setup();
    let proof = tree.consistency_proof(first).ok_or_else(|| {
        Failure::bad_request(format!(
            "no consistency proof goes from {first} leaves to the tree's {}: first must be 1 to {}",
            setup.leaves(),
            setup.leaves()
        ))
    })?;
    Ok(Json(ConsistencyInfo {
        first,
        second: setup.leaves(),
        root: hex::encode(setup.root()),
        proof: proof.iter().map(hex::encode).collect(),
    }))
}

fn octets(body: Vec<u8>) -> Response {
    (
        [(header::CONTENT_TYPE, "application/octet-stream")],
        Body::from(body),
    )
        .into_response()
}

/// Hands the queries to the database's batcher and waits for their answers; refuses with 503
/// when too many queries are in flight.
async fn answer_all(
    state: &AppState,
    served: &Served,
    queries: Vec<DecodedQuery>,
) -> Result<Vec<Vec<u8>>, Failure> {
    let _permits = state
        .permits
        .clone()
        .try_acquire_many_owned(queries.len() as u32)
        .map_err(|_| Failure::busy())?;
    let sender = &served.batcher;
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
        answers.push(answer?);
    }
    Ok(answers)
}
