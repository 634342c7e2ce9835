//! Private information retrieval schemes of Obscura.
//!
//! - [`change`]: what a database's next version changes (records, keys);
//! - [`double`]: DoublePIR, a second LWE layer over the engine's hint, so the hint does not grow
//!   with the database;
//! - [`keyword`]: keyword PIR, a binary fuse filter of key-value rows on the LWE engine;
//! - [`lookup`]: what a front end looks up (an index, a key, a Merkle leaf) and finds, for
//!   every scheme;
//! - [`lwe`]: the one LWE engine behind SimplePIR and FrodoPIR, with a layout knob and
//!   client-side query preprocessing;
//! - [`params`]: the LWE parameter table, its security argument and the correctness bound that
//!   picks the plaintext modulus;
//! - [`wire`]: the versioned binary envelope shared by every message;
//! - [`scheme`]: the small trait family every scheme implements;
//! - [`ypir`]: YPIR and YPIR+SP, no hint to download and packed answers of 12 KB per ciphertext.
//!
//! ```
//! use obscura_pir::lwe::{Client, Layout, Server, EngineOptions};
//! use obscura_pir::{PirClient, PirServer};
//!
//! // 100 records of 16 bytes each.
//! let data: Vec<u8> = (0..1600u32).map(|i| (i * 7) as u8).collect();
//! let options = EngineOptions { layout: Layout::Square, ..EngineOptions::default() };
//! let server = Server::from_records(&data, 16, options, &|_, _| {})?;
//!
//! // The client needs only the public setup (seed, parameters, hint).
//! let mut client = Client::new(server.public_setup().clone());
//! let (query, state) = client.query(42)?;
//! let answer = server.answer(&query)?;
//! assert_eq!(client.decode(state, &answer)?, &data[42 * 16..43 * 16]);
//! # Ok::<(), obscura_pir::PirError>(())
//! ```

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod batch;
pub mod change;
pub mod double;
mod error;
pub mod framing;
pub mod keyword;
pub mod lookup;
pub mod lwe;
pub mod params;
pub mod scheme;
pub mod wire;
pub mod ypir;

pub use change::Change;
pub use error::{ParseError, PirError};

pub use lookup::{Found, Lookup, Target};
pub use scheme::{Encode, IndexServer, Message, PirClient, PirServer, Scheme, SetupMessage};

/// The README's library example, compiled and run as a doctest.
#[doc = include_str!("../../../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;

/// The examples of `docs/library.md`, compiled and run as doctests.
#[doc = include_str!("../../../docs/library.md")]
#[cfg(doctest)]
pub struct LibraryDoctests;

/// Data for the unit tests of the schemes: the integration tests' generator, shared.
#[cfg(test)]
#[path = "../tests/common/mod.rs"]
mod test_data;
