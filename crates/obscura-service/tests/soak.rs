//! A bounded soak test of the service under a slow-client attack, all on loopback (not in CI:
//! it runs for two minutes and opens about 2,400 sockets):
//!
//! ```text
//! cargo test -p obscura-service --test soak -- --ignored --nocapture
//! ```
//!
//! A 64 MiB database; 8 honest clients query it in a loop (each checks every record) for
//! `SOAK_SECONDS` (default 60) without attackers, then as long again while 1,100 connections
//! send a query's headers and 3 of its body bytes and stall, and 64 clients trickle their
//! headers a byte a second; every attacker connects again as soon as the server closes it. The
//! honest clients' 99th-percentile latency under attack must stay within 2x of the run without
//! attackers, and no honest request may fail.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use obscura_client::http::HttpClient;
use obscura_pir::lwe::{Client, EngineOptions, Layout, Lwe, Server};
use obscura_pir::PirClient;
use obscura_service::catalog::Catalog;
use obscura_service::service::{BackgroundService, ServiceConfig};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const RECORDS: u64 = 1 << 16;
const RECORD_BYTES: u64 = 1024;
const HONEST_CLIENTS: usize = 8;
const STALLED_BODIES: usize = 1100;
const TRICKLERS: usize = 64;

fn record(index: u64) -> Vec<u8> {
    (0..RECORD_BYTES)
        .map(|i| (index.wrapping_mul(0x9e37_79b9) ^ i.wrapping_mul(31)) as u8)
        .collect()
}

/// Room for the attack's sockets on both ends.
fn raise_open_file_limit() {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit/setrlimit read and write the struct passed by pointer, which lives for
    // the call.
    #[allow(unsafe_code)]
    unsafe {
        assert_eq!(libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit), 0);
        limit.rlim_cur = limit.rlim_max.min(16_384);
        assert_eq!(libc::setrlimit(libc::RLIMIT_NOFILE, &limit), 0);
    }
    assert!(
        limit.rlim_cur >= 4096,
        "the open file limit ({}) is too low for the attack",
        limit.rlim_cur
    );
}

/// Honest latencies in a run, and the number of failed requests.
struct Run {
    latencies: Vec<Duration>,
    failures: u64,
}

impl Run {
    fn percentile(&self, p: f64) -> Duration {
        let mut sorted = self.latencies.clone();
        sorted.sort();
        sorted[((sorted.len() - 1) as f64 * p) as usize]
    }
}

/// 8 honest clients querying for `length`, each with its own connection.
fn honest_run(url: &str, length: Duration) -> Run {
    let failures = AtomicU64::new(0);
    let latencies = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..HONEST_CLIENTS as u64)
            .map(|worker| {
                let failures = &failures;
                scope.spawn(move || {
                    let http = HttpClient::new(url, None);
                    let mut client = Client::new(http.setup::<Lwe>("db").expect("setup"));
                    let mut latencies = Vec::new();
                    let started = Instant::now();
                    let mut index = worker * 7919;
                    while started.elapsed() < length {
                        index = (index * 48_271 + 11) % RECORDS;
                        let (query, state) = client.query(index).expect("query");
                        let sent = Instant::now();
                        let answer = http.query::<Lwe>("db", client.setup(), &query);
                        let latency = sent.elapsed();
                        match answer.map(|a| client.decode(state, &a)) {
                            Ok(Ok(got)) if got == record(index) => latencies.push(latency),
                            other => {
                                eprintln!("honest request failed: {:?}", other.err());
                                failures.fetch_add(1, Ordering::Relaxed);
                            }
                        }
                    }
                    latencies
                })
            })
            .collect();
        workers
            .into_iter()
            .flat_map(|w| w.join().unwrap())
            .collect()
    });
    Run {
        latencies,
        failures: failures.into_inner(),
    }
}

/// What the attackers did.
#[derive(Default)]
struct AttackCounts {
    connections: AtomicU64,
}

/// Runs the attack until `stop`: stalled bodies and header tricklers, each reconnecting as
/// soon as the server closes it.
async fn attack(address: String, stop: Arc<AtomicBool>, counts: Arc<AttackCounts>) {
    let mut tasks = Vec::new();
    for i in 0..STALLED_BODIES + TRICKLERS {
        let (address, stop, counts) = (address.clone(), stop.clone(), counts.clone());
        let trickle = i >= STALLED_BODIES;
        tasks.push(tokio::spawn(async move {
            let request = format!(
                "POST /v1/databases/db/query HTTP/1.1\r\nhost: {address}\r\ncontent-length: 100\r\n\r\nabc"
            );
            while !stop.load(Ordering::Relaxed) {
                let Ok(mut stream) = tokio::net::TcpStream::connect(&address).await else {
                    tokio::time::sleep(Duration::from_millis(10)).await;
                    continue;
                };
                counts.connections.fetch_add(1, Ordering::Relaxed);
                let mut sink = [0u8; 512];
                if trickle {
                    for byte in request.bytes() {
                        if stop.load(Ordering::Relaxed) || stream.write_all(&[byte]).await.is_err()
                        {
                            break;
                        }
                        tokio::time::sleep(Duration::from_secs(1)).await;
                    }
                } else if stream.write_all(request.as_bytes()).await.is_ok() {
                    // Hold the connection until the server closes it (or the run ends).
                    while !stop.load(Ordering::Relaxed) {
                        match tokio::time::timeout(
                            Duration::from_millis(500),
                            stream.read(&mut sink),
                        )
                        .await
                        {
                            Ok(Ok(0)) | Ok(Err(_)) => break,
                            _ => {}
                        }
                    }
                }
            }
        }));
    }
    for task in tasks {
        let _ = task.await;
    }
}

#[test]
#[ignore = "a two-minute soak test with 2,400 sockets: run by hand (see the file's docs)"]
fn honest_clients_keep_their_latency_under_a_slow_client_attack() {
    raise_open_file_limit();
    let length = Duration::from_secs(
        std::env::var("SOAK_SECONDS")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(60),
    );
    let data: Vec<u8> = (0..RECORDS).flat_map(record).collect();
    let options = EngineOptions {
        layout: Layout::Square,
        ..EngineOptions::default()
    };
    let server = Server::from_records(&data, RECORD_BYTES, options, &|_, _| {}).unwrap();
    drop(data);
    let mut catalog = Catalog::default();
    catalog.insert("db".into(), server).unwrap();
    let service = BackgroundService::start(
        catalog,
        ServiceConfig::default(),
        "127.0.0.1:0".parse().unwrap(),
    )
    .unwrap();
    let url = service.url();

    let quiet = honest_run(&url, length);

    let stop = Arc::new(AtomicBool::new(false));
    let counts = Arc::new(AttackCounts::default());
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let address = url.trim_start_matches("http://").to_string();
    let attackers = runtime.spawn(attack(address, stop.clone(), counts.clone()));
    std::thread::sleep(Duration::from_secs(3)); // let the attack fill the server
    let attacked = honest_run(&url, length);
    stop.store(true, Ordering::Relaxed);
    runtime.block_on(attackers).unwrap();

    let report = |name: &str, run: &Run| {
        println!(
            "{name}: {} requests, {} failed, p50 {:?}, p99 {:?}, max {:?}",
            run.latencies.len(),
            run.failures,
            run.percentile(0.5),
            run.percentile(0.99),
            run.latencies.iter().max().unwrap()
        );
    };
    report("without attackers", &quiet);
    report("under attack", &attacked);
    println!(
        "attack: {} connections opened by {} stalled bodies and {} tricklers",
        counts.connections.load(Ordering::Relaxed),
        STALLED_BODIES,
        TRICKLERS
    );
    assert_eq!((quiet.failures, attacked.failures), (0, 0));
    assert!(
        attacked.percentile(0.99) <= quiet.percentile(0.99) * 2,
        "p99 under attack {:?} exceeds twice the quiet p99 {:?}",
        attacked.percentile(0.99),
        quiet.percentile(0.99)
    );
}
