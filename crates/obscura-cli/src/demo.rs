//! `obscura demo`: a private retrieval over HTTP on built-in data, step by step.

use std::time::{Duration, Instant};

use anyhow::{bail, ensure, Context, Result};
use clap::Args;
use obscura_client::http::HttpClient;
use obscura_client::{Ask, Outcome, Session, Step};
use obscura_pir::lwe::{EngineOptions, Layout};
use obscura_registry::builders::builder;
use obscura_registry::Registry;
use obscura_service::catalog::Catalog;
use obscura_service::service::{BackgroundService, ServiceConfig};

use obscura_store::build::{build, BuildOptions, Records};

use crate::progress;

/// Arguments of `obscura demo`.
#[derive(Args)]
pub struct DemoArgs {
    /// Number of records in the built-in database.
    #[arg(long, default_value_t = 16_384, value_parser = clap::value_parser!(u64).range(1..))]
    records: u64,
    /// Bytes per record.
    #[arg(long, default_value_t = 128, value_parser = clap::value_parser!(u64).range(1..))]
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

/// A database the demo serves: its name, how it is built, and what it shows.
struct Shown {
    name: &'static str,
    builder: &'static str,
    layout: Layout,
    title: &'static str,
}

/// The databases the demo serves, in the order it shows them.
const SHOWN: [Shown; 4] = [
    Shown {
        name: "simplepir",
        builder: "index",
        layout: Layout::Square,
        title: "SimplePIR layout (near-square matrix)",
    },
    Shown {
        name: "frodopir",
        builder: "index",
        layout: Layout::OnePerColumn,
        title: "FrodoPIR layout (one record per column)",
    },
    Shown {
        name: "doublepir",
        builder: "double",
        layout: Layout::Square,
        title:
            "DoublePIR (a second LWE layer over the SimplePIR layout's hint: the hint no longer \
                grows with the database, and a query asks for every row a record spans)",
    },
    Shown {
        name: "ypir-sp",
        builder: "ypir-sp",
        layout: Layout::Square,
        title: "YPIR+SP (no hint: the query carries fresh packing keys, the answer is packed \
                into ring ciphertexts; records of any size)",
    },
];

/// Runs `obscura demo`.
pub fn run(args: DemoArgs) -> Result<()> {
    let data = built_in_records(args.records, args.record_size);
    println!(
        "Obscura demo: {} records of {} bytes ({:.1} MiB), built in.\n",
        args.records,
        args.record_size,
        data.len() as f64 / (1 << 20) as f64
    );
    let mut catalog = Catalog::default();
    let records = Records::raw(&data, args.record_size);
    let shape = records.shape();
    for shown in &SHOWN {
        let options = BuildOptions {
            scheme: builder(shown.builder).context("a built-in scheme")?,
            engine: EngineOptions {
                layout: shown.layout,
                ..EngineOptions::default()
            },
            arity: None,
        };
        let started = Instant::now();
        let database = progress::with_bars(options.steps(&shape), |progress| {
            build(records, &options, progress)
        })?;
        println!("built {:?}: {}", shown.name, ms(started.elapsed()));
        catalog.insert(shown.name.into(), database)?;
    }
    let service =
        BackgroundService::start(catalog, ServiceConfig::default(), "127.0.0.1:0".parse()?)?;
    println!("serving all four on {} (loopback)\n", service.url());

    let cache = tempfile::tempdir()?;
    let http = HttpClient::new(&service.url(), Some(cache.path().to_path_buf()));
    let demo = Demo {
        http: &http,
        data: &data,
        record_bytes: args.record_size,
        wanted: [args.records / 3, args.records - 1, 0],
    };
    for shown in &SHOWN {
        demo.show(shown)?;
    }
    drop(service);
    println!("Every record matched the original; the server saw only LWE and RLWE ciphertexts.");
    Ok(())
}

/// The retrievals the demo makes from each database.
struct Demo<'a> {
    http: &'a HttpClient,
    data: &'a [u8],
    record_bytes: u64,
    wanted: [u64; 3],
}

impl Demo<'_> {
    /// Fetches the setup of the database `shown`, then each wanted record, checking it and
    /// printing the sizes and the time of every step.
    fn show(&self, shown: &Shown) -> Result<()> {
        let name = shown.name;
        println!(
            "== {}: GET /v1/databases/{name}/setup, then POST .../query",
            shown.title
        );
        let started = Instant::now();
        let setup = self.http.fetch_setup(name)?;
        let download = started.elapsed();
        let policy = self.http.policy();
        let registry = Registry::default();
        let (sha256, from_cache) = (setup.sha256, setup.from_cache);
        let started = Instant::now();
        let mut session = Session::new(name, &setup.bytes, sha256, from_cache, &policy, &registry)?;
        println!("  {}", session.listing().description);
        println!(
            "  public setup {} B: download and check {}, decoded in {}",
            setup.bytes.len(),
            ms(download),
            ms(started.elapsed())
        );
        for &index in &self.wanted {
            let started = Instant::now();
            let (mut exchange, request) = session.begin(Ask::Record(index))?;
            let query_time = started.elapsed();
            let started = Instant::now();
            let answer = self.http.send(name, &request)?;
            let round_trip = started.elapsed();
            let started = Instant::now();
            let step = session.receive(&mut exchange, Ok(&answer))?;
            let decode_time = started.elapsed();
            let Step::Done(Outcome::Record(record)) = step else {
                bail!("record {index} of {name}: the lookup did not end with the record");
            };
            let start = (index * self.record_bytes) as usize;
            ensure!(
                record == self.data[start..start + self.record_bytes as usize],
                "record {index} came back wrong"
            );
            println!(
                "  record {index}: query {} B in {}, HTTP round trip {}, answer {} B decoded in {} -> {:?}",
                request.body.len(),
                ms(query_time),
                ms(round_trip),
                answer.len(),
                ms(decode_time),
                String::from_utf8_lossy(&record[..record.len().min(48)])
            );
        }
        println!();
        Ok(())
    }
}
