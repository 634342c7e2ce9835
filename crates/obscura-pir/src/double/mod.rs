//! DoublePIR (Henzinger, Hong, Corrigan-Gibbs, Meiklejohn, Vaikuntanathan, USENIX Security
//! 2023, §5): SimplePIR with a second LWE layer over its hint, so that the client downloads a
//! hint whose size does not grow with the database (16 MiB with n = 1024).
//!
//! - **First layer.** The database is the LWE engine's matrix `D` (R x C digits mod p1); the
//!   client sends `q1 = A1·s1 + e1 + Δ1·u_c` for the column `c` of its record, and the server
//!   computes `a1 = D·q1` (R words). The first layer's hint `H1 = D·A1` (R x n) is not sent.
//! - **Second layer.** The rows of `H1` are the records of a second database, one per column:
//!   a matrix `M` of rows2 x R digits mod p2 (rows2 = 32n / log2 p2). Its hint `H2 = M·A2`
//!   (rows2 x n) is in the public setup. For each row `r` of `D` the record spans, the client
//!   sends `q2 = A2·s2 + e2 + Δ2·u_r` with a fresh secret; the server answers `M·q2` and
//!   `D'·q2`, `D'` being the digits of `a1` (κ x R, κ = 32 / log2 p2, one entry per column),
//!   with `D'·A2` (κ x n) once per query so that the client can remove `D'·A2·s2`.
//! - **Decoding.** The client rounds away the second layer's noise to get `H1[r]` and `a1[r]`,
//!   then `round((a1[r] − H1[r]·s1) / Δ1)` is the digit `D[r][c]`.
//!
//! The first layer's entries are not rounded (the second layer carries them exactly). A record
//! fails with probability at most 2^-40, split in halves:
//!
//! - the first layer decodes at most d digits for a record (d the most rows a record spans),
//!   each with failure probability 2^-(41 + ⌈log2 d⌉), which picks its plaintext modulus from
//!   the database's row norms as the LWE engine does ([`params`](crate::params));
//! - the second layer decodes, for each of those rows, the digits of a row of `H1` and of an
//!   entry of `a1` (4n + 4 with 8-bit digits), each with failure probability
//!   2^-(41 + ⌈log2 (d·digits)⌉) (2^-54 for one-row records), with the modulus that is correct
//!   for any digits over R columns, since `D'` changes with every query.
//!
//! [`PublicSetup::new`] checks both when a setup is assembled or decoded.
//!
//! A query asks for as many rows as the widest record spans, whatever the record, so it does
//! not tell which one it wants. One record of d digits costs d second-layer queries and
//! answers: DoublePIR suits small records.

mod client;
mod messages;
mod scheme;
mod server;
mod setup;
mod update;

pub use client::{Client, QueryState};
pub use messages::{Answer, Query};
pub use scheme::Double;
pub use server::Server;
pub use setup::PublicSetup;

#[cfg(test)]
mod tests;
