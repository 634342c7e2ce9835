//! The standard benchmark workloads of `docs/workloads.md` (`obscura bench`), each with its
//! report, and the machine's memory bandwidth measured in the same run.
//!
//! [`run`] takes the arguments of `obscura bench` ([`BenchArgs`], a clap `Args`) and prints the
//! report's tables or its JSON object. Each workload is one module holding its report
//! (`lwe`, `chalamet`, `service`, `psi`, `treepir`); [`report`] holds what the reports share
//! and [`peers`] the figures peers published, as data.

mod bandwidth;
mod chalamet;
mod engine;
pub mod lwe;
mod measure;
pub mod memory;
pub mod peers;
pub mod progress;
pub mod psi;
pub mod repeated;
pub mod report;
pub mod service;
pub mod small;
pub mod streamed;
pub mod treepir;
pub mod update;
pub mod update_keyword;
pub mod update_merkle;
pub mod update_ypir;
pub mod ypir;

use anyhow::Result;
use clap::{Args, ValueEnum};
use obscura_pir::keyword::fuse::Arity;

pub use engine::EngineArgs;
pub use progress::{Progress, Silent};

use lwe::report::Report;
use obscura_math::threads::{self as pools, Pools};
use report::Tables;

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
    /// `simple-1g`'s database served directly and as 4 shards by rows behind a gateway, all
    /// on loopback in this process: latency, queries per second and CPU per query at 1, 8 and
    /// 32 clients, the two measured in turn.
    #[value(name = "service-sharded")]
    ServiceSharded,
    /// ECDH-PSI, 2^20 items of 16 bytes per side, half of them shared, both parties in this
    /// process over loopback TCP.
    #[value(name = "psi-ecdh")]
    PsiEcdh,
    /// KKRT-PSI, 2^20 items of 16 bytes per side, half of them shared, both parties in this
    /// process over loopback TCP.
    #[value(name = "psi-kkrt")]
    PsiKkrt,
    /// RR22 VOLE-PSI, 2^20 items of 16 bytes per side, half of them shared, both parties in
    /// this process over loopback TCP; the report adds bits per item (both directions).
    #[value(name = "psi-rr22")]
    PsiRr22,
    /// RR22 VOLE-PSI in its malicious mode, as `psi-rr22`.
    #[value(name = "psi-rr22-malicious")]
    PsiRr22Malicious,
    /// TreePIR's colouring setup and client indexing against the batch-code baseline's (PBC)
    /// placement and indexing, for trees of height 10, 16, 20, 24 and 30 (`--heights`; PBC is
    /// skipped above 24).
    #[value(name = "treepir-setup")]
    TreepirSetup,
    /// Merkle proofs retrieved with TreePIR and with PBC on the same LWE engine, for trees of
    /// 2^h random 32-byte leaves, h = 10, 16 and 20 (`--heights`, at most 24).
    #[value(name = "treepir-e2e")]
    TreepirE2e,
    /// 2^30 records x 1 byte (1 GiB), DoublePIR (the SimplePIR paper's shape of small
    /// entries): a hint that does not grow with the database.
    #[value(name = "double-1g")]
    Double1g,
    /// 1,000, 10,000 and 100,000 records of 3 bytes (`--records` for one size), SimplePIR,
    /// DoublePIR, YPIR and YPIR+SP: server preprocessing, end-to-end latency with a fresh and
    /// with a prepared query, message sizes (YPIR's small-database table).
    #[value(name = "ypir-small")]
    YpirSmall,
    /// 2^30 records x 1 byte (1 GiB), YPIR: no hint, a 12 KiB answer; query and answer bytes,
    /// the answer's phases (packing among them) and throughput.
    #[value(name = "ypir-1g")]
    Ypir1g,
    /// 2^15 records x 32 KiB (1 GiB), YPIR+SP: as `ypir-1g`.
    #[value(name = "ypir-sp")]
    YpirSp,
    /// 2^24 records x 1 KiB (16 GiB), index PIR, built from a file to a database file in
    /// bounded memory, set against the disk's speed measured in the same run (`--dir` holds
    /// the files).
    #[value(name = "streamed-setup")]
    StreamedBuild,
    /// 2^20 records x 1 KiB, near-square layout (`simple-1g`'s database), set up once, then
    /// new versions made in place: 0.1%, 1% and 10% of the records changed at random and 1% in
    /// one run, each set against the full setup and checked by retrievals.
    Update,
    /// 2^30 records x 1 byte (`double-1g`'s DoublePIR database), set up once, then new
    /// versions made in place: 0.1% and 1% of the records changed at random.
    #[value(name = "update-double")]
    UpdateDouble,
    /// A Merkle tree of 2^20 leaves (`--records`) built for TreePIR with room for 2^16 more,
    /// which are then appended as one version, set against the full build and checked.
    #[value(name = "update-merkle")]
    UpdateMerkle,
    /// 2^20 keys of 32 bytes with 1 KiB values (`chalamet`'s keyword database), then 1% of its
    /// keys upserted and deleted as one version, set against the full build and checked, and
    /// a batch that compacts.
    #[value(name = "update-keyword")]
    UpdateKeyword,
    /// YPIR over 2^30 records of 1 byte (`ypir-1g`'s database) and YPIR+SP over the same bytes
    /// in records of 32 KiB, each set up once, then 1% of the records and one record changed
    /// in place under the same setup, set against the full setup and checked.
    #[value(name = "update-ypir")]
    UpdateYpir,
}

impl Preset {
    /// The name `docs/workloads.md` gives the preset.
    pub fn name(self) -> &'static str {
        match self {
            Self::Frodo => "frodo",
            Self::Simple1g => "simple-1g",
            Self::Service => "service",
            Self::ServiceSharded => "service-sharded",
            Self::Chalamet => "chalamet",
            Self::PsiEcdh => "psi-ecdh",
            Self::PsiKkrt => "psi-kkrt",
            Self::PsiRr22 => "psi-rr22",
            Self::PsiRr22Malicious => "psi-rr22-malicious",
            Self::TreepirSetup => "treepir-setup",
            Self::TreepirE2e => "treepir-e2e",
            Self::StreamedBuild => "streamed-setup",
            Self::Double1g => "double-1g",
            Self::YpirSmall => "ypir-small",
            Self::Ypir1g => "ypir-1g",
            Self::YpirSp => "ypir-sp",
            Self::Update => "update",
            Self::UpdateDouble => "update-double",
            Self::UpdateMerkle => "update-merkle",
            Self::UpdateKeyword => "update-keyword",
            Self::UpdateYpir => "update-ypir",
        }
    }

    /// Whether the preset sets up LWE databases, so that it takes the engine options.
    fn has_engine(self) -> bool {
        matches!(
            self,
            Self::Frodo
                | Self::Simple1g
                | Self::Chalamet
                | Self::Service
                | Self::ServiceSharded
                | Self::TreepirE2e
                | Self::StreamedBuild
                | Self::Double1g
                | Self::YpirSmall
                | Self::Update
                | Self::UpdateDouble
                | Self::UpdateMerkle
                | Self::UpdateKeyword
        )
    }

    /// Records (items per side for PSI) unless `--records` says otherwise.
    fn default_records(self) -> u64 {
        match self {
            Self::Service => 1 << 16,
            Self::StreamedBuild => 1 << 24,
            Self::Double1g | Self::Ypir1g | Self::UpdateDouble | Self::UpdateYpir => 1 << 30,
            Self::YpirSp => 1 << 15,
            _ => 1 << 20,
        }
    }

    /// Bytes per record (per item for PSI) unless `--record-bytes` says otherwise.
    fn default_record_bytes(self) -> u64 {
        match self {
            Self::PsiEcdh | Self::PsiKkrt | Self::PsiRr22 | Self::PsiRr22Malicious => 16,
            Self::Double1g | Self::Ypir1g | Self::UpdateDouble | Self::UpdateYpir => 1,
            Self::YpirSmall => 3,
            Self::YpirSp => 32 << 10,
            _ => 1024,
        }
    }

    /// Tree heights of the TreePIR presets unless `--heights` says otherwise.
    fn default_heights(self) -> &'static [u32] {
        match self {
            Self::TreepirSetup => &[10, 16, 20, 24, 30],
            _ => &[10, 16, 20],
        }
    }
}

/// Arguments of `obscura bench`.
#[derive(Args)]
pub struct BenchArgs {
    /// The workload.
    preset: Preset,
    /// Records in the database, items per side for PSI (default: the preset's, 2^20; the
    /// TreePIR presets take `--heights` instead).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    records: Option<u64>,
    /// Bytes per record, per item for PSI (default: the preset's, 1024; 16 for PSI).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    record_bytes: Option<u64>,
    /// Threads for the parallel steps, per party for the PSI presets, which also run with one
    /// thread per party (default: all cores).
    #[arg(long, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=pools::MAX_THREADS as u64))]
    threads: Option<usize>,
    /// Print one JSON object instead of tables (an array of one per arity for `chalamet`
    /// without `--arity`).
    #[arg(long)]
    json: bool,
    /// Filter arity for `chalamet`: 3 or 4 (default: both).
    #[arg(long)]
    arity: Option<Arity>,
    /// Simulated links for the PSI presets, comma-separated: unlimited, 100mbps, 10mbps (each
    /// way); one run per link.
    #[arg(long, value_enum, value_delimiter = ',', default_value = "unlimited")]
    link: Vec<psi::Link>,
    /// Tree heights for the TreePIR presets, comma-separated: 2^h leaves, 2^(h+1) - 2 nodes
    /// each (default: 10,16,20,24,30 for treepir-setup, at most 32; 10,16,20 for treepir-e2e,
    /// at most 24).
    #[arg(long, value_delimiter = ',')]
    heights: Vec<u32>,
    /// The folder `streamed-setup` writes its input and database files to (created; the files
    /// are removed at the end). It needs free space for both: about 2.04 times the data.
    #[arg(long, default_value = "obscura-streamed-setup")]
    dir: std::path::PathBuf,
    #[command(flatten)]
    engine: EngineArgs,
}

/// Arguments of `obscura bench` that do not go together, found before any work.
#[derive(Debug)]
pub struct InvalidArguments(pub String);

impl std::fmt::Display for InvalidArguments {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for InvalidArguments {}

/// Runs `obscura bench` with `args`, showing the progress of long setups with `progress`, and
/// prints the report; fails if a result was wrong.
pub fn run(args: BenchArgs, progress: &dyn Progress) -> Result<()> {
    let engine = args.engine.for_preset(args.preset)?;
    let threads = pools::count(args.threads)?;
    let pools = Pools::new(threads)?;
    let mut report = Report::new(args.preset.name(), threads);
    // The PIR presets measure the bandwidth in turns with their answers instead.
    if !matches!(
        args.preset,
        Preset::Chalamet
            | Preset::Frodo
            | Preset::Simple1g
            | Preset::Double1g
            | Preset::Ypir1g
            | Preset::YpirSp
    ) {
        report.bandwidth_gbs = bandwidth::measure(&pools);
    }
    let heights = match args.heights.as_slice() {
        [] => args.preset.default_heights(),
        heights => heights,
    };
    let treepir = match args.preset {
        Preset::TreepirSetup => Some(treepir::setup(heights, &pools, &report)?),
        Preset::TreepirE2e => Some(treepir::e2e(heights, engine.lwe, &pools, &report)?),
        _ => None,
    };
    if let Some(report) = treepir {
        return output(&[report], args.json);
    }
    let records = args.records.unwrap_or(args.preset.default_records());
    let record_bytes = args
        .record_bytes
        .unwrap_or(args.preset.default_record_bytes());
    if let Some(protocol) = psi::protocol(args.preset) {
        let report = psi::run(
            protocol,
            records,
            record_bytes,
            &args.link,
            threads,
            &report,
        )?;
        return output(&[report], args.json);
    }
    let reports = match args.preset {
        Preset::YpirSmall => {
            let sizes = match args.records {
                Some(records) => vec![records],
                None => small::SIZES.to_vec(),
            };
            let report = small::run(
                &sizes,
                record_bytes,
                engine.lwe,
                &pools,
                report.bandwidth_gbs,
            )?;
            return output(&[report], args.json);
        }
        Preset::Ypir1g | Preset::YpirSp => {
            let variant = match args.preset {
                Preset::Ypir1g => obscura_pir::ypir::Variant::Ypir,
                _ => obscura_pir::ypir::Variant::YpirSp,
            };
            let report = ypir::run(
                args.preset.name(),
                variant,
                records,
                record_bytes,
                &pools,
                progress,
            )?;
            return output(&[report], args.json);
        }
        Preset::StreamedBuild => {
            let report = streamed::run(
                records,
                record_bytes,
                &args.dir,
                engine.lwe,
                &pools,
                progress,
                report.bandwidth_gbs,
            )?;
            return output(&[report], args.json);
        }
        Preset::Update | Preset::UpdateDouble => {
            let scheme = match args.preset {
                Preset::UpdateDouble => update::UpdatedScheme::Double,
                _ => update::UpdatedScheme::Index,
            };
            let report = update::run(
                scheme,
                records,
                record_bytes,
                engine.lwe,
                &pools,
                progress,
                report.bandwidth_gbs,
            )?;
            return output(&[report], args.json);
        }
        Preset::UpdateYpir => {
            let reports = update_ypir::run(
                records,
                record_bytes,
                &pools,
                progress,
                report.bandwidth_gbs,
            )?;
            return output(&reports, args.json);
        }
        Preset::UpdateMerkle => {
            let report =
                update_merkle::run(records, engine.lwe, &pools, progress, report.bandwidth_gbs)?;
            return output(&[report], args.json);
        }
        Preset::UpdateKeyword => {
            let report = update_keyword::run(
                records,
                record_bytes,
                engine.keyword,
                &pools,
                progress,
                report.bandwidth_gbs,
            )?;
            return output(&[report], args.json);
        }
        Preset::Service => {
            service::run(
                records,
                record_bytes,
                engine.lwe,
                &pools,
                progress,
                &mut report,
            )?;
            vec![report]
        }
        Preset::ServiceSharded => {
            service::run_sharded(
                records,
                record_bytes,
                engine.lwe,
                &pools,
                progress,
                &mut report,
            )?;
            vec![report]
        }
        Preset::Chalamet => {
            let arities = match args.arity {
                Some(arity) => vec![arity],
                None => vec![Arity::Three, Arity::Four],
            };
            chalamet::run(
                records,
                record_bytes,
                &arities,
                engine.keyword,
                &pools,
                progress,
                &report,
            )?
        }
        preset => {
            let run = match preset {
                Preset::Double1g => lwe::run::<obscura_pir::double::Double>,
                _ => lwe::run::<obscura_pir::lwe::Lwe>,
            };
            let extra = match preset {
                Preset::Simple1g => lwe::Extra::Batches,
                _ => lwe::Extra::Nothing,
            };
            run(
                extra,
                records,
                record_bytes,
                engine.lwe,
                &pools,
                progress,
                &mut report,
            )?;
            vec![report]
        }
    };
    output(&reports, args.json)
}

/// Prints `reports` (tables, or JSON: one object, or an array of several) and fails if a result
/// was wrong.
fn output<R: Tables>(reports: &[R], json: bool) -> Result<()> {
    if json {
        match reports {
            [one] => println!("{}", serde_json::to_string_pretty(one)?),
            all => println!("{}", serde_json::to_string_pretty(all)?),
        }
    } else {
        for report in reports {
            report.print_tables();
            println!();
        }
    }
    anyhow::ensure!(reports.iter().all(R::correct), "{}", R::WRONG);
    Ok(())
}
