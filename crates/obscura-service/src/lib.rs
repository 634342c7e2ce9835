//! Obscura's HTTP service: serves a [`catalog::Catalog`] of database files (written by
//! `obscura-store`) over HTTP ([`service`]), with bearer tokens ([`auth`]), TLS ([`tls`]),
//! metrics ([`metrics`]), connection limits ([`connections`]) and the lookup page; a server
//! binary keeps freed memory for its requests ([`allocator`]). A [`gateway`] serves a database
//! from its shards on other servers.
//! `obscura-client` talks to it.

#![deny(unsafe_code)]
#![warn(missing_docs)]

pub mod allocator;
pub mod auth;
pub mod catalog;
pub mod connections;
pub mod gateway;
pub mod metrics;
pub mod service;
pub mod tls;
