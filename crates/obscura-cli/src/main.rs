//! The `obscura` command: a thin front end over the Obscura libraries.

mod build;
mod demo;
mod get;
mod ingest;
mod memory;
mod merkle;
mod progress;
mod psi;
mod serve;
mod shards;
mod update;
mod usage;

use std::process::ExitCode;

use clap::error::ErrorKind;
use clap::{CommandFactory, Parser, Subcommand};
use obscura_bench::InvalidArguments;
use obscura_math::backend::Backend;

/// What the exit status means, as `--help` shows it.
const EXIT_STATUS: &str = "\
Exit status:
  0  success (for get: the record or the key's value was found)
  1  error (the message starts with \"error:\")
  2  usage error: unknown or invalid arguments, or an OBSCURA_BACKEND this CPU cannot run
  3  get: the key is not in the database, or the record was deleted";

/// Exit status of a usage error.
const USAGE: u8 = 2;

/// Exit status of `obscura get` for a key that is not in the database or a deleted record.
const NOT_FOUND: u8 = 3;

/// Private information retrieval and private set intersection: fetch a record, a value or a
/// Merkle proof without the server learning which, or intersect two sets and learn nothing else.
#[derive(Parser)]
#[command(name = "obscura", version, about, after_help = EXIT_STATUS)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Build a PIR database file from raw fixed-size records, CSV or JSON lines.
    Build(build::BuildArgs),
    /// Apply a file of changes to a database file as its next version (no new setup).
    #[command(after_help = update::CHANGE_FILE)]
    Update(update::UpdateArgs),
    /// Fold a database file's change log (FILE.log) into the file.
    Checkpoint(update::CheckpointArgs),
    /// Fetch a record (by index) or a value (by key) privately, from a file or from a server.
    #[command(after_help = EXIT_STATUS)]
    Get(get::GetArgs),
    /// Serve database files over HTTP.
    Serve(serve::ServeArgs),
    /// Sharded databases: seal the shards `obscura build --shard` built.
    Shards(shards::ShardsArgs),
    /// Build a built-in database and show a private retrieval with sizes and timings.
    Demo(demo::DemoArgs),
    /// Run a standard benchmark workload (with the machine's memory bandwidth).
    Bench(obscura_bench::BenchArgs),
    /// Private set intersection with a peer over TCP (one party per terminal).
    Psi(psi::PsiArgs),
    /// Merkle trees: build a TreePIR database, fetch audit paths privately.
    Merkle(merkle::MerkleArgs),
}

impl Command {
    /// The subcommand's name, as typed.
    fn name(&self) -> &'static str {
        match self {
            Self::Build(_) => "build",
            Self::Update(_) => "update",
            Self::Checkpoint(_) => "checkpoint",
            Self::Get(_) => "get",
            Self::Serve(_) => "serve",
            Self::Shards(_) => "shards",
            Self::Demo(_) => "demo",
            Self::Bench(_) => "bench",
            Self::Psi(_) => "psi",
            Self::Merkle(_) => "merkle",
        }
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let name = cli.command.name();
    if let Err(error) = Backend::select() {
        eprintln!("error: {error}");
        return ExitCode::from(USAGE);
    }
    if !matches!(cli.command, Command::Serve(_)) {
        end_quietly_when_stdout_closes();
    }
    if matches!(
        cli.command,
        Command::Build(_)
            | Command::Update(_)
            | Command::Checkpoint(_)
            | Command::Merkle(_)
            | Command::Shards(_)
            | Command::Demo(_)
    ) {
        // An interrupted build leaves no half-written database file behind.
        if let Err(error) = obscura_store::partial::remove_on_signals() {
            eprintln!("warning: an interrupted build may leave a partial file: {error}");
        }
    }
    let result = match cli.command {
        Command::Build(args) => build::run(args),
        Command::Update(args) => update::run(args),
        Command::Checkpoint(args) => update::checkpoint(args),
        Command::Get(args) => get::run(args),
        Command::Serve(args) => serve::run(args),
        Command::Shards(args) => shards::run(args),
        Command::Demo(args) => demo::run(args),
        Command::Bench(args) => obscura_bench::run(args, &progress::Bars),
        Command::Psi(args) => psi::run(args),
        Command::Merkle(args) => merkle::run(args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) if error.is::<get::NotFound>() => {
            eprintln!("{error}");
            ExitCode::from(NOT_FOUND)
        }
        Err(error) => {
            let usage = (error.downcast_ref::<usage::Usage>().map(|u| &u.0))
                .or_else(|| error.downcast_ref::<InvalidArguments>().map(|u| &u.0));
            match usage {
                Some(message) => exit_with_usage(name, message),
                None => {
                    eprintln!("error: {error:#}");
                    ExitCode::FAILURE
                }
            }
        }
    }
}

/// Reports `usage`, an invalid argument of `subcommand`, as clap reports its own (with the
/// subcommand's usage line), and exits with status 2.
fn exit_with_usage(subcommand: &str, usage: &str) -> ! {
    let mut command = Cli::command();
    command.build();
    let command = command
        .find_subcommand_mut(subcommand)
        .expect("every subcommand is registered");
    command.error(ErrorKind::ArgumentConflict, usage).exit()
}

/// Lets a closed stdout end the process quietly, as it ends other Unix tools: `obscura get ... |
/// head -c1` must not fail with "Broken pipe" on the next write. The Rust runtime ignores
/// SIGPIPE, which turns that write into an error (a panic in `println!`); this restores the
/// signal's default action. `obscura serve` keeps the runtime's setting, so that nothing it
/// writes can end it.
#[cfg(unix)]
#[allow(unsafe_code)]
fn end_quietly_when_stdout_closes() {
    // SAFETY: `signal` with `SIG_DFL` only resets how the process reacts to SIGPIPE; it touches
    // no memory of the program, and runs before any thread of ours exists.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

/// Other systems have no SIGPIPE whose action could be restored.
#[cfg(not(unix))]
fn end_quietly_when_stdout_closes() {}
