//! The `obscura` command: a thin front end over the Obscura libraries.

mod bench;
mod build;
mod demo;
mod get;
mod ingest;
mod merkle;
mod progress;
mod psi;
mod serve;
mod threads;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// Private information retrieval and private set intersection: fetch a record, a value or a
/// Merkle proof without the server learning which, or intersect two sets and learn nothing else.
#[derive(Parser)]
#[command(name = "obscura", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Build a PIR database file from raw fixed-size records, CSV or JSON lines.
    Build(build::BuildArgs),
    /// Fetch a record (by index) or a value (by key) privately, from a file or from a server.
    Get(get::GetArgs),
    /// Serve database files over HTTP.
    Serve(serve::ServeArgs),
    /// Build a built-in database and show a private retrieval with sizes and timings.
    Demo(demo::DemoArgs),
    /// Run a standard benchmark workload (with the machine's memory bandwidth).
    Bench(bench::BenchArgs),
    /// Private set intersection with a peer over TCP (one party per terminal).
    Psi(psi::PsiArgs),
    /// Merkle trees: build a TreePIR database, fetch audit paths privately.
    Merkle(merkle::MerkleArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Build(args) => build::run(args),
        Command::Get(args) => get::run(args),
        Command::Serve(args) => serve::run(args),
        Command::Demo(args) => demo::run(args),
        Command::Bench(args) => bench::run(args),
        Command::Psi(args) => psi::run(args),
        Command::Merkle(args) => merkle::run(args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) if error.is::<get::NotFound>() => {
            eprintln!("{error}");
            ExitCode::from(2)
        }
        Err(error) => {
            eprintln!("error: {error:#}");
            ExitCode::FAILURE
        }
    }
}
