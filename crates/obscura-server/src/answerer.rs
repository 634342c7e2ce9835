//! [`Answerer`]: where a client's queries are answered, a database file read in this process or
//! a database on a server, behind one interface.

use std::path::Path;

use obscura_pir::scheme::{AnswerOf, QueryOf, SetupOf};
use obscura_pir::wire::Kind;
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

    /// Fetches the setup of a remote database again (a local file's never changes).
    fn refresh_setup(&mut self) -> Result<(), AnswerError> {
        if let Self::Remote { http, name, setup } = self {
            *setup = http.setup_bytes(name)?;
        }
        Ok(())
    }
}
