//! The `service` preset: queries per second and latency of the HTTP service on loopback against
//! the number of concurrent clients.

use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use obscura_client::http::HttpClient;
use obscura_pir::lwe::{Client, EngineOptions, Lwe};
use obscura_pir::PirClient;
use obscura_service::catalog::Catalog;
use obscura_service::service::{BackgroundService, ServiceConfig};
use serde::Serialize;

use crate::lwe::report::Report;
use crate::lwe::{describe, setup_server};
use crate::measure::generate;
use crate::progress::Progress;
use obscura_math::threads::Pools;

/// Concurrent clients measured.
const CONCURRENCY: [usize; 4] = [1, 4, 16, 64];

/// The HTTP service at one level of concurrency.
#[derive(Clone, Debug, Serialize)]
pub struct ServiceLevel {
    /// Clients sending queries at once.
    pub concurrency: usize,
    /// Queries sent in all.
    pub queries: usize,
    /// Queries answered per second.
    pub queries_per_second: f64,
    /// Median round trip in milliseconds.
    pub p50_ms: f64,
    /// 99th percentile round trip in milliseconds.
    pub p99_ms: f64,
}

/// Prints the table of the service at each level of concurrency.
pub fn print_levels(levels: &[ServiceLevel]) {
    println!("| concurrent clients | queries | queries/s | p50 | p99 |\n|---|---|---|---|---|");
    for level in levels {
        println!(
            "| {} | {} | {:.1} | {:.1} ms | {:.1} ms |",
            level.concurrency, level.queries, level.queries_per_second, level.p50_ms, level.p99_ms
        );
    }
}

/// Runs the service preset on a database set up with `options` and fills `report`.
pub fn run(
    records: u64,
    record_bytes: u64,
    options: EngineOptions,
    pools: &Pools,
    progress: &dyn Progress,
    report: &mut Report,
) -> Result<()> {
    let data = Arc::new(pools.all.install(|| generate(records, record_bytes))?);
    let server = setup_server::<Lwe>(&data, record_bytes, options, pools, progress, report)?;
    let setup = server.public_setup().clone();
    describe(report, setup.layer(), options.layout, records, record_bytes);
    let mut catalog = Catalog::default();
    catalog.insert("bench".into(), server)?;
    // As `obscura serve` runs.
    obscura_service::allocator::keep_freed_memory();
    let service =
        BackgroundService::start(catalog, ServiceConfig::default(), "127.0.0.1:0".parse()?)
            .context("cannot start the service")?;
    let url = service.url();
    let mut correct = true;
    for concurrency in CONCURRENCY {
        let per_client = (64 / concurrency).max(2);
        // Clients prepare their queries first; the clock starts when all are ready.
        let ready = Arc::new(Barrier::new(concurrency + 1));
        let workers: Vec<_> = (0..concurrency)
            .map(|worker| {
                let (url, setup, data, ready) =
                    (url.clone(), setup.clone(), data.clone(), ready.clone());
                std::thread::spawn(move || -> Result<(Vec<Duration>, bool)> {
                    let http = HttpClient::new(&url, None);
                    let mut client = Client::new(setup.clone());
                    let prepared = client.preprocess(per_client);
                    ready.wait();
                    prepared?;
                    let mut latencies = Vec::with_capacity(per_client);
                    let mut correct = true;
                    for i in 0..per_client {
                        let index = ((worker * 7919 + i * 104_729) as u64) % records;
                        let (query, state) = client.query(index)?;
                        let sent = Instant::now();
                        let answer = http.query::<Lwe>("bench", &setup, &query)?;
                        latencies.push(sent.elapsed());
                        let start = (index * record_bytes) as usize;
                        correct &= client.decode(state, &answer)?
                            == data[start..start + record_bytes as usize];
                    }
                    Ok((latencies, correct))
                })
            })
            .collect();
        ready.wait();
        let started = Instant::now();
        let mut latencies = Vec::new();
        for worker in workers {
            let (times, ok) = worker
                .join()
                .map_err(|_| anyhow::anyhow!("a client thread panicked"))??;
            latencies.extend(times);
            correct &= ok;
        }
        let elapsed = started.elapsed().as_secs_f64();
        latencies.sort();
        let percentile =
            |p: f64| latencies[((latencies.len() as f64 * p) as usize).min(latencies.len() - 1)];
        report.service.push(ServiceLevel {
            concurrency,
            queries: latencies.len(),
            queries_per_second: latencies.len() as f64 / elapsed,
            p50_ms: percentile(0.5).as_secs_f64() * 1e3,
            p99_ms: percentile(0.99).as_secs_f64() * 1e3,
        });
    }
    drop(service);
    report.correct = correct;
    Ok(())
}
