//! Repeated lookups through one client session ([`obscura_client::blocking::Client`], the client
//! under the CLI, Python and the browser), from the database in this process and over the HTTP
//! service on loopback, each round set against the bench's own steps for one lookup: a fresh
//! query, its answer and its decoding. The three alternate, so each round's ratios compare runs
//! of the same moment on a noisy machine.

use anyhow::{Context, Result};
use obscura_client::blocking::Client;
use obscura_client::http::HttpClient;
use obscura_pir::{PirClient, PirServer, Scheme};
use obscura_registry::Database;
use obscura_service::catalog::Catalog;
use obscura_service::service::{BackgroundService, ServiceConfig};
use serde::Serialize;

use crate::measure::{median, timed};
use crate::report::human;
use obscura_math::threads::Pools;

/// Rounds measured after each client's first lookup.
pub const ROUNDS: usize = 15;

/// The name the database is served under.
const NAME: &str = "bench";

/// The median and range of some figures.
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct Spread {
    /// The median.
    pub median: f64,
    /// The smallest.
    pub min: f64,
    /// The largest.
    pub max: f64,
}

impl Spread {
    /// The median and range of `values` (zeros for none).
    pub fn of(values: &[f64]) -> Self {
        let fold = |pick: fn(f64, f64) -> f64| values.iter().copied().reduce(pick).unwrap_or(0.0);
        Self {
            median: median(values.to_vec()),
            min: fold(f64::min),
            max: fold(f64::max),
        }
    }
}

/// A figure for a client of the database in this process and for one over HTTP.
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct Places<T> {
    /// The database answered in this process.
    pub local: T,
    /// The database served on loopback.
    pub served: T,
}

/// Lookups through one client session against the bench's steps for one lookup, in seconds.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Repeated {
    /// Rounds of one bench lookup and one later lookup from each client.
    pub rounds: usize,
    /// Each client's first lookup.
    pub first: Places<f64>,
    /// The bench's steps for one lookup: a fresh query, its answer and its decoding, each timed
    /// as the report's `query_fresh`, `answer` and `decode` are.
    pub steps: Spread,
    /// The later lookups.
    pub later: Places<Spread>,
    /// Each round's later lookup over the same round's steps.
    pub later_over_steps: Places<Spread>,
}

impl Repeated {
    /// Prints the first and later lookups of each client against the bench's steps.
    pub fn print_table(&self) {
        let range = |s: &Spread| format!("{} ({}-{})", human(s.median), human(s.min), human(s.max));
        let ratio = |s: &Spread| format!("{:.2} ({:.2}-{:.2})", s.median, s.min, s.max);
        println!(
            "\n| {} rounds, alternating | first lookup | later lookups, median (range) | later / steps, same round |\n|---|---|---|---|",
            self.rounds
        );
        println!(
            "| bench steps: fresh query + answer + decode | | {} | |",
            range(&self.steps)
        );
        for (place, first, later, over) in [
            (
                "one client session, database in this process",
                self.first.local,
                &self.later.local,
                &self.later_over_steps.local,
            ),
            (
                "one client session, over HTTP on loopback",
                self.first.served,
                &self.later.served,
                &self.later_over_steps.served,
            ),
        ] {
            println!(
                "| {place} | {} | {} | {} |",
                human(first),
                range(later),
                ratio(over)
            );
        }
    }
}

/// The bench's steps for one lookup of `target`: a fresh query from `client`, its answer from
/// `server` and its decoding, each timed as the report's `query_fresh`, `answer` and `decode`
/// are; their seconds in all, and what the answer decoded to.
pub fn steps<C: PirClient>(
    client: &mut C,
    server: &<C::Scheme as Scheme>::Server,
    target: C::Target<'_>,
) -> Result<(f64, C::Output)> {
    let (query, query_seconds) = timed(|| client.query(target));
    let (query, state) = query?;
    let (answer, answer_seconds) = timed(|| server.answer(&query));
    let (output, decode_seconds) = timed(|| client.decode(state, &answer?));
    Ok((query_seconds + answer_seconds + decode_seconds, output?))
}

/// What a preset hands to [`measure`].
pub struct Workload<'a, T> {
    /// The database, shared by the two clients and the service.
    pub database: Database,
    /// One target per lookup: `2 + ROUNDS` of them.
    pub targets: &'a [T],
    /// The bench's steps for a target: their seconds, and whether the result was right.
    pub steps: &'a mut (dyn FnMut(&T) -> Result<(f64, bool)> + Send),
    /// A lookup of a target through a client: whether the result was right.
    pub lookup: &'a (dyn Fn(&mut Client, &T) -> Result<bool> + Sync),
}

/// Measures `workload` on `pools.all`; the second value says whether every lookup was right.
pub fn measure<T: Sync>(workload: Workload<'_, T>, pools: &Pools) -> Result<(Repeated, bool)> {
    let Workload {
        database,
        targets,
        steps,
        lookup,
    } = workload;
    anyhow::ensure!(targets.len() >= 2 + ROUNDS, "too few targets");
    let mut catalog = Catalog::default();
    catalog.insert(NAME.into(), database.clone())?;
    // As `obscura serve` runs (for the rest of this process: a `chalamet` run of both arities
    // measures its second with it).
    obscura_service::allocator::keep_freed_memory();
    let service =
        BackgroundService::start(catalog, ServiceConfig::default(), "127.0.0.1:0".parse()?)
            .context("cannot start the service")?;
    let mut local = Client::in_process(NAME, database)?;
    let mut served = Client::connect(HttpClient::new(&service.url(), None), NAME)?;

    let mut correct = true;
    let mut first = Places::default();
    for (seconds, client, target) in [
        (&mut first.local, &mut local, &targets[0]),
        (&mut first.served, &mut served, &targets[1]),
    ] {
        let (right, took) = timed(|| pools.all.install(|| lookup(client, target)));
        correct &= right?;
        *seconds = took;
    }

    let (mut bench, mut later) = (Vec::new(), Places::<Vec<f64>>::default());
    for (round, target) in targets[2..2 + ROUNDS].iter().enumerate() {
        // The three take turns at going first.
        for turn in 0..3 {
            match (round + turn) % 3 {
                0 => {
                    let (seconds, right) = pools.all.install(|| steps(target))?;
                    bench.push(seconds);
                    correct &= right;
                }
                which => {
                    let (client, times) = if which == 1 {
                        (&mut local, &mut later.local)
                    } else {
                        (&mut served, &mut later.served)
                    };
                    let (right, seconds) = timed(|| pools.all.install(|| lookup(client, target)));
                    correct &= right?;
                    times.push(seconds);
                }
            }
        }
    }
    drop(service);
    let over =
        |times: &[f64]| -> Vec<f64> { times.iter().zip(&bench).map(|(t, b)| t / b).collect() };
    let repeated = Repeated {
        rounds: ROUNDS,
        first,
        steps: Spread::of(&bench),
        later_over_steps: Places {
            local: Spread::of(&over(&later.local)),
            served: Spread::of(&over(&later.served)),
        },
        later: Places {
            local: Spread::of(&later.local),
            served: Spread::of(&later.served),
        },
    };
    Ok((repeated, correct))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_spread_holds_the_median_and_the_range() {
        let spread = Spread::of(&[3.0, 1.0, 2.0]);
        assert_eq!((spread.median, spread.min, spread.max), (2.0, 1.0, 3.0));
        let none = Spread::of(&[]);
        assert_eq!((none.median, none.min, none.max), (0.0, 0.0, 0.0));
    }
}
