//! The databases a service serves, each loaded once with what its responses need.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use serde::Serialize;

use crate::store::{self, Database, StoreError};

/// One served database.
pub struct Entry {
    /// The name clients use in URLs.
    pub name: String,
    /// The database (its engine answers the queries).
    pub database: Database,
    /// The encoded public setup, served as is.
    pub setup_bytes: Arc<[u8]>,
    /// The entity tag of the setup (its digest in hex, quoted).
    pub etag: String,
    /// What `GET /v1/databases` says about it.
    pub info: DatabaseInfo,
}

/// The JSON description of a database.
#[derive(Clone, Debug, Serialize, serde::Deserialize, PartialEq)]
pub struct DatabaseInfo {
    /// Name used in URLs.
    pub name: String,
    /// Kind of database: `index` or `keyword`.
    pub kind: String,
    /// The PIR scheme.
    pub scheme: String,
    /// Number of records (of keys, for a keyword database).
    pub records: u64,
    /// Bytes per record.
    pub record_bytes: u64,
    /// Parameter set, matrix kind, plaintext modulus and layout.
    pub params: ParamsInfo,
    /// Size of the public setup (hint) in bytes.
    pub hint_bytes: u64,
    /// Size of one query in bytes.
    pub query_bytes: u64,
    /// Size of one answer in bytes.
    pub answer_bytes: u64,
    /// The setup digest in hex.
    pub digest: String,
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

impl Entry {
    /// An entry for `database` under `name`.
    pub fn new(name: String, database: Database) -> Self {
        let setup = database.engine().public_setup();
        let setup_bytes: Arc<[u8]> = database.setup_bytes().into();
        let digest = hex::encode(setup.digest());
        let (g, p) = (setup.geometry(), setup.params());
        // Envelope, length, entries: queries carry u32 entries, answers u16 (modulus-switched).
        let vector_bytes =
            |entries: u64, word: u64| (obscura_pir::wire::HEADER_BYTES as u64) + 8 + word * entries;
        let info = DatabaseInfo {
            name: name.clone(),
            kind: database.kind().into(),
            scheme: "lwe".into(),
            records: database.items(),
            record_bytes: g.record_bytes(),
            params: ParamsInfo {
                set: p.set.name().into(),
                n: p.n(),
                matrix: p.matrix.name().into(),
                log_p: p.log_p,
                records_per_column: g.per_column(),
                rows: g.rows(),
                cols: g.cols(),
            },
            hint_bytes: setup_bytes.len() as u64,
            query_bytes: vector_bytes(g.cols(), 4),
            answer_bytes: vector_bytes(g.rows(), 2),
            digest: digest.clone(),
        };
        Self {
            name,
            database,
            setup_bytes,
            etag: format!("\"{digest}\""),
            info,
        }
    }
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
