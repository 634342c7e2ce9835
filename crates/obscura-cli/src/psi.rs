//! `obscura psi`: private set intersection with a peer, one party per terminal, over TCP or
//! through a folder both reach (a mailbox).

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result};
use clap::Args;
use obscura_psi::bucketed::{run_bucketed, BucketOptions, BucketedOutcome, ItemSource};
use obscura_psi::transport::mailbox::{check_session_name, MailboxTransport};
use obscura_psi::transport::tcp::{self, TcpTransport};
use obscura_psi::Transport;
use obscura_psi::{HelloError, Options, Outcome, Protocol, PsiError, Role, Stage};
use obscura_store::memory::human;

use crate::usage::{self, Usage};
use crate::{ingest, progress};
use obscura_math::threads as pools;

/// Arguments of `obscura psi`.
#[derive(Args)]
#[command(group = clap::ArgGroup::new("endpoint").required(true).args(["listen", "connect", "mailbox"]))]
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
    /// Either role: exchange the messages as files in this folder, which both parties reach (a
    /// shared or synced folder, a mounted bucket), instead of a connection. Needs --session.
    #[arg(long, requires = "session")]
    mailbox: Option<PathBuf>,
    /// The mailbox session's name, the same on both sides (letters, digits, '-', '_').
    #[arg(long, requires = "mailbox")]
    session: Option<String>,
    /// The mailbox session's attempt, the same on both sides: each runs once in a folder, so a
    /// rerun after a failure takes the next one.
    #[arg(long, default_value_t = 1, requires = "mailbox", value_parser = clap::value_parser!(u32).range(1..))]
    attempt: u32,
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
    /// Threads for hashing, group operations, OT extension and VOLE (default: all cores).
    #[arg(long, value_parser = usage::threads())]
    threads: Option<usize>,
    /// Seconds to wait for the peer: for the client to connect (server) or the server to listen
    /// (client), then for each read and write (with --mailbox, for each of the peer's files) (with --bucket-items, also for the peer to finish
    /// reading its input: raise it where one input takes much longer to read than the other).
    #[arg(long, default_value_t = 60, value_parser = clap::value_parser!(u64).range(1..))]
    timeout: u64,
    /// Stream the input through buckets of about this many items on disk, one bucket in memory
    /// at a time (for sets larger than memory; both parties must pass the same value).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    bucket_items: Option<u64>,
    /// Folder for the bucket files of --bucket-items (default: the system's temporary folder).
    #[arg(long, requires = "bucket_items")]
    spill_dir: Option<PathBuf>,
}

/// The protocols `obscura psi` runs.
#[derive(Clone, Copy, clap::ValueEnum)]
enum ProtocolArg {
    /// ECDH-PSI over ristretto255 (semi-honest).
    Ecdh,
    /// KKRT-PSI: OT extension, batched OPRF and cuckoo hashing (semi-honest).
    Kkrt,
    /// RR22 VOLE-PSI: silent VOLE and an OKVS (semi-honest; a fifth of KKRT's traffic, for
    /// slow links).
    Rr22,
    /// RR22 VOLE-PSI secure against a malicious peer (consistency-checked VOLE over all of
    /// GF(2^128); about a third more traffic than rr22; the client alone learns the
    /// intersection).
    Rr22Malicious,
}

impl From<ProtocolArg> for Protocol {
    fn from(protocol: ProtocolArg) -> Self {
        match protocol {
            ProtocolArg::Ecdh => Protocol::Ecdh,
            ProtocolArg::Kkrt => Protocol::Kkrt,
            ProtocolArg::Rr22 => Protocol::Rr22,
            ProtocolArg::Rr22Malicious => Protocol::Rr22Malicious,
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
    let options = Options {
        protocol: args.protocol.into(),
        role,
        both_learn: args.both_learn,
    };
    options.check().map_err(|error| Usage(error.to_string()))?;
    let endpoint = match (role, &args.listen, &args.connect, &args.mailbox) {
        (_, None, None, Some(folder)) => {
            let session = args.session.as_deref().unwrap_or_default();
            check_session_name(session).map_err(|error| Usage(error.to_string()))?;
            Endpoint::Mailbox(folder)
        }
        (Role::Server, Some(address), None, None) => Endpoint::Listen(address),
        (Role::Client, None, Some(address), None) => Endpoint::Connect(address),
        (Role::Server, ..) => {
            return Err(Usage(
                "the server waits for the client: give --listen ADDR or --mailbox DIR alone".into(),
            )
            .into())
        }
        (Role::Client, ..) => {
            return Err(Usage(
                "the client connects to the server: give --connect ADDR or --mailbox DIR alone"
                    .into(),
            )
            .into())
        }
    };
    usage::ensure(
        args.output.is_none() || role == Role::Client || args.both_learn,
        "--output on the server needs --both-learn: otherwise only the client learns the intersection",
    )?;
    let timeout = Duration::from_secs(args.timeout);
    let pool = pools::pool(pools::count(args.threads)?)?;
    // Read (or, streaming, check) the input before waiting for the peer.
    let input = match args.bucket_items {
        None => Input::Rows(ingest::csv_values(
            &args.input,
            std::slice::from_ref(&args.column),
        )?),
        Some(bucket_items) => Input::Streamed {
            source: CsvColumn::open(&args.input, &args.column)?,
            bucket_items,
        },
    };
    let mut link: Box<dyn Transport> = match endpoint {
        Endpoint::Listen(address) => Box::new(accept(address, timeout)?),
        Endpoint::Connect(address) => Box::new(
            tcp::connect(address.as_str(), timeout)
                .with_context(|| format!("cannot connect to {address} within {}s", args.timeout))?,
        ),
        Endpoint::Mailbox(folder) => {
            let session = args.session.as_deref().unwrap_or_default();
            let mailbox = MailboxTransport::open(folder, session, args.attempt, role, timeout)?;
            eprintln!(
                "session {session} (attempt {}) in the mailbox {}",
                args.attempt,
                folder.display()
            );
            Box::new(mailbox)
        }
    };
    let bar = progress::bar();
    let stage_message = |stage: Stage| stage.label(options.protocol);
    let rows = match input {
        Input::Rows(items) => {
            let report = |stage, done, total| {
                bar.set_message(stage_message(stage));
                bar.set_length(total);
                bar.set_position(done);
            };
            let outcome =
                pool.install(|| obscura_psi::run(link.as_mut(), &items, options, &report));
            bar.finish_and_clear();
            let outcome = outcome.map_err(|error| session_error(error, role))?;
            print_summary(&outcome, options);
            outcome
                .intersection
                .map(|i| i.rows.into_iter().map(|row| row as u64).collect::<Vec<_>>())
        }
        Input::Streamed {
            source,
            bucket_items,
        } => {
            let folder = args.spill_dir.clone().unwrap_or_else(std::env::temp_dir);
            let bucketed = BucketOptions {
                session: options,
                bucket_items,
            };
            let report = |bucket, buckets, stage, done, total| {
                bar.set_message(format!(
                    "bucket {}/{buckets}: {}",
                    bucket + 1,
                    stage_message(stage)
                ));
                bar.set_length(total);
                bar.set_position(done);
            };
            let outcome =
                pool.install(|| run_bucketed(link.as_mut(), &source, bucketed, &folder, &report));
            bar.finish_and_clear();
            let outcome = outcome.map_err(|error| session_error(error, role))?;
            print_bucketed_summary(&outcome, options);
            outcome.intersection.map(|set| set.iter().collect())
        }
    };
    if let (Some(output), Some(rows)) = (&args.output, rows) {
        write_rows(&args.input, &rows, output)?;
        println!("wrote {} rows to {}", rows.len(), output.display());
    }
    Ok(())
}

/// Where the peer is reached.
enum Endpoint<'a> {
    /// The server listens at an address.
    Listen(&'a String),
    /// The client connects to an address.
    Connect(&'a String),
    /// Either role exchanges files in a folder.
    Mailbox(&'a PathBuf),
}

/// A party's input: its rows in memory, or a column streamed through buckets on disk.
enum Input {
    /// The items of every row, read before the session.
    Rows(Vec<Vec<u8>>),
    /// The column, streamed once through the buckets.
    Streamed {
        source: CsvColumn,
        bucket_items: u64,
    },
}

/// One column of a CSV file with a header row, read from the file as a bucketed session
/// streams it (so the session never holds the whole input).
struct CsvColumn {
    path: PathBuf,
    index: usize,
}

impl CsvColumn {
    /// The column `name` of `path`; fails now if the file or the column is missing.
    fn open(path: &Path, name: &str) -> Result<Self> {
        let mut reader = csv::Reader::from_path(path)
            .with_context(|| format!("cannot read {}", path.display()))?;
        let headers = reader
            .byte_headers()
            .with_context(|| format!("{}: cannot read the header row", path.display()))?;
        let index = ingest::column_index(path, headers, name)?;
        Ok(Self {
            path: path.to_path_buf(),
            index,
        })
    }
}

impl ItemSource for CsvColumn {
    fn for_each(
        &self,
        visit: &mut dyn FnMut(&[u8]) -> Result<(), PsiError>,
    ) -> Result<(), PsiError> {
        let failed = |row, source| {
            PsiError::Input(Box::new(CsvError {
                path: self.path.clone(),
                row,
                source,
            }))
        };
        let mut reader = csv::Reader::from_path(&self.path).map_err(|e| failed(None, e))?;
        let mut record = csv::ByteRecord::new();
        let mut row = 2; // line numbers as a spreadsheet shows them: the header is row 1
        while reader
            .read_byte_record(&mut record)
            .map_err(|e| failed(Some(row), e))?
        {
            visit(record.get(self.index).unwrap_or_default())?;
            row += 1;
        }
        Ok(())
    }
}

/// A CSV input that could not be read, with the row where it failed.
#[derive(Debug, thiserror::Error)]
#[error("{}{}", path.display(), row.map_or(String::new(), |row| format!(": row {row}")))]
struct CsvError {
    path: PathBuf,
    row: Option<u64>,
    #[source]
    source: csv::Error,
}

/// Listens on `addr` and waits for one client, at most `timeout`.
fn accept(addr: &str, timeout: Duration) -> Result<TcpTransport> {
    let listener = TcpListener::bind(addr).with_context(|| format!("cannot listen on {addr}"))?;
    let local = listener.local_addr()?;
    eprintln!("listening on {local}");
    let (link, peer) = tcp::accept(&listener, timeout).map_err(|error| {
        if error.kind() == std::io::ErrorKind::TimedOut {
            anyhow::anyhow!(
                "no client connected to {local} within {}s (--timeout)",
                timeout.as_secs()
            )
        } else {
            anyhow::Error::new(error).context("cannot accept the client")
        }
    })?;
    eprintln!("client connected from {peer}");
    Ok(link)
}

/// The error of a failed session, for a party of role `role`. Settings that differ between the
/// two parties are named by their flag and the side that passes it; anything else keeps the
/// library's message.
fn session_error(error: PsiError, role: Role) -> anyhow::Error {
    let PsiError::Hello(mismatch) = &error else {
        return anyhow::Error::new(error).context("the PSI session failed");
    };
    let peer = match role {
        Role::Client => Role::Server,
        Role::Server => Role::Client,
    };
    let side = |ours: bool| if ours { role } else { peer };
    let message = match *mismatch {
        HelloError::ProtocolMismatch { ours, theirs } => format!(
            "--protocol differs: this {role} runs {ours}, the {peer} runs {theirs}; pass the same --protocol on both sides"
        ),
        HelloError::SameRole(both) => format!(
            "both parties are the {both}: pass --role client on one side and --role server on the other"
        ),
        HelloError::BothLearnMismatch { ours } => format!(
            "--both-learn is given on the {} only: pass it on both sides or on neither",
            side(ours)
        ),
        HelloError::BucketSizeMismatch { ours, theirs } => format!(
            "--bucket-items differs: this {role} passes {ours}, the {peer} {theirs}; pass the same value on both sides"
        ),
        HelloError::BucketingMismatch { ours } => format!(
            "--bucket-items is given on the {} only: pass the same value on both sides or on neither",
            side(ours)
        ),
        _ => return anyhow::Error::new(error).context("the PSI session failed"),
    };
    anyhow::anyhow!(message)
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
        human(outcome.bytes_sent),
        human(outcome.bytes_received)
    );
}

/// Prints what a bucketed session did.
fn print_bucketed_summary(outcome: &BucketedOutcome, options: Options) {
    println!(
        "psi {} {} in {} buckets of {} items: {} rows read, {} duplicates dropped; the peer has {} rows",
        options.protocol,
        options.role,
        outcome.plan.buckets(),
        outcome.plan.padded_size(options.role),
        outcome.rows,
        outcome.duplicates_dropped,
        outcome.peer_rows
    );
    match (&outcome.intersection, outcome.intersection_size) {
        (Some(rows), Some(size)) => {
            println!("intersection: {size} items ({} input rows)", rows.len())
        }
        _ => println!("intersection: learned by the client only"),
    }
    println!(
        "time {:.2?} (input read and split in {:.2?}), sent {}, received {}",
        outcome.elapsed,
        outcome.partition_time,
        human(outcome.bytes_sent),
        human(outcome.bytes_received)
    );
}

/// Copies the header and the data rows numbered `rows` (ascending, from 0) of the CSV file
/// `input` to `output`.
fn write_rows(input: &Path, rows: &[u64], output: &Path) -> Result<()> {
    let mut reader = csv::Reader::from_path(input)
        .with_context(|| format!("cannot read {}", input.display()))?;
    let mut writer = csv::Writer::from_path(output)
        .with_context(|| format!("cannot write {}", output.display()))?;
    writer.write_byte_record(reader.byte_headers()?)?;
    let mut wanted = rows.iter().copied().peekable();
    for (row, record) in (0u64..).zip(reader.byte_records()) {
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
