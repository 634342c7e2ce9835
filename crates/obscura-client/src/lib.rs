//! The one client of Obscura's databases, which every front end (the CLI, Python, the browser)
//! is a thin layer over.
//!
//! - [`session`]: the sans-IO core: a [`Session`] per database holds the verified setup decoded
//!   once and the scheme's client with its precomputation; a lookup is an exchange of requests
//!   and replies that the session drives, whatever the scheme;
//! - [`setup`]: how a setup is accepted (size limits, SHA-256 pinning, ETag revalidation of a
//!   cached copy, a server's refusals);
//! - [`api`]: the service's JSON that clients read;
//! - adapters: [`http`] (feature `http`, a blocking HTTP transport with a setup cache) and a
//!   local database file (feature `file`), both driven by [`blocking::Client`].
//!
//! With default features off it builds for wasm32, as the browser client uses it.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod api;
#[cfg(any(feature = "file", feature = "http"))]
pub mod blocking;
mod error;
#[cfg(feature = "http")]
pub mod http;
pub mod session;
pub mod setup;

pub use error::ClientError;
pub use session::{Ask, AuditPath, Consistency, Exchange, Outcome, Request, Session, Step};
