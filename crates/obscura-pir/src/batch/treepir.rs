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
use super::shards::{ShardClients, ShardServers};
use super::swapped;
use crate::lwe::{Answer, PublicSetup, Query, QueryState, Server, SetupOptions};
use crate::PirError;

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
    shards: ShardServers,
}

impl TreePirServer {
    /// Splits `tree` into its colour classes and sets up one database of 32-byte entries per
    /// class. `progress(done, total)` counts finished sub-databases.
    pub fn setup(
        tree: &MerkleTree,
        options: SetupOptions,
        progress: &(dyn Fn(u64, u64) + Sync),
    ) -> Result<Self, PirError> {
        let classes = match tree.height() {
            0 => Vec::new(),
            h => Coloring::balanced(h)
                .map_err(|e| PirError::InvalidParameters(e.to_string()))?
                .classes(),
        };
        let contents: Vec<Vec<u8>> = classes
            .par_iter()
            .map(|class| {
                class
                    .iter()
                    .flat_map(|&v| swapped::entry(tree, v))
                    .collect()
            })
            .collect();
        let shards = ShardServers::setup(&contents, ENTRY_BYTES, options, progress)?;
        let setup = TreePirSetup {
            leaves: tree.len(),
            root: tree.root(),
            databases: shards.public_setups(),
        };
        Ok(Self { setup, shards })
    }

    /// The public setup to hand to clients.
    pub fn public_setup(&self) -> &TreePirSetup {
        &self.setup
    }

    /// The sub-databases (for measuring them one by one).
    pub fn databases(&self) -> &[Server] {
        self.shards.servers()
    }

    /// Answers a proof request: one query per sub-database, in colour order.
    pub fn answer(&self, queries: &[Query]) -> Result<Vec<Answer>, PirError> {
        self.shards.answer(queries, "TreePIR request")
    }
}

/// The client: one LWE client per sub-database.
pub struct TreePirClient {
    setup: TreePirSetup,
    shards: ShardClients,
}

/// The secret state of one proof request; decodes its answers once.
pub struct ProofState {
    leaf: u64,
    /// For each colour, the depth of the path node of that colour.
    depths: Vec<u32>,
    states: Vec<QueryState>,
}

impl TreePirClient {
    /// A client for the tree described by `setup`.
    pub fn new(setup: TreePirSetup) -> Self {
        let shards = ShardClients::new(&setup.databases);
        Self { setup, shards }
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
        let mut depths = vec![0u32; h as usize];
        let mut targets = vec![0u64; h as usize];
        if h > 0 {
            let positions = coloring::path_positions(h, &coloring::balanced_sizes(h), leaf)
                .map_err(|e| PirError::InvalidParameters(e.to_string()))?;
            for (depth, (color, position)) in (1..).zip(positions) {
                depths[usize::from(color)] = depth;
                targets[usize::from(color)] = position;
            }
        }
        let (queries, states) = self.shards.query(&targets)?;
        Ok((
            queries,
            ProofState {
                leaf,
                depths,
                states,
            },
        ))
    }

    /// The audit path (bottom-up, RFC 6962) carried by `answers`, after checking that it proves
    /// that `leaf_hash` is the leaf asked for under the root of the setup.
    pub fn decode(
        &self,
        state: ProofState,
        answers: &[Answer],
        leaf_hash: &Hash,
    ) -> Result<Vec<Hash>, PirError> {
        let (n, h, m) = (self.setup.leaves, self.setup.height(), state.leaf);
        let entries = self
            .shards
            .decode(state.states, answers, |_| true, "TreePIR answers")?;
        let mut by_level = vec![swapped::EMPTY; h as usize];
        for (depth, entry) in state.depths.iter().zip(entries.into_iter().flatten()) {
            by_level[(h - depth) as usize] = entry
                .try_into()
                .map_err(|_| PirError::malformed("TreePIR answer", "an entry is not 32 bytes"))?;
        }
        let path = swapped::audit_path(n, m, &by_level);
        merkle::verify_audit_path(m, n, leaf_hash, &path, &self.setup.root)?;
        Ok(path)
    }
}
