//! The `ypir-1g` and `ypir-sp` presets: YPIR over 2^30 records of 1 byte and YPIR+SP over 2^15
//! records of 32 KiB. Each reports the query and answer bytes (the query's parts apart), the
//! server's setup time and peak memory, query generation, the answer with one thread and with
//! all threads (and its phases: the first pass, the packed layer's pass, packing), the
//! throughput, the first pass against the streaming read measured in the same run, and the
//! reference code's figures on this project's machine.

use anyhow::Result;
use obscura_pir::ypir::{self, Shape, Variant, YpirOptions};
use obscura_pir::{PirClient, PirServer, SetupMessage};
use serde::Serialize;

use crate::bandwidth;
use crate::measure::{generate, median, timed};
use crate::memory::peak_of;
use crate::progress::Progress;
use crate::report::{human, human_bytes, print_bandwidth, print_correct, Pair, Tables};
use obscura_math::threads::Pools;

/// Answers timed per pool and way (the median is reported).
const REPEATS: usize = 5;

/// Queries generated to time it (the median is reported).
const QUERIES: usize = 5;

/// The reference code's figures, measured on this project's 2-core machine (one thread, as it
/// is written).
struct Reference {
    variant: &'static str,
    /// The answer, and its first pass, second pass and packing where recorded (ms).
    answer_ms: f64,
    phases_ms: Option<[f64; 3]>,
    query_bytes: u64,
    answer_bytes: u64,
    /// Query generation (ms) and server offline (s), where recorded.
    query_ms: Option<f64>,
    offline_s: Option<f64>,
    /// Peak server memory (GB), where recorded.
    peak_gb: Option<f64>,
}

const REFERENCE: [Reference; 2] = [
    Reference {
        variant: "ypir",
        answer_ms: 97.0,
        phases_ms: Some([47.0, 16.0, 31.0]),
        query_bytes: 866_304,
        answer_bytes: 12_288,
        query_ms: Some(561.0),
        offline_s: Some(18.5),
        peak_gb: None,
    },
    Reference {
        variant: "ypir-sp",
        answer_ms: 331.0,
        phases_ms: None,
        query_bytes: 702_464,
        answer_bytes: 122_880,
        query_ms: None,
        offline_s: None,
        peak_gb: Some(8.8),
    },
];

/// Step times, in seconds.
#[derive(Clone, Debug, Default, Serialize)]
pub struct YpirSeconds {
    /// Server setup: the first layer's hint, the chunks, the masks and the packing plans.
    pub server_setup: f64,
    /// Generating one query: secrets, vectors and packing keys (median).
    pub query: f64,
    /// One answer, as served (median).
    pub answer: Pair,
    /// YPIR's first pass alone (median).
    pub first_pass: Pair,
    /// The packed layer's pass alone (median).
    pub second_pass: Pair,
    /// Packing and modulus switching (median).
    pub packing: Pair,
    /// Decoding one answer (median).
    pub decode: f64,
}

/// Message sizes, in bytes.
#[derive(Clone, Debug, Default, Serialize)]
pub struct YpirBytes {
    /// The public setup (no hint).
    pub setup: u64,
    /// One query.
    pub query: u64,
    /// Its first-layer vectors (YPIR).
    pub query_first: u64,
    /// Its packed layer's vector.
    pub query_packed: u64,
    /// Its packing keys.
    pub query_keys: u64,
    /// One answer.
    pub answer: u64,
}

/// The JSON object `obscura bench ypir-1g --json` (or `ypir-sp`) prints.
#[derive(Clone, Debug, Serialize)]
pub struct YpirReport {
    /// Preset name.
    pub preset: String,
    /// `ypir` or `ypir-sp`.
    pub variant: String,
    /// Threads of the "all threads" figures.
    pub threads: usize,
    /// Records in the database.
    pub records: u64,
    /// Bytes per record.
    pub record_bytes: u64,
    /// The database's shape: YPIR's first layer, or YPIR+SP's words (rows, columns).
    pub matrix: [u64; 2],
    /// `log2` of the probability that a query fails, from the parameters.
    pub log_failure: f64,
    /// Streaming read bandwidth, measured in turns with the answers.
    pub bandwidth_gbs: Pair,
    /// Step times.
    pub seconds: YpirSeconds,
    /// Message sizes.
    pub bytes: YpirBytes,
    /// Data bytes served per second of answer.
    pub throughput_gbs: Pair,
    /// The first pass's read rate (YPIR) or the packed pass's (YPIR+SP) over the bandwidth.
    pub pass_share: Pair,
    /// The most memory the process held during setup and answers, the data and the bandwidth
    /// probe's buffer not counted (Linux only).
    pub peak_memory_bytes: Option<u64>,
    /// Whether every retrieved record matched the original.
    pub correct: bool,
}

/// Runs YPIR in `variant` over `records` records of `record_bytes` bytes.
pub fn run(
    preset: &str,
    variant: Variant,
    records: u64,
    record_bytes: u64,
    pools: &Pools,
    progress: &dyn Progress,
) -> Result<YpirReport> {
    let data = generate(records, record_bytes)?;
    // The streaming read's buffer is allocated before the server's peak is measured.
    let stream = bandwidth::Stream::new();
    let options = YpirOptions {
        variant: Some(variant),
    };
    let ((measured, setup_seconds), peak) = peak_of(|| -> (Result<_>, f64) {
        let (server, seconds) = timed(|| {
            pools.all.install(|| {
                let shown = progress.start(&["server setup"]);
                ypir::Server::from_records(&data, record_bytes, options, &*shown)
            })
        });
        let measured = server
            .map_err(anyhow::Error::from)
            .and_then(|server| measure(&server, &data, records, record_bytes, pools, &stream));
        (measured, seconds)
    });
    let (mut report, server_setup) = measured?;
    report.preset = preset.into();
    report.seconds.server_setup = setup_seconds;
    report.bytes.setup = server_setup;
    report.peak_memory_bytes = peak;
    Ok(report)
}

/// Queries, answers and decodes against `server`, every record checked.
fn measure(
    server: &ypir::Server,
    data: &[u8],
    records: u64,
    record_bytes: u64,
    pools: &Pools,
    stream: &bandwidth::Stream,
) -> Result<(YpirReport, u64)> {
    let setup = server.public_setup();
    let mut client = ypir::Client::new(setup.clone());
    let index_of = |i: usize| (i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15) % records;
    let mut correct = true;
    let mut check = |index: u64, record: &[u8]| {
        let start = (index * record_bytes) as usize;
        let end = (start + record_bytes as usize).min(data.len());
        correct &= record == &data[start..end];
    };
    let mut query_times = Vec::new();
    let mut queries = Vec::new();
    for i in 0..QUERIES {
        let (made, seconds) = timed(|| client.query(index_of(i)));
        let (query, state) = made?;
        query_times.push(seconds);
        queries.push((index_of(i), query, state));
    }
    let mut pairs = [[0.0f64; 2]; 5];
    let mut decode_times = Vec::new();
    let mut answer_bytes = 0;
    for (p, pool) in [&pools.one, &pools.all].into_iter().enumerate() {
        let mut best_gbs = 0.0f64;
        let (mut served, mut first, mut second, mut packing) =
            (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        for repeat in 0..REPEATS {
            if repeat % 2 == 0 {
                best_gbs = best_gbs.max(stream.read_gbs(pool));
            }
            let query = &queries[repeat % QUERIES].1;
            let (answer, seconds) = timed(|| pool.install(|| server.answer(query)));
            served.push(seconds);
            answer_bytes = obscura_pir::Encode::to_bytes(&answer?).len() as u64;
            let (_, phases) = pool.install(|| server.answer_phases(&[query], false))?;
            first.push(phases.first_pass.as_secs_f64());
            second.push(phases.second_pass.as_secs_f64());
            packing.push(phases.packing.as_secs_f64());
        }
        pairs[0][p] = median(served);
        pairs[1][p] = median(first);
        pairs[2][p] = median(second);
        pairs[3][p] = median(packing);
        pairs[4][p] = best_gbs;
    }
    for (index, query, state) in queries {
        let answer = server.answer(&query)?;
        let (record, seconds) = timed(|| client.decode(state, &answer));
        decode_times.push(seconds);
        check(index, &record?);
    }
    let pair = |[one, all]: [f64; 2]| Pair {
        one_thread: one,
        all_threads: all,
    };
    let data_gb = data.len() as f64 / 1e9;
    let (matrix, pass_gb) = match setup.shape() {
        Shape::Ypir(s) => (
            [s.rows(), s.columns()],
            (s.rows() * s.columns()) as f64 / 1e9,
        ),
        Shape::YpirSp(s) => (
            [s.rows(), s.columns()],
            (2 * s.rows() * s.columns()) as f64 / 1e9,
        ),
    };
    let pass = match setup.variant() {
        Variant::Ypir => pairs[1],
        Variant::YpirSp => pairs[2],
    };
    let share = |i: usize| pass_gb / pass[i] / pairs[4][i];
    let report = YpirReport {
        preset: String::new(),
        variant: setup.variant().name().into(),
        threads: pools.all.current_num_threads(),
        records,
        record_bytes,
        matrix,
        log_failure: setup.shape().log_failure(),
        bandwidth_gbs: pair(pairs[4]),
        seconds: YpirSeconds {
            server_setup: 0.0,
            query: median(query_times),
            answer: pair(pairs[0]),
            first_pass: pair(pairs[1]),
            second_pass: pair(pairs[2]),
            packing: pair(pairs[3]),
            decode: median(decode_times),
        },
        bytes: YpirBytes {
            setup: 0,
            query: setup.query_bytes(),
            query_first: ypir::Query::part_bytes(setup)[0],
            query_packed: ypir::Query::part_bytes(setup)[1],
            query_keys: ypir::Query::part_bytes(setup)[2],
            answer: answer_bytes,
        },
        throughput_gbs: Pair {
            one_thread: data_gb / pairs[0][0],
            all_threads: data_gb / pairs[0][1],
        },
        pass_share: Pair {
            one_thread: share(0),
            all_threads: share(1),
        },
        peak_memory_bytes: None,
        correct,
    };
    Ok((report, setup.to_bytes().len() as u64))
}

impl Tables for YpirReport {
    const WRONG: &'static str = "a retrieved record did not match the original";

    fn correct(&self) -> bool {
        self.correct
    }

    fn print_tables(&self) {
        println!(
            "preset {}: {} over {} records of {} B, {} x {} matrix, failure probability 2^{:.0}, {} threads",
            self.preset,
            self.variant,
            self.records,
            self.record_bytes,
            self.matrix[0],
            self.matrix[1],
            self.log_failure,
            self.threads
        );
        print_bandwidth(&self.bandwidth_gbs);
        let s = &self.seconds;
        let b = &self.bytes;
        println!(
            "server setup {}, peak memory {}; query {} B (first layer {}, packed vector {}, packing keys {}), generated in {}; answer {} B, decoded in {}",
            human(s.server_setup),
            human_bytes(self.peak_memory_bytes),
            b.query,
            b.query_first,
            b.query_packed,
            b.query_keys,
            human(s.query),
            b.answer,
            human(s.decode)
        );
        println!("| threads | answer | first pass | packed pass | packing | throughput | pass / bandwidth |");
        println!("|---|---|---|---|---|---|---|");
        for (threads, pick) in [
            (1, (|p: &Pair| p.one_thread) as fn(&Pair) -> f64),
            (self.threads, |p: &Pair| p.all_threads),
        ] {
            println!(
                "| {threads} | {} | {} | {} | {} | {:.2} GB/s | {:.0}% |",
                human(pick(&s.answer)),
                human(pick(&s.first_pass)),
                human(pick(&s.second_pass)),
                human(pick(&s.packing)),
                pick(&self.throughput_gbs),
                100.0 * pick(&self.pass_share)
            );
        }
        if let Some(r) = REFERENCE.iter().find(|r| r.variant == self.variant) {
            let mut line = format!(
                "reference code on this project's 2-core machine, one thread: answer {} ms",
                r.answer_ms
            );
            if let Some([first, second, packing]) = r.phases_ms {
                line += &format!(" (first pass {first}, second {second}, packing {packing})");
            }
            line += &format!(", query {} B", r.query_bytes);
            if let Some(ms) = r.query_ms {
                line += &format!(" generated in {ms} ms");
            }
            line += &format!(", answer {} B", r.answer_bytes);
            if let Some(s) = r.offline_s {
                line += &format!(", offline {s} s");
            }
            if let Some(gb) = r.peak_gb {
                line += &format!(", peak server memory {gb} GB");
            }
            println!("{line}");
        }
        print_correct(
            self.correct,
            "every retrieved record matched",
            "NO: a record came back wrong",
        );
    }
}
