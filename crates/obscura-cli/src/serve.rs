//! `obscura serve`: serve database files over HTTP.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, Result};
use clap::Args;
use obscura_server::catalog::Catalog;
use obscura_server::service::{self, ServiceConfig};

use crate::threads;

/// Arguments of `obscura serve`.
#[derive(Args)]
pub struct ServeArgs {
    /// Database files written by `obscura build`; each is served under its file stem.
    #[arg(required = true)]
    databases: Vec<PathBuf>,
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1:8080")]
    listen: SocketAddr,
    /// Queries answered or waiting at once; more get 503.
    #[arg(long, default_value_t = 256)]
    max_concurrent: usize,
    /// Milliseconds the batcher waits for more queries after the first.
    #[arg(long, default_value_t = 1)]
    batch_window_ms: u64,
    /// Time limit of a request, in seconds.
    #[arg(long, default_value_t = 30)]
    timeout_secs: u64,
    /// Threads that answer queries (default: all cores).
    #[arg(long)]
    threads: Option<usize>,
}

/// Runs `obscura serve` until ctrl-c or SIGTERM.
pub fn run(args: ServeArgs) -> Result<()> {
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads::count(args.threads)?)
        .build_global()
        .context("cannot start the thread pool")?;
    let catalog = Catalog::open(&args.databases)?;
    for entry in catalog.entries() {
        let info = &entry.info;
        let per_lookup = match info.height {
            Some(h) => {
                eprintln!(
                    "{}: Merkle tree of {} leaves, height {h}, public setup {} B, a proof is {h} queries ({} B) and {h} answers ({} B)",
                    info.name, info.records, info.hint_bytes, info.query_bytes, info.answer_bytes
                );
                continue;
            }
            None => info.params.as_ref().map_or(0, |p| p.records_per_column),
        };
        let items = match info.kind.as_str() {
            "keyword" => format!("{} keys, rows of", info.records),
            _ => format!("{} records of", info.records),
        };
        eprintln!(
            "{}: {} database, {items} {} B, {per_lookup} per column, public setup {} B, query {} B, answer {} B",
            info.name, info.kind, info.record_bytes, info.hint_bytes, info.query_bytes, info.answer_bytes
        );
    }
    let config = ServiceConfig {
        max_concurrent: args.max_concurrent.max(1),
        batch_window: Duration::from_millis(args.batch_window_ms),
        request_timeout: Duration::from_secs(args.timeout_secs.max(1)),
        ..ServiceConfig::default()
    };
    let runtime = tokio::runtime::Runtime::new().context("cannot start the async runtime")?;
    runtime.block_on(async {
        let listener = tokio::net::TcpListener::bind(args.listen)
            .await
            .with_context(|| format!("cannot listen on {}", args.listen))?;
        eprintln!(
            "serving on http://{} (ctrl-c to stop)",
            listener.local_addr()?
        );
        let limits = config.connections;
        service::serve(
            listener,
            service::router(catalog, config),
            limits,
            service::shutdown_signal(),
        )
        .await
        .context("the server failed")
    })?;
    eprintln!("stopped");
    Ok(())
}
