//! What every report shares: figures for one and all threads, LWE parameters, how a report is
//! printed or serialized, and the helpers that render its tables.

use obscura_pir::lwe::PublicSetup;
use obscura_pir::params::{LweParams, LOG_Q};
use serde::Serialize;

/// A figure for one thread and for all threads.
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct Pair {
    /// With one thread.
    pub one_thread: f64,
    /// With all threads.
    pub all_threads: f64,
}

/// LWE parameters as reported.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Params {
    /// LWE dimension.
    pub n: usize,
    /// log2 of the ciphertext modulus.
    pub log_q: u32,
    /// Plaintext modulus.
    pub p: u32,
    /// Error standard deviation (1 stands for uniform ternary).
    pub sigma: f64,
    /// Parameter set name.
    pub set: String,
    /// Public matrix kind (uniform or negacyclic).
    pub matrix: String,
}

impl Params {
    /// The parameters of the database `setup` describes.
    pub fn of(setup: &PublicSetup) -> Self {
        Self::of_params(&setup.params())
    }

    /// The parameters `params` as reported.
    pub fn of_params(params: &LweParams) -> Self {
        Self {
            n: params.n(),
            log_q: LOG_Q,
            p: params.p(),
            sigma: params.set.error_subgaussian(),
            set: params.set.name().into(),
            matrix: params.matrix.name().into(),
        }
    }
}

/// What a run does with a report: print its tables or its JSON object, and fail the run if a
/// result was wrong.
pub trait Tables: Serialize {
    /// The error of a run whose results were not all correct.
    const WRONG: &'static str;

    /// Whether every result of the run was correct.
    fn correct(&self) -> bool;

    /// Prints the human-readable tables.
    fn print_tables(&self);
}

/// Prints the memory bandwidth line and a blank line, as every preset's tables have them.
pub fn print_bandwidth(bandwidth: &Pair) {
    println!(
        "memory bandwidth (streaming read): {:.1} GB/s one thread, {:.1} GB/s all threads\n",
        bandwidth.one_thread, bandwidth.all_threads
    );
}

/// Prints the bandwidth and the full build an update preset's versions are set against.
pub fn print_full_build(bandwidth: &Pair, build_seconds: f64, setup_bytes: u64) {
    print_bandwidth(bandwidth);
    println!(
        "full build: {}; public setup: {setup_bytes} bytes",
        human(build_seconds)
    );
}

/// Prints the closing line: `correct: ` and `yes` when `correct`, else `no`.
pub fn print_correct(correct: bool, yes: &str, no: &str) {
    println!("\ncorrect: {}", if correct { yes } else { no });
}

/// Seconds as s, ms or µs.
pub fn human(seconds: f64) -> String {
    if seconds >= 1.0 {
        format!("{seconds:.2} s")
    } else if seconds >= 1e-3 {
        format!("{:.2} ms", seconds * 1e3)
    } else {
        format!("{:.1} µs", seconds * 1e6)
    }
}

/// A byte count in binary units, e.g. `12.0 MiB`; `-` where it was not measured.
pub fn human_bytes(bytes: Option<u64>) -> String {
    let Some(bytes) = bytes else {
        return "-".into();
    };
    let mut value = bytes as f64;
    for unit in ["B", "KiB", "MiB"] {
        if value < 1024.0 {
            return format!("{value:.1} {unit}");
        }
        value /= 1024.0;
    }
    format!("{value:.2} GiB")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_and_sizes_read_in_their_unit() {
        assert_eq!(human(2.5), "2.50 s");
        assert_eq!(human(0.0125), "12.50 ms");
        assert_eq!(human(42e-6), "42.0 µs");
        assert_eq!(human_bytes(Some(512)), "512.0 B");
        assert_eq!(human_bytes(Some(3 << 20)), "3.0 MiB");
        assert_eq!(human_bytes(Some(5 << 30)), "5.00 GiB");
        assert_eq!(human_bytes(None), "-");
    }
}
