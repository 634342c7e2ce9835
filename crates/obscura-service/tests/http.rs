//! The HTTP service end to end on loopback: retrieval, caching, malformed requests, overload,
//! and a bounded load test.

use std::sync::Arc;
use std::time::{Duration, Instant};

use obscura_client::http::HttpClient;
use obscura_client::ClientError;
use obscura_pir::batch::merkle::{leaf_hash, MerkleTree};
use obscura_pir::batch::shards::Shards;
use obscura_pir::batch::treepir::{TreePir, TreePirClient, TreePirServer};
use obscura_pir::framing;
use obscura_pir::lwe::{Answer, Client, EngineOptions, Layout, Lwe, Query, Server};
use obscura_pir::{Encode, Message, PirClient};
use obscura_service::catalog::Catalog;
use obscura_service::service::{BackgroundService, ConnectionLimits, ServiceConfig};
use ureq::Agent;

/// A service on an ephemeral loopback port, stopped when dropped.
struct TestServer {
    url: String,
    _service: BackgroundService,
}

impl TestServer {
    fn start(catalog: Catalog, config: ServiceConfig) -> Self {
        let service =
            BackgroundService::start(catalog, config, "127.0.0.1:0".parse().unwrap()).unwrap();
        Self {
            url: service.url(),
            _service: service,
        }
    }
}

fn data(len: usize, seed: u32) -> Vec<u8> {
    (0..len as u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) ^ seed) as u8)
        .collect()
}

fn database(data: &[u8], record_bytes: u64, layout: Layout) -> Server {
    let options = EngineOptions {
        layout,
        ..EngineOptions::default()
    };
    Server::from_records(data, record_bytes, options, &|_, _| {}).unwrap()
}

fn raw() -> Agent {
    Agent::config_builder()
        .http_status_as_error(false)
        .build()
        .into()
}

fn status_and_text(
    response: Result<ureq::http::Response<ureq::Body>, ureq::Error>,
) -> (u16, String) {
    let mut response = response.unwrap();
    let status = response.status().as_u16();
    (
        status,
        response.body_mut().read_to_string().unwrap_or_default(),
    )
}

#[test]
fn retrieves_every_record_over_http_and_caches_the_setup() {
    let (square, frodo) = (data(50 * 24 - 5, 1), data(40 * 10, 2));
    let mut catalog = Catalog::default();
    catalog
        .insert("square".into(), database(&square, 24, Layout::Square))
        .unwrap();
    catalog
        .insert("frodo".into(), database(&frodo, 10, Layout::OnePerColumn))
        .unwrap();
    let server = TestServer::start(catalog, ServiceConfig::default());
    let cache = tempfile::tempdir().unwrap();
    let http = HttpClient::new(&server.url, Some(cache.path().to_path_buf()));

    let list = http.list().unwrap();
    assert_eq!(
        list.iter().map(|d| d.name.as_str()).collect::<Vec<_>>(),
        ["frodo", "square"]
    );
    assert_eq!(list[1].records, 50);
    assert_eq!(list[1].record_bytes, 24);

    for (name, data, record_bytes) in [("square", &square, 24usize), ("frodo", &frodo, 10)] {
        let setup = http.setup::<Lwe>(name).unwrap();
        let info = list.iter().find(|d| d.name == name).unwrap();
        assert_eq!(info.digest, hex::encode(setup.digest()));
        let mut client = Client::new(setup.clone());
        for (index, expected) in data.chunks(record_bytes).enumerate() {
            let (query, state) = client.query(index as u64).unwrap();
            assert_eq!(info.query_bytes, query.to_bytes().len() as u64);
            let answer = http.query::<Lwe>(name, &setup, &query).unwrap();
            assert_eq!(
                client.decode(state, &answer).unwrap(),
                expected,
                "{name} {index}"
            );
        }
        // A batch in one request.
        let indices = [3u64, 0, 7, 3];
        let (queries, states): (Vec<_>, Vec<_>) =
            indices.iter().map(|&i| client.query(i).unwrap()).unzip();
        let answers = http.batch::<Lwe>(name, &setup, &queries).unwrap();
        for ((state, answer), &index) in states.into_iter().zip(&answers).zip(&indices) {
            let start = index as usize * record_bytes;
            assert_eq!(
                client.decode(state, answer).unwrap(),
                &data[start..start + record_bytes]
            );
        }
    }

    // The cached setup is revalidated: the server answers 304 to its ETag.
    let etag = std::fs::read_dir(cache.path())
        .unwrap()
        .flat_map(|server| std::fs::read_dir(server.unwrap().path()).unwrap())
        .map(|f| f.unwrap().path())
        .find(|p| p.file_name().unwrap() == "square.etag")
        .map(|p| std::fs::read_to_string(p).unwrap())
        .expect("the setup was cached");
    // The ETag is the SHA-256 of the setup's bytes, as listed.
    let square_bytes = http.fetch_setup("square").map(|setup| setup.bytes).unwrap();
    assert_eq!(
        list[1].setup_sha256,
        hex::encode(obscura_registry::setup_sha256(&square_bytes))
    );
    assert_eq!(etag, format!("\"{}\"", list[1].setup_sha256));
    let response = raw()
        .get(&format!("{}/v1/databases/square/setup", server.url))
        .header("If-None-Match", &etag)
        .call()
        .unwrap();
    assert_eq!(response.status().as_u16(), 304);
    let again = http.setup::<Lwe>("square").unwrap();
    assert_eq!(hex::encode(again.digest()), list[1].digest);

    let (status, metrics) = status_and_text(raw().get(&format!("{}/metrics", server.url)).call());
    assert_eq!(status, 200);
    assert!(
        metrics.contains("obscura_requests_total{endpoint=\"query\"} 90"),
        "{metrics}"
    );
    assert!(metrics.contains("obscura_batched_queries_total"));
    let (status, body) = status_and_text(raw().get(&format!("{}/healthz", server.url)).call());
    assert_eq!((status, body.as_str()), (200, "ok\n"));
}

#[test]
fn malformed_requests_get_clear_client_errors_and_the_server_keeps_answering() {
    let data = data(30 * 16, 3);
    let mut catalog = Catalog::default();
    catalog
        .insert("db".into(), database(&data, 16, Layout::Square))
        .unwrap();
    catalog
        .insert("other".into(), database(&data, 16, Layout::Square))
        .unwrap();
    let config = ServiceConfig {
        max_concurrent: 4,
        ..ServiceConfig::default()
    };
    let server = TestServer::start(catalog, config);
    let http = HttpClient::new(&server.url, None);
    let setup = http.setup::<Lwe>("db").unwrap();
    let other_setup = http.setup::<Lwe>("other").unwrap();
    let mut client = Client::new(setup.clone());
    let (query, _) = client.query(1).unwrap();
    let good = query.to_bytes();
    let foreign = Client::new(other_setup).query(1).unwrap().0.to_bytes();
    let post = |path: &str, body: &[u8]| {
        status_and_text(raw().post(&format!("{}{path}", server.url)).send(body))
    };

    let cases: Vec<(&str, Vec<u8>, u16, &str)> = vec![
        (
            "/v1/databases/db/query",
            b"garbage".to_vec(),
            400,
            "malformed query",
        ),
        (
            "/v1/databases/db/query",
            good[..good.len() - 3].to_vec(),
            400,
            "malformed query",
        ),
        ("/v1/databases/db/query", good[..5].to_vec(), 400, "header"),
        ("/v1/databases/db/query", vec![], 400, "malformed query"),
        (
            "/v1/databases/nope/query",
            good.clone(),
            404,
            "unknown database",
        ),
        (
            "/v1/databases/db/query",
            foreign.clone(),
            409,
            "different setup",
        ),
        ("/v1/databases/db/query", vec![0; 8 << 10], 413, ""),
        ("/v1/databases/db/batch", b"xx".to_vec(), 400, "count"),
        (
            "/v1/databases/db/batch",
            framing::encode(&[good.clone(), b"junk".to_vec()]),
            400,
            "malformed query",
        ),
        (
            "/v1/databases/db/batch",
            17u32.to_le_bytes().to_vec(),
            400,
            "a batch holds 1 to 4",
        ),
        (
            "/v1/databases/db/batch",
            framing::encode(&vec![good.clone(); 17]),
            413,
            "",
        ),
        (
            "/v1/databases/db/batch",
            framing::encode(&vec![good.clone(); 5]),
            400,
            "1 to 4 queries",
        ),
    ];
    for (path, body, status, message) in cases {
        let (got, text) = post(path, &body);
        assert_eq!(got, status, "{path}: {text}");
        assert!(text.contains(message), "{path}: {text:?} lacks {message:?}");
    }
    let (status, text) = status_and_text(
        raw()
            .get(&format!("{}/v1/databases/nope/setup", server.url))
            .call(),
    );
    assert_eq!((status, text.trim()), (404, "unknown database \"nope\""));
    assert!(matches!(
        http.setup::<Lwe>("nope"),
        Err(ClientError::Status { status: 404, .. })
    ));

    // Still answering correctly.
    for index in [0u64, 29] {
        let (query, state) = client.query(index).unwrap();
        let answer = http.query::<Lwe>("db", &setup, &query).unwrap();
        let start = index as usize * 16;
        assert_eq!(
            client.decode(state, &answer).unwrap(),
            &data[start..start + 16]
        );
    }
}

/// 32 concurrent clients x 200 queries on loopback: no errors, every record right.
#[test]
fn bounded_load_test() {
    const CLIENTS: usize = 32;
    const QUERIES: usize = 200;
    let data = Arc::new(data(1000 * 32, 4));
    let mut catalog = Catalog::default();
    catalog
        .insert("load".into(), database(&data, 32, Layout::Square))
        .unwrap();
    let server = TestServer::start(catalog, ServiceConfig::default());
    let setup = HttpClient::new(&server.url, None)
        .setup::<Lwe>("load")
        .unwrap();
    let started = Instant::now();
    let workers: Vec<_> = (0..CLIENTS)
        .map(|worker| {
            let (url, setup, data) = (server.url.clone(), setup.clone(), data.clone());
            std::thread::spawn(move || {
                let http = HttpClient::new(&url, None);
                let mut client = Client::new(setup.clone());
                client.preprocess(QUERIES).unwrap();
                let mut latencies = Vec::with_capacity(QUERIES);
                for i in 0..QUERIES {
                    let index = ((worker * 7919 + i * 104_729) % 1000) as u64;
                    let (query, state) = client.query(index).unwrap();
                    let sent = Instant::now();
                    let answer = http.query::<Lwe>("load", &setup, &query).unwrap();
                    latencies.push(sent.elapsed());
                    let start = index as usize * 32;
                    assert_eq!(
                        client.decode(state, &answer).unwrap(),
                        &data[start..start + 32]
                    );
                }
                latencies
            })
        })
        .collect();
    let mut latencies: Vec<Duration> = workers
        .into_iter()
        .flat_map(|w| w.join().unwrap())
        .collect();
    let elapsed = started.elapsed();
    latencies.sort();
    assert_eq!(latencies.len(), CLIENTS * QUERIES);
    let percentile =
        |p: f64| latencies[((latencies.len() as f64 * p) as usize).min(latencies.len() - 1)];
    println!(
        "load test: {} queries in {elapsed:.2?} ({:.0} queries/s), p50 {:.2?}, p99 {:.2?}",
        latencies.len(),
        latencies.len() as f64 / elapsed.as_secs_f64(),
        percentile(0.5),
        percentile(0.99)
    );
}

/// A request that outlives the time limit gets 408 (the batcher's window is made longer than it).
#[test]
fn slow_requests_time_out() {
    let mut catalog = Catalog::default();
    catalog
        .insert("db".into(), database(&data(64, 5), 8, Layout::Square))
        .unwrap();
    let config = ServiceConfig {
        request_timeout: Duration::from_millis(5),
        batch_window: Duration::from_millis(500),
        ..ServiceConfig::default()
    };
    let server = TestServer::start(catalog, config);
    let http = HttpClient::new(&server.url, None);
    let setup = http.setup::<Lwe>("db").unwrap();
    let (query, _) = Client::new(setup.clone()).query(0).unwrap();
    let (status, _) = status_and_text(
        raw()
            .post(&format!("{}/v1/databases/db/query", server.url))
            .send(&query.to_bytes()[..]),
    );
    assert_eq!(status, 408);
}

/// Queries that arrive together are answered in one pass over the database, and a query beyond
/// the concurrency bound gets 503 while the others wait (the batching window is made long so
/// the timing is not close).
#[test]
fn concurrent_queries_share_one_pass_and_overload_gets_503() {
    let records = data(64 * 16, 6);
    let mut catalog = Catalog::default();
    catalog
        .insert("db".into(), database(&records, 16, Layout::Square))
        .unwrap();
    let config = ServiceConfig {
        max_concurrent: 4,
        batch_window: Duration::from_millis(1500),
        ..ServiceConfig::default()
    };
    let server = TestServer::start(catalog, config);
    let http = HttpClient::new(&server.url, None);
    let setup = http.setup::<Lwe>("db").unwrap();
    let start = std::sync::Barrier::new(5);
    std::thread::scope(|scope| {
        for index in [3u64, 17, 40, 63] {
            let (http, setup, start, records) = (&http, &setup, &start, &records);
            scope.spawn(move || {
                let mut client = Client::new(setup.clone());
                let (query, state) = client.query(index).unwrap();
                start.wait();
                let answer = http.query::<Lwe>("db", setup, &query).unwrap();
                let record = client.decode(state, &answer).unwrap();
                assert_eq!(record, &records[index as usize * 16..][..16]);
            });
        }
        let (query, _) = Client::new(setup.clone()).query(0).unwrap();
        start.wait();
        std::thread::sleep(Duration::from_millis(500));
        let (status, text) = status_and_text(
            raw()
                .post(&format!("{}/v1/databases/db/query", server.url))
                .send(&query.to_bytes()[..]),
        );
        assert_eq!((status, text.contains("busy")), (503, true), "{text}");
    });
    let (_, metrics) = status_and_text(raw().get(&format!("{}/metrics", server.url)).call());
    let counter = |name: &str| {
        metrics
            .lines()
            .find_map(|line| line.strip_prefix(name)?.strip_prefix(' '))
            .and_then(|value| value.parse::<u64>().ok())
    };
    assert_eq!(counter("obscura_batched_queries_total"), Some(4));
    assert_eq!(counter("obscura_batches_total"), Some(1), "{metrics}");
}

/// A client that trickles its headers is disconnected after the header timeout, and the server
/// keeps serving others.
#[test]
fn slow_headers_are_cut_off() {
    use std::io::{Read, Write};
    let mut catalog = Catalog::default();
    catalog
        .insert("db".into(), database(&data(64, 7), 8, Layout::Square))
        .unwrap();
    let config = ServiceConfig {
        connections: ConnectionLimits {
            header_timeout: Duration::from_millis(300),
            ..ConnectionLimits::default()
        },
        ..ServiceConfig::default()
    };
    let server = TestServer::start(catalog, config);
    let address = server.url.trim_start_matches("http://");
    let mut slow = std::net::TcpStream::connect(address).unwrap();
    slow.set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let started = Instant::now();
    slow.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")
        .unwrap();
    let mut reply = Vec::new();
    let closed = slow.read_to_end(&mut reply);
    assert!(closed.is_ok(), "the connection was not closed: {closed:?}");
    assert!(started.elapsed() < Duration::from_secs(5));
    assert!(!String::from_utf8_lossy(&reply).contains("200 OK"));
    let (status, text) = status_and_text(raw().get(&format!("{}/healthz", server.url)).call());
    assert_eq!((status, text.trim()), (200, "ok"));
}

/// Merkle audit paths over HTTP from a tree of 37 leaves (not a power of two) served beside an
/// index database: the leaf hash fetched privately and the proof of several leaves equal the
/// plain tree's, and each route refuses the other kind of database.
#[test]
fn treepir_proofs_over_http() {
    let leaves: Vec<Vec<u8>> = (0..37).map(|i| format!("leaf {i}").into_bytes()).collect();
    let tree = MerkleTree::from_leaves(&leaves);
    let mut catalog = Catalog::default();
    let tree_server =
        TreePirServer::from_tree(&tree, EngineOptions::default(), &|_, _| {}).unwrap();
    catalog.insert("tree".into(), tree_server).unwrap();
    catalog
        .insert("db".into(), database(&data(100, 8), 10, Layout::Square))
        .unwrap();
    let server = TestServer::start(catalog, ServiceConfig::default());
    let cache = tempfile::tempdir().unwrap();
    let http = HttpClient::new(&server.url, Some(cache.path().to_path_buf()));

    let list = http.list().unwrap();
    let info = list.iter().find(|d| d.name == "tree").unwrap();
    assert_eq!(info.kind, "treepir");
    assert_eq!(
        (info.records, info.record_bytes, info.height),
        (37, 32, Some(6))
    );
    assert!(info.params.is_some());
    let index_info = list.iter().find(|d| d.name == "db").unwrap();
    assert_eq!(
        (index_info.kind.as_str(), index_info.height),
        ("index", None)
    );
    let setup = http.setup::<TreePir>("tree").unwrap();
    assert_eq!(info.digest, hex::encode(setup.digest()));
    assert_eq!(setup.root(), &tree.root());
    let mut client = TreePirClient::new(setup.clone());
    for m in [0u64, 1, 17, 31, 32, 35, 36] {
        let (queries, state) = client.query_leaf_hash(m).unwrap();
        let request = Shards(queries);
        assert_eq!(info.query_bytes, Encode::to_bytes(&request).len() as u64);
        let answers = http.query::<TreePir>("tree", &setup, &request).unwrap();
        let hash = client.decode_leaf_hash(state, &answers.0).unwrap();
        assert_eq!(hash, leaf_hash(&leaves[m as usize]), "leaf {m}");
        let (queries, state) = client.query(m).unwrap();
        let answers = http
            .query::<TreePir>("tree", &setup, &Shards(queries))
            .unwrap();
        let path = client.decode(state, &answers.0, &hash).unwrap();
        assert_eq!(Some(path), tree.audit_path(m), "leaf {m}");
    }
    // The second download is the cached copy, revalidated.
    assert_eq!(http.setup::<TreePir>("tree").unwrap(), setup);

    let (queries, _) = client.query(3).unwrap();
    let encoded: Vec<Vec<u8>> = queries.iter().map(Query::to_bytes).collect();
    let mut swapped = encoded.clone();
    swapped.swap(0, 1);
    let post = |path: &str, body: &[u8]| {
        status_and_text(raw().post(&format!("{}{path}", server.url)).send(body))
    };
    // Bodies are bounded by the largest request: a batch of 16 of the database's queries.
    let limit = (16 * (info.query_bytes + 4) + 4).max(1024) as usize;
    let cases: Vec<(&str, Vec<u8>, u16, &str)> = vec![
        (
            "/v1/databases/tree/query",
            framing::encode(&encoded),
            400,
            "serves audit-path lookups: post them to /v1/databases/tree/audit-path",
        ),
        (
            "/v1/databases/tree/batch",
            framing::encode(&encoded),
            400,
            "where 6 are expected",
        ),
        (
            "/v1/databases/db/audit-path",
            framing::encode(&encoded),
            400,
            "serves index lookups: post them to /v1/databases/db/query",
        ),
        (
            "/v1/databases/tree/audit-path",
            framing::encode(&encoded[..5]),
            400,
            "5 messages where 6 are expected",
        ),
        (
            "/v1/databases/tree/audit-path",
            framing::encode(&[&encoded[..], &encoded[..1]].concat()),
            400,
            "7 messages where 6 are expected",
        ),
        (
            "/v1/databases/tree/audit-path",
            framing::encode(&swapped),
            409,
            "different setup",
        ),
        (
            "/v1/databases/tree/audit-path",
            b"junk".to_vec(),
            400,
            "where 6 are expected",
        ),
        (
            "/v1/databases/nope/audit-path",
            framing::encode(&encoded),
            404,
            "unknown database",
        ),
        ("/v1/databases/tree/audit-path", vec![0; limit + 1], 413, ""),
    ];
    for (path, body, status, message) in cases {
        let (got, text) = post(path, &body);
        assert_eq!(got, status, "{path}: {text}");
        assert!(text.contains(message), "{path}: {text:?} lacks {message:?}");
    }
    // Still answering.
    let (queries, state) = client.query(36).unwrap();
    // The audit-path route is the query route of a Merkle tree.
    let mut response = raw()
        .post(&format!("{}/v1/databases/tree/audit-path", server.url))
        .send(&Encode::to_bytes(&Shards(queries))[..])
        .unwrap();
    assert_eq!(response.status().as_u16(), 200);
    let body = response.body_mut().read_to_vec().unwrap();
    let answers: Shards<Answer> = Message::from_bytes(&body, &setup).unwrap();
    let path = client
        .decode(state, &answers.0, &leaf_hash(&leaves[36]))
        .unwrap();
    assert_eq!(Some(path), tree.audit_path(36));
    let (_, metrics) = status_and_text(raw().get(&format!("{}/metrics", server.url)).call());
    // 14 lookups through the typed client, 7 refused requests and the raw one above.
    for line in [
        "obscura_requests_total{endpoint=\"audit-path\"} 22",
        "obscura_errors_total{endpoint=\"audit-path\"} 7",
        "obscura_requests_total{endpoint=\"query\"} 1",
        "obscura_errors_total{endpoint=\"query\"} 1",
    ] {
        assert!(metrics.contains(line), "{metrics}");
    }
}
