//! Prometheus text metrics of the service: requests, errors, latency, bytes in and out.

use std::fmt::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// The endpoints, as metric labels.
pub const ENDPOINTS: [&str; 8] = [
    "databases",
    "setup",
    "query",
    "batch",
    "audit-path",
    "consistency",
    "healthz",
    "metrics",
];

/// Upper bounds of the latency histogram, in seconds.
const BUCKETS: [f64; 12] = [
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 5.0,
];

/// Requests of one kind (an endpoint, a gateway's shard): how many, how many failed, and their
/// latency.
#[derive(Default)]
pub struct Timings {
    requests: AtomicU64,
    errors: AtomicU64,
    buckets: [AtomicU64; BUCKETS.len()],
    latency_micros: AtomicU64,
}

impl Timings {
    /// Records one request.
    pub fn record(&self, error: bool, latency: Duration) {
        self.requests.fetch_add(1, Ordering::Relaxed);
        if error {
            self.errors.fetch_add(1, Ordering::Relaxed);
        }
        let seconds = latency.as_secs_f64();
        for (bucket, &bound) in self.buckets.iter().zip(&BUCKETS) {
            if seconds <= bound {
                bucket.fetch_add(1, Ordering::Relaxed);
            }
        }
        self.latency_micros
            .fetch_add(latency.as_micros() as u64, Ordering::Relaxed);
    }
}

/// Appends to `out` the Prometheus families `{prefix}_requests_total`, `{prefix}_errors_total`
/// and the histogram `{prefix}_request_seconds` of `series`, each `Timings` with its labels
/// (`endpoint="query"`, say); `what` says what they count.
pub fn render_timings(out: &mut String, prefix: &str, what: &str, series: &[(String, &Timings)]) {
    let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
    let _ = writeln!(
        out,
        "# HELP {prefix}_requests_total {what}.\n# TYPE {prefix}_requests_total counter"
    );
    for (labels, m) in series {
        let _ = writeln!(
            out,
            "{prefix}_requests_total{{{labels}}} {}",
            get(&m.requests)
        );
    }
    let _ = writeln!(
        out,
        "# HELP {prefix}_errors_total {what} answered with an error.\n# TYPE {prefix}_errors_total counter"
    );
    for (labels, m) in series {
        let _ = writeln!(out, "{prefix}_errors_total{{{labels}}} {}", get(&m.errors));
    }
    let _ = writeln!(
        out,
        "# HELP {prefix}_request_seconds Latency of {}.\n# TYPE {prefix}_request_seconds histogram",
        what.to_lowercase()
    );
    for (labels, m) in series {
        for (bucket, bound) in m.buckets.iter().zip(BUCKETS) {
            let _ = writeln!(
                out,
                "{prefix}_request_seconds_bucket{{{labels},le=\"{bound}\"}} {}",
                get(bucket)
            );
        }
        let count = get(&m.requests);
        let _ = writeln!(
            out,
            "{prefix}_request_seconds_bucket{{{labels},le=\"+Inf\"}} {count}"
        );
        let _ = writeln!(
            out,
            "{prefix}_request_seconds_sum{{{labels}}} {}",
            get(&m.latency_micros) as f64 / 1e6
        );
        let _ = writeln!(out, "{prefix}_request_seconds_count{{{labels}}} {count}");
    }
}

/// All counters of a service.
#[derive(Default)]
pub struct Metrics {
    endpoints: [Timings; ENDPOINTS.len()],
    bytes_in: AtomicU64,
    bytes_out: AtomicU64,
    batches: AtomicU64,
    batched_queries: AtomicU64,
    patched_setups: AtomicU64,
}

impl Metrics {
    /// Records one request to endpoint `index` of [`ENDPOINTS`].
    pub fn record(&self, index: usize, error: bool, latency: Duration) {
        self.endpoints[index].record(error, latency);
    }

    /// Counts request and response body bytes.
    pub fn add_bytes(&self, incoming: u64, outgoing: u64) {
        self.bytes_in.fetch_add(incoming, Ordering::Relaxed);
        self.bytes_out.fetch_add(outgoing, Ordering::Relaxed);
    }

    /// Counts one pass over a database answering `queries` queries.
    pub fn add_batch(&self, queries: usize) {
        self.batches.fetch_add(1, Ordering::Relaxed);
        self.batched_queries
            .fetch_add(queries as u64, Ordering::Relaxed);
    }

    /// Counts one setup request answered with patches (`226`).
    pub fn add_patched_setup(&self) {
        self.patched_setups.fetch_add(1, Ordering::Relaxed);
    }

    /// The Prometheus text exposition.
    pub fn render(&self) -> String {
        let mut out = String::new();
        let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
        let series: Vec<(String, &Timings)> = ENDPOINTS
            .iter()
            .zip(&self.endpoints)
            .map(|(name, m)| (format!("endpoint=\"{name}\""), m))
            .collect();
        render_timings(&mut out, "obscura", "Requests by endpoint", &series);
        for (metric, help, value) in [
            (
                "obscura_bytes_in_total",
                "Request body bytes.",
                &self.bytes_in,
            ),
            (
                "obscura_bytes_out_total",
                "Response body bytes.",
                &self.bytes_out,
            ),
            (
                "obscura_batches_total",
                "Passes over a database.",
                &self.batches,
            ),
            (
                "obscura_batched_queries_total",
                "Queries answered in those passes.",
                &self.batched_queries,
            ),
            (
                "obscura_patched_setups_total",
                "Setup requests answered with patches from the client's version (226).",
                &self.patched_setups,
            ),
        ] {
            let _ = writeln!(
                out,
                "# HELP {metric} {help}\n# TYPE {metric} counter\n{metric} {}",
                get(value)
            );
        }
        out
    }
}
