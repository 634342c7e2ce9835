//! The errors of a client session and its adapters.

use obscura_pir::batch::merkle::Hash;
use obscura_pir::PirError;
use obscura_registry::LoadError;

/// What went wrong in a lookup: reaching a server or a file, checking its setup, or decoding.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ClientError {
    /// The server could not be reached, or the connection failed.
    #[cfg(feature = "http")]
    #[error("cannot reach {url}")]
    Transport {
        /// The URL requested.
        url: String,
        /// What failed: connecting, TLS, or reading the response.
        #[source]
        source: ureq::Error,
    },
    /// The server answered with an error status.
    #[error("{url}: the server answered {status}: {message}")]
    Status {
        /// The URL requested.
        url: String,
        /// The HTTP status.
        status: u16,
        /// The server's message (printable characters only, cut after 1000).
        message: String,
    },
    /// The server answers another setup of the database than the one the query was made for
    /// (HTTP 409): the database was replaced since its setup was fetched. Fetch the setup again
    /// and make a new query.
    #[error("{url}: the server answered 409: {message}")]
    StaleSetup {
        /// The URL requested.
        url: String,
        /// The server's message.
        message: String,
    },
    /// The server's bytes are not a valid message.
    #[error(transparent)]
    Pir(#[from] PirError),
    /// The database list is not the JSON of `GET /v1/databases`.
    #[cfg(feature = "http")]
    #[error("{url}: the database list is not valid")]
    BadList {
        /// The URL requested.
        url: String,
        /// What is wrong with it.
        #[source]
        source: serde_json::Error,
    },
    /// The response is not what the request asked for.
    #[error("{url}: unexpected response: {message}")]
    Unexpected {
        /// The URL requested.
        url: String,
        /// What was wrong.
        message: String,
    },
    /// The response is larger than anything the request can legitimately receive.
    #[error("{url}: the response is larger than {limit} bytes, {what}")]
    TooLarge {
        /// The URL requested.
        url: String,
        /// The most bytes accepted.
        limit: u64,
        /// Why that is the limit.
        what: &'static str,
    },
    /// The patches a server sent do not make a valid next setup of the cached one (the client
    /// then downloads the whole setup).
    #[error("{url}: the patches do not apply to the cached setup")]
    BadPatch {
        /// The URL requested.
        url: String,
        /// Why.
        #[source]
        source: LoadError,
    },
    /// The setup's bytes do not have the SHA-256 they must have: they were corrupted on the way,
    /// or are not the setup expected. Nothing was cached.
    #[error(
        "{url}: the setup's SHA-256 is {found} where {against} says {expected}: refused, nothing was cached"
    )]
    SetupSha256 {
        /// The URL requested.
        url: String,
        /// The SHA-256 of the bytes received, in hex.
        found: String,
        /// The SHA-256 they must have, in hex.
        expected: String,
        /// Where the expected value comes from.
        against: &'static str,
    },
    /// No scheme of this build has setups of this kind.
    #[error("{database}: {error}")]
    UnknownScheme {
        /// The database.
        database: String,
        /// Why its setup names no scheme of this build.
        error: LoadError,
    },
    /// A lookup the database does not serve, or a target out of its range.
    #[error("{database}: {error}")]
    Lookup {
        /// The database.
        database: String,
        /// What the scheme refused.
        error: PirError,
    },
    /// The Merkle tree's root is not the one the caller expects.
    #[error("the tree's root {} is not the expected {}", hex::encode(.root), hex::encode(.expected))]
    RootMismatch {
        /// The tree's root.
        root: Hash,
        /// The root expected.
        expected: Hash,
    },
    /// A consistency proof does not prove that the tree the caller saw is a prefix of the tree
    /// served: the log was rewritten, or the proof is corrupt.
    #[error(
        "{database}: the tree of {first} leaves is not proved a prefix of the tree of {second}"
    )]
    Inconsistent {
        /// The database.
        database: String,
        /// The earlier tree's size.
        first: u64,
        /// The served tree's size.
        second: u64,
        /// Why the proof failed.
        #[source]
        source: obscura_pir::batch::merkle::ConsistencyError,
    },
    /// A Merkle leaf past the tree's last one was asked for.
    #[error("leaf {leaf} is out of range: the tree has {leaves} leaves")]
    LeafOutOfRange {
        /// The leaf asked for.
        leaf: u64,
        /// The tree's leaves.
        leaves: u64,
    },
    /// The database file could not be loaded.
    #[cfg(feature = "file")]
    #[error(transparent)]
    Store(#[from] obscura_store::store::StoreError),
}
