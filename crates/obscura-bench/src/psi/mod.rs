//! The `psi-ecdh`, `psi-kkrt`, `psi-rr22` and `psi-rr22-malicious` presets: both parties in this process, each on its own thread
//! with its own rayon pool, over loopback TCP, paced like a 100 Mbps or 10 Mbps link if asked.

pub mod report;

use std::collections::HashSet;
use std::io::BufReader;
use std::net::{TcpListener, TcpStream};
use std::num::NonZeroU64;
use std::time::Duration;

use anyhow::{anyhow, bail, Context, Result};
use clap::ValueEnum;
use obscura_psi::transport::{tcp, RateLimited, StreamTransport, Transport};
use obscura_psi::{Intersection, Options, Outcome, Protocol, Role};
use rayon::ThreadPool;

use crate::lwe::report::Report;
use crate::measure::{generate, timed};
use crate::Preset;
use obscura_math::threads as pools;
use report::{PsiBytes, PsiReport, PsiRun, PsiSeconds};

/// How long a party waits for the other's next message: enough for the largest sets on the
/// slowest link.
const TIMEOUT: Duration = Duration::from_secs(600);

/// The link between the two parties.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Link {
    /// Loopback TCP as it is.
    Unlimited,
    /// 100 Mbit/s each way.
    #[value(name = "100mbps")]
    Mbps100,
    /// 10 Mbit/s each way.
    #[value(name = "10mbps")]
    Mbps10,
}

impl Link {
    /// The name users type.
    fn name(self) -> &'static str {
        match self {
            Self::Unlimited => "unlimited",
            Self::Mbps100 => "100mbps",
            Self::Mbps10 => "10mbps",
        }
    }

    /// The rate each way, `None` when unlimited.
    fn bits_per_second(self) -> Option<NonZeroU64> {
        match self {
            Self::Unlimited => None,
            Self::Mbps100 => NonZeroU64::new(100_000_000),
            Self::Mbps10 => NonZeroU64::new(10_000_000),
        }
    }
}

/// The protocol of a PSI preset; `None` for the other presets.
pub fn protocol(preset: Preset) -> Option<Protocol> {
    match preset {
        Preset::PsiEcdh => Some(Protocol::Ecdh),
        Preset::PsiKkrt => Some(Protocol::Kkrt),
        Preset::PsiRr22 => Some(Protocol::Rr22),
        Preset::PsiRr22Malicious => Some(Protocol::Rr22Malicious),
        Preset::Frodo
        | Preset::Simple1g
        | Preset::Chalamet
        | Preset::Service
        | Preset::ServiceSharded
        | Preset::TreepirSetup
        | Preset::TreepirE2e
        | Preset::StreamedBuild
        | Preset::Double1g
        | Preset::YpirSmall
        | Preset::Ypir1g
        | Preset::YpirSp
        | Preset::Update
        | Preset::UpdateDouble
        | Preset::UpdateMerkle
        | Preset::UpdateKeyword
        | Preset::UpdateYpir => None,
    }
}

/// Runs a PSI preset: `records` pseudo-random items of `record_bytes` bytes per side, half of
/// them shared, on every link of `links` with one and with `threads` threads per party; each
/// client intersection is checked against the plain one.
pub fn run(
    protocol: Protocol,
    records: u64,
    record_bytes: u64,
    links: &[Link],
    threads: usize,
    base: &Report,
) -> Result<PsiReport> {
    let per_side = usize::try_from(records).context("too many items")?;
    let shared = per_side / 2;
    let both_sets = records
        .checked_add(records - shared as u64)
        .context("too many items")?;
    let data = generate(both_sets, record_bytes)?;
    let item_bytes = usize::try_from(record_bytes).context("items too long")?;
    let items: Vec<&[u8]> = data.chunks_exact(item_bytes).collect();
    let (client, server) = (&items[..per_side], &items[per_side - shared..]);
    let expected = plain_intersection(client, server);
    let mut thread_counts = vec![1, threads];
    thread_counts.dedup();
    let mut runs = Vec::new();
    for &link in links {
        for &threads in &thread_counts {
            let run = measure(protocol, (client, server), &expected, threads, link);
            runs.push(
                run.with_context(|| format!("{} link, threads per party: {threads}", link.name()))?,
            );
        }
    }
    let kernel = (protocol == Protocol::Ecdh).then(obscura_psi::ecdh::kernel);
    PsiReport::new(
        base,
        protocol.name(),
        kernel,
        records,
        record_bytes,
        shared as u64,
        runs,
    )
    .context("no link to run on")
}

/// The client's rows whose item the server holds, and how many distinct items they are.
fn plain_intersection(client: &[&[u8]], server: &[&[u8]]) -> Intersection {
    let server: HashSet<&[u8]> = server.iter().copied().collect();
    let rows: Vec<usize> = (0..client.len())
        .filter(|&row| server.contains(client[row]))
        .collect();
    let size = rows
        .iter()
        .map(|&row| client[row])
        .collect::<HashSet<_>>()
        .len();
    Intersection { rows, size }
}

/// One run: connects the parties, runs both at once and checks what each learned.
fn measure(
    protocol: Protocol,
    (client_items, server_items): (&[&[u8]], &[&[u8]]),
    expected: &Intersection,
    threads: usize,
    link: Link,
) -> Result<PsiRun> {
    let (client_link, server_link) = connect(link)?;
    let (client_pool, server_pool) = (pools::pool(threads)?, pools::pool(threads)?);
    let ((client, server), total) = timed(|| {
        std::thread::scope(|scope| {
            let server = scope.spawn(|| {
                party(
                    protocol,
                    Role::Server,
                    server_link,
                    server_items,
                    &server_pool,
                )
            });
            let client = scope.spawn(|| {
                party(
                    protocol,
                    Role::Client,
                    client_link,
                    client_items,
                    &client_pool,
                )
            });
            (join(client), join(server))
        })
    });
    let (client, server) = match (client, server) {
        (Ok(client), Ok(server)) => (client, server),
        (Err(client), Err(server)) => bail!("{client:#}; {server:#}"),
        (Err(error), Ok(_)) | (Ok(_), Err(error)) => return Err(error),
    };
    let (sent, received) = (client.bytes_sent, client.bytes_received);
    Ok(PsiRun {
        threads,
        link: link.name().into(),
        seconds: PsiSeconds {
            total,
            client: client.elapsed.as_secs_f64(),
            server: server.elapsed.as_secs_f64(),
        },
        bytes: PsiBytes {
            client_to_server: sent,
            server_to_client: received,
        },
        bits_per_item: 8.0 * (sent + received) as f64 / client_items.len() as f64,
        intersection: client.intersection.as_ref().map_or(0, |i| i.size),
        correct: client.intersection.as_ref() == Some(expected) && server.intersection.is_none(),
    })
}

/// One party's session on its own pool, with its role in the error. The link is closed when
/// the session ends, so that a failure ends the peer's session too.
fn party(
    protocol: Protocol,
    role: Role,
    mut link: Box<dyn Transport>,
    items: &[&[u8]],
    pool: &ThreadPool,
) -> Result<Outcome> {
    let options = Options {
        protocol,
        role,
        both_learn: false,
    };
    pool.install(|| obscura_psi::run(&mut *link, items, options, &|_, _, _| {}))
        .with_context(|| format!("the {role} failed"))
}

/// A party's result, or an error if its thread panicked.
fn join(party: std::thread::ScopedJoinHandle<'_, Result<Outcome>>) -> Result<Outcome> {
    party
        .join()
        .map_err(|_| anyhow!("a party's thread panicked"))?
}

/// Both ends of a loopback TCP connection (client's, server's), each paced like `link`.
fn connect(link: Link) -> Result<(Box<dyn Transport>, Box<dyn Transport>)> {
    let listener = TcpListener::bind("127.0.0.1:0").context("cannot listen on loopback")?;
    let client =
        TcpStream::connect(listener.local_addr()?).context("cannot connect on loopback")?;
    let (server, _) = listener.accept().context("cannot accept on loopback")?;
    Ok((end(client, link)?, end(server, link)?))
}

/// One end of the connection: `tcp`'s transport, or one whose writer is paced at the link's rate.
fn end(stream: TcpStream, link: Link) -> Result<Box<dyn Transport>> {
    let Some(rate) = link.bits_per_second() else {
        return Ok(Box::new(tcp::from_stream(stream, TIMEOUT)?));
    };
    // The paced writer delivers piece by piece, so it needs no buffer of its own.
    tcp::configure(&stream, TIMEOUT)?;
    let reader = BufReader::new(stream.try_clone()?);
    Ok(Box::new(StreamTransport::new(
        reader,
        RateLimited::new(stream, rate)?,
    )))
}
