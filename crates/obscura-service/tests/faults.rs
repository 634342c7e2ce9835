//! Faults between the client and a real service, a hostile server and a damaged cache.
//!
//! A loopback proxy flips, truncates and delays the bytes of every route, in the response and in
//! the request; a fake server sends what no honest one would (huge lengths, endless bodies,
//! setups of the wrong kind, answers of the wrong size). Each case must end in the correct
//! result or a typed error. What the client cannot detect is measured and stated: an index
//! answer carries no authenticator, so a bit flipped in its entries on the way can decode to a
//! wrong record (TLS protects the wire). A keyword row's 128-bit check covers the key and the
//! value, so a corrupted keyword answer gives the value, "not found" or an error, never a wrong
//! value. Merkle audit paths are verified against the root and never come back wrong.

use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use obscura_client::http::{ClientOptions, HttpClient};
use obscura_client::ClientError;
use obscura_pir::batch::merkle::{leaf_hash, MerkleTree};
use obscura_pir::batch::shards::Shards;
use obscura_pir::batch::treepir::{TreePir, TreePirClient, TreePirServer};
use obscura_pir::keyword::{Keyword, KeywordClient, KeywordOptions, KeywordServer};
use obscura_pir::lwe::{Answer, Client, EngineOptions, Lwe, PublicSetup, Server};
use obscura_pir::{PirClient, PirServer};
use obscura_registry::setup_sha256;
use obscura_service::catalog::Catalog;
use obscura_service::service::{BackgroundService, ServiceConfig};

const RECORD_BYTES: usize = 24;

/// A service with an index database `index`, a keyword database `kv` and a Merkle tree `tree`.
struct World {
    service: BackgroundService,
    records: Vec<u8>,
    pairs: Vec<(Vec<u8>, Vec<u8>)>,
    tree: MerkleTree,
}

fn world() -> World {
    let records: Vec<u8> = (0..50 * RECORD_BYTES as u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 11) as u8)
        .collect();
    let pairs: Vec<(Vec<u8>, Vec<u8>)> = (0..40)
        .map(|i| {
            (
                format!("key {i}").into_bytes(),
                format!("value of key {i}").into_bytes(),
            )
        })
        .collect();
    let leaves: Vec<Vec<u8>> = (0..13).map(|i| format!("leaf {i}").into_bytes()).collect();
    let tree = MerkleTree::from_leaves(&leaves);
    let mut catalog = Catalog::default();
    let index = Server::from_records(
        &records,
        RECORD_BYTES as u64,
        EngineOptions::default(),
        &|_, _| {},
    )
    .unwrap();
    catalog.insert("index".into(), index).unwrap();
    let kv = KeywordServer::from_pairs(&pairs, KeywordOptions::default(), &|_, _| {}).unwrap();
    catalog.insert("kv".into(), kv).unwrap();
    let tree_server =
        TreePirServer::from_tree(&tree, EngineOptions::default(), &|_, _| {}).unwrap();
    catalog.insert("tree".into(), tree_server).unwrap();
    let config = ServiceConfig {
        request_timeout: Duration::from_secs(2),
        ..ServiceConfig::default()
    };
    let service =
        BackgroundService::start(catalog, config, "127.0.0.1:0".parse().unwrap()).unwrap();
    World {
        service,
        records,
        pairs,
        tree,
    }
}

/// Client options for a faulty path: a short time limit, so a stalled exchange ends quickly.
fn options() -> ClientOptions {
    ClientOptions {
        timeout: Duration::from_secs(2),
        ..ClientOptions::default()
    }
}

/// Which way bytes travel through the proxy.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Direction {
    Request,
    Response,
}

/// What the proxy does to the bytes of one direction of a connection.
#[derive(Clone, Copy, Debug)]
enum Fault {
    /// Forward every byte as is.
    Clean,
    /// XOR the byte at this offset with a mask.
    Flip(Direction, usize, u8),
    /// Close the connection after this many bytes.
    Truncate(Direction, usize),
    /// Pause before the byte at this offset.
    Delay(Direction, usize, Duration),
}

impl Fault {
    fn direction(self) -> Option<Direction> {
        match self {
            Self::Clean => None,
            Self::Flip(d, ..) | Self::Truncate(d, _) | Self::Delay(d, ..) => Some(d),
        }
    }
}

/// A loopback proxy in front of a service; each new connection gets the fault set last, and the
/// bytes of the last connection are kept (to find where headers end).
struct Proxy {
    url: String,
    fault: Arc<Mutex<Fault>>,
    seen: Arc<Mutex<[Vec<u8>; 2]>>,
}

impl Proxy {
    fn start(upstream: &str) -> Self {
        let upstream: SocketAddr = upstream.trim_start_matches("http://").parse().unwrap();
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let fault = Arc::new(Mutex::new(Fault::Clean));
        let seen = Arc::new(Mutex::new([Vec::new(), Vec::new()]));
        let (shared_fault, shared_seen) = (fault.clone(), seen.clone());
        std::thread::spawn(move || {
            for client in listener.incoming() {
                let Ok(client) = client else { continue };
                let Ok(server) = TcpStream::connect(upstream) else {
                    continue;
                };
                let fault = *shared_fault.lock().unwrap();
                *shared_seen.lock().unwrap() = [Vec::new(), Vec::new()];
                for (direction, from, to) in [
                    (Direction::Request, &client, &server),
                    (Direction::Response, &server, &client),
                ] {
                    let (from, to) = (from.try_clone().unwrap(), to.try_clone().unwrap());
                    let fault = if fault.direction() == Some(direction) {
                        fault
                    } else {
                        Fault::Clean
                    };
                    let seen = shared_seen.clone();
                    std::thread::spawn(move || pump(from, to, fault, direction, &seen));
                }
            }
        });
        Self { url, fault, seen }
    }

    fn set(&self, fault: Fault) {
        *self.fault.lock().unwrap() = fault;
    }

    /// Where the body starts and its length, in each direction of the last connection.
    fn bodies(&self) -> [(usize, usize); 2] {
        self.seen.lock().unwrap().clone().map(|bytes| {
            let head = bytes
                .windows(4)
                .position(|w| w == b"\r\n\r\n")
                .expect("a complete HTTP message")
                + 4;
            (head, bytes.len() - head)
        })
    }
}

/// Copies `from` to `to` until either closes, applying `fault`.
fn pump(
    mut from: TcpStream,
    mut to: TcpStream,
    fault: Fault,
    direction: Direction,
    seen: &Mutex<[Vec<u8>; 2]>,
) {
    let mut buffer = vec![0u8; 1 << 16];
    let mut position = 0usize;
    loop {
        let n = match from.read(&mut buffer) {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        let chunk = &mut buffer[..n];
        seen.lock().unwrap()[direction as usize].extend_from_slice(chunk);
        let here = |at: usize| (position..position + n).contains(&at);
        let sent = match fault {
            Fault::Flip(_, at, mask) if here(at) => {
                chunk[at - position] ^= mask;
                to.write_all(chunk)
            }
            Fault::Truncate(_, at) if position + n > at => {
                let _ = to.write_all(&chunk[..at - position]);
                let _ = to.shutdown(Shutdown::Both);
                let _ = from.shutdown(Shutdown::Both);
                return;
            }
            Fault::Delay(_, at, pause) if here(at) => {
                let (before, after) = chunk.split_at(at - position);
                let sent = to.write_all(before);
                std::thread::sleep(pause);
                sent.and_then(|()| to.write_all(after))
            }
            _ => to.write_all(chunk),
        };
        if sent.is_err() {
            break;
        }
        position += n;
    }
    let _ = to.shutdown(Shutdown::Write);
}

/// What one exchange through a faulty path gave.
#[derive(Debug, PartialEq)]
enum Outcome {
    Correct,
    Refused,
    Wrong,
}

/// How many exchanges gave each outcome.
#[derive(Debug, Default)]
struct Tally {
    correct: usize,
    refused: usize,
    wrong: usize,
}

impl Tally {
    fn add(&mut self, outcome: Outcome) {
        match outcome {
            Outcome::Correct => self.correct += 1,
            Outcome::Refused => self.refused += 1,
            Outcome::Wrong => self.wrong += 1,
        }
    }
}

/// Compares a result with the plain answer; any error counts as refused (every error the client
/// returns is typed: the match on the result is the check).
fn judge<T: PartialEq>(result: Result<T, ClientError>, expected: &T) -> Outcome {
    match result {
        Ok(value) if &value == expected => Outcome::Correct,
        Ok(_) => Outcome::Wrong,
        Err(_) => Outcome::Refused,
    }
}

/// A one-bit flip of every `stride`-th body byte of a message of `len` body bytes after a
/// `head`-byte head (bit `i % 8` of the `i`-th).
fn body_flips(direction: Direction, (head, len): (usize, usize), stride: usize) -> Vec<Fault> {
    (0..len)
        .step_by(stride)
        .enumerate()
        .map(|(i, offset)| Fault::Flip(direction, head + offset, 1 << (i % 8)))
        .collect()
}

/// The other faults tried on a message: a few flips in the head, truncations throughout, and
/// delays in the head and in the body.
fn other_faults(direction: Direction, (head, len): (usize, usize)) -> Vec<Fault> {
    let mut faults: Vec<Fault> = (0..head)
        .step_by(head / 4 + 1)
        .map(|at| Fault::Flip(direction, at, 0x20))
        .collect();
    faults.extend((1..8).map(|k| Fault::Truncate(direction, (head + len) * k / 8)));
    faults.extend(
        [head / 2, head + len / 2]
            .map(|at| Fault::Delay(direction, at, Duration::from_millis(150))),
    );
    faults
}

/// Every fault tried on a message (see [`body_flips`] and [`other_faults`]).
fn faults(direction: Direction, body: (usize, usize), stride: usize) -> Vec<Fault> {
    [
        body_flips(direction, body, stride),
        other_faults(direction, body),
    ]
    .concat()
}

/// Runs `attempt` once for each fault, through the proxy, with a fresh client each time.
fn tally(proxy: &Proxy, faults: &[Fault], attempt: impl Fn(&HttpClient) -> Outcome) -> Tally {
    let mut tally = Tally::default();
    for &fault in faults {
        proxy.set(fault);
        let outcome = attempt(&HttpClient::with_options(&proxy.url, options()));
        // Delays and clean exchanges must succeed.
        if matches!(fault, Fault::Delay(..) | Fault::Clean) {
            assert_eq!(outcome, Outcome::Correct, "{fault:?}");
        }
        // A truncated message is never taken for a complete one.
        if matches!(fault, Fault::Truncate(..)) {
            assert_eq!(outcome, Outcome::Refused, "{fault:?}");
        }
        tally.add(outcome);
    }
    proxy.set(Fault::Clean);
    tally
}

/// Body offsets of the last exchange, after a clean one through `attempt`.
fn clean_run(proxy: &Proxy, attempt: impl Fn(&HttpClient) -> Outcome) -> [(usize, usize); 2] {
    proxy.set(Fault::Clean);
    assert_eq!(
        attempt(&HttpClient::with_options(&proxy.url, options())),
        Outcome::Correct
    );
    proxy.bodies()
}

#[test]
fn a_corrupted_setup_is_always_refused() {
    let world = world();
    let proxy = Proxy::start(&world.service.url());
    let direct = HttpClient::new(&world.service.url(), None);
    for name in ["index", "kv", "tree"] {
        let expected = direct.fetch_setup(name).map(|setup| setup.bytes).unwrap();
        let attempt =
            |http: &HttpClient| judge(http.fetch_setup(name).map(|setup| setup.bytes), &expected);
        let [_, response] = clean_run(&proxy, attempt);
        assert_eq!(response.1, expected.len());
        let faults = faults(Direction::Response, response, response.1 / 300 + 1);
        let tally = tally(&proxy, &faults, attempt);
        assert_eq!(tally.wrong, 0, "{name}: {tally:?}");
        // Every flip in the body is caught by the SHA-256.
        let body_flips = faults
            .iter()
            .filter(|f| matches!(f, Fault::Flip(_, at, _) if *at >= response.0))
            .count();
        assert!(tally.refused >= body_flips, "{name}: {tally:?}");
    }
}

#[test]
fn a_corrupted_database_list_is_refused_or_read_as_sent() {
    let world = world();
    let proxy = Proxy::start(&world.service.url());
    let expected = HttpClient::new(&world.service.url(), None).list().unwrap();
    let attempt = |http: &HttpClient| judge(http.list(), &expected);
    let [_, response] = clean_run(&proxy, attempt);
    let tally = tally(&proxy, &faults(Direction::Response, response, 3), attempt);
    // The list carries no checksum: a flipped digit is read as sent. Nothing fetched depends on
    // it (setups are verified on their own).
    eprintln!("database list, flips/truncations/delays in the response: {tally:?}");
    assert!(tally.refused > 0, "{tally:?}");
}

/// Fetches `index` through `http`, with a batch of two when `batch`.
fn fetch_record(
    http: &HttpClient,
    setup: &PublicSetup,
    index: u64,
    batch: bool,
) -> Result<Vec<u8>, ClientError> {
    let mut client = Client::new(setup.clone());
    let (query, state) = client.query(index).unwrap();
    let answer = if batch {
        let (other, _) = client.query(0).unwrap();
        http.batch::<Lwe>("index", setup, &[query, other])?
            .remove(0)
    } else {
        http.query::<Lwe>("index", setup, &query)?
    };
    Ok(client.decode(state, &answer)?)
}

#[test]
fn corrupted_index_answers_are_refused_in_the_envelope_and_measured_in_the_entries() {
    let world = world();
    let proxy = Proxy::start(&world.service.url());
    let setup = HttpClient::new(&world.service.url(), None)
        .setup::<Lwe>("index")
        .unwrap();
    let index = 17u64;
    let start = index as usize * RECORD_BYTES;
    let expected = world.records[start..start + RECORD_BYTES].to_vec();
    let framing = [0usize, 8];
    for (batch, route) in [(false, "query"), (true, "batch")] {
        let attempt =
            |http: &HttpClient| judge(fetch_record(http, &setup, index, batch), &expected);
        let [request, response] = clean_run(&proxy, attempt);
        // The answer's 8-byte envelope (after the batch's count and length) is checked.
        let envelope = response.0 + framing[batch as usize];
        let envelope_flips: Vec<Fault> = (0..8 * 8)
            .map(|bit| Fault::Flip(Direction::Response, envelope + bit / 8, 1 << (bit % 8)))
            .collect();
        let envelope_tally = tally(&proxy, &envelope_flips, attempt);
        assert_eq!(envelope_tally.refused, 64, "{route}: {envelope_tally:?}");
        for direction in [Direction::Response, Direction::Request] {
            let body = [request, response][direction as usize];
            let others = tally(&proxy, &other_faults(direction, body), attempt);
            assert_eq!(others.wrong, 0, "{route} {direction:?}: {others:?}");
            let flips = tally(&proxy, &body_flips(direction, body, 1), attempt);
            eprintln!(
                "index {route}: one bit flipped in each of the {} {direction:?} body bytes: {flips:?}",
                body.1
            );
            assert!(flips.refused > 0, "{route} {direction:?}: {flips:?}");
        }
    }
}

/// The keyword check covers the whole row: a flip in the check's, the length's or the value's
/// digits reads as "not found". No fault makes an absent key look present or a present key's
/// value wrong.
#[test]
fn corrupted_keyword_answers_never_give_a_wrong_value() {
    let world = world();
    let proxy = Proxy::start(&world.service.url());
    let setup = HttpClient::new(&world.service.url(), None)
        .setup::<Keyword>("kv")
        .unwrap();
    for (key, expected) in [
        (world.pairs[5].0.clone(), Some(world.pairs[5].1.clone())),
        (b"absent key".to_vec(), None),
    ] {
        for (batch, route) in [(false, "query"), (true, "batch")] {
            let attempt = |http: &HttpClient| {
                let mut client = KeywordClient::new(setup.clone());
                let (query, state) = client.query(&key).unwrap();
                let answer = if batch {
                    http.batch::<Keyword>("kv", &setup, &[query])
                        .map(|mut a| a.remove(0))
                } else {
                    http.query::<Keyword>("kv", &setup, &query)
                };
                match answer.and_then(|a| Ok(client.decode(state, &a)?)) {
                    // A present key reported absent is an error, not a wrong value.
                    Ok(None) if expected.is_some() => Outcome::Refused,
                    other => judge(other, &expected),
                }
            };
            let [request, response] = clean_run(&proxy, attempt);
            for (direction, body) in [
                (Direction::Response, response),
                (Direction::Request, request),
            ] {
                let others = tally(&proxy, &other_faults(direction, body), attempt);
                assert_eq!(others.wrong, 0, "{route} {direction:?}: {others:?}");
                let flips = tally(&proxy, &body_flips(direction, body, 1), attempt);
                assert!(flips.refused > 0, "{route} {direction:?}: {flips:?}");
                assert_eq!(flips.wrong, 0, "{route} {direction:?}: {flips:?}");
            }
        }
    }
}

#[test]
fn corrupted_proofs_never_give_a_wrong_path() {
    let world = world();
    let proxy = Proxy::start(&world.service.url());
    let setup = HttpClient::new(&world.service.url(), None)
        .setup::<TreePir>("tree")
        .unwrap();
    let m = 6u64;
    let hash = leaf_hash(format!("leaf {m}").as_bytes());
    let expected = world.tree.audit_path(m).unwrap();
    let attempt = |http: &HttpClient| {
        let mut client = TreePirClient::new(setup.clone());
        let (queries, state) = client.query(m).unwrap();
        let path = http
            .query::<TreePir>("tree", &setup, &Shards(queries))
            .and_then(|answers| Ok(client.decode(state, &answers.0, &hash)?));
        judge(path, &expected)
    };
    let [request, response] = clean_run(&proxy, attempt);
    for (direction, body) in [
        (Direction::Response, response),
        (Direction::Request, request),
    ] {
        let tally = tally(&proxy, &faults(direction, body, 2), attempt);
        assert_eq!(tally.wrong, 0, "{direction:?}: {tally:?}");
        assert!(tally.refused > 0, "{direction:?}: {tally:?}");
    }
}

/// A fake server on loopback: for each connection it reads the request (head and body) and
/// hands the request head to `respond`, which writes whatever it likes.
fn hostile(respond: impl Fn(&str, &mut TcpStream) + Send + Sync + 'static) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let respond = Arc::new(respond);
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let respond = respond.clone();
            std::thread::spawn(move || {
                let Some(head) = read_request(&mut stream) else {
                    return;
                };
                respond(&head, &mut stream);
                let _ = stream.shutdown(Shutdown::Both);
            });
        }
    });
    url
}

/// Reads one request; returns its head.
fn read_request(stream: &mut TcpStream) -> Option<String> {
    let mut bytes = Vec::new();
    let mut byte = [0u8];
    while !bytes.ends_with(b"\r\n\r\n") {
        stream.read_exact(&mut byte).ok()?;
        bytes.push(byte[0]);
    }
    let head = String::from_utf8_lossy(&bytes).to_lowercase();
    let length: u64 = head
        .lines()
        .find_map(|line| line.strip_prefix("content-length:"))
        .map_or(0, |v| v.trim().parse().unwrap_or(0));
    std::io::copy(&mut stream.take(length), &mut std::io::sink()).ok()?;
    Some(head)
}

/// Writes a response with `headers` and `body`, its length announced.
fn reply(stream: &mut TcpStream, status: &str, headers: &str, body: &[u8]) {
    let head = format!(
        "HTTP/1.1 {status}\r\ncontent-length: {}\r\nconnection: close\r\n{headers}\r\n",
        body.len()
    );
    let _ = stream.write_all(head.as_bytes());
    let _ = stream.write_all(body);
}

/// The ETag header of setup `bytes`.
fn etag(bytes: &[u8]) -> String {
    format!("etag: \"{}\"\r\n", hex::encode(setup_sha256(bytes)))
}

fn index_setup() -> (Server, Vec<u8>) {
    let server =
        Server::from_records(&[7u8; 100], 10, EngineOptions::default(), &|_, _| {}).unwrap();
    let bytes = server.public_setup().to_bytes();
    (server, bytes)
}

#[test]
fn a_hostile_server_cannot_exhaust_memory() {
    // A setup announcing 50 GB is refused before its body is read.
    let url = hostile(|_, stream| {
        let _ = stream
            .write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 53687091200\r\netag: \"00\"\r\n\r\n");
        std::thread::sleep(Duration::from_secs(5));
    });
    let error = HttpClient::with_options(&url, options())
        .fetch_setup("db")
        .map(|setup| setup.bytes)
        .unwrap_err();
    assert!(
        matches!(error, ClientError::TooLarge { limit, .. } if limit == 1 << 30),
        "{error}"
    );
    assert!(
        error.to_string().contains("larger than 1073741824 bytes"),
        "{error}"
    );

    // An endless chunked body is cut at the limit.
    let url = hostile(|_, stream| {
        let _ = stream.write_all(b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n");
        let chunk = [
            format!("{:x}\r\n", 1 << 16).into_bytes(),
            vec![b'x'; 1 << 16],
            b"\r\n".to_vec(),
        ]
        .concat();
        while stream.write_all(&chunk).is_ok() {}
    });
    for route in ["setup", "list"] {
        let http = HttpClient::with_options(
            &url,
            ClientOptions {
                max_setup_bytes: 1 << 20,
                ..options()
            },
        );
        let error = match route {
            "setup" => http.fetch_setup("db").map(|setup| setup.bytes).unwrap_err(),
            _ => http.list().unwrap_err(),
        };
        assert!(
            matches!(error, ClientError::TooLarge { .. }),
            "{route}: {error}"
        );
    }

    // Answers larger than an answer, announced or not.
    let (server, _) = index_setup();
    let setup = server.public_setup().clone();
    let answer_len = Answer::encoded_len(&setup) as usize;
    let mut client = Client::new(setup.clone());
    let (query, _) = client.query(3).unwrap();
    let honest = server.answer(&query).unwrap().to_bytes();
    for (announced, sent, expected) in [
        (Some(u64::MAX / 2), 0, "larger than"),
        (None, answer_len + 1, "larger than"),
        (None, answer_len - 1, "truncated"),
    ] {
        let answer = honest.clone();
        let url = hostile(move |_, stream| match announced {
            Some(length) => {
                let head = format!("HTTP/1.1 200 OK\r\ncontent-length: {length}\r\n\r\n");
                let _ = stream.write_all(head.as_bytes());
            }
            None => {
                let mut body = answer.clone();
                body.resize(sent, 0);
                reply(stream, "200 OK", "", &body);
            }
        });
        let error = HttpClient::with_options(&url, options())
            .query::<Lwe>("db", &setup, &query)
            .unwrap_err();
        assert!(error.to_string().contains(expected), "{error}");
    }
    // A batch response framed with a huge count or length.
    for body in [
        [u32::MAX.to_le_bytes(), 8u32.to_le_bytes()].concat(),
        [1u32.to_le_bytes(), u32::MAX.to_le_bytes()].concat(),
    ] {
        let url = hostile(move |_, stream| reply(stream, "200 OK", "", &body));
        let error = HttpClient::with_options(&url, options())
            .batch::<Lwe>("db", &setup, std::slice::from_ref(&query))
            .unwrap_err();
        assert!(matches!(error, ClientError::Unexpected { .. }), "{error}");
    }

    // An error message of 10 MB is cut, and its control characters are not printed.
    let url = hostile(|_, stream| {
        let mut body = b"no\x1b[31m such database ".to_vec();
        body.resize(10 << 20, b'x');
        reply(stream, "404 Not Found", "", &body);
    });
    let error = HttpClient::with_options(&url, options())
        .fetch_setup("db")
        .map(|setup| setup.bytes)
        .unwrap_err();
    let message = error.to_string();
    assert!(
        matches!(error, ClientError::Status { status: 404, .. }),
        "{message}"
    );
    assert!(message.contains("no [31m such database xxx"), "{message}");
    assert!(
        message.contains("… (cut; 65536 bytes or more)"),
        "{message}"
    );
    assert!(message.len() < 1200, "{}", message.len());
}

#[test]
fn a_hostile_server_cannot_pass_off_a_bad_setup() {
    let (_, index) = index_setup();
    let pairs = [(b"k".to_vec(), b"v".to_vec())];
    let kv = KeywordServer::from_pairs(&pairs, KeywordOptions::default(), &|_, _| {})
        .unwrap()
        .public_setup()
        .to_bytes();

    // A setup of another kind, with its own correct ETag: a clear decoding error.
    let served = kv.clone();
    let url = hostile(move |_, stream| reply(stream, "200 OK", &etag(&served), &served));
    let error = HttpClient::with_options(&url, options())
        .setup::<Lwe>("db")
        .unwrap_err();
    assert!(
        error
            .to_string()
            .contains("message kind 4 is not a public setup"),
        "{error}"
    );

    // Huge lengths and counts inside a setup: decoding refuses them without allocating.
    for (bytes, what) in [(&index, "index"), (&kv, "keyword")] {
        for offset in (40..120).step_by(4) {
            let mut bad = bytes.clone();
            bad[offset..offset + 4].copy_from_slice(&[0xff; 4]);
            let served = bad.clone();
            let url = hostile(move |_, stream| reply(stream, "200 OK", &etag(&served), &served));
            let http = HttpClient::with_options(&url, options());
            let result = match what {
                "index" => http.setup::<Lwe>("db").map(|s| s.to_bytes()),
                _ => http.setup::<Keyword>("db").map(|s| s.to_bytes()),
            };
            match result {
                // A field the decoder does not check (e.g. a norm bound) is read as sent.
                Ok(decoded) => assert_eq!(decoded, bad, "{what} {offset}"),
                Err(error) => assert!(matches!(error, ClientError::Pir(_)), "{error}"),
            }
        }
    }

    // An ETag that does not match the body, or no ETag: refused unless pinned.
    let served = index.clone();
    let wrong_etag = format!("etag: \"{}\"\r\n", "ab".repeat(32));
    let url = hostile(move |_, stream| reply(stream, "200 OK", &wrong_etag, &served));
    let error = HttpClient::with_options(&url, options())
        .fetch_setup("db")
        .map(|setup| setup.bytes)
        .unwrap_err();
    assert!(
        matches!(&error, ClientError::SetupSha256 { against, .. } if against.contains("ETag")),
        "{error}"
    );
    let served = index.clone();
    let url = hostile(move |_, stream| reply(stream, "200 OK", "", &served));
    let error = HttpClient::with_options(&url, options())
        .fetch_setup("db")
        .map(|setup| setup.bytes)
        .unwrap_err();
    assert!(
        error.to_string().contains("the server sent no ETag"),
        "{error}"
    );
    let pinned = ClientOptions {
        setup_sha256: Some(setup_sha256(&index)),
        ..options()
    };
    assert_eq!(
        HttpClient::with_options(&url, pinned)
            .fetch_setup("db")
            .map(|setup| setup.bytes)
            .unwrap(),
        index
    );

    // 304 to a request that offered no cached copy.
    let url = hostile(|_, stream| reply(stream, "304 Not Modified", "", b""));
    let error = HttpClient::with_options(&url, options())
        .fetch_setup("db")
        .map(|setup| setup.bytes)
        .unwrap_err();
    assert!(error.to_string().contains("304"), "{error}");
}

/// The cached setup file and its ETag file under `dir`.
fn cache_files(dir: &Path, name: &str) -> (std::path::PathBuf, std::path::PathBuf) {
    let folder = std::fs::read_dir(dir)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    (
        folder.join(format!("{name}.setup")),
        folder.join(format!("{name}.etag")),
    )
}

#[test]
fn a_damaged_cache_entry_is_dropped_and_fetched_again() {
    let (_, index) = index_setup();
    // A server that answers 304 to any If-None-Match: a damaged cache offered to it would be
    // taken for current.
    let served = index.clone();
    let url = hostile(move |head, stream| {
        if head.contains("if-none-match") {
            reply(stream, "304 Not Modified", &etag(&served), b"");
        } else {
            reply(stream, "200 OK", &etag(&served), &served);
        }
    });
    let cache = tempfile::tempdir().unwrap();
    let cached = || {
        let options = ClientOptions {
            cache_dir: Some(cache.path().to_path_buf()),
            ..options()
        };
        HttpClient::with_options(&url, options)
            .fetch_setup("db")
            .map(|setup| setup.bytes)
    };
    assert_eq!(cached().unwrap(), index);
    let (setup_file, etag_file) = cache_files(cache.path(), "db");
    assert_eq!(std::fs::read(&setup_file).unwrap(), index);
    type Damage = fn(&Path, &Path);
    let damages: [(&str, Damage); 5] = [
        ("a flipped bit in the hint", |setup, _| {
            let mut bytes = std::fs::read(setup).unwrap();
            let last = bytes.len() - 1;
            bytes[last] ^= 1;
            std::fs::write(setup, bytes).unwrap();
        }),
        ("a flipped bit in the kind", |setup, _| {
            let mut bytes = std::fs::read(setup).unwrap();
            bytes[6] ^= 4;
            std::fs::write(setup, bytes).unwrap();
        }),
        ("a truncated setup", |setup, _| {
            let bytes = std::fs::read(setup).unwrap();
            std::fs::write(setup, &bytes[..bytes.len() / 2]).unwrap();
        }),
        ("a garbled ETag", |_, etag| {
            std::fs::write(etag, "\"xyz\"").unwrap()
        }),
        ("a missing ETag", |_, etag| {
            std::fs::remove_file(etag).unwrap()
        }),
    ];
    for (what, damage) in damages {
        damage(&setup_file, &etag_file);
        assert_eq!(cached().unwrap(), index, "{what}");
        assert_eq!(
            std::fs::read(&setup_file).unwrap(),
            index,
            "{what}: repaired"
        );
    }
}

#[test]
fn a_pinned_setup_sha256_refuses_another_setup_and_caches_nothing() {
    let world = world();
    let cache = tempfile::tempdir().unwrap();
    let direct = HttpClient::new(&world.service.url(), None);
    let index = direct
        .fetch_setup("index")
        .map(|setup| setup.bytes)
        .unwrap();
    let pinned = |sha256| {
        let options = ClientOptions {
            cache_dir: Some(cache.path().to_path_buf()),
            setup_sha256: Some(sha256),
            ..options()
        };
        HttpClient::with_options(&world.service.url(), options)
    };
    let error = pinned([7; 32])
        .fetch_setup("index")
        .map(|setup| setup.bytes)
        .unwrap_err();
    assert!(
        matches!(&error, ClientError::SetupSha256 { against, .. } if against.contains("pinned")),
        "{error}"
    );
    assert!(error.to_string().contains("nothing was cached"), "{error}");
    assert_eq!(std::fs::read_dir(cache.path()).unwrap().count(), 0);
    let sha256 = setup_sha256(&index);
    assert_eq!(
        pinned(sha256)
            .fetch_setup("index")
            .map(|setup| setup.bytes)
            .unwrap(),
        index
    );
    // The cached copy serves a pin that matches it, and is not offered for another pin.
    assert_eq!(
        pinned(sha256)
            .fetch_setup("index")
            .map(|setup| setup.bytes)
            .unwrap(),
        index
    );
    assert!(pinned([7; 32])
        .fetch_setup("index")
        .map(|setup| setup.bytes)
        .is_err());
    let (setup_file, _) = cache_files(cache.path(), "index");
    assert_eq!(std::fs::read(setup_file).unwrap(), index);
    let list = direct.list().unwrap();
    let info = list.iter().find(|d| d.name == "index").unwrap();
    assert_eq!(info.setup_sha256, hex::encode(sha256));
}
