//! The `service` and `service-sharded` presets: queries per second and latency of the HTTP
//! service on loopback against the number of concurrent clients, serving a database as one and
//! from its shards behind a gateway.

use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use obscura_client::http::HttpClient;
use obscura_math::expand::MatrixSeed;
use obscura_pir::lwe::{
    Client, EngineOptions, Lwe, PublicSetup, RecordFormat, Shard, ShardPlan, Split,
};
use obscura_pir::PirClient;
use obscura_registry::setup_sha256;
use obscura_service::catalog::Catalog;
use obscura_service::gateway::{Gateway, GatewayOptions};
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
    /// CPU time of this process (clients, service and whatever it serves from, on every
    /// thread) per query, in milliseconds.
    pub cpu_ms_per_query: f64,
}

/// `concurrency` clients querying database `name` of the service at `url` at once, each
/// checking the records it retrieves against `data`: the level measured, and whether every
/// record was right.
fn measure(
    url: &str,
    name: &str,
    setup: &PublicSetup,
    data: &Arc<Vec<u8>>,
    record_bytes: u64,
    concurrency: usize,
) -> Result<(ServiceLevel, bool)> {
    let records = setup.geometry().records();
    let per_client = (64 / concurrency).max(2);
    // Clients prepare their queries first; the clock starts when all are ready.
    let ready = Arc::new(Barrier::new(concurrency + 1));
    let workers: Vec<_> = (0..concurrency)
        .map(|worker| {
            let (url, name, setup, data, ready) = (
                url.to_string(),
                name.to_string(),
                setup.clone(),
                data.clone(),
                ready.clone(),
            );
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
                    let answer = http.query::<Lwe>(&name, &setup, &query)?;
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
    let (started, cpu) = (Instant::now(), cpu_seconds());
    let mut latencies = Vec::new();
    let mut correct = true;
    for worker in workers {
        let (times, ok) = worker
            .join()
            .map_err(|_| anyhow::anyhow!("a client thread panicked"))??;
        latencies.extend(times);
        correct &= ok;
    }
    let (elapsed, cpu) = (started.elapsed().as_secs_f64(), cpu_seconds() - cpu);
    latencies.sort();
    let percentile =
        |p: f64| latencies[((latencies.len() as f64 * p) as usize).min(latencies.len() - 1)];
    let level = ServiceLevel {
        concurrency,
        queries: latencies.len(),
        queries_per_second: latencies.len() as f64 / elapsed,
        p50_ms: percentile(0.5).as_secs_f64() * 1e3,
        p99_ms: percentile(0.99).as_secs_f64() * 1e3,
        cpu_ms_per_query: cpu * 1e3 / latencies.len() as f64,
    };
    Ok((level, correct))
}

/// CPU seconds this process has used, on every thread.
fn cpu_seconds() -> f64 {
    let mut usage = std::mem::MaybeUninit::<libc::rusage>::uninit();
    // SAFETY: getrusage writes the struct it is given and reads nothing else.
    let usage = unsafe {
        libc::getrusage(libc::RUSAGE_SELF, usage.as_mut_ptr());
        usage.assume_init()
    };
    let seconds = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 * 1e-6;
    seconds(usage.ru_utime) + seconds(usage.ru_stime)
}

/// Prints the table of the service at each level of concurrency.
pub fn print_levels(levels: &[ServiceLevel]) {
    println!(
        "| concurrent clients | queries | queries/s | p50 | p99 | CPU per query |\n|---|---|---|---|---|---|"
    );
    for level in levels {
        println!(
            "| {} | {} | {:.1} | {:.1} ms | {:.1} ms | {:.1} ms |",
            level.concurrency,
            level.queries,
            level.queries_per_second,
            level.p50_ms,
            level.p99_ms,
            level.cpu_ms_per_query
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
        let (level, ok) = measure(&url, "bench", &setup, &data, record_bytes, concurrency)?;
        report.service.push(level);
        correct &= ok;
    }
    drop(service);
    report.correct = correct;
    Ok(())
}

/// Concurrent clients of the `service-sharded` preset.
const SHARDED_CONCURRENCY: [usize; 3] = [1, 8, 32];

/// Shards of the `service-sharded` preset.
const SHARDS: usize = 4;

/// Runs the `service-sharded` preset: one database served directly and as `SHARDS` shards
/// by rows behind a gateway, all in this process on loopback, the two measured in turn at each
/// level of concurrency; fills `report` (`service` direct, `service_sharded` through the
/// gateway).
pub fn run_sharded(
    records: u64,
    record_bytes: u64,
    options: EngineOptions,
    pools: &Pools,
    progress: &dyn Progress,
    report: &mut Report,
) -> Result<()> {
    let data = Arc::new(pools.all.install(|| generate(records, record_bytes))?);
    let seed = MatrixSeed::random()?;
    let data_bytes = data.len() as u64;
    let plan = ShardPlan::new(
        data_bytes,
        record_bytes,
        RecordFormat::Raw,
        options,
        Split::Rows,
        SHARDS,
        seed,
    )?;
    let (whole, shards) = pools.all.install(|| -> Result<_> {
        let _shown = progress.start(&["setting up the whole database, then its shards"]);
        let whole = plan.whole(&data)?;
        let shards = (0..SHARDS)
            .map(|i| {
                let input = plan.input(i);
                Ok(plan.build(i, &data[input.start as usize..input.end as usize])?)
            })
            .collect::<Result<Vec<Shard>>>()?;
        Ok((whole, shards))
    })?;
    let parts: Vec<_> = shards.iter().map(Shard::setup_part).collect();
    let setup = plan.setup(&parts)?;
    anyhow::ensure!(
        &setup == whole.public_setup(),
        "the shards do not combine into the whole database's setup"
    );
    describe(report, setup.layer(), options.layout, records, record_bytes);
    report.bytes.hint = setup.to_bytes().len() as u64;
    obscura_service::allocator::keep_freed_memory();
    let start = |catalog: Catalog| {
        BackgroundService::start(catalog, ServiceConfig::default(), "127.0.0.1:0".parse()?)
            .context("cannot start the service")
    };
    let mut direct = Catalog::default();
    direct.insert("bench".into(), whole)?;
    let direct = start(direct)?;
    let mut links = Vec::new();
    let mut shard_services = Vec::new();
    for shard in shards {
        let (tag, sha256) = (
            shard.setup().tag(),
            hex::encode(setup_sha256(&shard.setup().to_bytes())),
        );
        let mut catalog = Catalog::default();
        catalog.insert(format!("bench.{}", shard.index()), shard)?;
        let service = start(catalog)?;
        links.push((tag, sha256, vec![service.url()]));
        shard_services.push(service);
    }
    let gateway = Gateway::from_parts(
        plan,
        setup.clone(),
        links,
        &GatewayOptions {
            timeout: ServiceConfig::default().request_timeout,
            ..GatewayOptions::default()
        },
    );
    let mut catalog = Catalog::default();
    catalog.insert("bench".into(), gateway.into_database())?;
    let gateway = start(catalog)?;
    let mut correct = true;
    for concurrency in SHARDED_CONCURRENCY {
        for (url, levels) in [
            (direct.url(), &mut report.service),
            (gateway.url(), &mut report.service_sharded),
        ] {
            let (level, ok) = measure(&url, "bench", &setup, &data, record_bytes, concurrency)?;
            levels.push(level);
            correct &= ok;
        }
    }
    report.correct = correct;
    Ok(())
}
