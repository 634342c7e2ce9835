//! The `ypir-small` preset: small databases of 3-byte records (1,000, 10,000 and 100,000), each
//! served with SimplePIR and DoublePIR on the same engine and with both YPIR variants: server
//! preprocessing, end-to-end latency with a fresh query and with one prepared ahead (the LWE
//! schemes), and the message sizes, next to the reference run YPIR's authors published.

use anyhow::Result;
use obscura_pir::double::Double;
use obscura_pir::lwe::{EngineOptions, Lwe};
use obscura_pir::ypir::{self, Variant, Ypir, YpirOptions};
use obscura_pir::{Encode, PirClient, PirError, PirServer, Scheme, SetupMessage};
use serde::Serialize;

use crate::lwe::Measured;
use crate::measure::{generate, median, timed};
use crate::report::{human, print_bandwidth, print_correct, Pair, Params, Tables};
use obscura_math::threads::Pools;
use obscura_pir::ypir::params::PLAINTEXT_BITS;

/// Database sizes the preset runs unless `--records` names one.
pub const SIZES: [u64; 3] = [1_000, 10_000, 100_000];

/// Retrievals timed per scheme and size (the median is reported).
const REPEATS: usize = 21;

/// The reference run (YPIR's authors, an Apple laptop): preprocessing and end-to-end
/// microseconds at 1,000, 10,000 and 100,000 records of 3 bytes.
const PUBLISHED_MICROS: [(&str, [f64; 3], [f64; 3]); 3] = [
    ("simple", [1_100.0, 10_800.0, 127_000.0], [14.0, 39.0, 93.0]),
    (
        "double",
        [55_000.0, 318_000.0, 1_206_000.0],
        [333.0, 356.0, 634.0],
    ),
    (
        "ypir",
        [49_000.0, 321_000.0, 1_177_000.0],
        [191_000.0, 252_000.0, 420_000.0],
    ),
];

/// Step times of one run, in seconds.
#[derive(Clone, Debug, Default, Serialize)]
pub struct SmallSeconds {
    /// Server preprocessing (encoding and hints).
    pub server_setup: f64,
    /// Preparing one query ahead of time.
    pub query_prepare: f64,
    /// A prepared query's online step, its answer and its decoding (median).
    pub end_to_end_prepared: f64,
    /// A query made from scratch, its answer and its decoding (median).
    pub end_to_end_fresh: f64,
    /// The answer alone (median, from the prepared runs).
    pub answer: f64,
}

/// Message sizes of one run, in bytes.
#[derive(Clone, Debug, Default, Serialize)]
pub struct SmallBytes {
    /// The public setup the client downloads.
    pub hint: u64,
    /// One query.
    pub query: u64,
    /// One answer.
    pub answer: u64,
}

/// One scheme at one size.
#[derive(Clone, Debug, Serialize)]
pub struct SmallRun {
    /// `simple` or `double`.
    pub scheme: String,
    /// Records in the database.
    pub records: u64,
    /// The database matrix's shape (rows, columns).
    pub matrix: [u64; 2],
    /// Plaintext modulus of the database.
    pub p: u32,
    /// Step times.
    pub seconds: SmallSeconds,
    /// Message sizes.
    pub bytes: SmallBytes,
}

/// The JSON object `obscura bench ypir-small --json` prints.
#[derive(Clone, Debug, Serialize)]
pub struct SmallReport {
    /// Preset name.
    pub preset: String,
    /// Threads of the server's steps.
    pub threads: usize,
    /// Bytes per record.
    pub record_bytes: u64,
    /// Parameters of the first database measured (the plaintext modulus of each is in its run).
    pub params: Params,
    /// Streaming read bandwidth.
    pub bandwidth_gbs: Pair,
    /// One run per scheme and size.
    pub runs: Vec<SmallRun>,
    /// Whether every retrieved record matched the original.
    pub correct: bool,
}

/// How the preset drives one scheme: its setup, its query preparation (nothing for YPIR, whose
/// queries are made fresh), the database matrix's `(rows, columns)` and plaintext modulus, and
/// its LWE parameters where it runs on the engine.
struct Driver<'a, S: Scheme> {
    name: &'a str,
    setup: &'a dyn Fn() -> Result<S::Server, PirError>,
    preprocess: &'a Preprocess<S>,
    shape: &'a ShapeOf<S>,
    params: &'a dyn Fn(&S::Setup) -> Option<Params>,
}

/// The database matrix's `(rows, columns)` and plaintext modulus.
type ShapeOf<S> = dyn Fn(&<S as Scheme>::Setup) -> ([u64; 2], u32);

/// Prepares queries ahead of time: `(client, count)`.
type Preprocess<S> = dyn Fn(&mut <S as Scheme>::Client, usize) -> Result<(), PirError>;

/// The driver of an LWE-engine scheme.
fn engine_driver<'a, S: Measured>(
    name: &'a str,
    setup: &'a dyn Fn() -> Result<S::Server, PirError>,
) -> Driver<'a, S> {
    Driver {
        name,
        setup,
        preprocess: &|client, count| S::preprocess(client, count),
        shape: &|setup| {
            let layer = S::layer(setup);
            let g = layer.geometry();
            ([g.rows(), g.cols()], layer.params().p())
        },
        params: &|setup| Some(Params::of_params(&S::layer(setup).params())),
    }
}

/// The driver of YPIR in `variant`.
fn ypir_driver<'a>(
    variant: Variant,
    setup: &'a dyn Fn() -> Result<ypir::Server, PirError>,
) -> Driver<'a, Ypir> {
    Driver {
        name: variant.name(),
        setup,
        preprocess: &|_, _| Ok(()),
        shape: &|setup| match setup.shape() {
            ypir::Shape::Ypir(s) => ([s.rows(), s.columns()], 1 << s.log_p()),
            ypir::Shape::YpirSp(s) => ([s.rows(), s.columns()], 1 << PLAINTEXT_BITS),
        },
        params: &|_| None,
    }
}

/// Runs the four schemes over databases of `sizes` records of `record_bytes` bytes.
pub fn run(
    sizes: &[u64],
    record_bytes: u64,
    options: EngineOptions,
    pools: &Pools,
    bandwidth_gbs: Pair,
) -> Result<SmallReport> {
    let (mut runs, mut params) = (Vec::new(), None);
    let mut correct = true;
    for &records in sizes {
        let data = generate(records, record_bytes)?;
        // Both parties run on a thread of the pool, as a server's handler and a client's
        // caller would: the steps hand no work across threads unless they go parallel.
        let mut results = Vec::new();
        let lwe_setup = || Lwe::setup(&data, record_bytes, options, &|_, _| {});
        results.push(pools.all.install(|| {
            measure(
                engine_driver::<Lwe>("simple", &lwe_setup),
                &data,
                records,
                record_bytes,
            )
        }));
        let double_setup = || Double::setup(&data, record_bytes, options, &|_, _| {});
        results.push(pools.all.install(|| {
            measure(
                engine_driver::<Double>("double", &double_setup),
                &data,
                records,
                record_bytes,
            )
        }));
        for variant in [Variant::Ypir, Variant::YpirSp] {
            let ypir_options = YpirOptions {
                variant: Some(variant),
            };
            let setup =
                || ypir::Server::from_records(&data, record_bytes, ypir_options, &|_, _| {});
            results.push(
                pools.all.install(|| {
                    measure(ypir_driver(variant, &setup), &data, records, record_bytes)
                }),
            );
        }
        for result in results {
            let (run, run_params, ok) = result?;
            correct &= ok;
            if let Some(run_params) = run_params {
                params.get_or_insert(run_params);
            }
            runs.push(run);
        }
    }
    Ok(SmallReport {
        preset: "ypir-small".into(),
        threads: pools.all.current_num_threads(),
        record_bytes,
        params: params.unwrap_or_default(),
        bandwidth_gbs,
        runs,
        correct,
    })
}

/// One scheme over one database, on the caller's rayon pool: its setup, then [`REPEATS`]
/// retrievals each way, every record checked. Returns the run, the database's LWE parameters
/// where it has them and whether every record matched.
fn measure<S: Scheme>(
    driver: Driver<'_, S>,
    data: &[u8],
    records: u64,
    record_bytes: u64,
) -> Result<(SmallRun, Option<Params>, bool)>
where
    for<'a> S::Client: PirClient<Target<'a> = u64, Output = Vec<u8>>,
{
    let (server, setup_seconds) = timed(|| (driver.setup)());
    let server = server?;
    let setup = server.public_setup();
    let mut client = S::Client::new(setup.clone());
    let mut correct = true;
    let mut check = |index: u64, record: &[u8]| {
        let start = (index * record_bytes) as usize;
        correct &= record == &data[start..start + record_bytes as usize];
    };
    let index_of = |i: usize| (i as u64).wrapping_mul(0x9e37_79b9) % records;

    let (prepared, prepare_seconds) = timed(|| (driver.preprocess)(&mut client, REPEATS));
    prepared?;
    let (mut prepared_times, mut answer_times, mut sizes) = (Vec::new(), Vec::new(), None);
    for i in 0..REPEATS {
        let index = index_of(i);
        let started = std::time::Instant::now();
        let (query, state) = client.query(index)?;
        let (answer, answer_seconds) = timed(|| server.answer(&query));
        let answer = answer?;
        let record = client.decode(state, &answer)?;
        prepared_times.push(started.elapsed().as_secs_f64());
        answer_times.push(answer_seconds);
        check(index, &record);
        sizes.get_or_insert((query.to_bytes().len(), answer.to_bytes().len()));
    }
    let mut fresh_times = Vec::new();
    for i in REPEATS..2 * REPEATS {
        let index = index_of(i);
        let (record, seconds) = timed(|| -> Result<Vec<u8>> {
            let (query, state) = client.query(index)?;
            let answer = server.answer(&query)?;
            Ok(client.decode(state, &answer)?)
        });
        fresh_times.push(seconds);
        check(index, &record?);
    }
    let (query_bytes, answer_bytes) = sizes.unwrap_or_default();
    let (matrix, p) = (driver.shape)(setup);
    let run = SmallRun {
        scheme: driver.name.into(),
        records,
        matrix,
        p,
        seconds: SmallSeconds {
            server_setup: setup_seconds,
            query_prepare: prepare_seconds / REPEATS as f64,
            end_to_end_prepared: median(prepared_times),
            end_to_end_fresh: median(fresh_times),
            answer: median(answer_times),
        },
        bytes: SmallBytes {
            hint: setup.to_bytes().len() as u64,
            query: query_bytes as u64,
            answer: answer_bytes as u64,
        },
    };
    Ok((run, (driver.params)(setup), correct))
}

/// The published figures of `scheme` at `records`, if the reference run has that size.
fn published(scheme: &str, records: u64) -> Option<(f64, f64)> {
    let size = SIZES.iter().position(|&s| s == records)?;
    PUBLISHED_MICROS
        .iter()
        .find(|(name, ..)| *name == scheme || (*name == "ypir" && scheme.starts_with("ypir")))
        .map(|(_, setup, end_to_end)| (setup[size] * 1e-6, end_to_end[size] * 1e-6))
}

impl Tables for SmallReport {
    const WRONG: &'static str = "a retrieved record did not match the original";

    fn correct(&self) -> bool {
        self.correct
    }

    fn print_tables(&self) {
        println!(
            "preset {}: records of {} B, SimplePIR and DoublePIR on the same engine, YPIR and YPIR+SP, {} threads",
            self.preset, self.record_bytes, self.threads
        );
        println!(
            "params: {} (n = {}, q = 2^{}, sigma = {}, {} A)",
            self.params.set,
            self.params.n,
            self.params.log_q,
            self.params.sigma,
            self.params.matrix
        );
        print_bandwidth(&self.bandwidth_gbs);
        println!("| scheme | records | matrix, p | preprocessing (published) | end to end, prepared | end to end, fresh (published) | answer | hint / query / answer bytes |");
        println!("|---|---|---|---|---|---|---|---|");
        for run in &self.runs {
            let s = &run.seconds;
            let (setup_ref, end_ref) = published(&run.scheme, run.records)
                .map(|(a, b)| (format!(" ({})", human(a)), format!(" ({})", human(b))))
                .unwrap_or_default();
            println!(
                "| {} | {} | {} x {}, {} | {}{setup_ref} | {} | {}{end_ref} | {} | {} / {} / {} |",
                run.scheme,
                run.records,
                run.matrix[0],
                run.matrix[1],
                run.p,
                human(s.server_setup),
                human(s.end_to_end_prepared),
                human(s.end_to_end_fresh),
                human(s.answer),
                run.bytes.hint,
                run.bytes.query,
                run.bytes.answer
            );
        }
        println!("\npublished: YPIR's authors' reference run on an Apple laptop (their table of small databases); both YPIR rows are compared with its YPIR figures. YPIR has no query preparation: its prepared and fresh runs are the same.");
        print_correct(
            self.correct,
            "every retrieved record matched",
            "NO: a record came back wrong",
        );
    }
}
