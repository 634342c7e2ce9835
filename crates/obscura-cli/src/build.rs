//! `obscura build`: records in (raw, CSV or JSON lines), database file out.

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{ensure, Context, Result};
use clap::builder::{PossibleValuesParser, TypedValueParser};
use clap::Args;
use obscura_pir::keyword::fuse::Arity;
use obscura_pir::lwe::{
    self, EngineOptions, Layout, RecordFormat, RecordShape, Split, StreamedBuild,
};
use obscura_pir::params::{MatrixKind, ParamSet};
use obscura_registry::builders::{builder, builders, default_builder, Builder};
use obscura_store::build::{self as builder_of, BuildOptions, Records, Shape};
use obscura_store::direct::SequentialReader;
use obscura_store::memory as sizes;
use obscura_store::store::{self, Database, WrittenSetup};

use crate::ingest::{self, InputFormat};
use crate::shards::{self, ShardIndex, Slots};
use crate::usage::{self, Usage};
use crate::{memory, progress};
use obscura_math::threads as pools;

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
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
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
    #[arg(long, default_value = "index", value_parser = scheme_parser())]
    scheme: &'static dyn Builder,
    /// CSV and JSON-lines input, `--scheme index`: slots for values of up to this many bytes
    /// (default: the longest value), so that `obscura update` can set longer ones later.
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    value_bytes: Option<u64>,
    /// `--scheme index`: room in the matrix for this many records in all, so that
    /// `obscura update` can append records up to it (default: the records given).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    capacity: Option<u64>,
    /// Raw input only: stream the setup from the input file to the database file, a band of
    /// columns at a time, so memory holds a few bands and the hint whatever the size (chosen
    /// by itself when the input does not fit in memory). Its plaintext modulus is the one
    /// correct for any data, where an in-memory setup may pick a larger one from the data.
    #[arg(long)]
    stream: bool,
    /// Plan the database cut into this many shards, served together behind a gateway, instead
    /// of building it: writes the plan (a JSON manifest) to --out. Build each shard with
    /// --manifest and --shard, then check them with `obscura shards seal`.
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..), conflicts_with_all = ["manifest", "stream"])]
    plan_shards: Option<u64>,
    /// With --plan-shards: cut the matrix into bands of `rows` (every shard answers every query
    /// over its rows) or of `columns` (each shard holds whole records and answers its columns'
    /// part of a query) [default: rows].
    #[arg(long, requires = "plan_shards")]
    split: Option<Split>,
    /// Build one shard of the plan --manifest names, from the input it was planned from.
    #[arg(long, requires = "shard", conflicts_with = "stream")]
    manifest: Option<PathBuf>,
    /// With --manifest: the shard to build, I/N with I from 0.
    #[arg(long, requires = "manifest")]
    shard: Option<ShardIndex>,
    #[command(flatten)]
    engine: EngineArgs,
}

/// The value parser of `--scheme`: the names of the registry's builders.
fn scheme_parser() -> impl TypedValueParser<Value = &'static dyn Builder> {
    let names: Vec<&'static str> = builders().iter().map(|b| b.name()).collect();
    PossibleValuesParser::new(names)
        .map(|name: String| builder(&name).expect("the parser accepts only the builders' names"))
}

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
    #[arg(long, value_parser = usage::threads())]
    pub threads: Option<usize>,
    /// Refuse to build when the setup would need more memory than this (e.g. 8GiB, 512MB or
    /// bytes; default: the memory the system has available).
    #[arg(long, value_parser = memory::parse_size)]
    pub max_memory: Option<u64>,
}

impl EngineArgs {
    /// The engine's setup options.
    pub fn options(&self) -> EngineOptions {
        EngineOptions {
            params: self.params,
            layout: self.layout,
            matrix: self.matrix,
            value_bytes: None,
            capacity: None,
        }
    }

    /// Checks, before anything is allocated, that the build of records of `shape` with
    /// `options` fits in memory (`--max-memory`, or what the system has available), holding
    /// `input_bytes` of input besides; prints the warning of a setup that dwarfs its data.
    pub fn check_build(
        &self,
        options: &BuildOptions,
        shape: &Shape,
        input_bytes: u64,
    ) -> Result<()> {
        warn(options.check_memory(
            shape,
            input_bytes,
            self.max_memory,
            "--max-memory",
            layout_option,
        )?);
        Ok(())
    }

    /// The thread pool the setup runs in.
    pub fn pool(&self) -> Result<rayon::ThreadPool> {
        Ok(pools::pool(pools::count(self.threads)?)?)
    }
}

/// The option that chooses `layout`.
fn layout_option(layout: Layout) -> String {
    match layout {
        Layout::Square => "--layout square".into(),
        Layout::OnePerColumn => "--layout one-per-column".into(),
        Layout::PerColumn(count) => format!("--layout {count}"),
    }
}

/// Prints a size warning of a build, if it has one.
fn warn(warning: Option<String>) {
    if let Some(warning) = warning {
        eprintln!("warning: {warning}");
    }
}

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
    /// The records, as the builder takes them.
    fn records(&self) -> Records<'_> {
        match self {
            Self::Raw { data, record_size } => Records::raw(data, *record_size),
            Self::Values(values) => Records::values(values),
            Self::Pairs(pairs) => Records::Pairs(pairs),
        }
    }
}

impl BuildArgs {
    /// Whether the scheme serves records by index only (not the default builder, which also
    /// builds keyword databases and streams).
    fn indexed_only(&self) -> bool {
        self.scheme.name() != default_builder().name()
    }
}

/// Refuses, before any work, the arguments that do not go together.
fn check_usage(args: &BuildArgs, format: InputFormat) -> Result<(), Usage> {
    let indexed_only = args.indexed_only();
    usage::ensure(
        !(indexed_only && args.key_column.is_some()),
        format!(
            "--scheme {} serves records by index; a keyword database takes --key-column alone",
            args.scheme.name()
        ),
    )?;
    usage::ensure(
        !(indexed_only && args.stream),
        "--stream builds index databases (--scheme index)",
    )?;
    usage::ensure(
        args.arity.is_none() || args.key_column.is_some(),
        "--arity applies to keyword databases (--key-column)",
    )?;
    usage::ensure(
        args.capacity.is_none()
            || (args.key_column.is_none() && args.scheme.changes_in_place() && !args.stream),
        "--capacity applies to index databases built in memory (--scheme index, no --stream), the databases that change in place",
    )?;
    usage::ensure(
        args.value_bytes.is_none()
            || (format != InputFormat::Raw
                && args.key_column.is_none()
                && args.scheme.changes_in_place()),
        "--value-bytes applies to index databases of CSV or JSON-lines values (--scheme index), the databases that change in place",
    )?;
    usage::ensure(
        !((args.plan_shards.is_some() || args.manifest.is_some())
            && (indexed_only || args.key_column.is_some())),
        "sharded databases (--plan-shards, --shard) are index databases (--scheme index, no --key-column)",
    )?;
    if format == InputFormat::Raw {
        return usage::ensure(
            args.columns.is_empty(),
            "--column applies to CSV and JSON-lines input",
        );
    }
    usage::ensure(
        args.record_size.is_none(),
        "--record-size applies to raw input only: CSV and JSON-lines records are their columns",
    )?;
    usage::ensure(
        !args.stream,
        "--stream applies to raw input only: CSV and JSON-lines input is built in memory",
    )?;
    usage::ensure(
        args.key_column.is_some() || !args.columns.is_empty(),
        "name the record's column(s) with --column (or --key-column and --value-column for a keyword database)",
    )
}

/// Runs `obscura build`.
pub fn run(args: BuildArgs) -> Result<()> {
    let format = args
        .format
        .unwrap_or_else(|| InputFormat::guess(&args.input));
    check_usage(&args, format)?;
    let indexed_only = args.indexed_only();
    let options = BuildOptions {
        scheme: args.scheme,
        engine: EngineOptions {
            value_bytes: args.value_bytes,
            capacity: args.capacity,
            ..args.engine.options()
        },
        arity: args.arity,
    };
    if args.plan_shards.is_some() || args.manifest.is_some() {
        return run_sharded(&args, format, options.engine);
    }
    let input = match format {
        InputFormat::Raw => {
            let (size, record_size) = raw_input(&args)?;
            let shape = Shape::Index(RecordShape::Raw {
                bytes: size,
                record_bytes: record_size,
            });
            let in_memory = args.engine.check_build(&options, &shape, size);
            let streamed = StreamedBuild::plan(size, record_size, args.engine.options())?;
            let stream_fits = sizes::fits(streamed.peak_bytes(), args.engine.max_memory);
            match in_memory {
                _ if args.stream => return build_streamed(&args, &streamed),
                Err(reason) if stream_fits && !indexed_only && args.capacity.is_none() => {
                    eprintln!(
                        "streaming the build, in about {} of memory: in memory {reason:#}",
                        sizes::human(streamed.peak_bytes())
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
                None => Input::Values(read(&args.columns)?),
            };
            ensure!(
                !input.records().shape().is_empty(),
                "{} has no rows: there are no records to serve",
                args.input.display()
            );
            input
        }
    };
    let records = input.records();
    let shape = records.shape();
    if !matches!(input, Input::Raw { .. }) {
        args.engine
            .check_build(&options, &shape, shape.held_bytes())?;
    }
    build_and_write(&args.engine, &args.out, records, &options)
}

/// The size of the raw input and its records' size: raw input needs `--record-size`, and
/// records.
fn raw_input(args: &BuildArgs) -> Result<(u64, u64)> {
    let record_size = args
        .record_size
        .ok_or_else(|| Usage("--record-size is needed for raw input".into()))?;
    let size = std::fs::metadata(&args.input)
        .with_context(|| format!("cannot read {}", args.input.display()))?
        .len();
    ensure!(
        size > 0,
        "{} is empty: there are no records to serve",
        args.input.display()
    );
    Ok((size, record_size))
}

/// Plans a sharded database (`--plan-shards`) or builds one of its shards (`--shard`).
fn run_sharded(args: &BuildArgs, format: InputFormat, options: EngineOptions) -> Result<()> {
    let slots = match format {
        InputFormat::Raw => {
            let (size, record_size) = raw_input(args)?;
            Slots {
                path: &args.input,
                data_bytes: size,
                slot_bytes: record_size,
                format: RecordFormat::Raw,
                held: None,
            }
        }
        InputFormat::Csv => {
            let values = ingest::csv_values(&args.input, &args.columns)?;
            shards::value_slots(&args.input, &values, args.value_bytes)?
        }
        InputFormat::Jsonl => {
            let values = ingest::jsonl_values(&args.input, &args.columns)?;
            shards::value_slots(&args.input, &values, args.value_bytes)?
        }
    };
    let pool = args.engine.pool()?;
    pool.install(|| match (args.plan_shards, &args.manifest, args.shard) {
        (Some(count), _, _) => shards::plan(
            &slots,
            options,
            args.split.unwrap_or(Split::Rows),
            count,
            &args.out,
        ),
        (None, Some(manifest), Some(shard)) => shards::build(&slots, manifest, shard, &args.out),
        _ => unreachable!("run_sharded is called with --plan-shards or --manifest and --shard"),
    })
}

/// Builds the database of `records` as `options` say, in `engine`'s thread pool with progress
/// bars, writes it to `out` and reports it.
pub fn build_and_write(
    engine: &EngineArgs,
    out: &Path,
    records: Records<'_>,
    options: &BuildOptions,
) -> Result<()> {
    let shape = records.shape();
    let pool = engine.pool()?;
    let started = Instant::now();
    let database: Database = pool.install(|| {
        progress::with_bars(options.steps(&shape), |progress| {
            builder_of::build(records, options, progress)
        })
    })?;
    let listing = database.listing();
    if let Some(note) = &listing.note {
        eprintln!("note: {note}");
    }
    let written = store::write_database(out, &database)?;
    let description = format!(
        "{}, query {} bytes, answer {} bytes",
        listing.description, listing.query_bytes, listing.answer_bytes
    );
    report(out, listing.kind, &description, &written, started);
    Ok(())
}

/// Streams the setup of the raw records of `args.input` to `args.out`, as `plan` says.
fn build_streamed(args: &BuildArgs, plan: &StreamedBuild) -> Result<()> {
    let pool = args.engine.pool()?;
    let started = Instant::now();
    let mut input = SequentialReader::open(&args.input)
        .with_context(|| format!("cannot read {}", args.input.display()))?;
    let written = pool
        .install(|| {
            progress::with_bar("streaming the build", |progress| {
                store::write_streamed(&args.out, plan, &mut input, progress)
            })
        })
        .with_context(|| format!("{} from {}", args.out.display(), args.input.display()))?;
    let g = plan.geometry();
    let description = format!(
        "{} records of {} bytes, {}",
        g.records(),
        g.record_bytes(),
        lwe::describe(g, *plan.params())
    );
    report(&args.out, "index", &description, &written, started);
    Ok(())
}

/// Prints what a build wrote to `out`: a database of `kind`, as `description` says.
fn report(out: &Path, kind: &str, description: &str, written: &WrittenSetup, started: Instant) {
    println!(
        "wrote {}: {kind} database, {description}, public setup {} bytes, setup sha256 {}, built in {:.2?}",
        out.display(),
        written.bytes,
        hex::encode(written.sha256),
        started.elapsed()
    );
}
