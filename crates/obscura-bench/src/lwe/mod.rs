//! The `frodo`, `simple-1g` and `double-1g` presets: index PIR with the LWE engine, and with
//! DoublePIR on it.

pub mod report;

use std::time::Duration;

use anyhow::{Context, Result};
use obscura_math::hint;
use obscura_pir::double::{self, Double};
use obscura_pir::lwe::{self, EngineOptions, Layer, Layout, Lwe, PublicSetup};
use obscura_pir::params::{LweParams, MatrixKind};
use obscura_pir::scheme::{AnswerOf, Progress as SetupProgress, QueryOf, SetupOf};
use obscura_pir::{Encode, PirClient, PirError, PirServer, Scheme, SetupMessage};
use obscura_registry::Database;

use crate::bandwidth;
use crate::measure::{generate, median, timed};
use crate::memory::peak_of;
use crate::progress::Progress;
use crate::repeated::{self, Workload};
use crate::report::{Pair, Params};
use obscura_math::threads::Pools;
use report::{AnswerReads, Batch, Bytes, Report, Retrieval};

/// Times an answer is repeated to take the median (enough that a few answers slowed down by a
/// virtual machine's neighbours do not move it).
const ANSWER_REPEATS: usize = 9;

/// Batch sizes measured by `simple-1g`.
const BATCH_SIZES: [usize; 4] = [1, 4, 16, 64];

/// Median answer times for one query with one thread and with all threads, and the answer.
/// The report's bandwidth is measured in turns with the answers: a streaming read before every
/// third answer, on the same pool, the best of them per pool (`bandwidth::PASSES` reads), so
/// each ratio compares figures taken within the same second or two.
pub fn measure_answers<S: PirServer>(
    server: &S,
    query: &QueryOf<S::Scheme>,
    pools: &Pools,
    report: &mut Report,
) -> Result<(f64, f64, AnswerOf<S::Scheme>)>
where
    QueryOf<S::Scheme>: Sync,
{
    let stream = bandwidth::Stream::new();
    let every = (ANSWER_REPEATS / bandwidth::PASSES).max(1);
    let times = |pool: &rayon::ThreadPool| -> Result<(f64, f64, AnswerOf<S::Scheme>)> {
        let mut times = Vec::with_capacity(ANSWER_REPEATS);
        let mut best_gbs = 0.0f64;
        let mut last = None;
        for repeat in 0..ANSWER_REPEATS {
            if repeat % every == 0 {
                best_gbs = best_gbs.max(stream.read_gbs(pool));
            }
            let (answer, seconds) = timed(|| pool.install(|| server.answer(query)));
            last = Some(answer?);
            times.push(seconds);
        }
        Ok((median(times), best_gbs, last.expect("repeated")))
    };
    let (one, one_gbs, _) = times(&pools.one)?;
    let (all, all_gbs, answer) = times(&pools.all)?;
    report.bandwidth_gbs = Pair {
        one_thread: one_gbs,
        all_threads: all_gbs,
    };
    Ok((one, all, answer))
}

/// Fills the report's description of the database: shape, layout, kernels and parameters.
pub fn describe(
    report: &mut Report,
    setup: &Layer,
    layout: Layout,
    records: u64,
    record_bytes: u64,
) {
    let g = setup.geometry();
    report.scheme = "lwe".into();
    report.layout = layout_name(layout);
    report.records = records;
    report.record_bytes = record_bytes;
    report.backend = obscura_math::backend::Backend::selected().name().into();
    report.matrix = [g.rows(), g.cols()];
    report.params = Params::of_params(&setup.params());
}

/// The name a report gives `layout`: as `--layout` takes it.
pub fn layout_name(layout: Layout) -> String {
    match layout {
        Layout::OnePerColumn => "one-per-column".into(),
        Layout::Square => "square".into(),
        Layout::PerColumn(k) => k.to_string(),
    }
}

/// An index scheme as the index presets measure it: records of fixed size fetched by index,
/// queries prepared ahead of time.
pub trait Measured: Scheme {
    /// The scheme's name in reports.
    const REPORTED: &'static str;

    /// Sets up a database of `record_bytes`-byte records laid end to end in `data`.
    fn setup(
        data: &[u8],
        record_bytes: u64,
        options: EngineOptions,
        progress: SetupProgress<'_>,
    ) -> Result<Self::Server, PirError>;

    /// Prepares `count` queries ahead of time.
    fn preprocess(client: &mut Self::Client, count: usize) -> Result<(), PirError>;

    /// The layer of the database itself, which the report describes.
    fn layer(setup: &Self::Setup) -> &Layer;

    /// The `(rows, columns)` of each hint product of the setup.
    fn products(setup: &Self::Setup) -> Vec<(usize, usize)>;

    /// Bytes each answer streams besides the database's matrix (DoublePIR's second layer).
    fn also_streamed(setup: &Self::Setup) -> u64;
}

impl Measured for Lwe {
    const REPORTED: &'static str = "lwe";

    fn setup(
        data: &[u8],
        record_bytes: u64,
        options: EngineOptions,
        progress: SetupProgress<'_>,
    ) -> Result<lwe::Server, PirError> {
        lwe::Server::from_records(data, record_bytes, options, progress)
    }

    fn preprocess(client: &mut lwe::Client, count: usize) -> Result<(), PirError> {
        client.preprocess(count)
    }

    fn layer(setup: &PublicSetup) -> &Layer {
        setup.layer()
    }

    fn products(setup: &PublicSetup) -> Vec<(usize, usize)> {
        let g = setup.geometry();
        vec![(g.rows() as usize, g.cols() as usize)]
    }

    fn also_streamed(_: &PublicSetup) -> u64 {
        0
    }
}

impl Measured for Double {
    const REPORTED: &'static str = "double";

    fn setup(
        data: &[u8],
        record_bytes: u64,
        options: EngineOptions,
        progress: SetupProgress<'_>,
    ) -> Result<double::Server, PirError> {
        double::Server::from_records(data, record_bytes, options, progress)
    }

    fn preprocess(client: &mut double::Client, count: usize) -> Result<(), PirError> {
        client.preprocess(count)
    }

    fn layer(setup: &double::PublicSetup) -> &Layer {
        setup.first()
    }

    fn products(setup: &double::PublicSetup) -> Vec<(usize, usize)> {
        setup.matrix_shapes()
    }

    fn also_streamed(setup: &double::PublicSetup) -> u64 {
        let g = setup.second().geometry();
        g.rows() * g.cols()
    }
}

/// Sets up the database of `data` with `options`, showing the progress, and notes the setup's
/// time, peak memory and arithmetic bound in `report`.
pub fn setup_server<S: Measured>(
    data: &[u8],
    record_bytes: u64,
    options: EngineOptions,
    pools: &Pools,
    progress: &dyn Progress,
    report: &mut Report,
) -> Result<S::Server> {
    let ((server, seconds), peak) = peak_of(|| {
        timed(|| {
            pools.all.install(|| {
                let shown = progress.start(&["server setup"]);
                S::setup(data, record_bytes, options, &*shown)
            })
        })
    });
    report.seconds.server_setup = seconds;
    report.server_peak_bytes = peak;
    let server = server?;
    let setup = server.public_setup();
    let params = S::layer(setup).params();
    report.seconds.hint_bound = products_bound(&S::products(setup), params, pools);
    Ok(server)
}

/// The time the NTT butterflies of `setup`'s hint product take at the rate this machine
/// reaches now on `pools.all` (`None` for a uniform public matrix, whose hint is the dense
/// product).
pub fn hint_bound(setup: &PublicSetup, pools: &Pools) -> Option<f64> {
    let g = setup.geometry();
    products_bound(
        &[(g.rows() as usize, g.cols() as usize)],
        setup.params(),
        pools,
    )
}

/// [`hint_bound`] of hint products of these `(rows, columns)` under `params`.
fn products_bound(products: &[(usize, usize)], params: LweParams, pools: &Pools) -> Option<f64> {
    if params.matrix != MatrixKind::Negacyclic {
        return None;
    }
    let n = params.n();
    let butterflies: u64 = products
        .iter()
        .map(|&(rows, cols)| hint::ntt_butterflies(rows, cols, n))
        .sum();
    let rate = pools
        .all
        .install(|| hint::butterfly_rate(n, Duration::from_millis(300)));
    (rate > 0.0).then(|| butterflies as f64 / rate)
}

/// What an index preset measures besides one retrieval.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Extra {
    /// Nothing (`frodo`).
    Nothing,
    /// Batched answers of 1, 4, 16 and 64 queries (`simple-1g`).
    Batches,
}

/// Runs an index preset of scheme `S` on a database set up with `options` and fills `report`.
pub fn run<S: Measured>(
    extra: Extra,
    records: u64,
    record_bytes: u64,
    options: EngineOptions,
    pools: &Pools,
    progress: &dyn Progress,
    report: &mut Report,
) -> Result<()>
where
    for<'a> S::Client: PirClient<Target<'a> = u64, Output = Vec<u8>>,
    <S::Client as PirClient>::State: Send,
    QueryOf<S>: Sync,
{
    let data = pools.all.install(|| generate(records, record_bytes))?;
    let server = setup_server::<S>(&data, record_bytes, options, pools, progress, report)?;
    let setup_bytes = server.public_setup().to_bytes();
    let (client, client_seconds) =
        timed(|| SetupOf::<S>::from_bytes(&setup_bytes).map(S::Client::new));
    let mut client = client?;

    describe(
        report,
        S::layer(client.setup()),
        options.layout,
        records,
        record_bytes,
    );
    report.scheme = S::REPORTED.into();
    report.seconds.client_setup = client_seconds;

    let mut indices = {
        let mut x = 0x5eed_u64;
        std::iter::repeat_with(move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % records
        })
    };
    let mut correct = true;
    let mut check = |index: u64, record: &[u8]| {
        let start = (index * record_bytes) as usize;
        correct &= record == &data[start..start + record_bytes as usize];
    };

    // Prepared query: preparation, online step, answer (1 and all threads), decode.
    let (prepared, prepare_seconds) = timed(|| pools.all.install(|| S::preprocess(&mut client, 1)));
    prepared?;
    let index = indices.next().expect("endless");
    let (query, query_seconds) = timed(|| client.query(index));
    let (query, state) = query?;
    let (one, all, answer) = measure_answers(&server, &query, pools, report)?;
    let (record, decode_seconds) = timed(|| client.decode(state, &answer));
    check(index, &record?);

    // A query from scratch (no preparation), checked too.
    let index = indices.next().expect("endless");
    let (fresh, fresh_seconds) = timed(|| pools.all.install(|| client.query(index)));
    let (fresh_query, fresh_state) = fresh?;
    let fresh_answer = pools.all.install(|| server.answer(&fresh_query))?;
    check(index, &client.decode(fresh_state, &fresh_answer)?);

    let database_bytes = (records * record_bytes) as f64;
    let retrieval = Retrieval {
        prepare: prepare_seconds,
        query: query_seconds,
        fresh: fresh_seconds,
        answer_one: one,
        answer_all: all,
        decode: decode_seconds,
        bytes: Bytes {
            hint: setup_bytes.len() as u64,
            query: query.to_bytes().len() as u64,
            answer: answer.to_bytes().len() as u64,
        },
    };
    report.record(retrieval, database_bytes);
    let also = S::also_streamed(server.public_setup());
    if also > 0 {
        let g = S::layer(server.public_setup()).geometry();
        let matrix = g.rows() * g.cols();
        let streamed = (matrix + also) as f64;
        report.answer_reads = Some(AnswerReads {
            database: matrix,
            second_layer: also,
            gbs: Pair {
                one_thread: streamed / one / 1e9,
                all_threads: streamed / all / 1e9,
            },
        });
    }

    if extra == Extra::Batches {
        for k in BATCH_SIZES {
            pools.all.install(|| S::preprocess(&mut client, k))?;
            let mut queries = Vec::with_capacity(k);
            let mut states = Vec::with_capacity(k);
            for _ in 0..k {
                let index = indices.next().expect("endless");
                let (query, state) = client.query(index)?;
                queries.push(query);
                states.push((index, state));
            }
            let (answers, seconds) = timed(|| pools.all.install(|| server.answer_batch(&queries)));
            for ((index, state), answer) in states.into_iter().zip(&answers?) {
                check(index, &client.decode(state, answer)?);
            }
            report.batch.push(Batch {
                k,
                seconds,
                effective_gbs: k as f64 * database_bytes / seconds / 1e9,
            });
        }
    }

    let database = Database::new(server);
    let server = database
        .server::<S>()
        .context("the database holds another scheme")?;
    let record_of = |index: u64| {
        let start = (index * record_bytes) as usize;
        &data[start..start + record_bytes as usize]
    };
    let targets: Vec<u64> = indices.take(2 + repeated::ROUNDS).collect();
    let (repeated, right) = repeated::measure(
        Workload {
            database: database.clone(),
            targets: &targets,
            steps: &mut |&index| {
                let (seconds, record) = repeated::steps(&mut client, server, index)?;
                Ok((seconds, record == record_of(index)))
            },
            lookup: &|client, &index| Ok(client.get(index)?.as_deref() == Some(record_of(index))),
        },
        pools,
    )?;
    report.repeated = Some(repeated);
    report.correct = correct && right;
    Ok(())
}
