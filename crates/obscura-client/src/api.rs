//! The JSON of the service's HTTP API that clients read: the database list
//! (`GET /v1/databases`) and a Merkle tree's consistency proofs
//! (`GET /v1/databases/{name}/consistency?first=M`).

use obscura_registry::Engine;
use serde::{Deserialize, Serialize};

/// The JSON description of a database.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct DatabaseInfo {
    /// Name used in URLs.
    pub name: String,
    /// Kind of database, named after its scheme: `index` (the LWE engine), `keyword`,
    /// `treepir` (a Merkle tree, see `height`) or `pbc` (the batch-code baseline).
    pub kind: String,
    /// The lookup it serves: `index`, `batch`, `keyword` or `audit-path`.
    #[serde(default)]
    pub lookup: String,
    /// Number of records (of keys, for a keyword database; of leaves, for a Merkle tree).
    pub records: u64,
    /// Its version: 0 as built, one more for each batch of changes applied.
    #[serde(default)]
    pub version: u64,
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

/// The JSON of a consistency proof: that the tree of the first `first` leaves is a prefix of the
/// tree served, of `second` leaves and head `root` (RFC 6962 `PROOF(first, D[second])`, RFC
/// 9162 §2.1.4). Hashes in hex.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct ConsistencyInfo {
    /// The earlier tree's size.
    pub first: u64,
    /// The served tree's size.
    pub second: u64,
    /// The served tree's head.
    pub root: String,
    /// The proof's hashes, in order.
    pub proof: Vec<String>,
}

/// Parameters as listed.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
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

impl From<&Engine> for ParamsInfo {
    fn from(engine: &Engine) -> Self {
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
