//! Obscura's server side without the math: the on-disk store of preprocessed databases.
//!
//! A database is set up once (the hint product is the expensive step) and written to one file
//! by [`store::write_database`]; [`store::read_database`] loads and verifies it, so serving it
//! again needs no setup.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod store;
