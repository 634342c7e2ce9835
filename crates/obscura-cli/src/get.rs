//! `obscura get`: one private retrieval, from a database file or from a server.

use std::io::Write;
use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::Args;
use obscura_pir::lwe::Client;
use obscura_pir::{PirClient, PirServer};
use obscura_server::client::HttpClient;

/// Arguments of `obscura get`.
#[derive(Args)]
pub struct GetArgs {
    /// The database: a file written by `obscura build`, or with `--server` a database name.
    #[arg(long)]
    db: String,
    /// Index of the record to fetch (from 0).
    #[arg(long)]
    index: u64,
    /// Fetch from this server (e.g. http://127.0.0.1:8080) instead of a local file.
    #[arg(long)]
    server: Option<String>,
    /// Where public setups downloaded from servers are cached (default: the user's cache folder).
    #[arg(long)]
    cache_dir: Option<PathBuf>,
    /// Write the raw record to this file instead of printing it as hex.
    #[arg(long)]
    out: Option<PathBuf>,
}

/// The default cache folder: `$XDG_CACHE_HOME/obscura` or `~/.cache/obscura`.
fn default_cache_dir() -> Option<PathBuf> {
    let base = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".cache")))?;
    Some(base.join("obscura"))
}

/// Runs `obscura get`.
pub fn run(args: GetArgs) -> Result<()> {
    let record = match &args.server {
        Some(url) => {
            let http = HttpClient::new(url, args.cache_dir.clone().or_else(default_cache_dir));
            let setup = http.setup(&args.db)?;
            let mut client = Client::new(setup.clone());
            let (query, state) = client.query(args.index)?;
            let answer = http.query(&args.db, &setup, &query)?;
            client.decode(state, &answer)?
        }
        None => {
            let server = obscura_server::store::read_database(args.db.as_ref())?;
            let mut client = Client::new(server.public_setup().clone());
            let (query, state) = client.query(args.index)?;
            let answer = server.answer(&query)?;
            client.decode(state, &answer)?
        }
    };
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
