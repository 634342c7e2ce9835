//! The client session of one database, without I/O: the verified public setup decoded once and
//! the scheme's client kept (with whatever it precomputes), so every lookup pays only for its
//! query, its answer and its decoding. A lookup is an [`Exchange`]: the session says what to
//! send where ([`Request`]), the transport carries it, and the session turns each reply into
//! the next [`Step`]: another request, a refresh of the setup (the server replaced the
//! database: `409`, once per lookup), or the [`Outcome`]. Every front end (the CLI, Python,
//! the browser) drives the same exchanges, so a lookup takes the same route from each.

use obscura_pir::batch::merkle::{self, Hash};
use obscura_pir::{Found, Lookup, PirError, Target};
use obscura_registry::{Client, Listing, Pending, Registry};

use crate::error::ClientError;
use crate::setup::{SetupPolicy, Sha256};

/// What a lookup asks for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Ask {
    /// Record `n` (from 0) of an index database.
    Record(u64),
    /// Several records of a batch database, in this order.
    Records(Vec<u64>),
    /// The value under a key of a keyword database.
    Value(Vec<u8>),
    /// The audit path of a Merkle tree's leaf, verified against the tree's root (and `root`,
    /// when given). Without `leaf_hash` the leaf's hash is fetched privately too, in a request
    /// of its own.
    AuditPath {
        /// The leaf, from 0.
        leaf: u64,
        /// Its hash, when known.
        leaf_hash: Option<Hash>,
        /// The root the caller expects.
        root: Option<Hash>,
    },
}

/// What a lookup found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// The record.
    Record(Vec<u8>),
    /// The record was deleted: its index reads as absent.
    Absent,
    /// The records, in the order asked.
    Records(Vec<Vec<u8>>),
    /// The value; `None` when the key is absent.
    Value(Option<Vec<u8>>),
    /// The verified audit path.
    AuditPath(AuditPath),
}

/// A verified consistency proof: the tree of `first` leaves with the head the caller gave is a
/// prefix of the tree of `second` leaves with head `root`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Consistency {
    /// The earlier tree's size.
    pub first: u64,
    /// The served tree's size.
    pub second: u64,
    /// The served tree's head.
    pub root: Hash,
    /// The proof's hashes (RFC 6962 `PROOF(first, D[second])`).
    pub proof: Vec<Hash>,
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
    /// Queries the path's request held (one per sub-database of the tree).
    pub queries: u32,
}

/// A request to send: `body` posted to the database's `route`
/// (`/v1/databases/{name}/{route}`), whose answer has `answer_bytes` bytes.
#[derive(Debug)]
pub struct Request {
    /// The route of the lookup's kind ([`Lookup::route`]).
    pub route: &'static str,
    /// The encoded query.
    pub body: Vec<u8>,
    /// Bytes of its answer: a transport reads no more.
    pub answer_bytes: u64,
}

/// What to do next in an [`Exchange`].
#[derive(Debug)]
pub enum Step {
    /// Send this request and hand its reply to [`Session::receive`].
    Send(Request),
    /// The server replaced the database: fetch its setup again, make a new session of it and
    /// restart the exchange there ([`Session::restart`]).
    Refresh,
    /// The lookup is done.
    Done(Outcome),
}

/// One lookup in progress: what was asked and what is known so far.
pub struct Exchange {
    ask: Ask,
    pending: Option<Pending>,
    /// The leaf hash of an audit path, once known, and whether it was fetched.
    leaf_hash: Option<(Hash, bool)>,
    refreshed: bool,
    requests: usize,
}

impl Exchange {
    /// Requests sent so far (a fetched leaf hash's included).
    pub fn requests(&self) -> usize {
        self.requests
    }

    /// The leaf hash of an audit path, once known (given, or fetched: proved only when the
    /// path verifies with it).
    pub fn leaf_hash(&self) -> Option<Hash> {
        self.leaf_hash.map(|(hash, _)| hash)
    }
}

/// The client session of one database: its verified setup decoded once, its scheme's client
/// kept.
pub struct Session {
    database: String,
    client: Client,
    sha256: Sha256,
    setup_bytes: u64,
    from_cache: bool,
}

impl Session {
    /// The session of database `database` (a file, or a name on a server) with the encoded
    /// public setup `setup`, verified to have SHA-256 `sha256` (by [`SetupPolicy::accept`], or
    /// by the store's checksum) and taken `from_cache` or not. Its scheme is the one `registry`
    /// has for the setup's kind; a setup whose queries exceed the policy's limit is refused.
    pub fn new(
        database: &str,
        setup: &[u8],
        sha256: Sha256,
        from_cache: bool,
        policy: &SetupPolicy,
        registry: &Registry,
    ) -> Result<Self, ClientError> {
        let client = registry
            .client(setup)
            .map_err(|error| ClientError::UnknownScheme {
                database: database.to_string(),
                error,
            })?;
        policy.check_query_bytes(database, client.listing().query_bytes)?;
        Ok(Self {
            database: database.to_string(),
            client,
            sha256,
            setup_bytes: setup.len() as u64,
            from_cache,
        })
    }

    /// The database: its file, or its name on the server.
    pub fn database(&self) -> &str {
        &self.database
    }

    /// Checks `proved`, a consistency proof sent for the Merkle tree of this setup, that the tree
    /// of its `first` leaves with head `first_root` is a prefix of the tree served: `Ok(false)`
    /// when it goes to another tree than this setup's (the served one has grown since: fetch
    /// the setup again and ask again); an error when the database is not a tree or the proof
    /// fails (RFC 9162 §2.1.4.2).
    pub fn check_consistency(
        &self,
        proved: &Consistency,
        first_root: &Hash,
    ) -> Result<bool, ClientError> {
        let listing = self.listing();
        if listing.lookup != Lookup::AuditPath || listing.root.is_none() {
            return Err(ClientError::Lookup {
                database: self.database.clone(),
                error: PirError::InvalidParameters(format!(
                    "a consistency proof is of a Merkle tree; this database serves {} lookups",
                    listing.lookup
                )),
            });
        }
        if (proved.second, Some(proved.root)) != (listing.items, listing.root) {
            return Ok(false);
        }
        merkle::verify_consistency(
            proved.first,
            proved.second,
            first_root,
            &proved.root,
            &proved.proof,
        )
        .map_err(|source| ClientError::Inconsistent {
            database: self.database.clone(),
            first: proved.first,
            second: proved.second,
            source,
        })?;
        Ok(true)
    }

    /// The lookup the database serves.
    pub fn lookup(&self) -> Lookup {
        self.client.lookup()
    }

    /// What the setup says of the database (scheme, items, sizes, a tree's root).
    pub fn listing(&self) -> &Listing {
        self.client.listing()
    }

    /// The SHA-256 of the public setup.
    pub fn setup_sha256(&self) -> Sha256 {
        self.sha256
    }

    /// Bytes of the public setup.
    pub fn setup_bytes(&self) -> u64 {
        self.setup_bytes
    }

    /// Whether the setup came from a cache (revalidated with the server).
    pub fn from_cache(&self) -> bool {
        self.from_cache
    }

    /// Starts a lookup of `ask`: the exchange and its first request.
    pub fn begin(&mut self, ask: Ask) -> Result<(Exchange, Request), ClientError> {
        let mut exchange = Exchange {
            ask,
            pending: None,
            leaf_hash: None,
            refreshed: false,
            requests: 0,
        };
        let request = self.first_request(&mut exchange)?;
        Ok((exchange, request))
    }

    /// The first request of `exchange`, made from this `Session`'s setup (the one a
    /// [`Step::Refresh`] asks for), with the exchange's pending answer state and leaf hash
    /// cleared.
    pub fn restart(&mut self, exchange: &mut Exchange) -> Result<Request, ClientError> {
        exchange.pending = None;
        exchange.leaf_hash = None;
        self.first_request(exchange)
    }

    /// The next step of `exchange`, given the reply to its last request: the answer's bytes,
    /// or the transport's error. A [`ClientError::StaleSetup`] is a [`Step::Refresh`] the
    /// first time, an error the second.
    pub fn receive(
        &mut self,
        exchange: &mut Exchange,
        reply: Result<&[u8], ClientError>,
    ) -> Result<Step, ClientError> {
        let answer = match reply {
            Err(ClientError::StaleSetup { .. }) if !exchange.refreshed => {
                exchange.refreshed = true;
                return Ok(Step::Refresh);
            }
            Err(error) => return Err(error),
            Ok(answer) => answer,
        };
        let pending = exchange
            .pending
            .take()
            .ok_or_else(|| ClientError::Unexpected {
                url: self.database.clone(),
                message: "an answer arrived with no request waiting for it".into(),
            })?;
        let found = self.client.decode(pending, answer)?;
        let outcome = match (&exchange.ask, found) {
            (Ask::Record(_), Found::Record(record)) => Outcome::Record(record),
            (Ask::Record(_), Found::Absent) => Outcome::Absent,
            (Ask::Records(_), Found::Records(records)) => Outcome::Records(records),
            (Ask::Value(_), Found::Value(value)) => Outcome::Value(value),
            (Ask::AuditPath { leaf, .. }, Found::LeafHash(hash)) => {
                exchange.leaf_hash = Some((hash, true));
                let target = Target::AuditPath {
                    leaf: *leaf,
                    leaf_hash: hash,
                };
                return Ok(Step::Send(self.request(exchange, target)?));
            }
            (Ask::AuditPath { leaf, .. }, Found::Path(path)) => {
                let listing = self.listing();
                let (leaf_hash, leaf_hash_fetched) =
                    exchange.leaf_hash.ok_or_else(|| ClientError::Unexpected {
                        url: self.database.clone(),
                        message: "an audit path arrived before its leaf hash was known".into(),
                    })?;
                Outcome::AuditPath(AuditPath {
                    leaf: *leaf,
                    leaves: listing.items,
                    leaf_hash,
                    leaf_hash_fetched,
                    path,
                    root: listing.root.unwrap_or_default(),
                    queries: listing.sub_queries.unwrap_or(1),
                })
            }
            (_, found) => {
                return Err(ClientError::Unexpected {
                    url: self.database.clone(),
                    message: format!("the scheme found {found:?} for {:?}", exchange.ask),
                })
            }
        };
        Ok(Step::Done(outcome))
    }

    /// The first request of `exchange`'s lookup.
    fn first_request(&mut self, exchange: &mut Exchange) -> Result<Request, ClientError> {
        // The target borrows what was asked, which the exchange keeps for a restart.
        let ask = exchange.ask.clone();
        let target = match &ask {
            Ask::Record(index) => Target::Index(*index),
            Ask::Records(indices) => Target::Indices(indices),
            Ask::Value(key) => Target::Key(key),
            Ask::AuditPath {
                leaf,
                leaf_hash,
                root,
            } => {
                self.check_tree(*leaf, *root)?;
                match leaf_hash {
                    Some(hash) => {
                        exchange.leaf_hash = Some((*hash, false));
                        Target::AuditPath {
                            leaf: *leaf,
                            leaf_hash: *hash,
                        }
                    }
                    None => Target::LeafHash(*leaf),
                }
            }
        };
        self.request(exchange, target)
    }

    /// The request for `target`, its state kept in `exchange`.
    fn request(
        &mut self,
        exchange: &mut Exchange,
        target: Target<'_>,
    ) -> Result<Request, ClientError> {
        let (body, pending) = self.client.query(target).map_err(|error| match error {
            error @ (PirError::WrongLookup { .. } | PirError::IndexOutOfRange { .. }) => {
                ClientError::Lookup {
                    database: self.database.clone(),
                    error,
                }
            }
            error => ClientError::Pir(error),
        })?;
        exchange.pending = Some(pending);
        exchange.requests += 1;
        Ok(Request {
            route: self.lookup().route(),
            body,
            answer_bytes: self.listing().answer_bytes,
        })
    }

    /// Refuses an audit path of a leaf past the tree's last, or of a tree whose root is not
    /// `expected` (a database that is no tree refuses the lookup itself).
    fn check_tree(&self, leaf: u64, expected: Option<Hash>) -> Result<(), ClientError> {
        let listing = self.listing();
        let Some(root) = listing.root else {
            return Ok(());
        };
        if leaf >= listing.items {
            return Err(ClientError::LeafOutOfRange {
                leaf,
                leaves: listing.items,
            });
        }
        match expected {
            Some(expected) if expected != root => Err(ClientError::RootMismatch { root, expected }),
            _ => Ok(()),
        }
    }
}
