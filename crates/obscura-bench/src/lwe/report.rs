//! The report of the index and keyword PIR presets (`frodo`, `simple-1g`, `chalamet`,
//! `service`): the JSON object of `docs/workloads.md` and its tables.

use serde::Serialize;

use crate::repeated::Repeated;
use crate::report::{human, human_bytes, print_bandwidth, print_correct, Pair, Params, Tables};
use crate::service::{self, ServiceLevel};

/// Step times in seconds (a step that does not apply is absent).
#[derive(Clone, Debug, Default, Serialize)]
pub struct Seconds {
    /// Building the binary fuse filter (hashing and peeling), keyword presets only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub filter_build: Option<f64>,
    /// Server setup (encoding and hint).
    pub server_setup: f64,
    /// The time the hint product's arithmetic alone takes: its NTT butterflies at the rate
    /// measured on this machine in the same run (negacyclic public matrices only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hint_bound: Option<f64>,
    /// Client setup (decoding the public setup).
    pub client_setup: f64,
    /// Preparing one query ahead of time (A·s + e, H·s).
    pub query_prepare: f64,
    /// The online query step with a prepared query.
    pub query: f64,
    /// A query generated from scratch, without preparation.
    pub query_fresh: f64,
    /// Server answer to one query, all threads (median).
    pub answer: f64,
    /// Decoding one answer.
    pub decode: f64,
}

/// Message sizes in bytes.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Bytes {
    /// The public setup (hint, seed, parameters).
    pub hint: u64,
    /// One query.
    pub query: u64,
    /// One answer.
    pub answer: u64,
}

/// What each answer of a two-layer scheme (DoublePIR) streams: the database's matrix and the
/// second layer's (the digits of the first layer's hint), and the answer's rate over both.
#[derive(Clone, Debug, Serialize)]
pub struct AnswerReads {
    /// Bytes of the database's matrix.
    pub database: u64,
    /// Bytes of the second layer's matrix.
    pub second_layer: u64,
    /// Both, over the answer time, in 10^9 bytes per second.
    pub gbs: Pair,
}

/// One batch size.
#[derive(Clone, Debug, Serialize)]
pub struct Batch {
    /// Queries answered in one pass.
    pub k: usize,
    /// Time for the whole batch.
    pub seconds: f64,
    /// k x database bytes / seconds, in 10^9 bytes per second.
    pub effective_gbs: f64,
}

/// The JSON object `obscura bench --json` prints for the PIR presets.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Report {
    /// Preset name.
    pub preset: String,
    /// Scheme.
    pub scheme: String,
    /// Matrix layout.
    pub layout: String,
    /// Records in the database.
    pub records: u64,
    /// Bytes per record.
    pub record_bytes: u64,
    /// Threads used for "all threads".
    pub threads: usize,
    /// Kernel backend.
    pub backend: String,
    /// Filter slots per key (keyword presets).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub arity: Option<usize>,
    /// Matrix shape (rows, columns).
    pub matrix: [u64; 2],
    /// Parameters.
    pub params: Params,
    /// Streaming read bandwidth.
    pub bandwidth_gbs: Pair,
    /// The resident memory the server setup added at its peak (see [`crate::memory`]); absent
    /// where the system does not report it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server_peak_bytes: Option<u64>,
    /// Step times.
    pub seconds: Seconds,
    /// Message sizes.
    pub bytes: Bytes,
    /// Answer throughput (database bytes / answer seconds).
    pub answer_gbs: Pair,
    /// What each answer streams, where it streams more than the database's matrix.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub answer_reads: Option<AnswerReads>,
    /// Batched answers.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub batch: Vec<Batch>,
    /// Repeated lookups through one client session, against the bench's steps.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub repeated: Option<Repeated>,
    /// The HTTP service against concurrency.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub service: Vec<ServiceLevel>,
    /// The same database as shards behind a gateway, against concurrency.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub service_sharded: Vec<ServiceLevel>,
    /// Whether every retrieved record matched the original.
    pub correct: bool,
}

/// The times and sizes of one measured retrieval (index and keyword presets alike).
pub struct Retrieval {
    /// Preparing one query.
    pub prepare: f64,
    /// The online step with a prepared query.
    pub query: f64,
    /// A query from scratch.
    pub fresh: f64,
    /// Median answer time with one thread.
    pub answer_one: f64,
    /// Median answer time with all threads.
    pub answer_all: f64,
    /// Decoding.
    pub decode: f64,
    /// Message sizes.
    pub bytes: Bytes,
}

impl Report {
    /// Records a retrieval over a database of `database_bytes` bytes of user data.
    pub fn record(&mut self, retrieval: Retrieval, database_bytes: f64) {
        self.seconds.query_prepare = retrieval.prepare;
        self.seconds.query = retrieval.query;
        self.seconds.query_fresh = retrieval.fresh;
        self.seconds.answer = retrieval.answer_all;
        self.seconds.decode = retrieval.decode;
        self.answer_gbs = Pair {
            one_thread: database_bytes / retrieval.answer_one / 1e9,
            all_threads: database_bytes / retrieval.answer_all / 1e9,
        };
        self.bytes = retrieval.bytes;
    }

    /// An empty report for `preset` on `threads` threads.
    pub fn new(preset: &str, threads: usize) -> Self {
        Self {
            preset: preset.into(),
            threads,
            ..Self::default()
        }
    }
}

impl Tables for Report {
    const WRONG: &'static str = "a retrieved record did not match the original";

    fn correct(&self) -> bool {
        self.correct
    }

    fn print_tables(&self) {
        let gib = (self.records * self.record_bytes) as f64 / (1u64 << 30) as f64;
        println!(
            "preset {}: {} records x {} B ({gib:.3} GiB), {} layout, {} x {} matrix, {} threads, {} kernels",
            self.preset,
            self.records,
            self.record_bytes,
            self.layout,
            self.matrix[0],
            self.matrix[1],
            self.threads,
            self.backend
        );
        if let Some(arity) = self.arity {
            println!("keyword PIR, {arity}-wise binary fuse filter");
        }
        println!(
            "params: {} (n = {}, q = 2^{}, p = {}, sigma = {}, {} A)",
            self.params.set,
            self.params.n,
            self.params.log_q,
            self.params.p,
            self.params.sigma,
            self.params.matrix
        );
        println!(
            "server memory (resident peak of the setup, its input data not counted): {}",
            human_bytes(self.server_peak_bytes)
        );
        print_bandwidth(&self.bandwidth_gbs);
        if !self.service.is_empty() {
            if !self.service_sharded.is_empty() {
                println!("served directly:");
            }
            service::print_levels(&self.service);
            if !self.service_sharded.is_empty() {
                println!("\nas shards behind a gateway:");
                service::print_levels(&self.service_sharded);
            }
            print_correct(self.correct, "every retrieved record matched", "NO");
            return;
        }
        let s = &self.seconds;
        println!("| step | time |\n|---|---|");
        if let Some(filter) = s.filter_build {
            println!("| filter build (hash and peel) | {} |", human(filter));
        }
        println!("| server setup | {} |", human(s.server_setup));
        if let Some(bound) = s.hint_bound {
            println!(
                "| hint product, arithmetic bound (its NTT butterflies at the rate measured now) | {} |",
                human(bound)
            );
        }
        for (name, secs) in [
            ("client setup", s.client_setup),
            ("query preparation (one query)", s.query_prepare),
            ("query, online step (prepared)", s.query),
            ("query, from scratch", s.query_fresh),
            ("answer (all threads, median)", s.answer),
            ("decode", s.decode),
        ] {
            println!("| {name} | {} |", human(secs));
        }
        println!(
            "\n| message | bytes |\n|---|---|\n| hint (public setup) | {} |\n| query | {} |\n| answer | {} |",
            self.bytes.hint, self.bytes.query, self.bytes.answer
        );
        println!("\n| answer throughput | GB/s | of bandwidth |\n|---|---|---|");
        for (name, gbs, bandwidth) in [
            (
                "one thread",
                self.answer_gbs.one_thread,
                self.bandwidth_gbs.one_thread,
            ),
            (
                "all threads",
                self.answer_gbs.all_threads,
                self.bandwidth_gbs.all_threads,
            ),
        ] {
            println!("| {name} | {gbs:.2} | {:.0}% |", 100.0 * gbs / bandwidth);
        }
        if let Some(reads) = &self.answer_reads {
            println!(
                "\n| each answer streams | bytes | GB/s, one / all threads | of bandwidth |\n|---|---|---|---|"
            );
            println!(
                "| database matrix + second layer | {} + {} | {:.2} / {:.2} | {:.0}% / {:.0}% |",
                reads.database,
                reads.second_layer,
                reads.gbs.one_thread,
                reads.gbs.all_threads,
                100.0 * reads.gbs.one_thread / self.bandwidth_gbs.one_thread,
                100.0 * reads.gbs.all_threads / self.bandwidth_gbs.all_threads
            );
        }
        if !self.batch.is_empty() {
            let single = self.batch[0].effective_gbs;
            println!("\n| batch k | time | effective GB/s | vs k = 1 |\n|---|---|---|---|");
            for batch in &self.batch {
                println!(
                    "| {} | {} | {:.1} | {:.1}x |",
                    batch.k,
                    human(batch.seconds),
                    batch.effective_gbs,
                    batch.effective_gbs / single
                );
            }
        }
        if let Some(repeated) = &self.repeated {
            repeated.print_table();
        }
        print_correct(
            self.correct,
            "every retrieved record matched",
            "NO: a record came back wrong",
        );
    }
}
