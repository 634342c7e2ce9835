//! A blocking client of one database: a [`Session`] driven over a database file read in this
//! process (feature `file`) or over HTTP to `obscura serve` (feature `http`).

use obscura_pir::batch::merkle::Hash;
#[cfg(feature = "file")]
use obscura_pir::PirError;
use obscura_registry::Registry;

use crate::error::ClientError;
use crate::session::{Ask, AuditPath, Consistency, Outcome, Request, Session, Step};
#[cfg(feature = "file")]
use crate::setup::SetupPolicy;

/// Where requests are answered.
enum Source {
    /// A database file, answered in this process.
    #[cfg(feature = "file")]
    File(obscura_registry::Database),
    /// A database served over HTTP, by its name on the server.
    #[cfg(feature = "http")]
    Http(Box<crate::http::HttpClient>),
}

/// A client of one database: its setup verified and decoded once, its scheme's client kept,
/// every lookup one exchange of its session.
pub struct Client {
    source: Source,
    session: Session,
}

impl Client {
    /// A client of the database file at `path` (its checksum verified on load).
    #[cfg(feature = "file")]
    pub fn open(path: &std::path::Path) -> Result<Self, ClientError> {
        let database = obscura_store::store::read_database(path)?;
        Self::in_process(&path.display().to_string(), database)
    }

    /// A client of `database`, held and answered in this process; `name` names it in errors.
    #[cfg(feature = "file")]
    pub fn in_process(
        name: &str,
        database: obscura_registry::Database,
    ) -> Result<Self, ClientError> {
        let setup = database.setup_bytes();
        let sha256 = obscura_registry::setup_sha256(&setup);
        // A local file's queries are answered in this process: no size limit protects a peer.
        let policy = SetupPolicy {
            max_query_bytes: u64::MAX,
            ..SetupPolicy::default()
        };
        let session = Session::new(name, &setup, sha256, false, &policy, &Registry::default())?;
        Ok(Self {
            source: Source::File(database),
            session,
        })
    }

    /// A client of database `name` of the server `http` talks to: its setup fetched and
    /// verified as `http`'s options say.
    #[cfg(feature = "http")]
    pub fn connect(http: crate::http::HttpClient, name: &str) -> Result<Self, ClientError> {
        let session = Self::remote_session(&http, name)?;
        Ok(Self {
            source: Source::Http(Box::new(http)),
            session,
        })
    }

    /// The session of database `name` of `http`'s server, from its setup fetched now.
    #[cfg(feature = "http")]
    fn remote_session(http: &crate::http::HttpClient, name: &str) -> Result<Session, ClientError> {
        let setup = http.fetch_setup(name)?;
        let policy = http.policy();
        Session::new(
            name,
            &setup.bytes,
            setup.sha256,
            setup.from_cache,
            &policy,
            &Registry::default(),
        )
    }

    /// The session: what the database serves and holds.
    pub fn session(&self) -> &Session {
        &self.session
    }

    /// Looks `ask` up: the outcome and the requests it took. When a server has replaced the
    /// database since its setup was fetched, the new setup is fetched (and verified) and the
    /// lookup made again, once.
    pub fn fetch(&mut self, ask: Ask) -> Result<(Outcome, usize), ClientError> {
        let (mut exchange, mut request) = self.session.begin(ask)?;
        loop {
            let step = match self.send(&request) {
                Ok(answer) => self.session.receive(&mut exchange, Ok(&answer)),
                Err(error) => self.session.receive(&mut exchange, Err(error)),
            };
            match step? {
                Step::Send(next) => request = next,
                Step::Refresh => {
                    self.refresh()?;
                    request = self.session.restart(&mut exchange)?;
                }
                Step::Done(outcome) => return Ok((outcome, exchange.requests())),
            }
        }
    }

    /// Fetches record `index` of an index (or batch) database: `None` when it was deleted.
    pub fn get(&mut self, index: u64) -> Result<Option<Vec<u8>>, ClientError> {
        match self.fetch(Ask::Record(index))?.0 {
            Outcome::Record(record) => Ok(Some(record)),
            Outcome::Absent => Ok(None),
            other => Err(self.unexpected(other)),
        }
    }

    /// Fetches the value under `key` of a keyword database: `None` when the key is absent.
    pub fn get_key(&mut self, key: &[u8]) -> Result<Option<Vec<u8>>, ClientError> {
        match self.fetch(Ask::Value(key.to_vec()))?.0 {
            Outcome::Value(value) => Ok(value),
            other => Err(self.unexpected(other)),
        }
    }

    /// Fetches the audit path of `leaf` of a Merkle tree, verified against the tree's root
    /// (and `root`, when given); without `leaf_hash` the leaf's hash is fetched privately too.
    pub fn audit_path(
        &mut self,
        leaf: u64,
        leaf_hash: Option<Hash>,
        root: Option<Hash>,
    ) -> Result<AuditPath, ClientError> {
        let ask = Ask::AuditPath {
            leaf,
            leaf_hash,
            root,
        };
        match self.fetch(ask)?.0 {
            Outcome::AuditPath(path) => Ok(path),
            other => Err(self.unexpected(other)),
        }
    }

    /// Proves that the tree of `first` leaves with head `first_root` (one seen before) is a
    /// prefix of the Merkle tree served: the log only grew. The proof goes to the tree this
    /// client's setup holds; a server whose tree has grown since is asked again after its new
    /// setup is fetched, once.
    pub fn consistency(
        &mut self,
        first: u64,
        first_root: &Hash,
    ) -> Result<Consistency, ClientError> {
        let mut proved = self.consistency_proof(first)?;
        if !self.session.check_consistency(&proved, first_root)? {
            self.refresh()?;
            proved = self.consistency_proof(first)?;
            if !self.session.check_consistency(&proved, first_root)? {
                return Err(ClientError::Unexpected {
                    url: self.session.database().to_string(),
                    message: format!(
                        "the proof goes to a tree of {} leaves, not the one of the setup just fetched",
                        proved.second
                    ),
                });
            }
        }
        Ok(proved)
    }

    /// The source's consistency proof from the tree of `first` leaves, not verified yet.
    fn consistency_proof(&self, first: u64) -> Result<Consistency, ClientError> {
        match &self.source {
            #[cfg(feature = "file")]
            Source::File(database) => {
                let refused = |reason: String| ClientError::Lookup {
                    database: self.session.database().to_string(),
                    error: PirError::InvalidParameters(reason),
                };
                let tree = database
                    .server::<obscura_pir::batch::treepir::TreePir>()
                    .ok_or_else(|| refused("the tree is not a TreePIR database".into()))?;
                let setup = tree.public_setup();
                let proof = tree.consistency_proof(first).ok_or_else(|| {
                    refused(format!(
                        "no consistency proof goes from {first} leaves to the tree's {}",
                        setup.leaves()
                    ))
                })?;
                Ok(Consistency {
                    first,
                    second: setup.leaves(),
                    root: *setup.root(),
                    proof,
                })
            }
            #[cfg(feature = "http")]
            Source::Http(http) => {
                let name = self.session.database();
                let info = http.consistency(name, first)?;
                let bad = |message: String| ClientError::Unexpected {
                    url: name.to_string(),
                    message,
                };
                let hash = |text: &str| -> Result<Hash, ClientError> {
                    let mut hash = [0u8; 32];
                    hex::decode_to_slice(text, &mut hash)
                        .map_err(|_| bad(format!("{text:?} is not a SHA-256 hash in hex")))?;
                    Ok(hash)
                };
                if info.first != first {
                    return Err(bad(format!(
                        "a proof from {} leaves where {first} were asked for",
                        info.first
                    )));
                }
                Ok(Consistency {
                    first,
                    second: info.second,
                    root: hash(&info.root)?,
                    proof: info
                        .proof
                        .iter()
                        .map(|h| hash(h))
                        .collect::<Result<_, _>>()?,
                })
            }
        }
    }

    /// The error for an outcome of another kind than the lookup asked for.
    fn unexpected(&self, outcome: Outcome) -> ClientError {
        ClientError::Unexpected {
            url: self.session.database().to_string(),
            message: format!("the lookup found {outcome:?}"),
        }
    }

    /// The answer to `request`, from the source.
    fn send(&self, request: &Request) -> Result<Vec<u8>, ClientError> {
        match &self.source {
            #[cfg(feature = "file")]
            Source::File(database) => {
                let query = database.decode_query(&request.body)?;
                let mut answers = database.answer(vec![query])?;
                answers.pop().ok_or_else(|| ClientError::Unexpected {
                    url: self.session.database().to_string(),
                    message: "no answer".into(),
                })
            }
            #[cfg(feature = "http")]
            Source::Http(http) => http.send(self.session.database(), request),
        }
    }

    /// Makes a new session of the setup the source has now (a file's never changes).
    fn refresh(&mut self) -> Result<(), ClientError> {
        match &self.source {
            #[cfg(feature = "file")]
            Source::File(_) => Ok(()),
            #[cfg(feature = "http")]
            Source::Http(http) => {
                self.session = Self::remote_session(http, self.session.database())?;
                Ok(())
            }
        }
    }
}
