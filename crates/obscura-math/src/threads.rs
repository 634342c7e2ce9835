//! Thread pools: the thread count of every command and call that computes in parallel (every
//! core unless told otherwise) and rayon pools of that many threads; the kernels run on
//! whichever pool they are installed in.

use rayon::{ThreadPool, ThreadPoolBuildError};

/// The most threads a command or call may ask for: more than the largest machines have hardware
/// threads (768 on two 192-core processors with two threads per core), and few enough that
/// starting them cannot exhaust the system.
pub const MAX_THREADS: usize = 1024;

/// Why a thread count or a pool was refused.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ThreadsError {
    /// A count of zero threads was asked for.
    #[error("--threads must be at least 1")]
    Zero,
    /// More than [`MAX_THREADS`] threads were asked for.
    #[error("--threads must be at most {MAX_THREADS}")]
    TooMany,
    /// The operating system would not start the threads.
    #[error("cannot start a pool of {threads} threads")]
    Start {
        /// The threads asked for.
        threads: usize,
        /// Why they could not start.
        #[source]
        source: ThreadPoolBuildError,
    },
}

/// The requested thread count, or every core when none was given.
pub fn count(requested: Option<usize>) -> Result<usize, ThreadsError> {
    match requested {
        Some(0) => Err(ThreadsError::Zero),
        Some(threads) if threads > MAX_THREADS => Err(ThreadsError::TooMany),
        Some(threads) => Ok(threads),
        None => Ok(std::thread::available_parallelism().map_or(1, |n| n.get())),
    }
}

/// A rayon pool of `threads` threads.
pub fn pool(threads: usize) -> Result<ThreadPool, ThreadsError> {
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .map_err(|source| ThreadsError::Start { threads, source })
}

/// Runs `work` on `threads` threads: on the current pool when `None` (every core, unless the
/// caller installed another), else on a pool of that many.
pub fn run<T: Send>(
    threads: Option<usize>,
    work: impl FnOnce() -> T + Send,
) -> Result<T, ThreadsError> {
    match threads {
        None => Ok(work()),
        Some(threads) => Ok(pool(count(Some(threads))?)?.install(work)),
    }
}

/// Pools of one thread and of the requested count, as a benchmark measures with.
pub struct Pools {
    /// A pool of one thread.
    pub one: ThreadPool,
    /// A pool of the requested number of threads.
    pub all: ThreadPool,
}

impl Pools {
    /// Pools of one and of `threads` threads.
    pub fn new(threads: usize) -> Result<Self, ThreadsError> {
        Ok(Self {
            one: pool(1)?,
            all: pool(threads)?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_and_pools() {
        assert!(matches!(count(Some(0)), Err(ThreadsError::Zero)));
        assert!(matches!(
            count(Some(MAX_THREADS + 1)),
            Err(ThreadsError::TooMany)
        ));
        assert_eq!(count(Some(MAX_THREADS)).unwrap(), MAX_THREADS);
        assert_eq!(count(Some(3)).unwrap(), 3);
        assert!(count(None).unwrap() >= 1);
        assert_eq!(run(Some(2), rayon::current_num_threads).unwrap(), 2);
        assert!(matches!(run(Some(0), || ()), Err(ThreadsError::Zero)));
        let pools = Pools::new(2).unwrap();
        assert_eq!(pools.one.current_num_threads(), 1);
        assert_eq!(pools.all.current_num_threads(), 2);
    }
}
