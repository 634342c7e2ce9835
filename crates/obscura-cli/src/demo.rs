//! `obscura demo`: a private retrieval on built-in data, step by step.

use std::time::{Duration, Instant};

use anyhow::{ensure, Result};
use clap::Args;
use obscura_pir::lwe::{Answer, Client, Layout, PublicSetup, Query, SetupOptions};
use obscura_pir::{PirClient, PirServer};

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
    let wanted = [args.records / 3, args.records - 1, 0];
    for (name, layout) in [
        ("SimplePIR layout (near-square matrix)", Layout::Square),
        (
            "FrodoPIR layout (one record per column)",
            Layout::OnePerColumn,
        ),
    ] {
        println!("== {name}");
        let options = SetupOptions {
            layout,
            ..SetupOptions::default()
        };
        let started = Instant::now();
        let server = progress::setup_with_bar(&data, args.record_size, options, "server setup")?;
        let setup_time = started.elapsed();

        // Everything crosses the process boundary as bytes, as it would over a network.
        let setup_bytes = server.public_setup().to_bytes();
        let started = Instant::now();
        let mut client = Client::new(PublicSetup::from_bytes(&setup_bytes)?);
        let client_setup_time = started.elapsed();
        let g = client.setup().geometry();
        println!(
            "  matrix {} x {}, p = 2^{}, n = {} ({}, {} A)",
            g.rows(),
            g.cols(),
            g.log_p(),
            client.setup().params().n(),
            client.setup().params().set.name(),
            client.setup().params().matrix.name()
        );
        println!(
            "  server setup {}   client setup {}",
            ms(setup_time),
            ms(client_setup_time)
        );

        let started = Instant::now();
        client.preprocess(wanted.len())?;
        println!(
            "  client preprocessing of {} queries {}",
            wanted.len(),
            ms(started.elapsed())
        );
        for (i, &index) in wanted.iter().enumerate() {
            let started = Instant::now();
            let (query, state) = client.query(index)?;
            let query_bytes = query.to_bytes();
            let query_time = started.elapsed();

            let started = Instant::now();
            let answer = server.answer(&Query::from_bytes(&query_bytes, server.public_setup())?)?;
            let answer_bytes = answer.to_bytes();
            let answer_time = started.elapsed();

            let started = Instant::now();
            let record =
                client.decode(state, &Answer::from_bytes(&answer_bytes, client.setup())?)?;
            let decode_time = started.elapsed();

            let start = (index * args.record_size) as usize;
            ensure!(
                record == data[start..start + args.record_size as usize],
                "record {index} came back wrong"
            );
            if i == 0 {
                println!(
                    "  sizes: public setup (hint) {} B, query {} B, answer {} B",
                    setup_bytes.len(),
                    query_bytes.len(),
                    answer_bytes.len()
                );
            }
            println!(
                "  record {index}: query {} (online, prepared), answer {}, decode {} -> {:?}",
                ms(query_time),
                ms(answer_time),
                ms(decode_time),
                String::from_utf8_lossy(&record[..record.len().min(48)])
            );
        }
        println!();
    }
    println!("Every record matched the original; the server saw only LWE ciphertexts.");
    Ok(())
}
