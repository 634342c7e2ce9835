//! The fuzz targets: one per decoder of a file or network message, and one per HTTP route.
//!
//! A target takes arbitrary bytes and returns a [`Verdict`]: `Ok(outcome)` when the input was
//! handled as it must be (accepted, or refused with a one-line error), `Err(violation)` when
//! it was not (a decoded message that does not encode back to the same bytes, a 5xx response, a
//! multi-line error). A panic is caught by the runner and counts as a violation too.

mod http;
mod pir;
mod psi;
mod server;

/// What a target made of one input: the outcome (`"accepted"`, or the error) or a violation.
pub type Verdict = Result<String, String>;

/// The outcome of a valid input (seeds must get it).
pub const ACCEPTED: &str = "accepted";

/// One fuzz target.
#[derive(Clone, Copy)]
pub struct Target {
    /// Its name (the corpus folder and the runner's argument).
    pub name: &'static str,
    /// What it decodes.
    pub about: &'static str,
    /// Runs one input.
    pub run: fn(&[u8]) -> Verdict,
    /// Valid inputs made from the fixtures, which every run starts from besides the corpus.
    pub seeds: fn() -> Vec<Vec<u8>>,
    /// What running a seed gives.
    pub seeds_end: SeedsEnd,
}

/// What running a target's seed gives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SeedsEnd {
    /// [`ACCEPTED`]: the input runs to its end.
    Accepted,
    /// A refusal at a consistency check: the party under test checks the peer's messages
    /// against its own fresh randomness (RR22's malicious mode), which a recorded honest stream
    /// does not match.
    ConsistencyCheck,
}

impl SeedsEnd {
    /// Whether `outcome` is the one due.
    pub fn matches(self, outcome: &str) -> bool {
        match self {
            Self::Accepted => outcome == ACCEPTED,
            Self::ConsistencyCheck => outcome.ends_with("failed its consistency check"),
        }
    }
}

/// Every target.
pub fn all() -> Vec<Target> {
    [
        pir::targets(),
        server::targets(),
        http::targets(),
        psi::targets(),
    ]
    .concat()
}

/// The target called `name`.
pub fn find(name: &str) -> Option<Target> {
    all().into_iter().find(|target| target.name == name)
}

/// The outcome of a decoder's result: [`ACCEPTED`], or its error, which must be one line.
fn outcome<T, E: std::fmt::Display>(result: &Result<T, E>) -> Verdict {
    match result {
        Ok(_) => Ok(ACCEPTED.into()),
        Err(error) => one_line(error.to_string()),
    }
}

/// `message` as an outcome, unless it is empty or spans several lines.
fn one_line(message: String) -> Verdict {
    if message.is_empty() || message.contains('\n') {
        Err(format!("the error is not one line: {message:?}"))
    } else {
        Ok(message)
    }
}

/// Checks that a decoded message encodes back to the input it was decoded from.
fn round_trip(input: &[u8], encoded: &[u8]) -> Result<(), String> {
    if input == encoded {
        Ok(())
    } else {
        Err(format!(
            "decoded {} bytes but they encode back to {} different bytes",
            input.len(),
            encoded.len()
        ))
    }
}
