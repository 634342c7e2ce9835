//! Obscura's server side without the math: the on-disk store of preprocessed databases, the
//! HTTP service that answers queries, and the HTTP client.
//!
//! A database is set up once (the hint product is the expensive step) and written to one file
//! by [`store::write_database`]; [`store::read_database`] loads and verifies it, so serving it
//! again needs no setup; [`store::write_streamed`] writes one from a records file larger than
//! memory, reading it with [`direct::SequentialReader`]. [`service`] serves a [`catalog::Catalog`] of such databases over HTTP
//! and [`client::HttpClient`] talks to it.

#![deny(unsafe_code)]
#![warn(missing_docs)]

pub mod answerer;
pub mod auth;
pub mod build;
pub mod catalog;
mod checksum;
pub mod client;
pub mod connections;
pub mod direct;
pub mod lease;
pub mod memory;
pub mod metrics;
pub mod registry;
pub mod service;
pub mod store;
pub mod tls;
