//! The LWE engine behind SimplePIR and FrodoPIR.
//!
//! The database is a matrix `D` (R rows x C columns) of plaintext digits modulo p. The server
//! publishes a [`PublicSetup`]: the parameters, the geometry, a seed that defines the public
//! matrix `A` (C x n) and the hint `H = D·A` (R x n). To fetch a record in column `j`, the client
//! sends `A·s + e + Δ·u_j`; the server answers `D·query` (length R); the client removes `H·s`
//! from the rows that hold the record and rounds away the noise.
//!
//! The [`Layout`] says how many records share a column: one per column is FrodoPIR's layout
//! (query as long as the record count, small hint and answer), near-square is SimplePIR's (small
//! query, larger hint and answer); any count in between works. Records are cut into digits as
//! one bit stream per column, so small records share digits and large ones span many rows.
//!
//! FrodoPIR's client-side preprocessing is a feature of the [`Client`]: [`Client::preprocess`]
//! computes `A·s + e` and `H·s` ahead of time, and the online step only adds Δ at the wanted
//! column. A prepared query is moved out of the pool when used, and wiped on drop.

mod client;
mod footprint;
mod layout;
#[macro_use]
mod messages;
mod patch;
mod scheme;
pub(crate) mod server;
mod setup;
mod shard;
mod stream;
mod update;

pub(crate) use client::{round_digit, Masker};
pub use client::{Client, QueryState};
pub use footprint::Footprint;
pub use layout::{Geometry, Layout, RecordLocation, MAX_RECORD_BYTES};
pub use messages::{Answer, Query};
pub use scheme::{Lwe, RecordShape, Records};
pub(crate) use server::centered;
pub use server::value_slots;
pub use server::Server;
pub(crate) use server::{
    check_shape, decode_database, encode_database, encode_with_largest_p, switch_modulus,
    values_footprint, Encoded,
};
pub use setup::{describe, EngineOptions, Layer, PublicSetup, RecordFormat};
pub use shard::{
    LweShard, SetupPart, Shard, ShardAnswer, ShardClient, ShardInput, ShardPlan, ShardQuery,
    ShardSetup, ShardTag, Split,
};
pub use stream::{StreamError, StreamedBuild};
pub(crate) use update::{record_slots, write_bits, Slot};
