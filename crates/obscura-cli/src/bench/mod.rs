//! `obscura bench`: the standard workloads of WORKLOADS.md, with the machine's memory bandwidth
//! measured in the same run.

mod bandwidth;
mod chalamet;
mod lwe;
mod report;
mod service;

use anyhow::Result;
use clap::{Args, ValueEnum};
use obscura_pir::keyword::fuse::Arity;
use rayon::ThreadPool;

pub use report::Report;

use crate::threads;

/// A standard workload.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Preset {
    /// 2^20 records x 1 KiB, index PIR, one record per column (FrodoPIR's workload).
    Frodo,
    /// 2^20 records x 1 KiB (1 GiB), near-square layout (SimplePIR's workload).
    #[value(name = "simple-1g")]
    Simple1g,
    /// 2^20 keys of 32 bytes with 1 KiB values, keyword PIR, 3-wise and 4-wise (ChalametPIR's
    /// workload); `--records` is the number of keys, `--record-bytes` the value size.
    Chalamet,
    /// The HTTP service on loopback: queries per second and latency against concurrency
    /// (near-square layout; default 2^16 records x 1 KiB = 64 MiB).
    Service,
}

impl Preset {
    /// The name WORKLOADS.md gives the preset.
    pub fn name(self) -> &'static str {
        match self {
            Self::Frodo => "frodo",
            Self::Simple1g => "simple-1g",
            Self::Service => "service",
            Self::Chalamet => "chalamet",
        }
    }
}

/// Arguments of `obscura bench`.
#[derive(Args)]
pub struct BenchArgs {
    /// The workload.
    preset: Preset,
    /// Records in the database (default: the preset's, 2^20).
    #[arg(long)]
    records: Option<u64>,
    /// Bytes per record (default: the preset's, 1024).
    #[arg(long)]
    record_bytes: Option<u64>,
    /// Threads for the parallel steps (default: all cores).
    #[arg(long)]
    threads: Option<usize>,
    /// Print one JSON object instead of tables (an array of one per arity for `chalamet`
    /// without `--arity`).
    #[arg(long)]
    json: bool,
    /// Filter arity for `chalamet`: 3 or 4 (default: both).
    #[arg(long, value_parser = crate::build::parse_arity)]
    arity: Option<Arity>,
}

/// Thread pools for one and for all threads.
pub struct Pools {
    /// A pool of one thread.
    pub one: ThreadPool,
    /// A pool of the requested number of threads.
    pub all: ThreadPool,
}

/// Runs `obscura bench`.
pub fn run(args: BenchArgs) -> Result<()> {
    let threads = threads::count(args.threads)?;
    let pools = Pools {
        one: threads::pool(1)?,
        all: threads::pool(threads)?,
    };
    let mut report = Report::new(args.preset.name(), threads);
    {
        let buffer = bandwidth::buffer();
        report.bandwidth_gbs = report::Pair {
            one_thread: bandwidth::read_gbs(&buffer, &pools.one),
            all_threads: bandwidth::read_gbs(&buffer, &pools.all),
        };
    }
    let default_records = if args.preset == Preset::Service {
        1 << 16
    } else {
        1 << 20
    };
    let records = args.records.unwrap_or(default_records);
    let record_bytes = args.record_bytes.unwrap_or(1024);
    anyhow::ensure!(
        records >= 1 && record_bytes >= 1,
        "--records and --record-bytes must be at least 1"
    );
    let reports = match args.preset {
        Preset::Service => {
            service::run(records, record_bytes, &pools, &mut report)?;
            vec![report]
        }
        Preset::Chalamet => {
            let arities = match args.arity {
                Some(arity) => vec![arity],
                None => vec![Arity::Three, Arity::Four],
            };
            chalamet::run(records, record_bytes, &arities, &pools, &report)?
        }
        preset => {
            lwe::run(preset, records, record_bytes, &pools, &mut report)?;
            vec![report]
        }
    };
    if args.json {
        match &reports[..] {
            [one] => println!("{}", serde_json::to_string_pretty(one)?),
            all => println!("{}", serde_json::to_string_pretty(all)?),
        }
    } else {
        for report in &reports {
            report.print_tables();
            println!();
        }
    }
    anyhow::ensure!(
        reports.iter().all(|r| r.correct),
        "a retrieved record did not match the original"
    );
    Ok(())
}
