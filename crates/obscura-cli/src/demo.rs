//! `obscura demo`: a private retrieval over HTTP on built-in data, step by step.

use std::time::{Duration, Instant};

use anyhow::{ensure, Result};
use clap::Args;
use obscura_pir::lwe::{Client, Layout, Lwe, SetupOptions};
use obscura_pir::PirClient;
use obscura_server::catalog::Catalog;
use obscura_server::client::HttpClient;
use obscura_server::service::{BackgroundService, ServiceConfig};

use crate::progress;

/// Arguments of `obscura demo`.
#[derive(Args)]
pub struct DemoArgs {
    /// Number of records in the built-in database.
    #[arg(long, default_value_t = 16_384)]
    records: u64,
    /// Bytes per record.
    #[arg(long, default_value_t = 128)]
    record_size: u64,
}

/// The built-in database: readable, deterministic records.
fn built_in_records(records: u64, record_bytes: u64) -> Vec<u8> {
    let mut data = Vec::with_capacity((records * record_bytes) as usize);
    let mut x = 0x243f_6a88_85a3_08d3u64;
    for i in 0..records {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let mut record = format!("record {i:06}: secret token {x:016x} ").into_bytes();
        record.resize(record_bytes as usize, b'.');
        data.extend_from_slice(&record);
    }
    data
}

fn ms(duration: Duration) -> String {
    format!("{:.3} ms", duration.as_secs_f64() * 1e3)
}

/// The two layouts the demo serves, by database name.
const LAYOUTS: [(&str, &str, Layout); 2] = [
    (
        "simplepir",
        "SimplePIR layout (near-square matrix)",
        Layout::Square,
    ),
    (
        "frodopir",
        "FrodoPIR layout (one record per column)",
        Layout::OnePerColumn,
    ),
];

/// Runs `obscura demo`.
pub fn run(args: DemoArgs) -> Result<()> {
    ensure!(args.records >= 1, "--records must be at least 1");
    ensure!(args.record_size >= 1, "--record-size must be at least 1");
    let data = built_in_records(args.records, args.record_size);
    println!(
        "Obscura demo: {} records of {} bytes ({:.1} MiB), built in.\n",
        args.records,
        args.record_size,
        data.len() as f64 / (1 << 20) as f64
    );
    let mut catalog = Catalog::default();
    for (name, _, layout) in LAYOUTS {
        let options = SetupOptions {
            layout,
            ..SetupOptions::default()
        };
        let started = Instant::now();
        let server = progress::setup_with_bar(&data, args.record_size, options, "server setup")?;
        println!("server setup of {name:?}: {}", ms(started.elapsed()));
        catalog.insert(name.into(), server)?;
    }
    let service =
        BackgroundService::start(catalog, ServiceConfig::default(), "127.0.0.1:0".parse()?)?;
    println!("serving both on {} (loopback)\n", service.url());

    let cache = tempfile::tempdir()?;
    let http = HttpClient::new(&service.url(), Some(cache.path().to_path_buf()));
    let wanted = [args.records / 3, args.records - 1, 0];
    for (name, title, _) in LAYOUTS {
        println!("== {title}: GET /v1/databases/{name}/setup, then POST .../query");
        let started = Instant::now();
        let setup = http.setup::<Lwe>(name)?;
        let download = started.elapsed();
        let g = setup.geometry();
        println!(
            "  matrix {} x {}, p = 2^{}, n = {} ({}, {} A)",
            g.rows(),
            g.cols(),
            g.log_p(),
            setup.params().n(),
            setup.params().set.name(),
            setup.params().matrix.name()
        );
        let mut client = Client::new(setup.clone());
        let started = Instant::now();
        client.preprocess(wanted.len())?;
        println!(
            "  client setup (download + check) {}, preprocessing of {} queries {}",
            ms(download),
            wanted.len(),
            ms(started.elapsed())
        );
        for (i, &index) in wanted.iter().enumerate() {
            let started = Instant::now();
            let (query, state) = client.query(index)?;
            let query_time = started.elapsed();
            let started = Instant::now();
            let answer = http.query::<Lwe>(name, &setup, &query)?;
            let round_trip = started.elapsed();
            let started = Instant::now();
            let record = client.decode(state, &answer)?;
            let decode_time = started.elapsed();
            let start = (index * args.record_size) as usize;
            ensure!(
                record == data[start..start + args.record_size as usize],
                "record {index} came back wrong"
            );
            if i == 0 {
                println!(
                    "  sizes: public setup (hint) {} B, query {} B, answer {} B",
                    setup.to_bytes().len(),
                    query.to_bytes().len(),
                    answer.to_bytes().len()
                );
            }
            println!(
                "  record {index}: query {} (online, prepared), HTTP round trip {}, decode {} -> {:?}",
                ms(query_time),
                ms(round_trip),
                ms(decode_time),
                String::from_utf8_lossy(&record[..record.len().min(48)])
            );
        }
        println!();
    }
    drop(service);
    println!("Every record matched the original; the server saw only LWE ciphertexts.");
    Ok(())
}
