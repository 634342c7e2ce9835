//! The `chalamet` preset: keyword PIR over 2^20 pairs of 32-byte keys and 1 KiB values, with
//! 3-wise and 4-wise filters (ChalametPIR's workload).

use anyhow::{Context as _, Result};
use obscura_pir::keyword::fuse::{Arity, FuseShape};
use obscura_pir::keyword::{
    filter_hash, key_digest, Keyword, KeywordClient, KeywordOptions, KeywordServer, KeywordSetup,
};
use obscura_pir::lwe::Layout;
use obscura_pir::{Encode, PirClient, PirServer};
use obscura_registry::Database;
use rayon::prelude::*;

use crate::lwe::report::{Bytes, Report, Retrieval};
use crate::lwe::{describe, hint_bound, measure_answers};
use crate::measure::{splitmix64, timed};
use crate::memory::peak_of;
use crate::progress::Progress;
use crate::repeated::{self, Workload};
use obscura_math::threads::Pools;

/// Bytes per key, as in ChalametPIR's benchmark.
const KEY_BYTES: usize = 32;

/// Deterministic pseudo-random key-value pairs (SplitMix64 stream).
pub(crate) fn pairs(count: u64, value_bytes: u64) -> Vec<(Vec<u8>, Vec<u8>)> {
    (0..count)
        .into_par_iter()
        .map(|i| {
            let word = |j: u64| splitmix64(i << 20 | j).to_le_bytes();
            let key: Vec<u8> = (0..KEY_BYTES as u64 / 8).flat_map(word).collect();
            let value: Vec<u8> = (0..value_bytes.div_ceil(8))
                .flat_map(|j| word(1000 + j))
                .take(value_bytes as usize)
                .collect();
            (key, value)
        })
        .collect()
}

/// Runs the preset for each arity asked for (both by default), one report each, on databases
/// set up with `options` (whose arity is set per run).
pub fn run(
    keys: u64,
    value_bytes: u64,
    arities: &[Arity],
    options: KeywordOptions,
    pools: &Pools,
    progress: &dyn Progress,
    base: &Report,
) -> Result<Vec<Report>> {
    let pairs = pools.all.install(|| pairs(keys, value_bytes));
    let mut reports = Vec::new();
    for &arity in arities {
        let mut report = base.clone();
        // The filter alone (hashing and peeling), timed apart from the whole setup.
        let shape = FuseShape::new(keys, arity).context("too many keys for one filter")?;
        let ((), filter_seconds) = timed(|| {
            let digests: Vec<_> = pools
                .all
                .install(|| pairs.par_iter().map(|(k, _)| key_digest(k)).collect());
            let hashes: Vec<u64> = digests.iter().map(|d| filter_hash(&[7; 32], d)).collect();
            let _ = shape.peel(&hashes);
        });
        let options = KeywordOptions {
            arity: Some(arity),
            ..options
        };
        let ((server, setup_seconds), peak) = peak_of(|| {
            timed(|| {
                pools.all.install(|| {
                    let shown = progress.start(&["filling the slots", "computing the hint"]);
                    KeywordServer::from_pairs(&pairs, options, &*shown)
                })
            })
        });
        let server = server?;
        report.server_peak_bytes = peak;
        let setup_bytes = server.public_setup().to_bytes();
        let (client, client_seconds) =
            timed(|| KeywordSetup::from_bytes(&setup_bytes).map(KeywordClient::new));
        let mut client = client?;
        describe(
            &mut report,
            client.setup().main().index().layer(),
            Layout::OnePerColumn,
            keys,
            value_bytes,
        );
        report.scheme = "keyword".into();
        report.arity = Some(arity.get());
        report.seconds.filter_build = Some(filter_seconds);
        report.seconds.hint_bound = hint_bound(client.setup().main().index(), pools);
        report.seconds.server_setup = setup_seconds;
        report.seconds.client_setup = client_seconds;

        let mut correct = true;
        let (prepared, prepare_seconds) = timed(|| pools.all.install(|| client.preprocess(1)));
        prepared?;
        let (key, value) = &pairs[(keys / 3) as usize];
        let (query, query_seconds) = timed(|| client.query(key));
        let (query, state) = query?;
        let (one, all, answer) = measure_answers(&server, &query, pools, &mut report)?;
        let (decoded, decode_seconds) = timed(|| client.decode(state, &answer));
        correct &= decoded?.as_ref() == Some(value);
        // A fresh query for the last key, and an absent key that must come back absent.
        let (fresh, fresh_seconds) = timed(|| {
            pools
                .all
                .install(|| client.query(&pairs[keys as usize - 1].0))
        });
        let (fresh_query, fresh_state) = fresh?;
        let fresh_answer = pools.all.install(|| server.answer(&fresh_query))?;
        correct &= client.decode(fresh_state, &fresh_answer)?.as_ref()
            == Some(&pairs[keys as usize - 1].1);
        let (absent_query, absent_state) = client.query(b"an absent key")?;
        let absent_answer = pools.all.install(|| server.answer(&absent_query))?;
        correct &= client.decode(absent_state, &absent_answer)?.is_none();

        let database_bytes = (keys * (KEY_BYTES as u64 + value_bytes)) as f64;
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

        let database = Database::new(server);
        let server = database
            .server::<Keyword>()
            .context("the database holds another scheme")?;
        let targets: Vec<&(Vec<u8>, Vec<u8>)> = (0..2 + repeated::ROUNDS as u64)
            .map(|i| &pairs[(i * 7919 % keys) as usize])
            .collect();
        let (repeated, right) = repeated::measure(
            Workload {
                database: database.clone(),
                targets: &targets,
                steps: &mut |(key, value)| {
                    let (seconds, found) = repeated::steps(&mut client, server, key)?;
                    Ok((seconds, found.as_ref() == Some(value)))
                },
                lookup: &|client, (key, value)| Ok(client.get_key(key)?.as_ref() == Some(value)),
            },
            pools,
        )?;
        report.repeated = Some(repeated);
        report.correct = correct && right;
        reports.push(report);
    }
    Ok(reports)
}
