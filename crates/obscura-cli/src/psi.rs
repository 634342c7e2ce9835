//! `obscura psi`: private set intersection with a peer over TCP, one party per terminal.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{bail, ensure, Context, Result};
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use obscura_psi::transport::tcp::{self, TcpTransport};
use obscura_psi::{Options, Outcome, Protocol, Role, Stage};

use crate::{ingest, threads};

/// Arguments of `obscura psi`.
#[derive(Args)]
#[command(group = clap::ArgGroup::new("endpoint").required(true).args(["listen", "connect"]))]
pub struct PsiArgs {
    /// The PSI protocol.
    #[arg(long, value_enum)]
    protocol: ProtocolArg,
    /// This party's role: the client learns the intersection, the server only with --both-learn.
    #[arg(long, value_enum)]
    role: RoleArg,
    /// The server: address to listen on for the client (e.g. 0.0.0.0:9000).
    #[arg(long)]
    listen: Option<String>,
    /// The client: address of the server (e.g. 10.0.0.2:9000); retried until --timeout.
    #[arg(long)]
    connect: Option<String>,
    /// CSV file with a header row; each row holds one item.
    #[arg(long)]
    input: PathBuf,
    /// The column that holds the items.
    #[arg(long)]
    column: String,
    /// Write the input rows whose item is in the intersection to this CSV file (header kept,
    /// input order). On the server it needs --both-learn.
    #[arg(long)]
    output: Option<PathBuf>,
    /// Both parties learn the intersection (both must pass it).
    #[arg(long)]
    both_learn: bool,
    /// Threads for hashing and group operations (default: all cores).
    #[arg(long)]
    threads: Option<usize>,
    /// Seconds to wait for the peer: to connect, and for each read and write.
    #[arg(long, default_value_t = 60)]
    timeout: u64,
}

/// The protocols `obscura psi` runs.
#[derive(Clone, Copy, clap::ValueEnum)]
enum ProtocolArg {
    /// ECDH-PSI over ristretto255 (semi-honest).
    Ecdh,
}

impl From<ProtocolArg> for Protocol {
    fn from(protocol: ProtocolArg) -> Self {
        match protocol {
            ProtocolArg::Ecdh => Protocol::Ecdh,
        }
    }
}

/// The roles of `obscura psi`.
#[derive(Clone, Copy, clap::ValueEnum)]
enum RoleArg {
    /// Listens, and learns the intersection only with --both-learn.
    Server,
    /// Connects, and learns the intersection.
    Client,
}

impl From<RoleArg> for Role {
    fn from(role: RoleArg) -> Self {
        match role {
            RoleArg::Server => Role::Server,
            RoleArg::Client => Role::Client,
        }
    }
}

/// Runs `obscura psi`.
pub fn run(args: PsiArgs) -> Result<()> {
    let role = Role::from(args.role);
    ensure!(args.timeout >= 1, "--timeout must be at least 1 second");
    ensure!(
        args.output.is_none() || role == Role::Client || args.both_learn,
        "--output on the server needs --both-learn: otherwise only the client learns the intersection"
    );
    let timeout = Duration::from_secs(args.timeout);
    let pool = threads::pool(threads::count(args.threads)?)?;
    let items = ingest::csv_values(&args.input, std::slice::from_ref(&args.column))?;
    let mut link = match (role, &args.listen, &args.connect) {
        (Role::Server, Some(addr), None) => accept(addr, timeout)?,
        (Role::Client, None, Some(addr)) => tcp::connect(addr.as_str(), timeout)
            .with_context(|| format!("cannot connect to {addr} within {}s", args.timeout))?,
        (Role::Server, ..) => bail!("the server waits for the client: give --listen ADDR"),
        (Role::Client, ..) => bail!("the client connects to the server: give --connect ADDR"),
    };
    let options = Options {
        protocol: args.protocol.into(),
        role,
        both_learn: args.both_learn,
    };
    let bar = ProgressBar::new(0);
    bar.set_style(
        ProgressStyle::with_template("{msg} [{bar:40}] {percent}% ({elapsed}, {eta} left)")
            .expect("valid template")
            .progress_chars("=> "),
    );
    let report = |stage, done, total| {
        bar.set_message(match stage {
            Stage::OwnItems => "blinding our items",
            Stage::PeerItems => "blinding the peer's items",
        });
        bar.set_length(total);
        bar.set_position(done);
    };
    let outcome = pool.install(|| obscura_psi::run(&mut link, &items, options, &report));
    bar.finish_and_clear();
    let outcome = outcome.context("the PSI session failed")?;
    print_summary(&outcome, options);
    if let (Some(output), Some(intersection)) = (&args.output, &outcome.intersection) {
        write_rows(&args.input, &intersection.rows, output)?;
        println!(
            "wrote {} rows to {}",
            intersection.rows.len(),
            output.display()
        );
    }
    Ok(())
}

/// Listens on `addr` and waits for one client.
fn accept(addr: &str, timeout: Duration) -> Result<TcpTransport> {
    let listener = TcpListener::bind(addr).with_context(|| format!("cannot listen on {addr}"))?;
    eprintln!("listening on {}", listener.local_addr()?);
    let (link, peer) = tcp::accept(&listener, timeout).context("cannot accept the client")?;
    eprintln!("client connected from {peer}");
    Ok(link)
}

/// Prints what the session did: items, duplicates, intersection, time and traffic.
fn print_summary(outcome: &Outcome, options: Options) {
    println!(
        "psi {} {}: {} items read, {} duplicates dropped, {} unique; the peer has {} unique items",
        options.protocol,
        options.role,
        outcome.rows,
        outcome.duplicates_dropped,
        outcome.unique_items,
        outcome.peer_items
    );
    match &outcome.intersection {
        Some(intersection) => println!(
            "intersection: {} items ({} input rows)",
            intersection.size,
            intersection.rows.len()
        ),
        None => println!("intersection: learned by the client only"),
    }
    println!(
        "time {:.2?}, sent {}, received {}",
        outcome.elapsed,
        bytes(outcome.bytes_sent),
        bytes(outcome.bytes_received)
    );
}

/// A byte count in binary units.
fn bytes(count: u64) -> String {
    let mut value = count as f64;
    for unit in ["B", "KiB", "MiB"] {
        if value < 1024.0 {
            return format!("{value:.1} {unit}");
        }
        value /= 1024.0;
    }
    format!("{value:.1} GiB")
}

/// Copies the header and the data rows numbered `rows` (ascending, from 0) of the CSV file
/// `input` to `output`.
fn write_rows(input: &Path, rows: &[usize], output: &Path) -> Result<()> {
    let mut reader = csv::Reader::from_path(input)
        .with_context(|| format!("cannot read {}", input.display()))?;
    let mut writer = csv::Writer::from_path(output)
        .with_context(|| format!("cannot write {}", output.display()))?;
    writer.write_byte_record(reader.byte_headers()?)?;
    let mut wanted = rows.iter().copied().peekable();
    for (row, record) in reader.byte_records().enumerate() {
        if wanted.peek().is_none() {
            break;
        }
        let record = record.with_context(|| format!("{}: row {}", input.display(), row + 2))?;
        if wanted.next_if_eq(&row).is_some() {
            writer.write_byte_record(&record)?;
        }
    }
    writer
        .flush()
        .with_context(|| format!("cannot write {}", output.display()))
}
