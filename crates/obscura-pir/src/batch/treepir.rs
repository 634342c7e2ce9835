//! TreePIR on the LWE engine: the tree's nodes are split into one sub-database per colour class
//! ([`super::coloring`]), each entry holding the value of its node's *sibling*, so the `h`
//! entries on a leaf's path are exactly the leaf's audit path. The client sends one query to
//! every sub-database (always `h`, each with its own fresh secret), decodes the `h` hashes,
//! drops the levels that are empty in a tree whose size is not a power of two, and verifies the
//! path against the root it holds. Storage is the tree itself: `2^(h+1) − 2` entries of 32
//! bytes over all sub-databases, against three copies for the batch-code baseline.

use rayon::prelude::*;

use super::coloring::{self, Coloring};
use super::merkle::{self, Hash, MerkleTree};
use super::swapped;
use crate::lwe::{Answer, Client, PublicSetup, Query, QueryState, Server, SetupOptions};
use crate::{PirClient, PirError, PirServer};

/// Bytes of a sub-database entry: one SHA-256 hash.
const ENTRY_BYTES: u64 = 32;

/// What a client needs: the tree's size and root, and one LWE setup per colour class.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TreePirSetup {
    leaves: u64,
    root: Hash,
    databases: Vec<PublicSetup>,
}

impl TreePirSetup {
    /// The number of leaves of the tree.
    pub fn leaves(&self) -> u64 {
        self.leaves
    }

    /// The tree head the client checks proofs against.
    pub fn root(&self) -> &Hash {
        &self.root
    }

    /// The height of the perfect tree the proofs come from (the number of sub-databases).
    pub fn height(&self) -> u32 {
        merkle::height_for(self.leaves)
    }

    /// The public setup of each sub-database, in colour order.
    pub fn databases(&self) -> &[PublicSetup] {
        &self.databases
    }
}

/// The server: one LWE database per colour class.
pub struct TreePirServer {
    setup: TreePirSetup,
    servers: Vec<Server>,
}

impl TreePirServer {
    /// Splits `tree` into its colour classes and sets up one database of 32-byte entries per
    /// class. `progress(done, total)` counts finished sub-databases.
    pub fn setup(
        tree: &MerkleTree,
        options: SetupOptions,
        progress: &(dyn Fn(u64, u64) + Sync),
    ) -> Result<Self, PirError> {
        let h = tree.height();
        let classes = match h {
            0 => Vec::new(),
            h => Coloring::balanced(h)
                .map_err(|e| PirError::InvalidParameters(e.to_string()))?
                .classes(),
        };
        let total = classes.len() as u64;
        let done = std::sync::atomic::AtomicU64::new(0);
        let servers = classes
            .par_iter()
            .map(|class| {
                let entries: Vec<u8> = class
                    .iter()
                    .flat_map(|&v| swapped::entry(tree, v))
                    .collect();
                let server = Server::setup(&entries, ENTRY_BYTES, options, &|_, _| {})?;
                let finished = done.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
                progress(finished, total);
                Ok(server)
            })
            .collect::<Result<Vec<_>, PirError>>()?;
        let setup = TreePirSetup {
            leaves: tree.len(),
            root: tree.root(),
            databases: servers.iter().map(|s| s.public_setup().clone()).collect(),
        };
        Ok(Self { setup, servers })
    }

    /// The public setup to hand to clients.
    pub fn public_setup(&self) -> &TreePirSetup {
        &self.setup
    }

    /// The sub-databases (for measuring them one by one).
    pub fn databases(&self) -> &[Server] {
        &self.servers
    }

    /// Answers a proof request: one query per sub-database, in colour order.
    pub fn answer(&self, queries: &[Query]) -> Result<Vec<Answer>, PirError> {
        if queries.len() != self.servers.len() {
            return Err(PirError::malformed(
                "TreePIR request",
                format!(
                    "{} queries for {} sub-databases",
                    queries.len(),
                    self.servers.len()
                ),
            ));
        }
        self.servers
            .par_iter()
            .zip(queries)
            .map(|(server, query)| server.answer(query))
            .collect()
    }
}

/// The client: one LWE client per sub-database.
pub struct TreePirClient {
    setup: TreePirSetup,
    clients: Vec<Client>,
}

/// The secret state of one proof request; decodes its answers once.
pub struct ProofState {
    leaf: u64,
    /// For each colour: the depth of the path node of that colour, and its query state.
    per_color: Vec<(u32, QueryState)>,
}

impl TreePirClient {
    /// A client for the tree described by `setup`.
    pub fn new(setup: TreePirSetup) -> Self {
        let clients = setup.databases.iter().cloned().map(Client::new).collect();
        Self { setup, clients }
    }

    /// The setup this client queries.
    pub fn setup(&self) -> &TreePirSetup {
        &self.setup
    }

    /// The `h` queries (one per sub-database, in colour order, each with a fresh secret) that
    /// fetch the audit path of leaf `leaf`.
    pub fn query(&mut self, leaf: u64) -> Result<(Vec<Query>, ProofState), PirError> {
        let n = self.setup.leaves;
        if leaf >= n {
            return Err(PirError::IndexOutOfRange {
                index: leaf,
                records: n,
            });
        }
        let h = self.setup.height();
        let mut targets = vec![(0u32, 0u64); self.clients.len()];
        if h > 0 {
            let sizes = coloring::balanced_sizes(h);
            let positions = coloring::path_positions(h, &sizes, leaf)
                .map_err(|e| PirError::InvalidParameters(e.to_string()))?;
            for (depth, (color, position)) in (1..).zip(positions) {
                targets[usize::from(color)] = (depth, position);
            }
        }
        let mut queries = Vec::with_capacity(targets.len());
        let mut per_color = Vec::with_capacity(targets.len());
        for (client, (depth, position)) in self.clients.iter_mut().zip(targets) {
            let (query, state) = client.query(position)?;
            queries.push(query);
            per_color.push((depth, state));
        }
        Ok((queries, ProofState { leaf, per_color }))
    }

    /// The audit path (bottom-up, RFC 6962) carried by `answers`, after checking that it proves
    /// that `leaf_hash` is the leaf asked for under the root of the setup.
    pub fn decode(
        &self,
        state: ProofState,
        answers: &[Answer],
        leaf_hash: &Hash,
    ) -> Result<Vec<Hash>, PirError> {
        if answers.len() != self.clients.len() {
            return Err(PirError::malformed(
                "TreePIR answers",
                format!(
                    "{} answers for {} sub-databases",
                    answers.len(),
                    self.clients.len()
                ),
            ));
        }
        let (n, h, m) = (self.setup.leaves, self.setup.height(), state.leaf);
        let mut by_level = vec![swapped::EMPTY; h as usize];
        for ((client, (depth, query_state)), answer) in
            self.clients.iter().zip(state.per_color).zip(answers)
        {
            let entry = client.decode(query_state, answer)?;
            let level = (h - depth) as usize;
            by_level[level] = entry
                .try_into()
                .map_err(|_| PirError::malformed("TreePIR answer", "an entry is not 32 bytes"))?;
        }
        let path = swapped::audit_path(n, m, &by_level);
        merkle::verify_audit_path(m, n, leaf_hash, &path, &self.setup.root)?;
        Ok(path)
    }
}
