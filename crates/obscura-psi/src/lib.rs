//! Private set intersection of Obscura: two parties learn which items they have in common and
//! nothing else about each other's sets.
//!
//! - [`ecdh`]: ECDH-PSI over ristretto255 (semi-honest; the client learns the intersection,
//!   optionally both parties do), with its security argument;
//! - [`kkrt`]: KKRT-PSI (OT extension, batched OPRF and cuckoo hashing; semi-honest; the client
//!   learns the intersection, optionally both parties do), with its parameters and security
//!   argument;
//! - [`rr22`]: RR22 VOLE-PSI (silent VOLE over a subspace and an OKVS; semi-honest; the client
//!   learns the intersection, optionally both parties do), with its parameters and security
//!   argument: about a fifth of KKRT's traffic; and its malicious mode (full-field VOLE with
//!   consistency checks; the client learns the intersection);
//! - [`bucketed`]: sets larger than memory, split into buckets on disk by a shared keyed hash
//!   and intersected bucket by bucket (padded, so bucket sizes stay hidden);
//! - [`hash_to_group`]: RFC 9380 hashing of byte strings to ristretto255;
//! - [`transport`]: framed, bounded messages over any byte stream (TCP, in-memory), with
//!   timeouts on every read;
//! - [`run`]: one call that runs a chosen [`Protocol`] in a chosen [`Role`] and returns an
//!   [`Outcome`] whose indices refer to the caller's own input.
//!
//! ```
//! use obscura_psi::transport::memory;
//! use obscura_psi::{run, Options, Protocol, Role};
//! use std::time::Duration;
//!
//! let (mut client_link, mut server_link) = memory::pair(Duration::from_secs(10));
//! let server = std::thread::spawn(move || {
//!     let items = ["carol", "dave", "alice"];
//!     let options = Options { protocol: Protocol::Ecdh, role: Role::Server, both_learn: false };
//!     run(&mut server_link, &items, options, &|_, _, _| {})
//! });
//! let items = ["alice", "bob", "carol", "alice"];
//! let options = Options { protocol: Protocol::Ecdh, role: Role::Client, both_learn: false };
//! let outcome = run(&mut client_link, &items, options, &|_, _, _| {})?;
//! let intersection = outcome.intersection.expect("the client learns the intersection");
//! assert_eq!(intersection.rows, [0, 2, 3]); // every row whose value is shared
//! assert_eq!(intersection.size, 2); // "alice" and "carol"
//! assert_eq!(outcome.duplicates_dropped, 1);
//! assert!(server.join().unwrap()?.intersection.is_none());
//! # Ok::<(), obscura_psi::PsiError>(())
//! ```

#![deny(unsafe_code)]
#![warn(missing_docs)]

mod block;
pub mod bucketed;
mod chunk;
mod core;
mod cuckoo;
pub mod ecdh;
mod error;
mod exponent;
mod gf128;
pub mod hash_to_group;
mod hello;
pub mod kinds;
pub mod kkrt;
mod load;
mod multibuffer;
mod okvs;
mod ot;
mod outcome;
mod own_tags;
mod party;
mod point;
mod positions;
mod protocol;
#[cfg(test)]
mod rfc9496_vectors;
pub mod rr22;
mod shuffle;
pub mod transport;
mod transpose;
mod unique;
mod vole;
mod wire;
mod word_hash;

use std::time::Instant;

pub use core::{Expected, Message};
pub use error::{HelloError, PeerError, PsiError};
pub use outcome::{Intersection, Outcome, Stage};
pub use party::{Items, Party};
pub use protocol::{Protocol, Role};
pub use transport::Transport;

use unique::UniqueItems;

/// How to run one PSI session. Both parties must agree on `protocol` and `both_learn` and take
/// opposite roles; the handshake refuses anything else.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Options {
    /// The protocol to run.
    pub protocol: Protocol,
    /// This party's role.
    pub role: Role,
    /// Whether the server learns the intersection too.
    pub both_learn: bool,
}

impl Options {
    /// Whether the protocol offers what the options ask ([`PsiError::Unsupported`] if not);
    /// [`run`] checks it before sending anything, and a caller can check it before connecting.
    pub fn check(&self) -> Result<(), PsiError> {
        if self.both_learn && !self.protocol.offers_both_learn() {
            return Err(PsiError::Unsupported {
                protocol: self.protocol,
                what: "an intersection for the server (both learn): a server cannot check the \
                       matches a malicious client reports; run a second session with the roles \
                       swapped",
            });
        }
        Ok(())
    }
}

/// A progress report: `(stage, items done, items in the stage)`, called on the caller's thread
/// after each chunk.
pub type Progress<'a> = &'a (dyn Fn(Stage, u64, u64) + Sync);

/// Runs one PSI session over `transport` with this party's `items` (byte strings, duplicates
/// allowed: they are counted once and reported).
///
/// The heavy steps run on the current rayon pool (install the call in a pool to choose the thread
/// count). Anything malformed or unexpected from the peer ends the session with a typed error;
/// every read is bounded in size and, with the transports of [`transport`], in time.
pub fn run<T, I>(
    transport: &mut T,
    items: &[I],
    options: Options,
    progress: Progress<'_>,
) -> Result<Outcome, PsiError>
where
    T: Transport + ?Sized,
    I: AsRef<[u8]> + Sync,
{
    let started = Instant::now();
    let mut outcome = run_unique(transport, &UniqueItems::new(items), options, progress)?;
    outcome.elapsed = started.elapsed();
    Ok(outcome)
}

/// [`run`] on items already de-duplicated, one row per item as `unique` numbers them (the
/// elapsed time counts from this call).
fn run_unique<T: Transport + ?Sized>(
    transport: &mut T,
    unique: &UniqueItems<'_>,
    options: Options,
    progress: Progress<'_>,
) -> Result<Outcome, PsiError> {
    Party::of_unique(unique, options, progress)?.run_over(transport)
}
