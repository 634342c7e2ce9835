//! The error type of every scheme.

use obscura_math::sample::RngError;

/// What went wrong in a PIR operation. Errors from untrusted bytes are always
/// [`PirError::Malformed`] or [`PirError::SetupMismatch`], never a panic.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PirError {
    /// The requested record does not exist.
    #[error("record index {index} is out of range: the database has {records} records (0 to {last})", last = records.saturating_sub(1))]
    IndexOutOfRange {
        /// The requested index.
        index: u64,
        /// The number of records.
        records: u64,
    },
    /// The requested database shape or parameters cannot be used.
    #[error("invalid parameters: {0}")]
    InvalidParameters(String),
    /// A change the database's setup cannot take (a value longer than its slots, rows whose new
    /// norm its plaintext modulus is not correct for): the database needs a new setup (why is
    /// the source).
    #[error("the change needs a new setup of the database")]
    NeedsNewSetup(#[source] Box<PirError>),
    /// A part of the database that answers elsewhere (a gateway's shard) could not answer now:
    /// nothing was answered, and a later try may be (why is the message).
    #[error("{0}")]
    Unavailable(String),
    /// The record was deleted: its index reads as absent.
    #[error("the record was deleted")]
    Absent,
    /// A Merkle tree's height cannot be coloured (why is the source).
    #[error("the tree cannot be coloured for TreePIR")]
    Coloring(#[from] crate::batch::coloring::ColoringError),
    /// A decoded message's fields are each well formed but do not make a valid one together
    /// (why is the source).
    #[error("malformed {what}: its parameters do not fit together")]
    Inconsistent {
        /// The kind of message.
        what: &'static str,
        /// Why they do not fit.
        source: Box<PirError>,
    },
    /// Bytes that were to be decoded are not a valid message of the expected kind.
    #[error("malformed {what}: {reason}")]
    Malformed {
        /// The kind of message.
        what: &'static str,
        /// What is wrong with it.
        reason: String,
    },
    /// A message belongs to another setup (parameters, layout, shape or seed differ).
    #[error("the {what} belongs to a different database setup (parameter digest mismatch)")]
    SetupMismatch {
        /// The kind of message.
        what: &'static str,
    },
    /// The OS random number generator failed.
    #[error(transparent)]
    Rng(#[from] RngError),
    /// A retrieved Merkle audit path does not prove the leaf under the expected root (why is the
    /// error's source).
    #[error("the retrieved proof does not verify")]
    InvalidProof(#[from] crate::batch::merkle::ProofError),
    /// A lookup the database does not serve was asked of it.
    #[error("{} lookup asked of {}", .asked.name(), .serves.advice())]
    WrongLookup {
        /// The lookup the database serves.
        serves: crate::lookup::Lookup,
        /// The lookup asked for.
        asked: crate::lookup::Lookup,
    },
}

/// A name (of a parameter set, a matrix kind, a layout, an arity) that is not one of those
/// the library knows; the message lists them.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{given:?}: expected {expected}")]
pub struct ParseError {
    /// The text given.
    pub given: String,
    /// What is accepted.
    pub expected: String,
}

impl ParseError {
    /// The error for `given`, which should have been `expected`.
    pub fn new(given: &str, expected: impl Into<String>) -> Self {
        Self {
            given: given.into(),
            expected: expected.into(),
        }
    }
}

impl PirError {
    /// A [`PirError::Inconsistent`] for `what`, caused by `source`.
    pub fn inconsistent(what: &'static str, source: PirError) -> Self {
        Self::Inconsistent {
            what,
            source: Box::new(source),
        }
    }

    /// A [`PirError::Malformed`] for `what` with the given reason.
    pub fn malformed(what: &'static str, reason: impl Into<String>) -> Self {
        Self::Malformed {
            what,
            reason: reason.into(),
        }
    }
}
