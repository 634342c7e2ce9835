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

/// Counters for one endpoint.
#[derive(Default)]
struct EndpointMetrics {
    requests: AtomicU64,
    errors: AtomicU64,
    buckets: [AtomicU64; BUCKETS.len()],
    latency_micros: AtomicU64,
}

/// All counters of a service.
#[derive(Default)]
pub struct Metrics {
    endpoints: [EndpointMetrics; ENDPOINTS.len()],
    bytes_in: AtomicU64,
    bytes_out: AtomicU64,
    batches: AtomicU64,
    batched_queries: AtomicU64,
    patched_setups: AtomicU64,
}

impl Metrics {
    /// Records one request to endpoint `index` of [`ENDPOINTS`].
    pub fn record(&self, index: usize, error: bool, latency: Duration) {
        let m = &self.endpoints[index];
        m.requests.fetch_add(1, Ordering::Relaxed);
        if error {
            m.errors.fetch_add(1, Ordering::Relaxed);
        }
        let seconds = latency.as_secs_f64();
        for (bucket, &bound) in m.buckets.iter().zip(&BUCKETS) {
            if seconds <= bound {
                bucket.fetch_add(1, Ordering::Relaxed);
            }
        }
        m.latency_micros
            .fetch_add(latency.as_micros() as u64, Ordering::Relaxed);
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
        out.push_str("# HELP obscura_requests_total Requests by endpoint.\n# TYPE obscura_requests_total counter\n");
        for (name, m) in ENDPOINTS.iter().zip(&self.endpoints) {
            let _ = writeln!(
                out,
                "obscura_requests_total{{endpoint=\"{name}\"}} {}",
                get(&m.requests)
            );
        }
        out.push_str("# HELP obscura_errors_total Requests answered with an error status.\n# TYPE obscura_errors_total counter\n");
        for (name, m) in ENDPOINTS.iter().zip(&self.endpoints) {
            let _ = writeln!(
                out,
                "obscura_errors_total{{endpoint=\"{name}\"}} {}",
                get(&m.errors)
            );
        }
        out.push_str("# HELP obscura_request_seconds Request latency.\n# TYPE obscura_request_seconds histogram\n");
        for (name, m) in ENDPOINTS.iter().zip(&self.endpoints) {
            for (bucket, bound) in m.buckets.iter().zip(BUCKETS) {
                let _ = writeln!(
                    out,
                    "obscura_request_seconds_bucket{{endpoint=\"{name}\",le=\"{bound}\"}} {}",
                    get(bucket)
                );
            }
            let count = get(&m.requests);
            let _ = writeln!(
                out,
                "obscura_request_seconds_bucket{{endpoint=\"{name}\",le=\"+Inf\"}} {count}"
            );
            let _ = writeln!(
                out,
                "obscura_request_seconds_sum{{endpoint=\"{name}\"}} {}",
                get(&m.latency_micros) as f64 / 1e6
            );
            let _ = writeln!(
                out,
                "obscura_request_seconds_count{{endpoint=\"{name}\"}} {count}"
            );
        }
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
