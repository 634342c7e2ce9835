//! The report of the PSI presets (`psi-ecdh`, `psi-kkrt`, `psi-rr22`): the JSON object of
//! `docs/workloads.md` and its table.

use serde::Serialize;

use crate::lwe::report::Report;
use crate::report::{human, print_bandwidth, print_correct, Pair, Tables};

/// The times of one PSI run, in seconds.
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct PsiSeconds {
    /// From the start of both parties (connected) to the end of both.
    pub total: f64,
    /// The client's session, from its handshake to its intersection.
    pub client: f64,
    /// The server's session, from its handshake to its last message.
    pub server: f64,
}

/// The bytes of one PSI run each way, frame headers included.
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct PsiBytes {
    /// Sent by the client.
    pub client_to_server: u64,
    /// Sent by the server.
    pub server_to_client: u64,
}

/// One PSI run: both parties with a thread count each, over one link.
#[derive(Clone, Debug, Serialize)]
pub struct PsiRun {
    /// Threads of each party's pool.
    pub threads: usize,
    /// The simulated link (`unlimited`, `100mbps`, `10mbps`).
    pub link: String,
    /// Times.
    pub seconds: PsiSeconds,
    /// Traffic.
    pub bytes: PsiBytes,
    /// Bits sent both ways per item of one side.
    pub bits_per_item: f64,
    /// Distinct items in the client's intersection.
    pub intersection: usize,
    /// Whether the client's intersection was exactly the plain one (and the server learned
    /// nothing).
    pub correct: bool,
}

/// The PSI-specific figures of a PSI report.
#[derive(Clone, Debug, Serialize)]
pub struct Psi {
    /// The protocol (`ecdh`, `kkrt`, `rr22`).
    pub protocol: String,
    /// For ECDH, the code that raised the points on this CPU (`obscura_psi::ecdh::kernel`).
    pub kernel: Option<String>,
    /// The link of the headline run.
    pub link: String,
    /// Items planted in both sets.
    pub shared: u64,
    /// Distinct items in the headline run's intersection.
    pub intersection: usize,
    /// Bits sent both ways per item of one side in the headline run.
    pub bits_per_item: f64,
    /// Every run: each link asked for, with one thread and with all threads per party.
    pub runs: Vec<PsiRun>,
}

/// The JSON object `obscura bench --json` prints for the PSI presets: `docs/workloads.md`'s keys
/// with `records` the items per side, `record_bytes` the bytes per item and `threads` the threads
/// per party; `seconds` and `bytes` are the headline run's (all threads, the first link).
#[derive(Clone, Debug, Serialize)]
pub struct PsiReport {
    /// Preset name.
    pub preset: String,
    /// Items per side.
    pub records: u64,
    /// Bytes per item.
    pub record_bytes: u64,
    /// Threads per party for "all threads".
    pub threads: usize,
    /// Streaming read bandwidth.
    pub bandwidth_gbs: Pair,
    /// The headline run's times.
    pub seconds: PsiSeconds,
    /// The headline run's traffic.
    pub bytes: PsiBytes,
    /// PSI figures and every run.
    pub psi: Psi,
    /// Whether every run's intersection was exactly the plain one.
    pub correct: bool,
}

impl PsiReport {
    /// A report of `runs` of `protocol` (with `kernel`) on `records` items per side of
    /// `record_bytes` bytes, `shared` of them in both sets, with the preset, thread count and
    /// bandwidth of `base`. The headline run is the first one with `base.threads` threads; `None`
    /// without runs.
    pub fn new(
        base: &Report,
        protocol: &str,
        kernel: Option<&str>,
        records: u64,
        record_bytes: u64,
        shared: u64,
        runs: Vec<PsiRun>,
    ) -> Option<Self> {
        let headline = runs
            .iter()
            .find(|run| run.threads == base.threads)
            .or(runs.first())?
            .clone();
        let correct = runs.iter().all(|run| run.correct);
        Some(Self {
            preset: base.preset.clone(),
            records,
            record_bytes,
            threads: base.threads,
            bandwidth_gbs: base.bandwidth_gbs,
            seconds: headline.seconds,
            bytes: headline.bytes,
            psi: Psi {
                protocol: protocol.into(),
                kernel: kernel.map(Into::into),
                link: headline.link,
                shared,
                intersection: headline.intersection,
                bits_per_item: headline.bits_per_item,
                runs,
            },
            correct,
        })
    }
}

impl Tables for PsiReport {
    const WRONG: &'static str = "an intersection differed from the plain one";

    fn correct(&self) -> bool {
        self.correct
    }

    fn print_tables(&self) {
        println!(
            "preset {}: {} items per side x {} B, {} in both sets, {}-PSI, both parties in this process over loopback TCP, {} threads per party",
            self.preset,
            self.records,
            self.record_bytes,
            self.psi.shared,
            self.psi.protocol.to_uppercase(),
            self.threads
        );
        if let Some(kernel) = &self.psi.kernel {
            println!("kernel: {kernel}");
        }
        print_bandwidth(&self.bandwidth_gbs);
        println!(
            "| threads per party | link | total | client | server | client to server | server to client | bits per item | intersection |"
        );
        println!("|---|---|---|---|---|---|---|---|---|");
        for run in &self.psi.runs {
            println!(
                "| {} | {} | {} | {} | {} | {} B | {} B | {:.0} | {} |",
                run.threads,
                run.link,
                human(run.seconds.total),
                human(run.seconds.client),
                human(run.seconds.server),
                run.bytes.client_to_server,
                run.bytes.server_to_client,
                run.bits_per_item,
                run.intersection
            );
        }
        print_correct(
            self.correct,
            "every intersection matched the plain one",
            "NO: an intersection differed from the plain one",
        );
    }
}
