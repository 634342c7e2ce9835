//! `obscura demo`: a private retrieval over HTTP on built-in data, step by step.

use std::time::{Duration, Instant};

use anyhow::{ensure, Result};
use clap::Args;
use obscura_client::http::HttpClient;
use obscura_pir::double::{self, Double};
use obscura_pir::lwe::{self, Layer, Layout, Lwe, SetupOptions};
use obscura_pir::ypir::{self, Ypir};
use obscura_pir::{Encode, PirClient, PirError, Scheme, SetupMessage};
use obscura_service::catalog::Catalog;
use obscura_service::service::{BackgroundService, ServiceConfig};

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

/// The LWE engine's two layouts the demo serves, by database name.
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

/// The DoublePIR database's name and title.
const DOUBLE: (&str, &str) = (
    "doublepir",
    "DoublePIR (a second LWE layer over the SimplePIR layout's hint)",
);

/// The YPIR database's name and title.
const YPIR: (&str, &str) = (
    "ypir",
    "YPIR (no hint: the query carries packing keys, the answer is packed into 12 KiB ciphertexts)",
);

/// What the demo shows of a database, per scheme.
trait Shown: Scheme {
    /// The shape and parameters of the database, on one line.
    fn describe(setup: &Self::Setup) -> String;

    /// Prepares `count` queries ahead of time, where the scheme can; says what it did.
    fn preprocess(client: &mut Self::Client, count: usize) -> Result<String, PirError>;
}

/// One line for the layer of a database.
fn describe_layer(layer: &Layer) -> String {
    let (g, params) = (layer.geometry(), layer.params());
    format!(
        "matrix {} x {}, p = 2^{}, n = {} ({}, {} A)",
        g.rows(),
        g.cols(),
        g.log_p(),
        params.n(),
        params.set.name(),
        params.matrix.name()
    )
}

impl Shown for Lwe {
    fn describe(setup: &lwe::PublicSetup) -> String {
        describe_layer(setup.layer())
    }

    fn preprocess(client: &mut lwe::Client, count: usize) -> Result<String, PirError> {
        client.preprocess(count)?;
        Ok(format!("preprocessing of {count} queries"))
    }
}

impl Shown for Double {
    fn describe(setup: &double::PublicSetup) -> String {
        let second = setup.second().geometry();
        format!(
            "{}; second layer {} x {}, {} of its queries per record",
            describe_layer(setup.first()),
            second.rows(),
            second.cols(),
            setup.rows_per_query()
        )
    }

    fn preprocess(client: &mut double::Client, count: usize) -> Result<String, PirError> {
        client.preprocess(count)?;
        Ok(format!("preprocessing of {count} queries"))
    }
}

impl Shown for Ypir {
    fn describe(setup: &ypir::PublicSetup) -> String {
        let shape = match setup.shape() {
            ypir::Shape::Simple(s) => format!(
                "{} x {} words of 15 bits, {} record(s) per column",
                s.rows(),
                s.columns(),
                s.per_column()
            ),
            ypir::Shape::Double(s) => format!(
                "first layer {} x {}, packed layer 2048 x {}",
                s.rows(),
                s.columns(),
                s.rows()
            ),
        };
        format!(
            "{}: {shape}, ring degree 2048, q ≈ 2^56, failure probability 2^{:.0}",
            setup.variant().name(),
            setup.shape().log_failure()
        )
    }

    fn preprocess(_: &mut ypir::Client, _: usize) -> Result<String, PirError> {
        Ok("no preprocessing (every query has its own secret and packing keys)".into())
    }
}

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
    let started = Instant::now();
    let server = progress::with_bar("server setup", |progress| {
        double::Server::setup(&data, args.record_size, SetupOptions::default(), progress)
    })?;
    println!("server setup of {:?}: {}", DOUBLE.0, ms(started.elapsed()));
    catalog.insert(DOUBLE.0.into(), server)?;
    let started = Instant::now();
    let server = progress::with_bar("server setup", |progress| {
        ypir::Server::setup(
            &data,
            args.record_size,
            ypir::YpirOptions::default(),
            progress,
        )
    })?;
    println!("server setup of {:?}: {}", YPIR.0, ms(started.elapsed()));
    catalog.insert(YPIR.0.into(), server)?;
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
    for (name, title, _) in LAYOUTS {
        demo.show::<Lwe>(name, title)?;
    }
    demo.show::<Double>(DOUBLE.0, DOUBLE.1)?;
    println!(
        "DoublePIR's hint does not grow with the database (4n x n words); each of its queries \
         asks for every row a record spans, so it suits records of a few bytes.\n"
    );
    demo.show::<Ypir>(YPIR.0, YPIR.1)?;
    println!(
        "YPIR has no hint to download; its query carries fresh packing keys (411,136 bytes) and its \
         answer is 12 KiB per packed ciphertext.\n"
    );
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
    /// Fetches the setup of database `name`, then each wanted record, checking it and printing
    /// the sizes and the time of every step.
    fn show<S: Shown>(&self, name: &str, title: &str) -> Result<()>
    where
        for<'a> S::Client: PirClient<Target<'a> = u64, Output = Vec<u8>>,
    {
        println!("== {title}: GET /v1/databases/{name}/setup, then POST .../query");
        let started = Instant::now();
        let setup = self.http.setup::<S>(name)?;
        let download = started.elapsed();
        println!("  {}", S::describe(&setup));
        let mut client = S::Client::new(setup.clone());
        let started = Instant::now();
        let prepared = S::preprocess(&mut client, self.wanted.len())?;
        println!(
            "  client setup (download + check) {}, {prepared} {}",
            ms(download),
            ms(started.elapsed())
        );
        for (i, &index) in self.wanted.iter().enumerate() {
            let started = Instant::now();
            let (query, state) = client.query(index)?;
            let query_time = started.elapsed();
            let started = Instant::now();
            let answer = self.http.query::<S>(name, &setup, &query)?;
            let round_trip = started.elapsed();
            let started = Instant::now();
            let record = client.decode(state, &answer)?;
            let decode_time = started.elapsed();
            let start = (index * self.record_bytes) as usize;
            ensure!(
                record == self.data[start..start + self.record_bytes as usize],
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
                "  record {index}: query {}, HTTP round trip {}, decode {} -> {:?}",
                ms(query_time),
                ms(round_trip),
                ms(decode_time),
                String::from_utf8_lossy(&record[..record.len().min(48)])
            );
        }
        println!();
        Ok(())
    }
}
