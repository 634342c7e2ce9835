//! Targets of the HTTP routes, driven in-process through the service's router: every
//! response must be a 2xx, a 304 or a 4xx with a one-line text body, never a 5xx.

use std::sync::OnceLock;

use axum::body::Body;
use axum::http::{header, Method, Request, StatusCode};
use axum::Router;
use obscura_pir::batch::treepir::TreePir;
use obscura_pir::framing;
use obscura_pir::keyword::{Keyword, KeywordClient};
use obscura_pir::lwe::{Client, Lwe};
use obscura_pir::{Encode, PirClient};
use obscura_service::catalog::Catalog;
use obscura_service::service::{self, ServiceConfig};
use obscura_store::store::Database;
use tokio::runtime::Runtime;
use tower::ServiceExt;

use super::{one_line, SeedsEnd, Target, Verdict, ACCEPTED};
use crate::fixtures::{self, NAMES};

/// The HTTP targets. The first byte of an input picks the database (the fixtures, or one that
/// does not exist); the rest is the request body.
pub(super) fn targets() -> Vec<Target> {
    vec![
        Target {
            name: "http_query",
            about: "POST /v1/databases/{name}/query bodies",
            seeds_end: SeedsEnd::Accepted,
            run: |input| post("query", input),
            seeds: || {
                let mut seeds = vec![with_name(0, &query_to(&fixtures::get().index))];
                seeds.push(with_name(1, &query_to(&fixtures::get().keyword)));
                seeds
            },
        },
        Target {
            name: "http_batch",
            about: "POST /v1/databases/{name}/batch bodies",
            seeds_end: SeedsEnd::Accepted,
            run: |input| post("batch", input),
            seeds: || {
                let query = query_to(&fixtures::get().index);
                vec![with_name(0, &framing::encode(&[query.clone(), query]))]
            },
        },
        Target {
            name: "http_audit_path",
            about: "POST /v1/databases/{name}/audit-path bodies",
            seeds_end: SeedsEnd::Accepted,
            run: |input| post("audit-path", input),
            seeds: || {
                let tree = fixtures::get().tree.server::<TreePir>().expect("a tree");
                let queries: Vec<Vec<u8>> = tree
                    .databases()
                    .iter()
                    .map(|engine| query_of(engine.public_setup()))
                    .collect();
                vec![with_name(2, &framing::encode(&queries))]
            },
        },
        Target {
            name: "http_setup",
            about: "GET /v1/databases/{name}/setup with any name and If-None-Match header",
            seeds_end: SeedsEnd::Accepted,
            run: get_setup,
            seeds: || vec![b"index".to_vec(), b"keyword\0\"another tag\"".to_vec()],
        },
    ]
}

/// The router serving the fixtures, and the runtime its workers run on.
fn service() -> &'static (Runtime, Router) {
    static SERVICE: OnceLock<(Runtime, Router)> = OnceLock::new();
    SERVICE.get_or_init(|| {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("a tokio runtime");
        let paths: Vec<_> = NAMES.iter().map(|name| fixtures::path(name)).collect();
        let catalog = Catalog::open(&paths).expect("the fixtures load");
        let router = runtime.block_on(async { service::router(catalog, ServiceConfig::default()) });
        (runtime, router)
    })
}

/// An input for the database numbered `name` with `body`.
fn with_name(name: u8, body: &[u8]) -> Vec<u8> {
    [&[name], body].concat()
}

/// The database an input's first byte names (one that does not exist past the fixtures).
fn database_name(input: &[u8]) -> &'static str {
    match input.first() {
        Some(&i) if (i as usize) < NAMES.len() => NAMES[i as usize],
        _ => "missing",
    }
}

/// An honest query to the first record of the database with this engine setup.
fn query_of(setup: &obscura_pir::lwe::PublicSetup) -> Vec<u8> {
    let (query, _) = Client::new(setup.clone()).query(0).expect("record 0");
    query.to_bytes()
}

/// An honest query to `database`: record 0 of an index database, a key of a keyword database.
fn query_to(database: &Database) -> Vec<u8> {
    match database.server::<Lwe>() {
        Some(server) => query_of(server.public_setup()),
        None => {
            let setup = database
                .server::<Keyword>()
                .expect("an index or keyword database")
                .public_setup();
            let (query, _) = KeywordClient::new(setup.clone())
                .query(b"alice")
                .expect("a lookup");
            query.to_bytes()
        }
    }
}

/// Sends `request` and checks the response: its status and body.
fn send(request: Request<Body>) -> Result<(StatusCode, Vec<u8>), String> {
    let (runtime, router) = service();
    runtime.block_on(async {
        let response = router
            .clone()
            .oneshot(request)
            .await
            .map_err(|e| format!("the router failed: {e}"))?;
        let status = response.status();
        let body = axum::body::to_bytes(response.into_body(), usize::MAX)
            .await
            .map_err(|e| format!("the body failed: {e}"))?;
        Ok((status, body.to_vec()))
    })
}

/// The outcome of an error response: its status and one-line text.
fn refusal(status: StatusCode, body: &[u8]) -> Verdict {
    if status.is_server_error() {
        return Err(format!(
            "{status} for a client's request: {}",
            String::from_utf8_lossy(body)
        ));
    }
    let text = std::str::from_utf8(body).map_err(|_| format!("{status} with a binary body"))?;
    one_line(format!(
        "{} {}",
        status.as_u16(),
        text.strip_suffix('\n').unwrap_or(text)
    ))
}

fn post(route: &str, input: &[u8]) -> Verdict {
    let name = database_name(input);
    let body = input.get(1..).unwrap_or_default().to_vec();
    let request = Request::builder()
        .method(Method::POST)
        .uri(format!("/v1/databases/{name}/{route}"))
        .header(header::CONTENT_TYPE, "application/octet-stream")
        .body(Body::from(body))
        .map_err(|e| e.to_string())?;
    let (status, body) = send(request)?;
    if status != StatusCode::OK {
        return refusal(status, &body);
    }
    let database = fixtures::get()
        .by_name(name)
        .ok_or("200 for a missing database")?;
    let answer_bytes = database.listing().answer_bytes;
    let lengths: Vec<u64> = if route != "batch" {
        vec![body.len() as u64]
    } else {
        framing::decode(&body, usize::MAX)
            .map_err(|e| format!("200 with a malformed framed body: {e}"))?
            .iter()
            .map(|answer| answer.len() as u64)
            .collect()
    };
    let expected = vec![answer_bytes; lengths.len()];
    if lengths != expected {
        return Err(format!(
            "200 with answers of {lengths:?} bytes where {expected:?} are due"
        ));
    }
    Ok(ACCEPTED.into())
}

/// The input is a database name, a zero byte, and the If-None-Match header's bytes.
fn get_setup(input: &[u8]) -> Verdict {
    let (name, tag) = match input.iter().position(|&b| b == 0) {
        Some(at) => (&input[..at], Some(&input[at + 1..])),
        None => (input, None),
    };
    let name: String = name
        .iter()
        .map(|&b| {
            if b.is_ascii_alphanumeric() || b"-_.".contains(&b) {
                char::from(b).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect();
    let mut request = Request::builder().uri(format!("/v1/databases/{name}/setup"));
    if let Some(tag) = tag {
        match header::HeaderValue::from_bytes(tag) {
            Ok(value) => request = request.header(header::IF_NONE_MATCH, value),
            Err(_) => return Ok("not a header value".into()),
        }
    }
    let request = request.body(Body::empty()).map_err(|e| e.to_string())?;
    let (status, body) = send(request)?;
    match status {
        StatusCode::OK => {
            let database = fixtures::get()
                .by_name(&name)
                .ok_or("200 for a missing database")?;
            if body != database.setup_bytes() {
                return Err("the setup served is not the database's".into());
            }
            Ok(ACCEPTED.into())
        }
        StatusCode::NOT_MODIFIED => Ok("not modified".into()),
        status => refusal(status, &body),
    }
}
