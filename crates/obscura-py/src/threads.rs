//! The thread count of a call: all cores by default (rayon's global pool), else a pool of
//! the count asked for.

use pyo3::prelude::*;

use crate::errors::{error, Class};

/// Runs `work` on `threads` threads (`None`: all cores).
pub fn run<T: Send>(threads: Option<usize>, work: impl FnOnce() -> T + Send) -> PyResult<T> {
    match threads {
        None => Ok(work()),
        Some(0) => Err(error(Class::InvalidInput, "threads must be at least 1")),
        Some(count) => {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(count)
                .build()
                .map_err(|e| error(Class::Obscura, format!("cannot start {count} threads: {e}")))?;
            Ok(pool.install(work))
        }
    }
}
