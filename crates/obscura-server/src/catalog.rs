//! The databases a service serves, each loaded once with what its responses need.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use obscura_pir::lwe::{Answer, PublicSetup, Query};
use serde::Serialize;
use sha2::{Digest as _, Sha256};

use crate::store::{self, Database, StoreError};

/// One served database.
pub struct Entry {
    /// The name clients use in URLs.
    pub name: String,
    /// The database (its engine answers the queries).
    pub database: Database,
    /// The encoded public setup, served as is.
    pub setup_bytes: Arc<[u8]>,
    /// The entity tag of the setup: its SHA-256 ([`setup_sha256`]) in hex, quoted.
    pub etag: String,
    /// What `GET /v1/databases` says about it.
    pub info: DatabaseInfo,
}

/// The JSON description of a database.
#[derive(Clone, Debug, Serialize, serde::Deserialize, PartialEq)]
pub struct DatabaseInfo {
    /// Name used in URLs.
    pub name: String,
    /// Kind of database: `index`, `keyword` or `treepir` (a Merkle tree, see `height`).
    pub kind: String,
    /// The PIR scheme.
    pub scheme: String,
    /// Number of records (of keys, for a keyword database; of leaves, for a Merkle tree).
    pub records: u64,
    /// Bytes per record (32, a hash, for a Merkle tree).
    pub record_bytes: u64,
    /// Parameter set, matrix kind, plaintext modulus and layout (of the largest sub-database,
    /// for a Merkle tree); absent for a tree of one leaf, which has no sub-database.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub params: Option<ParamsInfo>,
    /// For a Merkle tree: its height `h`, the number of queries of a proof request (one per
    /// colour class).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub height: Option<u32>,
    /// Size of the public setup (hint) in bytes.
    pub hint_bytes: u64,
    /// Size of one query in bytes (of the `h` queries of a proof request, for a Merkle tree).
    pub query_bytes: u64,
    /// Size of one answer in bytes (of the `h` answers to a proof request, for a Merkle tree).
    pub answer_bytes: u64,
    /// The setup digest in hex (names the parameters, geometry and seed; queries and answers
    /// carry its first bytes).
    pub digest: String,
    /// The SHA-256 of the public setup's bytes, exactly as `/setup` serves them, in hex; also
    /// the setup's ETag. Clients verify the setup against it.
    pub setup_sha256: String,
}

/// Parameters as listed.
#[derive(Clone, Debug, Serialize, serde::Deserialize, PartialEq)]
pub struct ParamsInfo {
    /// Parameter set name.
    pub set: String,
    /// LWE dimension.
    pub n: usize,
    /// Public matrix kind.
    pub matrix: String,
    /// log2 of the plaintext modulus.
    pub log_p: u8,
    /// Records per matrix column.
    pub records_per_column: u64,
    /// Matrix rows.
    pub rows: u64,
    /// Matrix columns.
    pub cols: u64,
}

impl ParamsInfo {
    fn of(setup: &PublicSetup) -> Self {
        let (g, p) = (setup.geometry(), setup.params());
        Self {
            set: p.set.name().into(),
            n: p.n(),
            matrix: p.matrix.name().into(),
            log_p: p.log_p,
            records_per_column: g.per_column(),
            rows: g.rows(),
            cols: g.cols(),
        }
    }
}

impl Entry {
    /// An entry for `database` under `name`.
    pub fn new(name: String, database: Database) -> Self {
        let setups: Vec<&PublicSetup> = database
            .engines()
            .iter()
            .map(|engine| engine.public_setup())
            .collect();
        let largest = setups.iter().max_by_key(|setup| setup.geometry().records());
        let setup_bytes: Arc<[u8]> = database.setup_bytes().into();
        let sha256 = hex::encode(setup_sha256(&setup_bytes));
        let info = DatabaseInfo {
            name: name.clone(),
            kind: database.kind().into(),
            scheme: "lwe".into(),
            records: database.items(),
            record_bytes: largest.map_or(0, |setup| setup.geometry().record_bytes()),
            params: largest.map(|setup| ParamsInfo::of(setup)),
            height: match &database {
                Database::TreePir(server) => Some(server.public_setup().height()),
                Database::Index(_) | Database::Keyword(_) => None,
            },
            hint_bytes: setup_bytes.len() as u64,
            query_bytes: setups.iter().map(|s| Query::encoded_len(s)).sum(),
            answer_bytes: setups.iter().map(|s| Answer::encoded_len(s)).sum(),
            digest: hex::encode(database.digest()),
            setup_sha256: sha256.clone(),
        };
        Self {
            name,
            database,
            setup_bytes,
            etag: format!("\"{sha256}\""),
            info,
        }
    }
}

/// The SHA-256 over every byte of an encoded public setup (hint included): what
/// `obscura build` prints, `GET /v1/databases` lists as `setup_sha256` and the service sends as
/// the setup's ETag, and what clients check a downloaded or cached setup against.
pub fn setup_sha256(setup_bytes: &[u8]) -> [u8; 32] {
    Sha256::digest(setup_bytes).into()
}

/// The served databases by name.
#[derive(Default)]
pub struct Catalog {
    entries: BTreeMap<String, Arc<Entry>>,
}

/// Why a catalog could not be assembled.
#[derive(Debug, thiserror::Error)]
pub enum CatalogError {
    /// A database file could not be loaded.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// Two databases would have the same name.
    #[error("two databases are named {0:?}: rename one of the files")]
    DuplicateName(String),
    /// A file name does not make a usable database name.
    #[error(
        "{0}: the file name does not make a database name (use letters, digits, '-', '_', '.')"
    )]
    BadName(String),
}

impl Catalog {
    /// Loads and verifies each database file; a database is named after its file stem.
    pub fn open(paths: &[impl AsRef<Path>]) -> Result<Self, CatalogError> {
        let mut catalog = Self::default();
        for path in paths {
            let path = path.as_ref();
            let name = path
                .file_stem()
                .and_then(|s| s.to_str())
                .filter(|s| valid_name(s))
                .ok_or_else(|| CatalogError::BadName(path.display().to_string()))?
                .to_string();
            catalog.insert(name, store::read_database(path)?)?;
        }
        Ok(catalog)
    }

    /// Adds a database under `name`.
    pub fn insert(
        &mut self,
        name: String,
        database: impl Into<Database>,
    ) -> Result<(), CatalogError> {
        if !valid_name(&name) {
            return Err(CatalogError::BadName(name));
        }
        if self.entries.contains_key(&name) {
            return Err(CatalogError::DuplicateName(name));
        }
        self.entries
            .insert(name.clone(), Arc::new(Entry::new(name, database.into())));
        Ok(())
    }

    /// The database called `name`.
    pub fn get(&self, name: &str) -> Option<&Arc<Entry>> {
        self.entries.get(name)
    }

    /// Every database, by name.
    pub fn entries(&self) -> impl Iterator<Item = &Arc<Entry>> {
        self.entries.values()
    }
}

/// Names are short and URL-safe.
fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 128
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
}
