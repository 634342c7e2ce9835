//! [`Answerer`]: where a client's queries are answered, a database file read in this process or
//! a database on a server, behind one interface.

use std::path::Path;

use obscura_pir::batch::merkle::Hash;
use obscura_pir::batch::shards::Shards;
use obscura_pir::batch::treepir::{TreePir, TreePirClient};
use obscura_pir::double::Double;
use obscura_pir::keyword::Keyword;
use obscura_pir::lwe::Lwe;
use obscura_pir::scheme::{AnswerOf, QueryOf, SetupOf};
use obscura_pir::wire::Kind;
use obscura_pir::ypir::Ypir;
use obscura_pir::{PirClient, PirError, PirServer, Scheme};

use crate::client::{ClientError, HttpClient};
use crate::registry;
use crate::store::{self, Database, StoreError};

/// What went wrong getting a query answered.
#[derive(Debug, thiserror::Error)]
pub enum AnswerError {
    /// The database file could not be loaded.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The server could not be reached or answered wrongly.
    #[error(transparent)]
    Client(#[from] ClientError),
    /// A setup, query or answer is not valid.
    #[error(transparent)]
    Pir(#[from] PirError),
    /// The database is of another scheme than the one asked for.
    #[error("{database} is a database of kind {found}, not {expected}")]
    WrongScheme {
        /// The database.
        database: String,
        /// The scheme it has.
        found: String,
        /// The scheme asked for.
        expected: &'static str,
    },
    /// The database serves another kind of lookup than the one asked for.
    #[error("{database} {}", .found.advice())]
    WrongLookup {
        /// The database.
        database: String,
        /// The lookup it serves.
        found: Lookup,
    },
    /// The Merkle tree's root is not the one the caller expects.
    #[error("the tree's root {} is not the expected {}", hex::encode(.root), hex::encode(.expected))]
    RootMismatch {
        /// The tree's root.
        root: Hash,
        /// The root expected.
        expected: Hash,
    },
    /// A Merkle leaf past the tree's last one was asked for.
    #[error("leaf {leaf} is out of range: the tree has {leaves} leaves")]
    LeafOutOfRange {
        /// The leaf asked for.
        leaf: u64,
        /// The tree's leaves.
        leaves: u64,
    },
}

/// The kind of lookup a database serves, from the scheme of its public setup.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Lookup {
    /// Records by index (the LWE engine, DoublePIR, YPIR).
    Index,
    /// Values by key (keyword PIR).
    Key,
    /// Audit paths of a Merkle tree (TreePIR).
    AuditPath,
    /// None that a client of this library makes (the kind's description).
    Other(String),
}

impl Lookup {
    /// The lookup a database whose public setup has wire kind `kind` serves.
    pub fn of(kind: Kind) -> Self {
        match kind {
            Kind::LWE_PUBLIC_SETUP | Kind::DOUBLE_SETUP | Kind::YPIR_SETUP => Self::Index,
            Kind::KEYWORD_SETUP => Self::Key,
            Kind::TREEPIR_SETUP => Self::AuditPath,
            kind => Self::Other(kind.describe().to_string()),
        }
    }

    /// What a database serving this lookup is, and how to read it.
    fn advice(&self) -> String {
        match self {
            Self::Index => "is an index database: fetch records by index".into(),
            Self::Key => "is a keyword database: fetch values by key".into(),
            Self::AuditPath => "is a Merkle tree: fetch audit paths by leaf".into(),
            Self::Other(kind) => format!("holds a {kind}, which no lookup of this library reads"),
        }
    }
}

/// A leaf's audit path, fetched privately and verified against the tree's root.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AuditPath {
    /// The leaf's index.
    pub leaf: u64,
    /// The tree's leaves.
    pub leaves: u64,
    /// The leaf's hash (given, or fetched privately).
    pub leaf_hash: Hash,
    /// Whether the leaf hash was fetched (else given by the caller).
    pub leaf_hash_fetched: bool,
    /// The sibling hashes from the leaf up to the root.
    pub path: Vec<Hash>,
    /// The tree's root, which the path was verified against.
    pub root: Hash,
    /// Queries sent for the path (the leaf hash's, if fetched, not counted).
    pub queries: usize,
}

/// Where queries are answered: a database file loaded in this process, or a database that a
/// server serves (its setup downloaded and verified once).
pub enum Answerer {
    /// A database file, answered in this process.
    Local {
        /// The file, as given.
        name: String,
        /// Its database.
        database: Database,
    },
    /// A database served over HTTP.
    Remote {
        /// The client of the server.
        http: Box<HttpClient>,
        /// The database's name on the server.
        name: String,
        /// Its verified public setup, encoded.
        setup: Vec<u8>,
    },
}

impl Answerer {
    /// Answers from the database file at `path`.
    pub fn open(path: &Path) -> Result<Self, AnswerError> {
        Ok(Self::Local {
            name: path.display().to_string(),
            database: store::read_database(path)?,
        })
    }

    /// Answers from database `name` of the server `http` talks to.
    pub fn remote(http: HttpClient, name: &str) -> Result<Self, AnswerError> {
        let setup = http.setup_bytes(name)?;
        Ok(Self::Remote {
            http: Box::new(http),
            name: name.to_string(),
            setup,
        })
    }

    /// The wire kind of the database's public setup, which names its scheme.
    pub fn kind(&self) -> Result<Kind, AnswerError> {
        Ok(match self {
            Self::Local { database, .. } => database.kind(),
            Self::Remote { setup, .. } => registry::setup_kind(setup)?,
        })
    }

    /// The database's name: the file or the name on the server.
    pub fn name(&self) -> &str {
        match self {
            Self::Local { name, .. } | Self::Remote { name, .. } => name,
        }
    }

    /// The public setup of the database, which must be of scheme `S`.
    pub fn setup<S: Scheme>(&self) -> Result<SetupOf<S>, AnswerError> {
        let wrong = |found: String| AnswerError::WrongScheme {
            database: self.name().to_string(),
            found,
            expected: S::NAME,
        };
        match self {
            Self::Local { database, .. } => database
                .server::<S>()
                .map(|server| server.public_setup().clone())
                .ok_or_else(|| wrong(database.listing().kind.to_string())),
            Self::Remote { http, name, setup } => {
                let kind = registry::setup_kind(setup)?;
                if kind != S::KIND {
                    let found = registry::built_in(kind).map_or(kind.describe(), |s| s.name());
                    return Err(wrong(found.to_string()));
                }
                Ok(http.decode_setup::<S>(name, setup)?)
            }
        }
    }

    /// The answer to `query`, a query for the database of scheme `S` with public setup `setup`.
    pub fn answer<S: Scheme>(
        &self,
        setup: &SetupOf<S>,
        query: &QueryOf<S>,
    ) -> Result<AnswerOf<S>, AnswerError> {
        match self {
            Self::Local { database, .. } => {
                let server = database.server::<S>().ok_or(AnswerError::WrongScheme {
                    database: self.name().to_string(),
                    found: database.listing().kind.to_string(),
                    expected: S::NAME,
                })?;
                Ok(server.answer(query)?)
            }
            Self::Remote { http, name, .. } => Ok(http.query::<S>(name, setup, query)?),
        }
    }

    /// Fetches `target` from the database, of scheme `S`: one query, answered, decoded. When a
    /// server has replaced the database since its setup was fetched, the new setup is fetched
    /// (and verified) and the query made again, once.
    pub fn retrieve<S: Scheme>(
        &mut self,
        target: <S::Client as PirClient>::Target<'_>,
    ) -> Result<<S::Client as PirClient>::Output, AnswerError> {
        match self.retrieve_once::<S>(target) {
            Err(AnswerError::Client(ClientError::StaleSetup { .. })) => {
                self.refresh_setup()?;
                self.retrieve_once::<S>(target)
            }
            result => result,
        }
    }

    /// One query for `target`, made against the setup held now, answered and decoded.
    fn retrieve_once<S: Scheme>(
        &self,
        target: <S::Client as PirClient>::Target<'_>,
    ) -> Result<<S::Client as PirClient>::Output, AnswerError> {
        let mut client = S::Client::new(self.setup::<S>()?);
        let (query, state) = client.query(target)?;
        let answer = self.answer::<S>(client.setup(), &query)?;
        Ok(client.decode(state, &answer)?)
    }

    /// The lookup the database serves.
    pub fn lookup(&self) -> Result<Lookup, AnswerError> {
        Ok(Lookup::of(self.kind()?))
    }

    /// Fetches record `index` of an index database, whichever of its schemes it has.
    pub fn fetch_index(&mut self, index: u64) -> Result<Vec<u8>, AnswerError> {
        match self.kind()? {
            Kind::LWE_PUBLIC_SETUP => self.retrieve::<Lwe>(index),
            Kind::DOUBLE_SETUP => self.retrieve::<Double>(index),
            Kind::YPIR_SETUP => self.retrieve::<Ypir>(index),
            kind => Err(self.wrong_lookup(kind)),
        }
    }

    /// Fetches the value under `key` in a keyword database: `None` when the key is absent.
    pub fn fetch_key(&mut self, key: &[u8]) -> Result<Option<Vec<u8>>, AnswerError> {
        match self.kind()? {
            Kind::KEYWORD_SETUP => self.retrieve::<Keyword>(key),
            kind => Err(self.wrong_lookup(kind)),
        }
    }

    /// Fetches the audit path of `leaf` of a Merkle tree and verifies it against the tree's
    /// root (and against `root`, when given). Without `leaf_hash` the leaf's hash is fetched
    /// privately too, in a request of its own.
    pub fn audit_path(
        &self,
        leaf: u64,
        leaf_hash: Option<Hash>,
        root: Option<Hash>,
    ) -> Result<AuditPath, AnswerError> {
        let kind = self.kind()?;
        if kind != Kind::TREEPIR_SETUP {
            return Err(self.wrong_lookup(kind));
        }
        let setup = self.setup::<TreePir>()?;
        let leaves = setup.leaves();
        if leaf >= leaves {
            return Err(AnswerError::LeafOutOfRange { leaf, leaves });
        }
        let tree_root = *setup.root();
        if let Some(expected) = root.filter(|expected| *expected != tree_root) {
            return Err(AnswerError::RootMismatch {
                root: tree_root,
                expected,
            });
        }
        let mut client = TreePirClient::new(setup.clone());
        let (leaf_hash, leaf_hash_fetched) = match leaf_hash {
            Some(hash) => (hash, false),
            None => {
                let (queries, state) = client.query_leaf_hash(leaf)?;
                let answers = self.answer::<TreePir>(&setup, &Shards(queries))?;
                (client.decode_leaf_hash(state, &answers.0)?, true)
            }
        };
        let (queries, state) = client.query(leaf)?;
        let count = queries.len();
        let answers = self.answer::<TreePir>(&setup, &Shards(queries))?;
        let path = client.decode(state, &answers.0, &leaf_hash)?;
        Ok(AuditPath {
            leaf,
            leaves,
            leaf_hash,
            leaf_hash_fetched,
            path,
            root: tree_root,
            queries: count,
        })
    }

    /// The error for a lookup that a database of setup kind `kind` does not serve.
    fn wrong_lookup(&self, kind: Kind) -> AnswerError {
        AnswerError::WrongLookup {
            database: self.name().to_string(),
            found: Lookup::of(kind),
        }
    }

    /// Fetches the setup of a remote database again (a local file's never changes).
    fn refresh_setup(&mut self) -> Result<(), AnswerError> {
        if let Self::Remote { http, name, setup } = self {
            *setup = http.setup_bytes(name)?;
        }
        Ok(())
    }
}
