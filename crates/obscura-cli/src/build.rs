//! `obscura build`: records in (raw, CSV or JSON lines), database file out.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{ensure, Context, Result};
use clap::Args;
use obscura_pir::keyword::fuse::Arity;
use obscura_pir::keyword::{KeywordOptions, KeywordServer};
use obscura_pir::lwe::{Footprint, Geometry, Layout, Server, SetupOptions, StreamedSetup};
use obscura_pir::params::{MatrixKind, ParamSet};
use obscura_pir::PirError;
use obscura_pir::{double, ypir};
use obscura_server::direct::SequentialReader;
use obscura_server::store::{self, Database, WrittenSetup};

use crate::ingest::{self, InputFormat};
use crate::{memory, progress};
use obscura_bench::pools;

/// Arguments of `obscura build`.
#[derive(Args)]
pub struct BuildArgs {
    /// Input file: raw records laid end to end (the last may be short; it is zero-padded), a CSV
    /// file with a header row, or JSON lines.
    #[arg(long)]
    input: PathBuf,
    /// Input format (default: from the extension: .csv, .jsonl/.ndjson, anything else raw).
    #[arg(long, value_enum)]
    format: Option<InputFormat>,
    /// Bytes per record (raw input only).
    #[arg(long)]
    record_size: Option<u64>,
    /// Column (CSV) or field (JSON lines) that makes the record; repeat for several.
    #[arg(long = "column")]
    columns: Vec<String>,
    /// Build a keyword database: the column (CSV) or field (JSON lines) holding the key.
    #[arg(long, requires = "value_columns", conflicts_with = "columns")]
    key_column: Option<String>,
    /// With --key-column: the column(s) or field(s) that make the value; repeat for several.
    #[arg(long = "value-column", requires = "key_column")]
    value_columns: Vec<String>,
    /// With --key-column: filter slots per key, 3 or 4 (default: 3 below 100,000 keys, else 4).
    #[arg(long)]
    arity: Option<Arity>,
    /// Database file to write.
    #[arg(long)]
    out: PathBuf,
    /// How records are served: `index` (SimplePIR or FrodoPIR, as --layout says), `double`
    /// (DoublePIR: the client downloads a hint of 16 MiB whatever the database's size; for
    /// records of a few bytes, since a query asks for every row a record spans), `ypir` (YPIR:
    /// no hint at all and a 12 KiB answer, for records of up to 72 bytes; a query carries
    /// about 0.5-1 MB of packing keys and vectors) or `ypir-sp` (YPIR+SP: the same for records
    /// of any size, 12 KiB of answer per 3.75 KiB of record).
    #[arg(long, value_enum, default_value = "index")]
    scheme: RecordScheme,
    /// Raw input only: stream the setup from the input file to the database file, a band of
    /// columns at a time, so memory holds a few bands and the hint whatever the size (chosen
    /// by itself when the input does not fit in memory). Its plaintext modulus is the one
    /// correct for any data, where an in-memory setup may pick a larger one from the data.
    #[arg(long)]
    stream: bool,
    #[command(flatten)]
    engine: EngineArgs,
}

/// How a database of records (not keys) is served.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum RecordScheme {
    /// The LWE engine: SimplePIR (square layout) or FrodoPIR (one record per column).
    Index,
    /// DoublePIR: a second LWE layer over the engine's hint.
    Double,
    /// YPIR: DoublePIR with its second layer packed into one RLWE ciphertext; no hint.
    Ypir,
    /// YPIR+SP: SimplePIR over a ring, its answer packed; no hint.
    YpirSp,
}

impl RecordScheme {
    /// The YPIR variant this scheme builds, if it is one.
    fn ypir(self) -> Option<ypir::Variant> {
        match self {
            Self::Ypir => Some(ypir::Variant::Double),
            Self::YpirSp => Some(ypir::Variant::Simple),
            Self::Index | Self::Double => None,
        }
    }
}

/// Rows a DoublePIR record may span before `obscura build` says that its answers grow with it.
const DOUBLE_SMALL_ROWS: u64 = 8;

/// How the LWE engine is set up: the options `obscura build` and `obscura merkle build` share.
#[derive(Args)]
pub struct EngineArgs {
    /// Records per matrix column: `square` (SimplePIR; for DoublePIR, the shape that balances
    /// its query's two parts), `one-per-column` (FrodoPIR), or a count.
    #[arg(long, default_value = "square")]
    pub layout: Layout,
    /// LWE parameter set: ypir-1024, hintless-1408 or frodo-1774.
    #[arg(long, default_value = "ypir-1024")]
    pub params: ParamSet,
    /// Public matrix: negacyclic (Ring-LWE, fast client; needs ypir-1024) or uniform (plain LWE).
    /// Default: negacyclic where the parameter set allows it.
    #[arg(long)]
    pub matrix: Option<MatrixKind>,
    /// Threads for the setup (default: all cores).
    #[arg(long)]
    pub threads: Option<usize>,
    /// Refuse to build when the setup would need more memory than this (e.g. 8GiB, 512MB or
    /// bytes; default: the memory the system has available).
    #[arg(long, value_parser = memory::parse_size)]
    pub max_memory: Option<u64>,
}

impl EngineArgs {
    /// The engine's setup options.
    pub fn options(&self) -> SetupOptions {
        SetupOptions {
            params: self.params,
            layout: self.layout,
            matrix: self.matrix,
        }
    }

    /// Checks, before anything is allocated, the setup whose footprint `footprint_of(layout)`
    /// gives for the chosen layout, the other layouts named when they fit better (see
    /// [`memory::Plan::check`]). The build holds `input_bytes` of input besides; it serves
    /// `data_bytes` of data.
    pub fn check_size(
        &self,
        input_bytes: u64,
        data_bytes: u64,
        footprint_of: impl Fn(Layout) -> Result<Footprint, PirError>,
    ) -> Result<()> {
        let mut alternatives: Vec<(String, Footprint)> = [
            ("square", Layout::Square),
            ("one-per-column", Layout::OnePerColumn),
        ]
        .into_iter()
        .filter(|&(_, layout)| layout != self.layout)
        .filter_map(|(name, layout)| {
            let footprint = footprint_of(layout).ok()?;
            Some((format!("--layout {name}"), footprint))
        })
        .collect();
        alternatives.sort_by_key(|(_, footprint)| footprint.peak_bytes());
        self.check_footprint(
            footprint_of(self.layout)?,
            input_bytes,
            data_bytes,
            alternatives,
        )
    }

    /// [`EngineArgs::check_size`] of a setup whose layout is fixed (nothing to suggest).
    pub fn check_footprint(
        &self,
        footprint: Footprint,
        input_bytes: u64,
        data_bytes: u64,
        alternatives: Vec<(String, Footprint)>,
    ) -> Result<()> {
        memory::Plan {
            footprint,
            input_bytes,
            data_bytes,
            max_memory: self.max_memory,
            alternatives,
        }
        .check()
    }

    /// The thread pool the setup runs in.
    pub fn pool(&self) -> Result<rayon::ThreadPool> {
        pools::pool(pools::count(self.threads)?)
    }
}

/// Bytes of a `Vec` besides its contents: what each value read from CSV or JSON costs.
const VEC_BYTES: u64 = std::mem::size_of::<Vec<u8>>() as u64;

/// Records read from the input.
enum Input {
    /// Fixed-size records laid end to end.
    Raw { data: Vec<u8>, record_size: u64 },
    /// Variable-length values, one per row.
    Values(Vec<Vec<u8>>),
    /// Key-value pairs, one per row.
    Pairs(Vec<(Vec<u8>, Vec<u8>)>),
}

impl Input {
    fn is_empty(&self) -> bool {
        match self {
            Self::Raw { data, .. } => data.is_empty(),
            Self::Values(values) => values.is_empty(),
            Self::Pairs(pairs) => pairs.is_empty(),
        }
    }
}

/// Runs `obscura build`.
pub fn run(args: BuildArgs) -> Result<()> {
    let format = args
        .format
        .unwrap_or_else(|| InputFormat::guess(&args.input));
    let indexed_only = args.scheme != RecordScheme::Index;
    ensure!(
        !(indexed_only && args.key_column.is_some()),
        "--scheme {} serves records by index; a keyword database takes --key-column alone",
        scheme_name(args.scheme)
    );
    ensure!(
        !(indexed_only && args.stream),
        "--stream builds index databases (--scheme index)"
    );
    let ypir_options = ypir::YpirOptions {
        variant: args.scheme.ypir(),
    };
    let input = match format {
        InputFormat::Raw => {
            ensure!(
                args.columns.is_empty(),
                "--column applies to CSV and JSON-lines input"
            );
            let record_size = args
                .record_size
                .context("--record-size is needed for raw input")?;
            ensure!(record_size >= 1, "--record-size must be at least 1 byte");
            let size = std::fs::metadata(&args.input)
                .with_context(|| format!("cannot read {}", args.input.display()))?
                .len();
            ensure!(
                size > 0,
                "{} is empty: there are no records to serve",
                args.input.display()
            );
            let options = |layout| SetupOptions {
                layout,
                ..args.engine.options()
            };
            let in_memory = args
                .engine
                .check_size(size, size, |layout| match args.scheme {
                    RecordScheme::Index => Server::footprint(size, record_size, options(layout)),
                    RecordScheme::Double => {
                        double::Server::footprint(size, record_size, options(layout))
                    }
                    RecordScheme::Ypir | RecordScheme::YpirSp => {
                        ypir::Server::footprint(size, record_size, ypir_options)
                    }
                });
            let streamed = StreamedSetup::plan(size, record_size, args.engine.options())?;
            let stream_fits = memory::fits(streamed.peak_bytes(), args.engine.max_memory);
            match in_memory {
                _ if args.stream => return build_streamed(&args, &streamed),
                Err(reason) if stream_fits && !indexed_only => {
                    eprintln!(
                        "streaming the setup, in about {} of memory: in memory {reason:#}",
                        memory::human(streamed.peak_bytes())
                    );
                    return build_streamed(&args, &streamed);
                }
                in_memory => in_memory?,
            }
            let data = std::fs::read(&args.input)
                .with_context(|| format!("cannot read {}", args.input.display()))?;
            ensure!(
                data.len() as u64 == size,
                "{} changed while it was read",
                args.input.display()
            );
            Input::Raw { data, record_size }
        }
        InputFormat::Csv | InputFormat::Jsonl => {
            ensure!(
                args.record_size.is_none(),
                "--record-size applies to raw input only"
            );
            let read = |columns: &[String]| {
                if format == InputFormat::Csv {
                    ingest::csv_values(&args.input, columns)
                } else {
                    ingest::jsonl_values(&args.input, columns)
                }
            };
            let input = match &args.key_column {
                Some(key) => {
                    let keys = read(std::slice::from_ref(key))?;
                    ingest::check_unique_keys(&args.input, format, key, &keys)?;
                    Input::Pairs(keys.into_iter().zip(read(&args.value_columns)?).collect())
                }
                None => {
                    ensure!(!args.columns.is_empty(), "name the record's column(s) with --column (or --key-column and --value-column for a keyword database)");
                    Input::Values(read(&args.columns)?)
                }
            };
            ensure!(
                !input.is_empty(),
                "{} has no rows: there are no records to serve",
                args.input.display()
            );
            input
        }
    };
    ensure!(
        args.arity.is_none() || matches!(input, Input::Pairs(_)),
        "--arity applies to keyword databases (--key-column)"
    );
    let keyword_options = KeywordOptions {
        arity: args.arity,
        params: args.engine.params,
        matrix: args.engine.matrix,
    };
    match &input {
        Input::Raw { .. } => {}
        Input::Values(values) => {
            let data: u64 = values.iter().map(|v| v.len() as u64).sum();
            let longest = values.iter().map(|v| v.len() as u64).max().unwrap_or(0);
            let count = values.len() as u64;
            let options = |layout| SetupOptions {
                layout,
                ..args.engine.options()
            };
            args.engine
                .check_size(data + count * VEC_BYTES, data, |layout| match args.scheme {
                    RecordScheme::Index => {
                        Server::values_footprint(count, longest, options(layout))
                    }
                    RecordScheme::Double => {
                        double::Server::values_footprint(count, longest, options(layout))
                    }
                    RecordScheme::Ypir | RecordScheme::YpirSp => {
                        ypir::Server::values_footprint(count, longest, ypir_options)
                    }
                })?;
        }
        Input::Pairs(pairs) => {
            let lengths = || pairs.iter().map(|(_, v)| v.len() as u64);
            let longest = lengths().max().unwrap_or(0);
            let uniform = lengths().all(|len| len == longest);
            let data: u64 = pairs.iter().map(|(k, v)| (k.len() + v.len()) as u64).sum();
            let count = pairs.len() as u64;
            let footprint = KeywordServer::footprint(count, longest, uniform, keyword_options)?;
            args.engine.check_footprint(
                footprint,
                data + 2 * count * VEC_BYTES,
                data,
                Vec::new(),
            )?;
        }
    }
    let options = args.engine.options();
    let pool = args.engine.pool()?;
    let started = Instant::now();
    let message = "computing the hint";
    let database: Database = pool.install(|| -> Result<Database> {
        Ok(match (&input, args.scheme) {
            (Input::Raw { data, record_size }, RecordScheme::Index) => {
                progress::setup_with_bar(data, *record_size, options, message)?.into()
            }
            (Input::Values(values), RecordScheme::Index) => {
                progress::values_with_bar(values, options, message)?.into()
            }
            (Input::Raw { data, record_size }, RecordScheme::Double) => {
                progress::with_bar("computing the hints", |progress| {
                    double::Server::setup(data, *record_size, options, progress)
                })?
                .into()
            }
            (Input::Values(values), RecordScheme::Double) => {
                progress::with_bar("computing the hints", |progress| {
                    double::Server::setup_values(values, options, progress)
                })?
                .into()
            }
            (Input::Raw { data, record_size }, RecordScheme::Ypir | RecordScheme::YpirSp) => {
                progress::with_bar("planning the packing", |progress| {
                    ypir::Server::setup(data, *record_size, ypir_options, progress)
                })?
                .into()
            }
            (Input::Values(values), RecordScheme::Ypir | RecordScheme::YpirSp) => {
                progress::with_bar("planning the packing", |progress| {
                    ypir::Server::setup_values(values, ypir_options, progress)
                })?
                .into()
            }
            (Input::Pairs(pairs), _) => progress::keyword_with_bar(pairs, keyword_options)?.into(),
        })
    })?;
    if let Some(server) = database.server::<double::Double>() {
        let rows = server.public_setup().rows_per_query();
        if rows > DOUBLE_SMALL_ROWS {
            eprintln!(
                "note: a record spans up to {rows} rows, and a DoublePIR query asks for each: its answer is {} bytes; an index database (--scheme index) answers records this large with less",
                obscura_pir::SetupMessage::answer_bytes(server.public_setup())
            );
        }
    }
    let written = obscura_server::store::write_database(&args.out, &database)?;
    if let Some(server) = database.server::<ypir::Ypir>() {
        report_ypir(&args, server.public_setup(), &written, started);
        return Ok(());
    }
    let listing = database.listing();
    let engine = listing
        .engine
        .context("an index or keyword database runs on one LWE engine")?;
    let g = engine.geometry;
    let items = match listing.kind {
        "keyword" => format!("{} keys in {} slots", listing.items, g.records()),
        _ => format!("{} records", g.records()),
    };
    let kind = match listing.kind {
        "double" => "DoublePIR",
        kind => kind,
    };
    let params = (engine.params.set, engine.params.matrix);
    report(&args, kind, &items, &g, params, &written, started);
    Ok(())
}

/// Streams the setup of the raw records of `args.input` to `args.out`, as `plan` says.
fn build_streamed(args: &BuildArgs, plan: &StreamedSetup) -> Result<()> {
    let pool = args.engine.pool()?;
    let started = Instant::now();
    let mut input = SequentialReader::open(&args.input)
        .with_context(|| format!("cannot read {}", args.input.display()))?;
    let written = pool
        .install(|| {
            progress::with_bar("streaming the setup", |progress| {
                store::write_streamed(&args.out, plan, &mut input, progress)
            })
        })
        .with_context(|| format!("{} from {}", args.out.display(), args.input.display()))?;
    let g = plan.geometry();
    let items = format!("{} records", g.records());
    let params = (plan.params().set, plan.params().matrix);
    report(args, "index", &items, g, params, &written, started);
    Ok(())
}

/// The name `--scheme` takes for `scheme`.
fn scheme_name(scheme: RecordScheme) -> &'static str {
    match scheme {
        RecordScheme::Index => "index",
        RecordScheme::Double => "double",
        RecordScheme::Ypir => "ypir",
        RecordScheme::YpirSp => "ypir-sp",
    }
}

/// Prints what `obscura build` wrote for a YPIR database.
fn report_ypir(
    args: &BuildArgs,
    setup: &ypir::PublicSetup,
    written: &WrittenSetup,
    started: Instant,
) {
    use obscura_pir::SetupMessage;
    let shape = match setup.shape() {
        ypir::Shape::Double(s) => format!(
            "first layer {} x {} of {}-bit digits ({} per record), packed layer 2048 x {}",
            s.rows(),
            s.columns(),
            s.log_p(),
            s.digits(),
            s.rows()
        ),
        ypir::Shape::Simple(s) => format!(
            "{} x {} words of 15 bits, {} records per column",
            s.rows(),
            s.columns(),
            s.per_column()
        ),
    };
    println!(
        "wrote {}: {} database, {} records of {} bytes, {shape}, query {} bytes, answer {} bytes, failure probability 2^{:.0}, public setup {} bytes (no hint), setup sha256 {}, setup {:.2?}",
        args.out.display(),
        setup.variant().name(),
        setup.shape().records(),
        setup.shape().record_bytes(),
        setup.query_bytes(),
        setup.answer_bytes(),
        setup.shape().log_failure(),
        written.bytes,
        hex::encode(written.sha256),
        started.elapsed()
    );
}

/// Prints what `obscura build` wrote.
fn report(
    args: &BuildArgs,
    kind: &str,
    items: &str,
    g: &Geometry,
    (set, matrix): (ParamSet, MatrixKind),
    written: &WrittenSetup,
    started: Instant,
) {
    println!(
        "wrote {}: {kind} database, {items} of {} bytes, {} x {} matrix, p = 2^{}, {} with a {} A, public setup {} bytes, setup sha256 {}, setup {:.2?}",
        args.out.display(),
        g.record_bytes(),
        g.rows(),
        g.cols(),
        g.log_p(),
        set.name(),
        matrix.name(),
        written.bytes,
        hex::encode(written.sha256),
        started.elapsed()
    );
}
