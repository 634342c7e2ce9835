//! The databases a service serves, each loaded once with what its responses need.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::{Arc, RwLockReadGuard};

use serde::Serialize;

use crate::registry::{Engine, Registry};
use crate::store::{self, setup_sha256, Database, FileChanged, ServedFile, StoreError};

/// One served database.
pub struct Entry {
    /// The name clients use in URLs.
    pub name: String,
    /// The database, of any scheme.
    pub database: Database,
    /// The encoded public setup, served as is.
    pub setup_bytes: Arc<[u8]>,
    /// The entity tag of the setup: its SHA-256 ([`store::setup_sha256`]) in hex, quoted.
    pub etag: String,
    /// What `GET /v1/databases` says about it.
    pub info: DatabaseInfo,
    /// The file it is served from, guarded against changes in place (none for a database
    /// that lives in memory).
    pub file: Option<Arc<ServedFile>>,
}

/// The JSON description of a database.
#[derive(Clone, Debug, Serialize, serde::Deserialize, PartialEq)]
pub struct DatabaseInfo {
    /// Name used in URLs.
    pub name: String,
    /// Kind of database, named after its scheme: `index` (the LWE engine), `keyword`,
    /// `treepir` (a Merkle tree, see `height`) or `pbc` (the batch-code baseline).
    pub kind: String,
    /// Number of records (of keys, for a keyword database; of leaves, for a Merkle tree).
    pub records: u64,
    /// Bytes per record (32, a hash, for a Merkle tree).
    pub record_bytes: u64,
    /// Parameter set, matrix kind, plaintext modulus and layout (of the largest sub-database,
    /// for a Merkle tree); absent for a tree of one leaf, which has no sub-database.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub params: Option<ParamsInfo>,
    /// For a Merkle tree, its height `h`; for a batch-code database, its bucket count: the
    /// number of LWE queries a request holds (one per sub-database).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub height: Option<u32>,
    /// Size of the public setup (hint) in bytes.
    pub hint_bytes: u64,
    /// Size of one query in bytes (a request of one query per sub-database, framed, for a
    /// Merkle tree or a batch-code database).
    pub query_bytes: u64,
    /// Size of one answer in bytes (framed, likewise).
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
    fn of(engine: &Engine) -> Self {
        let (g, p) = (&engine.geometry, &engine.params);
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
        let listing = database.listing();
        let setup_bytes: Arc<[u8]> = database.setup_bytes().into();
        let sha256 = hex::encode(setup_sha256(&setup_bytes));
        let info = DatabaseInfo {
            name: name.clone(),
            kind: listing.kind.into(),
            records: listing.items,
            record_bytes: listing.item_bytes,
            params: listing.engine.as_ref().map(ParamsInfo::of),
            height: listing.sub_queries,
            hint_bytes: setup_bytes.len() as u64,
            query_bytes: listing.query_bytes,
            answer_bytes: listing.answer_bytes,
            digest: hex::encode(database.digest()),
            setup_sha256: sha256.clone(),
        };
        Self {
            name,
            database,
            setup_bytes,
            etag: format!("\"{sha256}\""),
            info,
            file: None,
        }
    }

    /// Permission to read the database's matrices for one answer (see [`ServedFile::reader`]);
    /// always granted to a database in memory.
    pub fn reader(&self) -> Result<Option<RwLockReadGuard<'_, bool>>, FileChanged> {
        self.file.as_deref().map(ServedFile::reader).transpose()
    }
}

/// The served databases by name, and the schemes their files may hold.
#[derive(Default)]
pub struct Catalog {
    entries: BTreeMap<String, Arc<Entry>>,
    registry: Registry,
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
    /// Loads and verifies each database file, of a built-in scheme, for serving
    /// ([`store::open_served`]); a database is named after its file stem.
    pub fn open(paths: &[impl AsRef<Path>]) -> Result<Self, CatalogError> {
        Self::open_with(paths, Registry::default())
    }

    /// Loads and verifies each database file, of any scheme of `registry`, for serving.
    pub fn open_with(paths: &[impl AsRef<Path>], registry: Registry) -> Result<Self, CatalogError> {
        let mut catalog = Self {
            registry,
            ..Self::default()
        };
        for path in paths {
            let path = path.as_ref();
            let name = name_of(path)?;
            let (database, file) = store::open_served(path, &catalog.registry)?;
            catalog.insert_entry(Entry {
                file: Some(file),
                ..Entry::new(name, database)
            })?;
        }
        Ok(catalog)
    }

    /// The catalog of `paths` after their files changed on disk: a file that is still the one
    /// this catalog serves, unchanged, keeps its entry as it is; every other file is loaded
    /// again. A file that cannot be loaded keeps its current entry, and the reason is returned
    /// beside the new catalog.
    pub fn reload(
        &self,
        paths: &[impl AsRef<Path>],
    ) -> Result<(Self, Vec<CatalogError>), CatalogError> {
        let mut catalog = Self {
            registry: self.registry.clone(),
            ..Self::default()
        };
        let mut failures = Vec::new();
        for path in paths {
            let path = path.as_ref();
            let name = name_of(path)?;
            let current = self.entries.get(&name);
            let keep = current.filter(|e| e.file.as_ref().is_some_and(|f| f.is_current(path)));
            let entry = match keep {
                Some(entry) => entry.clone(),
                None => match store::open_served(path, &self.registry) {
                    Ok((database, file)) => Arc::new(Entry {
                        file: Some(file),
                        ..Entry::new(name.clone(), database)
                    }),
                    Err(error) => {
                        failures.push(error.into());
                        match current {
                            Some(entry) => entry.clone(),
                            None => continue,
                        }
                    }
                },
            };
            if catalog.entries.insert(name.clone(), entry).is_some() {
                return Err(CatalogError::DuplicateName(name));
            }
        }
        Ok((catalog, failures))
    }

    /// Adds a database under `name`.
    pub fn insert(
        &mut self,
        name: String,
        database: impl Into<Database>,
    ) -> Result<(), CatalogError> {
        self.insert_entry(Entry::new(name, database.into()))
    }

    fn insert_entry(&mut self, entry: Entry) -> Result<(), CatalogError> {
        if !valid_name(&entry.name) {
            return Err(CatalogError::BadName(entry.name));
        }
        if self.entries.contains_key(&entry.name) {
            return Err(CatalogError::DuplicateName(entry.name));
        }
        self.entries.insert(entry.name.clone(), Arc::new(entry));
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

/// The database name of the file at `path`: its stem.
fn name_of(path: &Path) -> Result<String, CatalogError> {
    path.file_stem()
        .and_then(|s| s.to_str())
        .filter(|s| valid_name(s))
        .map(str::to_string)
        .ok_or_else(|| CatalogError::BadName(path.display().to_string()))
}

/// Names are short and URL-safe.
fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 128
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
}
