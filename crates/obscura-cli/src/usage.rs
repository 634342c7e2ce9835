//! Usage errors: an argument value or a combination of arguments that cannot work, found before
//! any work starts and reported as clap reports its own (exit status 2).

use clap::builder::RangedU64ValueParser;
use obscura_math::threads::MAX_THREADS;

/// An invalid argument value or combination of arguments.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct Usage(pub String);

/// A usage error saying `message` unless `condition` holds.
pub fn ensure(condition: bool, message: impl Into<String>) -> Result<(), Usage> {
    if condition {
        Ok(())
    } else {
        Err(Usage(message.into()))
    }
}

/// The values `--threads` takes: 1 to [`MAX_THREADS`].
pub fn threads() -> RangedU64ValueParser<usize> {
    RangedU64ValueParser::new().range(1..=MAX_THREADS as u64)
}
