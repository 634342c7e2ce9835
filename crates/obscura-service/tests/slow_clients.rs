//! Clients that hold connections without sending: stalled request bodies are cut off, and a
//! server full of them still serves a new client at once.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use obscura_client::http::HttpClient;
use obscura_pir::lwe::{Client, EngineOptions, Layout, Lwe, Server};
use obscura_pir::PirClient;
use obscura_service::catalog::Catalog;
use obscura_service::service::{BackgroundService, ConnectionLimits, ServiceConfig};

fn service(limits: ConnectionLimits) -> (BackgroundService, Vec<u8>) {
    let data: Vec<u8> = (0..48u32 * 16).map(|i| (i * 31 % 251) as u8).collect();
    let options = EngineOptions {
        layout: Layout::Square,
        ..EngineOptions::default()
    };
    let server = Server::from_records(&data, 16, options, &|_, _| {}).unwrap();
    let mut catalog = Catalog::default();
    catalog.insert("db".into(), server).unwrap();
    let config = ServiceConfig {
        connections: limits,
        request_timeout: Duration::from_secs(120),
        ..ServiceConfig::default()
    };
    let service = BackgroundService::start(catalog, config, "127.0.0.1:0".parse().unwrap());
    (service.unwrap(), data)
}

/// Opens a connection that sends a query's headers, announcing `len` body bytes, and 3 of them.
fn stalled_body(address: &str, len: usize) -> TcpStream {
    let mut stream = TcpStream::connect(address).unwrap();
    let request = format!(
        "POST /v1/databases/db/query HTTP/1.1\r\nhost: {address}\r\ncontent-type: application/octet-stream\r\ncontent-length: {len}\r\n\r\nabc"
    );
    stream.write_all(request.as_bytes()).unwrap();
    stream
}

/// A body that stops arriving gets 408 once its time is up, and the connection is closed.
#[test]
fn a_stalled_body_gets_408_and_a_closed_connection() {
    let limits = ConnectionLimits {
        body_timeout: Duration::from_millis(300),
        ..ConnectionLimits::default()
    };
    let (service, _) = service(limits);
    let address = service.url().trim_start_matches("http://").to_string();
    let mut stream = stalled_body(&address, 1000);
    stream
        .set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    let mut response = String::new();
    // Reads to the end: the server closes the connection after its answer.
    stream.read_to_string(&mut response).unwrap();
    assert!(response.starts_with("HTTP/1.1 408"), "{response}");
    assert!(response.contains("did not arrive within"), "{response}");
    assert!(response.to_ascii_lowercase().contains("connection: close"));
}

/// With every connection slot held by stalled bodies, a new client is served at once: the
/// stalest connection is closed to make room for it, long before any time limit frees one.
#[test]
fn a_full_server_makes_room_for_a_new_client() {
    let limits = ConnectionLimits {
        max_open: 40,
        // Far beyond the client's patience below: only eviction can serve it in time.
        header_timeout: Duration::from_secs(60),
        body_timeout: Duration::from_secs(60),
        ..ConnectionLimits::default()
    };
    let (service, data) = service(limits);
    let url = service.url();
    let address = url.trim_start_matches("http://").to_string();
    let attackers: Vec<TcpStream> = (0..60).map(|_| stalled_body(&address, 100)).collect();
    std::thread::sleep(Duration::from_millis(200));

    let http = HttpClient::new(&url, None);
    let started = std::time::Instant::now();
    let mut client = Client::new(http.setup::<Lwe>("db").unwrap());
    for index in [0u64, 20, 47] {
        let (query, state) = client.query(index).unwrap();
        let answer = http.query::<Lwe>("db", client.setup(), &query).unwrap();
        assert_eq!(
            client.decode(state, &answer).unwrap(),
            &data[index as usize * 16..][..16]
        );
    }
    // Without eviction it would wait for the 60 s body limit of the stalled connections.
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "served after {:?}",
        started.elapsed()
    );
    drop(attackers);
}
