//! `obscura get`: one private retrieval from a database file.

use std::io::Write;
use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::Args;
use obscura_pir::lwe::Client;
use obscura_pir::{PirClient, PirServer};

/// Arguments of `obscura get`.
#[derive(Args)]
pub struct GetArgs {
    /// Database file written by `obscura build`.
    #[arg(long)]
    db: PathBuf,
    /// Index of the record to fetch (from 0).
    #[arg(long)]
    index: u64,
    /// Write the raw record to this file instead of printing it as hex.
    #[arg(long)]
    out: Option<PathBuf>,
}

/// Runs `obscura get`.
pub fn run(args: GetArgs) -> Result<()> {
    let server = obscura_server::store::read_database(&args.db)?;
    let mut client = Client::new(server.public_setup().clone());
    let (query, state) = client.query(args.index)?;
    let answer = server.answer(&query)?;
    let record = client.decode(state, &answer)?;
    match args.out {
        Some(path) => std::fs::write(&path, &record)
            .with_context(|| format!("cannot write {}", path.display()))?,
        None => {
            let hex: String = record.iter().map(|b| format!("{b:02x}")).collect();
            writeln!(std::io::stdout(), "{hex}")?;
        }
    }
    Ok(())
}
