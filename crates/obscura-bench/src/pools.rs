//! Thread pools: the `--threads` count of every command that computes in parallel, and the
//! pools a benchmark measures with (one thread, and the requested count).

use anyhow::{ensure, Context, Result};
use rayon::ThreadPool;

/// Thread pools for one and for all threads.
pub struct Pools {
    /// A pool of one thread.
    pub one: ThreadPool,
    /// A pool of the requested number of threads.
    pub all: ThreadPool,
}

impl Pools {
    /// Pools of one and of `threads` threads.
    pub fn new(threads: usize) -> Result<Self> {
        Ok(Self {
            one: pool(1)?,
            all: pool(threads)?,
        })
    }
}

/// The requested thread count, or every core when none was given.
pub fn count(requested: Option<usize>) -> Result<usize> {
    let threads =
        requested.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    ensure!(threads >= 1, "--threads must be at least 1");
    Ok(threads)
}

/// A rayon pool of `threads` threads: the kernels run on whichever pool they are installed in.
pub fn pool(threads: usize) -> Result<ThreadPool> {
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .context("cannot start the thread pool")
}
