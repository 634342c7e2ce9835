//! The report of the TreePIR presets (`treepir-setup`, `treepir-e2e`): the JSON object of
//! `docs/workloads.md` and its tables, with the TreePIR paper's figures next to the measured ones.

use serde::Serialize;

use crate::lwe::report::Report;
use crate::peers::{self, Step};
use crate::report::{human, human_bytes, print_bandwidth, print_correct, Pair, Params, Tables};

/// `treepir-setup` at one height: TreePIR's colouring and client indexing next to the
/// batch-code baseline's placement and indexing.
#[derive(Clone, Debug, Serialize)]
pub struct TreePirSetupRow {
    /// Tree height h (2^h leaves, h colours).
    pub height: u32,
    /// Non-root nodes, 2^(h+1) − 2: the entries both schemes place.
    pub nodes: u64,
    /// Building the balanced colouring (`Coloring::balanced`), one thread.
    pub coloring_seconds: f64,
    /// The client's table-free indexing of one leaf (`path_positions`), one thread, median.
    pub indexing_seconds: f64,
    /// Leaves indexed (and checked).
    pub indexing_leaves: u64,
    /// Whether the indexing was checked against the class lists (`Coloring::classes`), not
    /// only against the node colours (class lists are built up to a height of 20).
    pub classes_checked: bool,
    /// The baseline at this height; `null` where it was skipped (too large).
    pub pbc: Option<PbcSetupRow>,
    /// Whether every indexed path had each colour once, the colouring's colours and, where
    /// checked, the class positions; and every baseline assignment was valid.
    pub correct: bool,
}

/// The batch-code baseline's setup and client indexing at one height.
#[derive(Clone, Debug, Serialize)]
pub struct PbcSetupRow {
    /// Buckets, ⌈1.5h⌉.
    pub buckets: usize,
    /// Placing every node in its 3 buckets (`Placement::bucket_contents`), one thread.
    pub setup_seconds: f64,
    /// Matching a leaf's h path nodes to buckets and finding their positions (`assign` and
    /// `position`, which re-hashes every smaller node), one thread, median.
    pub indexing_seconds: f64,
    /// Leaves indexed (and checked).
    pub indexing_leaves: u64,
    /// Leaves whose path could not be matched to buckets (a PBC failure, not timed).
    pub unmatched: u64,
}

/// Step times of one proof retrieval in seconds (medians over the proofs retrieved).
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct ProofSeconds {
    /// Server setup: the sub-databases from the tree (colouring or placement included).
    pub setup: f64,
    /// Generating the queries, one per sub-database, one thread.
    pub query: f64,
    /// The slowest sub-database answering its query alone on one thread.
    pub server_max: f64,
    /// The sum over sub-databases of each answering alone on one thread.
    pub server_total: f64,
    /// The whole request answered on all threads (wall time).
    pub answer: f64,
    /// Decoding the answers, assembling and verifying the proof, one thread.
    pub decode: f64,
}

/// Bytes of one proof retrieval.
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct ProofBytes {
    /// All sub-databases' public setups (hints), downloaded once.
    pub hint: u64,
    /// All queries of one request.
    pub query: u64,
    /// All answers of one request.
    pub answer: u64,
    /// All sub-databases' records (padding included): the server's storage.
    pub storage: u64,
}

/// One scheme's retrieval of Merkle proofs at one height.
#[derive(Clone, Debug, Serialize)]
pub struct ProofScheme {
    /// Sub-databases: colour classes (h) or buckets (⌈1.5h⌉).
    pub databases: usize,
    /// Parameters of the sub-databases (those of the first; all have one size).
    pub params: Params,
    /// Step times.
    pub seconds: ProofSeconds,
    /// Sizes.
    pub bytes: ProofBytes,
    /// Proofs retrieved and checked.
    pub proofs: u64,
    /// Leaves whose path could not be matched to buckets (baseline only; skipped).
    pub unmatched: u64,
    /// The resident memory the server setup added at its peak (see [`crate::memory`]); absent
    /// where the system does not report it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub setup_peak_bytes: Option<u64>,
}

/// `treepir-e2e` at one height: TreePIR and the baseline on the same LWE engine.
#[derive(Clone, Debug, Serialize)]
pub struct TreePirE2eRow {
    /// Tree height h.
    pub height: u32,
    /// Leaves, 2^h random 32-byte strings.
    pub leaves: u64,
    /// Building the RFC 6962 tree, all threads.
    pub tree_seconds: f64,
    /// TreePIR.
    pub treepir: ProofScheme,
    /// The batch-code baseline.
    pub pbc: ProofScheme,
    /// Whether every proof of both schemes verified against the root and equalled the tree's
    /// audit path.
    pub correct: bool,
}

/// The TreePIR figures of a TreePIR report: one row per height of the preset run.
#[derive(Clone, Debug, Default, Serialize)]
pub struct TreePir {
    /// The matrix layout of every sub-database (`treepir-e2e`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub layout: Option<String>,
    /// `treepir-setup` rows.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub setup: Vec<TreePirSetupRow>,
    /// `treepir-e2e` rows.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub e2e: Vec<TreePirE2eRow>,
}

/// The JSON object `obscura bench --json` prints for the TreePIR presets: the keys of
/// `docs/workloads.md` that apply, and the rows per height under `treepir`.
#[derive(Clone, Debug, Serialize)]
pub struct TreePirReport {
    /// Preset name.
    pub preset: String,
    /// Threads used for "all threads".
    pub threads: usize,
    /// Streaming read bandwidth.
    pub bandwidth_gbs: Pair,
    /// The rows.
    pub treepir: TreePir,
    /// Whether every row was correct.
    pub correct: bool,
}

impl TreePirReport {
    /// A report of `treepir` with the preset, thread count and bandwidth of `base`.
    pub fn new(base: &Report, treepir: TreePir) -> Self {
        let correct = treepir.setup.iter().all(|row| row.correct)
            && treepir.e2e.iter().all(|row| row.correct);
        Self {
            preset: base.preset.clone(),
            threads: base.threads,
            bandwidth_gbs: base.bandwidth_gbs,
            treepir,
            correct,
        }
    }

    /// The `treepir-setup` table.
    fn print_setup(&self) {
        println!(
            "| h | nodes | TreePIR colouring | paper | TreePIR indexing | paper | PBC buckets | PBC placement | paper | PBC indexing | correct |"
        );
        println!("|---|---|---|---|---|---|---|---|---|---|---|");
        for row in &self.treepir.setup {
            let pbc = row.pbc.as_ref().map_or(
                ["skipped (too large)".into(), "-".into(), "-".into()],
                |pbc| {
                    [
                        pbc.buckets.to_string(),
                        human(pbc.setup_seconds),
                        human(pbc.indexing_seconds),
                    ]
                },
            );
            println!(
                "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
                row.height,
                row.nodes,
                human(row.coloring_seconds),
                peers::TREEPIR.at(Step::Coloring, row.height),
                human(row.indexing_seconds),
                peers::TREEPIR.at(Step::Indexing, row.height),
                pbc[0],
                pbc[1],
                peers::TREEPIR.at(Step::PbcPlacement, row.height),
                pbc[2],
                if row.correct { "yes" } else { "NO" }
            );
        }
        println!(
            "\none thread throughout; indexing is the median over the leaves indexed (TreePIR: {}, PBC: {} per height);",
            self.treepir.setup.first().map_or(0, |row| row.indexing_leaves),
            self.treepir
                .setup
                .iter()
                .find_map(|row| row.pbc.as_ref().map(|pbc| pbc.indexing_leaves))
                .unwrap_or(0)
        );
        println!("PBC placement puts all 2^(h+1) - 2 nodes in 3 of ceil(1.5h) buckets; its indexing re-hashes every smaller node.");
        println!(
            "{}",
            peers::TREEPIR.summary(&[Step::Coloring, Step::Indexing, Step::PbcPlacement])
        );
    }

    /// The `treepir-e2e` tables, one per height.
    fn print_e2e(&self) {
        for row in &self.treepir.e2e {
            let (t, p) = (&row.treepir, &row.pbc);
            println!(
                "h = {}: {} leaves, tree built in {}, {} proofs (TreePIR), {} (PBC, {} unmatched), params {} (n = {}, p = {} / {}), {} layout",
                row.height,
                row.leaves,
                human(row.tree_seconds),
                t.proofs,
                p.proofs,
                p.unmatched,
                t.params.set,
                t.params.n,
                t.params.p,
                p.params.p,
                self.treepir.layout.as_deref().unwrap_or("-")
            );
            println!("| | TreePIR | PBC | PBC / TreePIR |\n|---|---|---|---|");
            println!(
                "| sub-databases | {} | {} | {:.2}x |",
                t.databases,
                p.databases,
                p.databases as f64 / t.databases as f64
            );
            let (ts, ps) = (&t.seconds, &p.seconds);
            for (name, a, b) in [
                ("server setup (all threads)", ts.setup, ps.setup),
                ("query generation", ts.query, ps.query),
                (
                    "server, slowest sub-database (1 thread)",
                    ts.server_max,
                    ps.server_max,
                ),
                (
                    "server, total over sub-databases (1 thread each)",
                    ts.server_total,
                    ps.server_total,
                ),
                (
                    "server, whole request (all threads, wall)",
                    ts.answer,
                    ps.answer,
                ),
                ("answer extraction (decode + verify)", ts.decode, ps.decode),
            ] {
                println!("| {name} | {} | {} | {:.2}x |", human(a), human(b), b / a);
            }
            let (tb, pb) = (&t.bytes, &p.bytes);
            for (name, a, b) in [
                ("queries", tb.query, pb.query),
                ("answers", tb.answer, pb.answer),
                (
                    "queries + answers",
                    tb.query + tb.answer,
                    pb.query + pb.answer,
                ),
                ("hints (public setups)", tb.hint, pb.hint),
                ("storage", tb.storage, pb.storage),
            ] {
                println!("| {name} | {a} B | {b} B | {:.2}x |", b as f64 / a as f64);
            }
            let ratio = match (t.setup_peak_bytes, p.setup_peak_bytes) {
                (Some(a), Some(b)) if a > 0 => format!("{:.2}x", b as f64 / a as f64),
                _ => "-".into(),
            };
            println!(
                "| server memory (resident peak of the setup, tree not counted) | {} | {} | {ratio} |",
                human_bytes(t.setup_peak_bytes),
                human_bytes(p.setup_peak_bytes)
            );
            println!(
                "published total server time (SealPIR+TreePIR, one core): {}; correct: {}\n",
                peers::TREEPIR_E2E.at(Step::ServerTotal, row.height),
                if row.correct {
                    "every proof verified"
                } else {
                    "NO"
                }
            );
        }
        println!("{}", peers::TREEPIR_E2E.summary(&[Step::ServerTotal]));
        println!("Client steps on one thread; medians over the proofs.");
    }
}

impl Tables for TreePirReport {
    const WRONG: &'static str = "a TreePIR or PBC check failed (indexing, assignment or proof)";

    fn correct(&self) -> bool {
        self.correct
    }

    fn print_tables(&self) {
        println!(
            "preset {}: TreePIR against the batch-code baseline (PBC), {} threads",
            self.preset, self.threads
        );
        print_bandwidth(&self.bandwidth_gbs);
        if !self.treepir.setup.is_empty() {
            self.print_setup();
        }
        if !self.treepir.e2e.is_empty() {
            self.print_e2e();
        }
        print_correct(self.correct, "every check passed", "NO: a check failed");
    }
}
