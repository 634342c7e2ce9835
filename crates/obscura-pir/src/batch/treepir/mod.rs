//! TreePIR on the LWE engine: the tree's nodes are split into one sub-database per colour class
//! ([`super::coloring`]), each entry holding the value of its node's *sibling*, so the `h`
//! entries on a leaf's path are exactly the leaf's audit path. The client sends one query to
//! every sub-database (always `h`, each with its own fresh secret), decodes the `h` hashes,
//! drops the levels that are empty in a tree whose size is not a power of two, and verifies the
//! path against the root it holds. Storage is the tree itself: `2^(h+1) − 2` entries of 32
//! bytes over all sub-databases, against three copies for the batch-code baseline.
//!
//! A client that knows a leaf's index but not its hash fetches the hash privately too, with a
//! second request of the same shape ([`TreePirClient::query_leaf_hash`]); verifying the path
//! with it then proves it is that leaf's hash under the root.

mod append;
mod patch;

use rayon::prelude::*;
use sha2::{Digest as _, Sha256};

use super::coloring::{self, Coloring};
use super::merkle::{self, Hash, MerkleTree};
use super::shards::{self, ShardClients, ShardServers, Sharded, Shards};
use super::swapped;
use crate::lookup::{self, Found, Lookup, Target};
use crate::lwe::{Answer, EngineOptions, Footprint, PublicSetup, Query, QueryState, Server};
use crate::scheme::{AnswerOf, Progress, Scheme, SetupMessage, Summary};
use crate::wire::{self, Digest, Kind, Reader};
use crate::PirError;
use crate::{Encode, Message, PirClient, PirServer};
use obscura_math::matrix::PlaintextMatrix;

/// TreePIR: the audit paths of a Merkle tree, fetched by leaf.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TreePir;

impl Scheme for TreePir {
    const KIND: Kind = Kind::TREEPIR_SETUP;
    const NAME: &'static str = "treepir";
    type Setup = TreePirSetup;
    type Query = Shards<Query>;
    type Answer = Shards<Answer>;
    type Server = TreePirServer;
    type Client = TreePirClient;
}

/// Bytes of a sub-database entry: one SHA-256 hash.
const ENTRY_BYTES: u64 = 32;

/// The height of the perfect tree a build embeds `leaves` leaves in: the one that holds
/// `capacity` leaves when that is more.
fn height_with_room(leaves: u64, capacity: Option<u64>) -> u32 {
    merkle::height_for(leaves.max(capacity.unwrap_or(0)))
}

/// The options of a sub-database of `records` entries: those of the tree, with the plaintext
/// modulus chosen for any entries (a capacity of its own size), as appends change them.
fn shard_options(options: EngineOptions, records: u64) -> EngineOptions {
    EngineOptions {
        capacity: Some(records),
        value_bytes: None,
        ..options
    }
}

/// Bytes of an encoded TreePIR setup before its sub-databases' setups: a header, the leaf count,
/// the height, the version and the root (each sub-database's setup then comes with its length,
/// a `u64`).
const SETUP_FIELD_BYTES: u64 = (wire::HEADER_BYTES + 8 + 1 + 8 + 32) as u64;

/// What a client needs: the tree's size, height and root, and one LWE setup per colour class.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TreePirSetup {
    leaves: u64,
    height: u32,
    version: u64,
    root: Hash,
    databases: Vec<PublicSetup>,
    digest: Digest,
}

impl TreePirSetup {
    fn new(
        leaves: u64,
        height: u32,
        version: u64,
        root: Hash,
        databases: Vec<PublicSetup>,
    ) -> Self {
        let mut hash = Sha256::new();
        hash.update(b"obscura/treepir/setup/v2");
        hash.update(leaves.to_le_bytes());
        hash.update(height.to_le_bytes());
        hash.update(version.to_le_bytes());
        hash.update(root);
        for database in &databases {
            hash.update(database.digest());
        }
        Self {
            leaves,
            height,
            version,
            root,
            databases,
            digest: hash.finalize().into(),
        }
    }

    /// The number of leaves of the tree.
    pub fn leaves(&self) -> u64 {
        self.leaves
    }

    /// The tree head the client checks proofs against.
    pub fn root(&self) -> &Hash {
        &self.root
    }

    /// The height of the perfect tree the proofs come from (the number of sub-databases): at
    /// least the tree's own, more where the build left room for appends.
    pub fn height(&self) -> u32 {
        self.height
    }

    /// The leaves the tree can grow to without a new setup: `2^height`.
    pub fn capacity(&self) -> u64 {
        1 << self.height
    }

    /// The tree's version: 0 as built, one more for each batch of leaves appended.
    pub fn version(&self) -> u64 {
        self.version
    }

    /// The public setup of each sub-database, in colour order.
    pub fn databases(&self) -> &[PublicSetup] {
        &self.databases
    }

    /// The digest that names this setup: SHA-256 over the leaf count, the height, the version,
    /// the root and the digests of the sub-databases' setups.
    pub fn digest(&self) -> &Digest {
        &self.digest
    }

    /// The encoded setup:
    ///
    /// ```text
    /// envelope (kind = TreePIR setup, digest) | leaves: u64 LE | height: u8
    /// version: u64 LE | root: 32 bytes
    /// h times, in colour order: length: u64 LE | the sub-database's encoded LWE public setup
    /// ```
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::new();
        wire::write_header(&mut out, Kind::TREEPIR_SETUP, &self.digest);
        out.extend_from_slice(&self.leaves.to_le_bytes());
        out.push(self.height as u8);
        out.extend_from_slice(&self.version.to_le_bytes());
        out.extend_from_slice(&self.root);
        shards::write_setups(&mut out, &self.databases);
        out
    }

    /// Decodes and checks a setup: the height must hold the leaves; there must be one
    /// sub-database per level of the tree, each
    /// holding its colour class (32-byte entries, as many as the balanced colouring gives that
    /// colour), and the digest must match. Lengths are checked before anything is allocated.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, PirError> {
        let (mut reader, digest) = Reader::open(bytes, Kind::TREEPIR_SETUP)?;
        let leaves = reader.u64()?;
        let h = u32::from(reader.u8()?);
        let version = reader.u64()?;
        let root: Hash = reader.take(32)?.try_into().expect("32 bytes");
        if leaves == 0 {
            return Err(reader.error("a tree has at least one leaf"));
        }
        if h > coloring::MAX_HEIGHT {
            return Err(reader.error(format!(
                "a tree of height {h} is above the supported {}",
                coloring::MAX_HEIGHT
            )));
        }
        if merkle::height_for(leaves) > h {
            return Err(reader.error(format!("{leaves} leaves do not fit a tree of height {h}")));
        }
        let sizes = match h {
            0 => Vec::new(),
            h => coloring::balanced_sizes(h),
        };
        let databases = shards::read_setups(&mut reader, sizes.len(), |color, database| {
            let (g, size) = (database.geometry(), sizes[color]);
            if g.records() != size || g.record_bytes() != ENTRY_BYTES {
                return Err(format!(
                    "sub-database {color} holds {} records of {} bytes where its colour class has {size} of {ENTRY_BYTES}",
                    g.records(),
                    g.record_bytes()
                ));
            }
            Ok(())
        })?;
        reader.finish()?;
        let setup = Self::new(leaves, h, version, root, databases);
        if setup.digest != digest {
            return Err(PirError::malformed(
                Kind::TREEPIR_SETUP.describe(),
                "the digest does not match the contents",
            ));
        }
        Ok(setup)
    }
}

/// The server: one LWE database per colour class.
#[derive(Clone)]
pub struct TreePirServer {
    setup: TreePirSetup,
    shards: ShardServers,
}

impl TreePirServer {
    /// Splits `tree`, embedded in the perfect tree that holds `options.capacity` leaves (at
    /// least its own), into its colour classes and builds one database of 32-byte entries per
    /// class, each with a plaintext modulus correct for any entries (appends fill the empty
    /// ones). `progress(done, total)` counts finished sub-databases.
    pub fn from_tree(
        tree: &MerkleTree,
        options: EngineOptions,
        progress: &(dyn Fn(u64, u64) + Sync),
    ) -> Result<Self, PirError> {
        let h = height_with_room(tree.len(), options.capacity);
        let classes = match h {
            0 => Vec::new(),
            h => Coloring::balanced(h)?.classes(),
        };
        let contents: Vec<Vec<u8>> = classes
            .par_iter()
            .map(|class| {
                class
                    .iter()
                    .flat_map(|&v| swapped::entry(tree, h, v))
                    .collect()
            })
            .collect();
        let shards = ShardServers::from_records(
            &contents,
            ENTRY_BYTES,
            &|records| shard_options(options, records),
            progress,
        )?;
        let setup = TreePirSetup::new(tree.len(), h, 0, tree.root(), shards.public_setups());
        Ok(Self { setup, shards })
    }

    /// What [`TreePirServer::from_tree`] of a tree of `leaves` leaves will hold and produce: the
    /// tree's nodes, the colour classes' contents and every sub-database, set up side by side
    /// (see [`Footprint`]). The leaves' own bytes are not counted.
    pub fn footprint(leaves: u64, options: EngineOptions) -> Result<Footprint, PirError> {
        let h = height_with_room(leaves, options.capacity);
        let sizes = match h {
            0 => Vec::new(),
            h if h > coloring::MAX_COLORED_HEIGHT => {
                return Err(PirError::InvalidParameters(format!(
                    "a tree of height {h} is higher than the {} supported",
                    coloring::MAX_COLORED_HEIGHT
                )))
            }
            h => coloring::balanced_sizes(h),
        };
        let engines = sizes
            .iter()
            .map(|&size| {
                Server::footprint(
                    size * ENTRY_BYTES,
                    ENTRY_BYTES,
                    shard_options(options, size),
                )
            })
            .collect::<Result<Vec<_>, _>>()?;
        let largest_setup = engines.iter().map(|e| e.setup_bytes()).max().unwrap_or(0);
        let setups: u64 = engines.iter().map(|e| e.setup_bytes()).sum();
        // The tree keeps every node (fewer than two per leaf); the classes hold one entry per
        // node below the root; the server's setup keeps a copy of each sub-database's setup.
        let nodes = 2 * leaves * ENTRY_BYTES;
        let contents = coloring::nodes(h) * ENTRY_BYTES;
        let setup_bytes = SETUP_FIELD_BYTES + engines.len() as u64 * 8 + setups;
        Ok(Footprint::side_by_side(engines)
            .holding(nodes + contents + setups)
            .encoded_as(setup_bytes, largest_setup))
    }

    /// A server from stored sub-databases, in colour order; checks that each belongs to `setup`.
    pub fn from_parts(setup: TreePirSetup, databases: Vec<Server>) -> Result<Self, PirError> {
        if databases.len() != setup.databases.len()
            || databases
                .iter()
                .zip(&setup.databases)
                .any(|(server, public)| server.public_setup() != public)
        {
            return Err(PirError::SetupMismatch {
                what: Kind::TREEPIR_SETUP.describe(),
            });
        }
        Ok(Self {
            setup,
            shards: ShardServers::from_servers(databases),
        })
    }

    /// The public setup to hand to clients.
    pub fn public_setup(&self) -> &TreePirSetup {
        &self.setup
    }

    /// The sub-databases (for measuring them one by one).
    pub fn databases(&self) -> &[Server] {
        self.shards.servers()
    }

    /// Answers an audit-path request: one query per sub-database, in colour order.
    pub fn answer(&self, queries: &[Query]) -> Result<Vec<Answer>, PirError> {
        self.shards.answer(queries, "TreePIR request")
    }
}

impl Sharded for TreePirSetup {
    fn shards(&self) -> &[PublicSetup] {
        &self.databases
    }
}

impl SetupMessage for TreePirSetup {
    fn to_bytes(&self) -> Vec<u8> {
        TreePirSetup::to_bytes(self)
    }

    fn from_bytes(bytes: &[u8]) -> Result<Self, PirError> {
        TreePirSetup::from_bytes(bytes)
    }

    fn digest(&self) -> &Digest {
        &self.digest
    }

    fn patched(self, patch: &[u8]) -> Result<Self, PirError> {
        TreePirSetup::patched(self, patch)
    }

    fn query_bytes(&self) -> u64 {
        self.framed_query_bytes()
    }

    fn answer_bytes(&self) -> u64 {
        self.framed_answer_bytes()
    }

    fn matrix_shapes(&self) -> Vec<(usize, usize)> {
        self.shard_matrix_shapes()
    }

    fn describe(&self) -> String {
        format!(
            "a Merkle tree of {} leaves, height {}, {} sub-databases, root {}",
            self.leaves,
            self.height(),
            self.databases.len(),
            self.root
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect::<String>()
        )
    }

    fn summary(&self) -> Summary<'_> {
        Summary {
            items: self.leaves,
            item_bytes: ENTRY_BYTES,
            version: self.version,
            engine: self.largest_shard(),
            sub_queries: Some(self.height()),
            root: Some(self.root),
        }
    }
}

impl PirServer for TreePirServer {
    type Scheme = TreePir;
    type Data<'a> = &'a MerkleTree;
    type Options = EngineOptions;

    fn build(
        tree: &MerkleTree,
        options: EngineOptions,
        progress: Progress<'_>,
    ) -> Result<Self, PirError> {
        Self::from_tree(tree, options, progress)
    }

    fn public_setup(&self) -> &TreePirSetup {
        &self.setup
    }

    fn answer(&self, request: &Shards<Query>) -> Result<Shards<Answer>, PirError> {
        self.shards
            .answer(&request.0, "TreePIR request")
            .map(Shards)
    }

    fn answer_batch(&self, requests: &[Shards<Query>]) -> Result<Vec<Shards<Answer>>, PirError> {
        self.shards.answer_batch(requests, "TreePIR request")
    }

    fn matrices(&self) -> Vec<&PlaintextMatrix> {
        self.shards.matrices()
    }

    fn update(&mut self, changes: &[crate::Change]) -> Result<Option<Vec<u8>>, PirError> {
        self.append(changes).map(Some)
    }

    fn from_parts(setup: TreePirSetup, matrices: Vec<PlaintextMatrix>) -> Result<Self, PirError> {
        let shards = ShardServers::from_parts(&setup.databases, matrices, "TreePIR database")?;
        Ok(Self { setup, shards })
    }
}

/// A leaf whose audit path a client asks for: its index and its hash, which the path is
/// verified with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Leaf {
    /// The leaf's index, from 0.
    pub index: u64,
    /// Its hash, `SHA-256(0x00 ‖ data)`.
    pub hash: Hash,
}

impl PirClient for TreePirClient {
    type Scheme = TreePir;
    type Target<'a> = Leaf;
    type State = (ProofState, Hash);
    /// The verified audit path, leaf to root.
    type Output = Vec<Hash>;
    const LOOKUP: Lookup = Lookup::AuditPath;
    type Pending = TreeLookup;

    fn new(setup: TreePirSetup) -> Self {
        TreePirClient::new(setup)
    }

    fn setup(&self) -> &TreePirSetup {
        TreePirClient::setup(self)
    }

    fn query(&mut self, leaf: Leaf) -> Result<(Shards<Query>, (ProofState, Hash)), PirError> {
        let (queries, state) = TreePirClient::query(self, leaf.index)?;
        Ok((Shards(queries), (state, leaf.hash)))
    }

    fn decode(
        &self,
        (state, hash): (ProofState, Hash),
        answer: &Shards<Answer>,
    ) -> Result<Vec<Hash>, PirError> {
        TreePirClient::decode(self, state, &answer.0, &hash)
    }

    fn lookup(&mut self, target: Target<'_>) -> Result<(Vec<u8>, TreeLookup), PirError> {
        match target {
            Target::AuditPath { leaf, leaf_hash } => {
                let leaf = Leaf {
                    index: leaf,
                    hash: leaf_hash,
                };
                let (query, (proof, hash)) = lookup::encoded_query(self, leaf)?;
                Ok((query, TreeLookup::Path(proof, hash)))
            }
            Target::LeafHash(leaf) => {
                let (queries, state) = self.query_leaf_hash(leaf)?;
                Ok((Shards(queries).to_bytes(), TreeLookup::LeafHash(state)))
            }
            other => Err(lookup::wrong_lookup(Self::LOOKUP, &other)),
        }
    }

    fn found(&self, pending: TreeLookup, answer: &[u8]) -> Result<Found, PirError> {
        match pending {
            TreeLookup::Path(proof, hash) => {
                lookup::decoded_answer(self, (proof, hash), answer).map(Found::Path)
            }
            TreeLookup::LeafHash(state) => {
                let answers = AnswerOf::<TreePir>::from_bytes(answer, &self.setup)?;
                self.decode_leaf_hash(state, &answers.0)
                    .map(Found::LeafHash)
            }
        }
    }
}

/// The secret state of a lookup in a Merkle tree: an audit path's, or a leaf hash's.
pub enum TreeLookup {
    /// A request for the audit path of the leaf with this hash.
    Path(ProofState, Hash),
    /// A request for a leaf's hash.
    LeafHash(LeafHashState),
}

/// The client: one LWE client per sub-database.
pub struct TreePirClient {
    setup: TreePirSetup,
    shards: ShardClients,
}

/// The secret state of one audit-path request; decodes its answers once.
pub struct ProofState {
    leaf: u64,
    /// For each colour, the depth of the path node of that colour.
    depths: Vec<u32>,
    states: Vec<QueryState>,
}

/// The secret state of a request for a leaf's own hash; decodes its answers once.
pub struct LeafHashState {
    proof: ProofState,
    /// The level of the fetched path whose entry is the leaf's hash; `None` for a tree of one
    /// leaf, whose hash is the root.
    level: Option<u32>,
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
        self.check_leaf(leaf)?;
        let h = self.setup.height();
        let mut depths = vec![0u32; h as usize];
        let mut targets = vec![0u64; h as usize];
        if h > 0 {
            let positions = coloring::path_positions(h, &coloring::balanced_sizes(h), leaf)?;
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

    /// The `h` queries that fetch the hash of leaf `leaf` itself, for a client that knows only
    /// its index. They ask for the path of the leaf whose swapped path holds that hash
    /// ([`swapped::leaf_hash_position`]), so they look like any other audit-path request. The hash
    /// [`decode_leaf_hash`](Self::decode_leaf_hash) returns is not checked by itself: verifying
    /// the audit path with it ([`decode`](Self::decode)) proves it is leaf `leaf`'s hash under
    /// the root.
    pub fn query_leaf_hash(&mut self, leaf: u64) -> Result<(Vec<Query>, LeafHashState), PirError> {
        self.check_leaf(leaf)?;
        let position = swapped::leaf_hash_position(self.setup.leaves, leaf);
        let (queries, proof) = self.query(position.map_or(leaf, |(carrier, _)| carrier))?;
        let level = position.map(|(_, level)| level);
        Ok((queries, LeafHashState { proof, level }))
    }

    /// The leaf hash carried by the answers to [`query_leaf_hash`](Self::query_leaf_hash)'s
    /// queries (not verified yet, see there).
    pub fn decode_leaf_hash(
        &self,
        state: LeafHashState,
        answers: &[Answer],
    ) -> Result<Hash, PirError> {
        let entries = self.path_entries(state.proof, answers)?;
        Ok(match state.level {
            Some(level) => entries[level as usize],
            None => self.setup.root,
        })
    }

    /// The audit path (bottom-up, RFC 6962) carried by `answers`, after checking that it proves
    /// that `leaf_hash` is the leaf asked for under the root of the setup.
    pub fn decode(
        &self,
        state: ProofState,
        answers: &[Answer],
        leaf_hash: &Hash,
    ) -> Result<Vec<Hash>, PirError> {
        let (n, m) = (self.setup.leaves, state.leaf);
        let by_level = self.path_entries(state, answers)?;
        let path = swapped::audit_path(n, m, &by_level);
        merkle::verify_audit_path(m, n, leaf_hash, &path, &self.setup.root)?;
        Ok(path)
    }

    /// Refuses a leaf index beyond the tree.
    fn check_leaf(&self, leaf: u64) -> Result<(), PirError> {
        let n = self.setup.leaves;
        if leaf >= n {
            return Err(PirError::IndexOutOfRange {
                index: leaf,
                records: n,
            });
        }
        Ok(())
    }

    /// The `h` entries on the requested leaf's swapped path, by level (`[ℓ]` is the entry `ℓ`
    /// levels above the leaf level), unverified.
    fn path_entries(&self, state: ProofState, answers: &[Answer]) -> Result<Vec<Hash>, PirError> {
        let h = self.setup.height();
        let entries = self
            .shards
            .decode(state.states, answers, |_| true, "TreePIR answers")?;
        let mut by_level = vec![swapped::EMPTY; h as usize];
        for (depth, entry) in state.depths.iter().zip(entries.into_iter().flatten()) {
            by_level[(h - depth) as usize] = entry
                .try_into()
                .map_err(|_| PirError::malformed("TreePIR answer", "an entry is not 32 bytes"))?;
        }
        Ok(by_level)
    }
}
