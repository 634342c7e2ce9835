//! The databases a service serves, each loaded once with what its responses need.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use axum::body::Bytes;
use obscura_client::api::{DatabaseInfo, ParamsInfo};
use obscura_client::setup::etag_of;
use obscura_pir::Lookup;
use obscura_registry::{setup_sha256, Registry};
use obscura_store::patches::Patches;
use obscura_store::served::{self, FileVersion};
use obscura_store::store::{Database, StoreError};

/// One served database.
pub struct Entry {
    /// The name clients use in URLs.
    pub name: String,
    /// The database, of any scheme.
    pub database: Database,
    /// The encoded public setup, served as is (each response shares it).
    pub setup_bytes: Bytes,
    /// The SHA-256 of the setup (`obscura_registry::setup_sha256`).
    pub sha256: [u8; 32],
    /// The entity tag of the setup: its SHA-256 in hex, quoted.
    pub etag: String,
    /// The patches kept for clients of earlier versions (none for a database given in memory;
    /// a file of them that cannot be read is served as none: clients download the setup).
    pub patches: Patches,
    /// The lookup it serves (which route its queries are posted to).
    pub lookup: Lookup,
    /// What `GET /v1/databases` says about it.
    pub info: DatabaseInfo,
    /// The version of the file it was loaded from (none for a database given in memory).
    pub file: Option<FileVersion>,
    /// How it came to be served.
    pub arrival: Arrival,
}

/// How a served database came to be served.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Arrival {
    /// Given in memory.
    Given,
    /// Its file read and verified and its change log replayed, in `seconds`.
    Loaded {
        /// Seconds it took.
        seconds: f64,
    },
    /// Brought up to date from the version served before ([`served::catch_up`]): `versions`
    /// batches of its change log applied, after adopting the new file a checkpoint wrote if
    /// `adopted`, in `seconds`.
    CaughtUp {
        /// Versions applied.
        versions: usize,
        /// Whether a checkpoint's file was adopted.
        adopted: bool,
        /// Seconds it took.
        seconds: f64,
    },
}

impl std::fmt::Display for Arrival {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match *self {
            Arrival::Given => write!(f, "given in memory"),
            Arrival::Loaded { seconds } => write!(f, "loaded from its file in {seconds:.2} s"),
            Arrival::CaughtUp {
                versions,
                adopted,
                seconds,
            } => {
                let plural = if versions == 1 { "" } else { "s" };
                let adopted = if adopted {
                    "adopted the file its checkpoint wrote, "
                } else {
                    ""
                };
                write!(
                    f,
                    "{adopted}caught up {versions} version{plural} from its change log \
                     in {seconds:.2} s"
                )
            }
        }
    }
}

impl Entry {
    /// An entry for `database` under `name`.
    pub fn new(name: String, database: Database) -> Self {
        let listing = database.listing();
        let setup_bytes = Bytes::from(database.setup_bytes());
        let sha256 = setup_sha256(&setup_bytes);
        let info = DatabaseInfo {
            name: name.clone(),
            kind: listing.kind.into(),
            lookup: listing.lookup.name().into(),
            records: listing.items,
            version: listing.version,
            record_bytes: listing.item_bytes,
            params: listing.engine.as_ref().map(ParamsInfo::from),
            height: listing.sub_queries,
            hint_bytes: setup_bytes.len() as u64,
            query_bytes: listing.query_bytes,
            answer_bytes: listing.answer_bytes,
            digest: hex::encode(database.digest()),
            setup_sha256: hex::encode(sha256),
        };
        Self {
            name,
            database,
            setup_bytes,
            sha256,
            etag: etag_of(&sha256),
            patches: Patches::default(),
            lookup: listing.lookup,
            info,
            file: None,
            arrival: Arrival::Given,
        }
    }

    /// The entry of `database`, from the file at `path` as of `file`, with the patches kept
    /// beside it (its arrival is for the caller to say).
    fn from_file(name: String, database: Database, path: &Path, file: FileVersion) -> Self {
        Self {
            file: Some(file),
            patches: Patches::read(path).unwrap_or_default(),
            ..Entry::new(name, database)
        }
    }

    /// The entry of the file at `path`, read and verified, under `name`.
    fn load(name: String, path: &Path, registry: &Registry) -> Result<Self, StoreError> {
        let started = Instant::now();
        let (database, file) = served::open_versioned(path, registry)?;
        let mut entry = Self::from_file(name, database, path, file);
        entry.arrival = Arrival::Loaded {
            seconds: started.elapsed().as_secs_f64(),
        };
        Ok(entry)
    }

    /// The patches that take the setup with SHA-256 `from` to this one, framed as one body
    /// ([`obscura_registry::Registry::patch_setup`] reads it), when there are and they are
    /// smaller than the setup.
    pub fn patch_chain(&self, from: &[u8; 32]) -> Option<Vec<u8>> {
        let chain = self.patches.chain(from, &self.sha256)?;
        let bytes: usize = chain.iter().map(|patch| 4 + patch.len()).sum();
        (bytes < self.setup_bytes.len()).then(|| obscura_pir::framing::encode(&chain))
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
#[non_exhaustive]
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
    /// Loads each database file, of a built-in scheme, into memory and verifies it
    /// ([`served::open_versioned`]); a database is named after its file stem.
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
            catalog.insert_entry(Entry::load(name, path, &catalog.registry)?)?;
        }
        Ok(catalog)
    }

    /// The catalog of `paths` after their files changed on disk: a file that is still the one
    /// this catalog loaded, unchanged, keeps its entry as it is; one whose change log grew, or
    /// that a checkpoint replaced, is caught up from its entry ([`served::catch_up`]: only the
    /// new versions are read and applied, to a copy, while the entry answers); every other
    /// file is loaded again. A file that cannot be loaded keeps its current entry, and the
    /// reason is returned beside the new catalog.
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
            let entry = match self.refreshed(&name, path, current) {
                Ok(entry) => entry,
                Err(error) => {
                    failures.push(error.into());
                    match current {
                        Some(entry) => entry.clone(),
                        None => continue,
                    }
                }
            };
            if catalog.entries.insert(name.clone(), entry).is_some() {
                return Err(CatalogError::DuplicateName(name));
            }
        }
        Ok((catalog, failures))
    }

    /// The entry `name` of the file at `path`, served as `current` until now: kept when the
    /// file is as it was or holds no new version, caught up when it can be, loaded otherwise.
    fn refreshed(
        &self,
        name: &str,
        path: &Path,
        current: Option<&Arc<Entry>>,
    ) -> Result<Arc<Entry>, StoreError> {
        if let Some((entry, file)) = current.and_then(|e| Some((e, e.file.as_ref()?))) {
            if file.is_current(path) {
                return Ok(entry.clone());
            }
            let started = Instant::now();
            if let Some(caught) = served::catch_up(path, &entry.database, file)? {
                if caught.versions == 0 && !caught.adopted {
                    return Ok(entry.clone());
                }
                let (versions, adopted) = (caught.versions, caught.adopted);
                let mut entry =
                    Entry::from_file(name.to_string(), caught.database, path, caught.file);
                entry.arrival = Arrival::CaughtUp {
                    versions,
                    adopted,
                    seconds: started.elapsed().as_secs_f64(),
                };
                return Ok(Arc::new(entry));
            }
        }
        Entry::load(name.to_string(), path, &self.registry).map(Arc::new)
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
