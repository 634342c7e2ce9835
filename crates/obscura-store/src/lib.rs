//! Obscura's database files: a database is set up once (the hint product is the expensive
//! step) and written to one file by [`store::write_database`]; [`store::read_database`] loads
//! it into memory and verifies it, so serving it again needs no setup; [`store::write_streamed`] writes one
//! from a records file larger than memory, reading it with [`direct::SequentialReader`].
//! Temporary files are named so no build leaves debris ([`partial`]). [`build`] plans and runs
//! a build from records, values, key-value pairs or a Merkle tree's leaves within a memory
//! limit ([`memory`]). [`update`] applies a batch of changes (read from a change file by
//! [`changes`]) as a database's next version, committed to the file's change log ([`log`]),
//! and keeps the patches that bring clients of earlier versions up to date ([`patches`]); a
//! server follows the versions of the files it serves ([`served`]). A database cut among
//! servers is planned, built and sealed as [`shards`].

#![deny(unsafe_code)]
#![warn(missing_docs)]

pub mod build;
pub mod changes;
mod checksum;
pub mod direct;
pub mod log;
pub mod memory;
pub mod partial;
pub mod patches;
pub mod served;
pub mod shards;
pub mod store;
pub mod update;

/// The file beside the database file `database` that keeps one of its companions: its path
/// with `suffix` appended (`FILE.log`, `FILE.patches`, ...).
pub fn companion(database: &std::path::Path, suffix: &str) -> std::path::PathBuf {
    let mut name = database.as_os_str().to_owned();
    name.push(suffix);
    std::path::PathBuf::from(name)
}
