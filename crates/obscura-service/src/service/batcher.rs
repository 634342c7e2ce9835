//! The batching worker of a database: answers the queries waiting for it in one pass.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{mpsc, oneshot};

use super::routes::Failure;
use crate::catalog::Entry;
use crate::metrics::Metrics;
use obscura_registry::DecodedQuery;

/// A query waiting for its encoded answer.
pub(super) struct Job {
    pub(super) query: DecodedQuery,
    pub(super) reply: oneshot::Sender<Result<Vec<u8>, Failure>>,
}

/// How a batching worker groups queries.
pub(super) struct Batching {
    pub(super) window: Duration,
    pub(super) max_batch: usize,
    pub(super) metrics: Arc<Metrics>,
}

/// Answers the queries of `entry`, as many per pass as are waiting, until every sender of
/// `receiver` is gone.
pub(super) async fn run(entry: Arc<Entry>, mut receiver: mpsc::Receiver<Job>, batching: Batching) {
    while let Some(first) = receiver.recv().await {
        let mut jobs = vec![first];
        let deadline = tokio::time::Instant::now() + batching.window;
        while jobs.len() < batching.max_batch {
            match receiver.try_recv() {
                Ok(job) => jobs.push(job),
                Err(_) => match tokio::time::timeout_at(deadline, receiver.recv()).await {
                    Ok(Some(job)) => jobs.push(job),
                    _ => break,
                },
            }
        }
        batching.metrics.add_batch(jobs.len());
        let (queries, replies): (Vec<DecodedQuery>, Vec<_>) =
            jobs.into_iter().map(|j| (j.query, j.reply)).unzip();
        let entry = entry.clone();
        let result = tokio::task::spawn_blocking(move || answer(&entry, queries)).await;
        match result {
            Ok(Ok(answers)) => {
                for (reply, answer) in replies.into_iter().zip(answers) {
                    let _ = reply.send(Ok(answer));
                }
            }
            Ok(Err(failure)) => {
                for reply in replies {
                    let _ = reply.send(Err(failure.clone()));
                }
            }
            Err(_) => {} // The task panicked; dropping the replies tells each waiter.
        }
    }
}

/// One pass of `entry`'s database over `queries`.
fn answer(entry: &Entry, queries: Vec<DecodedQuery>) -> Result<Vec<Vec<u8>>, Failure> {
    entry
        .database
        .answer(queries)
        .map_err(|e| Failure::from_pir(e, &entry.name))
}
