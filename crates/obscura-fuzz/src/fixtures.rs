//! The small databases the targets decode messages against: an index database, a keyword
//! database and a Merkle tree (TreePIR) database. They are committed files (under `fixtures/`),
//! so that the corpus's queries and answers keep matching their setups from run to run;
//! [`write()`] makes them again.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use obscura_client::api::DatabaseInfo;
use obscura_pir::batch::merkle::MerkleTree;
use obscura_pir::batch::treepir::TreePirServer;
use obscura_pir::keyword::{KeywordOptions, KeywordServer};
use obscura_pir::lwe::{EngineOptions, Layout, Server};
use obscura_pir::{Change, PirError, PirServer};
use obscura_service::catalog::{Catalog, CatalogError};
use obscura_store::store::{self, Database, StoreError};

/// The fixture databases, by the name the HTTP targets serve them under.
pub const NAMES: [&str; 3] = ["index", "keyword", "tree"];

/// The keys of the keyword fixture, and their values.
pub const PAIRS: [(&str, &str); 3] = [("alice", "1"), ("bob", "22"), ("carol", "333")];

/// The records of the index fixture: 16 records of 4 bytes.
pub fn index_records() -> Vec<u8> {
    (0..64u8).map(|i| i.wrapping_mul(37)).collect()
}

/// The leaves of the Merkle tree fixture.
pub const LEAVES: [&str; 2] = ["left", "right"];

/// The folder of the committed fixture files.
pub fn folder() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures")
}

/// The file of the fixture called `name`.
pub fn path(name: &str) -> PathBuf {
    folder().join(format!("{name}.obs"))
}

/// The fixture databases, loaded once.
pub struct Fixtures {
    /// The index database.
    pub index: Database,
    /// The keyword database.
    pub keyword: Database,
    /// The Merkle tree database.
    pub tree: Database,
}

impl Fixtures {
    /// The fixture served under `name` (one of [`NAMES`]).
    pub fn by_name(&self, name: &str) -> Option<&Database> {
        match name {
            "index" => Some(&self.index),
            "keyword" => Some(&self.keyword),
            "tree" => Some(&self.tree),
            _ => None,
        }
    }
}

/// The fixtures, loaded from their files on first use (a missing fixture is a broken checkout:
/// the message says how to make it again).
pub fn get() -> &'static Fixtures {
    static FIXTURES: OnceLock<Fixtures> = OnceLock::new();
    FIXTURES.get_or_init(|| {
        let load = |name: &str| {
            store::read_database(&path(name)).unwrap_or_else(|e| {
                panic!("fixture {name}: {e} (make it with `obscura-fuzz fixtures`)")
            })
        };
        Fixtures {
            index: load("index"),
            keyword: load("keyword"),
            tree: load("tree"),
        }
    })
}

/// Why the fixtures could not be made.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FixtureError {
    /// A setup failed.
    #[error(transparent)]
    Pir(#[from] PirError),
    /// A file could not be written.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A written file could not be served.
    #[error(transparent)]
    Catalog(#[from] CatalogError),
}

/// Sets up the three fixture databases and writes them to their files, with the JSON list the
/// service gives of them (`list.json`).
pub fn write() -> Result<(), FixtureError> {
    let options = EngineOptions {
        layout: Layout::OnePerColumn,
        ..EngineOptions::default()
    };
    let index = Server::from_records(&index_records(), 4, options, &|_, _| {})?;
    // The last pair comes as a change, so that lookups query a delta table too.
    let mut keyword =
        KeywordServer::from_pairs(&PAIRS[..2], KeywordOptions::default(), &|_, _| {})?;
    let (key, value) = PAIRS[2];
    keyword.update(&[Change::Upsert {
        key: key.into(),
        value: value.into(),
    }])?;
    // Room for two more leaves, so that appends to it make patches.
    let tree_options = EngineOptions {
        capacity: Some(4),
        ..options
    };
    let tree =
        TreePirServer::from_tree(&MerkleTree::from_leaves(&LEAVES), tree_options, &|_, _| {})?;
    std::fs::create_dir_all(folder()).map_err(|source| StoreError::Io {
        path: folder(),
        source,
    })?;
    for (name, database) in NAMES.into_iter().zip([
        Database::from(index),
        Database::from(keyword),
        Database::from(tree),
    ]) {
        store::write_database(&path(name), &database)?;
    }
    let paths: Vec<PathBuf> = NAMES.iter().map(|name| path(name)).collect();
    let list: Vec<DatabaseInfo> = Catalog::open(&paths)?
        .entries()
        .map(|entry| entry.info.clone())
        .collect();
    let json = serde_json::to_vec_pretty(&list).expect("a list of plain fields serializes");
    let list_path = folder().join("list.json");
    std::fs::write(&list_path, json).map_err(|source| StoreError::Io {
        path: list_path,
        source,
    })?;
    Ok(())
}
