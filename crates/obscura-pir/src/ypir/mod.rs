//! YPIR (Menon and Wu, USENIX Security 2024): single-server PIR with no hint to download and
//! 12 KB answers, in two variants sharing one packed layer.
//!
//! - **YPIR** ([`Variant::Ypir`]) is DoublePIR whose second layer is packed. The first layer
//!   is an LWE database `D` (R rows, each holding records as `k` consecutive `log p`-bit
//!   digits); the client sends one LWE query per digit of its record (each selecting a column,
//!   each with its own secret), and the server answers `D·q_i`. The second layer's records are
//!   the first layer's rows: row `r` of the hint `H1 = D·A1` and the `k` answers at `r`, each
//!   rounded to 28 bits and cut into 15-bit chunks, so one record fills at most the 2,048
//!   coefficients of one ring element. The client selects its row with the packed layer's
//!   query; the server's products with the chunks of every row are packed into one RLWE
//!   ciphertext. The hint's chunks are the same for every query, so their packing is planned
//!   at setup; the answers' chunks change with every query and are packed apart (by the
//!   trace, a few key switches) and added.
//! - **YPIR+SP** ([`Variant::YpirSp`]) is SimplePIR over the packed layer itself: a matrix of
//!   15-bit words, a column of records per query entry, every row's product packed, 2,048 rows
//!   to a ciphertext.
//!
//! The packed layer and both layers' parameters, with their security and correctness, are
//! documented in [`params`]. Every query draws fresh secrets from the OS CSPRNG and sends
//! fresh packing keys: the public matrices and key masks come from the database's seed and are
//! the same for every query, so two vectors under one secret would reveal both indices.
//!
//! [`Variant::auto`] gives small records in large databases to YPIR and the rest to YPIR+SP.

mod bits;
mod client;
mod messages;
mod packed;
pub mod params;
mod scheme;
mod server;
mod setup;
mod shape;
mod update;

pub use client::{Client, QueryState};
pub use messages::{Answer, Query};
pub use scheme::Ypir;
pub use server::{AnswerPhases, Server, YpirOptions};
pub use setup::PublicSetup;
pub use shape::{
    Packing, Shape, Variant, YpirShape, YpirSpShape, AUTO_YPIR_BYTES, AUTO_YPIR_DATA,
    MAX_DOUBLE_DIGITS, MAX_DROPPED_BITS,
};
pub use update::UpdatePhases;

#[cfg(test)]
mod tests;
