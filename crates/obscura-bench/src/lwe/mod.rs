//! The `frodo` and `simple-1g` presets: index PIR with the LWE engine.

use std::time::Instant;

use anyhow::{Context, Result};
use obscura_pir::lwe::{Answer, Client, Layout, PublicSetup, Query, QueryState, SetupOptions};
use obscura_pir::{PirClient, PirServer};
use rayon::prelude::*;

use super::report::{Batch, Bytes, Pair, Params, Report, Retrieval};
use super::{bandwidth, Pools, Preset};
use crate::progress;

/// Times an answer is repeated to take the median (enough that a few answers slowed down by a
/// virtual machine's neighbours do not move it).
const ANSWER_REPEATS: usize = 9;

/// Batch sizes measured by `simple-1g`.
const BATCH_SIZES: [usize; 4] = [1, 4, 16, 64];

/// Deterministic pseudo-random records (SplitMix64 of the word index).
pub fn generate(records: u64, record_bytes: u64) -> Result<Vec<u8>> {
    let bytes = records
        .checked_mul(record_bytes)
        .and_then(|b| usize::try_from(b).ok())
        .context("the database size overflows")?;
    let mut data = Vec::new();
    data.try_reserve_exact(bytes)
        .with_context(|| format!("cannot allocate a {bytes}-byte database"))?;
    data.resize(bytes, 0);
    data.par_chunks_mut(8).enumerate().for_each(|(i, chunk)| {
        let mut z = (i as u64)
            .wrapping_add(1)
            .wrapping_mul(0x9e37_79b9_7f4a_7c15);
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^= z >> 31;
        chunk.copy_from_slice(&z.to_le_bytes()[..chunk.len()]);
    });
    Ok(data)
}

pub(super) fn timed<T>(f: impl FnOnce() -> T) -> (T, f64) {
    let started = Instant::now();
    let value = f();
    (value, started.elapsed().as_secs_f64())
}

/// The median of `values` (not empty).
pub(super) fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

/// Median answer times for one query with one thread and with all threads, and the answer.
/// The report's bandwidth is measured in turns with the answers: a streaming read before every
/// third answer, on the same pool, the best of them per pool ([`bandwidth::PASSES`] reads), so
/// each ratio compares figures taken within the same second or two.
pub(super) fn measure_answers<S: PirServer<Query = Query, Answer = Answer> + Sync>(
    server: &S,
    query: &Query,
    pools: &Pools,
    report: &mut Report,
) -> Result<(f64, f64, Answer)> {
    let stream = bandwidth::Stream::new();
    let every = (ANSWER_REPEATS / bandwidth::PASSES).max(1);
    let times = |pool: &rayon::ThreadPool| -> Result<(f64, f64, Answer)> {
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
    setup: &PublicSetup,
    layout: Layout,
    records: u64,
    record_bytes: u64,
) {
    let g = setup.geometry();
    report.scheme = "lwe".into();
    report.layout = layout_name(layout).into();
    report.records = records;
    report.record_bytes = record_bytes;
    report.backend = obscura_math::kernels::Backend::detect().name().into();
    report.matrix = [g.rows(), g.cols()];
    report.params = Params::of(setup);
}

/// The name a report gives `layout`.
pub(super) fn layout_name(layout: Layout) -> &'static str {
    match layout {
        Layout::OnePerColumn => "one-per-column",
        _ => "square",
    }
}

/// Runs an LWE preset and fills `report`.
pub fn run(
    preset: Preset,
    records: u64,
    record_bytes: u64,
    pools: &Pools,
    report: &mut Report,
) -> Result<()> {
    let layout = match preset {
        Preset::Frodo => Layout::OnePerColumn,
        Preset::Simple1g => Layout::Square,
        Preset::Service
        | Preset::Chalamet
        | Preset::PsiEcdh
        | Preset::PsiKkrt
        | Preset::TreepirSetup
        | Preset::TreepirE2e => unreachable!("not an index preset"),
    };
    let data = pools.all.install(|| generate(records, record_bytes))?;
    let options = SetupOptions {
        layout,
        ..SetupOptions::default()
    };
    let (server, setup_seconds) = timed(|| {
        pools
            .all
            .install(|| progress::setup_with_bar(&data, record_bytes, options, "server setup"))
    });
    let server = server?;
    let setup_bytes = server.public_setup().to_bytes();
    let (client, client_seconds) = timed(|| PublicSetup::from_bytes(&setup_bytes).map(Client::new));
    let mut client = client?;

    describe(report, client.setup(), layout, records, record_bytes);
    report.seconds.server_setup = setup_seconds;
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
    let (prepared, prepare_seconds) = timed(|| pools.all.install(|| client.preprocess(1)));
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

    if preset == Preset::Simple1g {
        for k in BATCH_SIZES {
            pools.all.install(|| client.preprocess(k))?;
            let mut queries = Vec::with_capacity(k);
            let mut states: Vec<(u64, QueryState)> = Vec::with_capacity(k);
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
    report.correct = correct;
    Ok(())
}
