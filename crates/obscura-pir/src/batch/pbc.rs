//! The probabilistic-batch-code baseline (Angel, Chen, Laine, Setty, IEEE S&P 2018): every item
//! is stored in 3 of `B = ⌈1.5k⌉` buckets chosen by public hash functions, and any `k` distinct
//! items are fetched with one query per bucket after matching each item to one of its buckets.
//! It serves arbitrary batches, at three times the storage; for Merkle proofs TreePIR replaces
//! it, and the benchmarks compare the two on the same engine.
//!
//! The client matches items to buckets exactly (augmenting paths), so a batch fails only when
//! no assignment exists; for small batches that happens with probability about 10^-4
//! (`docs/design/batch-and-keyword.md` §2.4). A failure is a typed error before anything is
//! sent; the number of queries sent is always `B`, so the server never sees it. The client finds
//! an item's place in its bucket by re-hashing all `n` indices (`3n` evaluations of a fast
//! public hash), the cost that TreePIR's table-free indexing avoids.
//!
//! For Merkle proofs ([`PbcServer::for_merkle_tree`], [`PbcProofClient`]) the items are the
//! entries of the swapped tree ([`swapped`]), node `v` as item `v − 2`, and one audit path is
//! one batch of `h` items: the nodes on the leaf's path.

use rayon::prelude::*;

use obscura_math::matrix::PlaintextMatrix;
use sha2::{Digest as _, Sha256};

use super::merkle::{self, Hash, MerkleTree};
use super::shards::{self, ShardClients, ShardServers, Sharded, Shards};
use super::{coloring, swapped};
use crate::lookup::{self, Found, Lookup, Target};
use crate::lwe::{Answer, EngineOptions, PublicSetup, Query, QueryState, Records, Server};
use crate::scheme::{Progress, Scheme, SetupMessage, Summary};
use crate::wire::{self, Digest, Kind, Reader};
use crate::{PirClient, PirError, PirServer};

/// The batch-code baseline: batches of records fetched by index, one query per bucket.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pbc;

impl Scheme for Pbc {
    const KIND: Kind = Kind::PBC_SETUP;
    const NAME: &'static str = "pbc";
    type Setup = PbcSetup;
    type Query = Shards<Query>;
    type Answer = Shards<Answer>;
    type Server = PbcServer;
    type Client = PbcClient;
}

/// Choices made when building a batch-code database.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PbcOptions {
    /// The most items a batch fetches (the buckets are [`bucket_count`] of it).
    pub batch: usize,
    /// The public seed of the placement's hash functions.
    pub seed: u64,
    /// The options of every bucket's LWE database.
    pub engine: EngineOptions,
}

/// Hash functions per item.
pub const CHOICES: usize = 3;

/// The bucket count for batches of `k` items: `⌈1.5k⌉`, at least [`CHOICES`].
pub fn bucket_count(k: usize) -> usize {
    (3 * k).div_ceil(2).max(CHOICES)
}

/// The public placement of `n` items into buckets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Placement {
    items: u64,
    buckets: usize,
    seed: u64,
}

impl Placement {
    /// Items `0..items` over `buckets` buckets (at least [`CHOICES`]) with hash seed `seed`.
    pub fn new(items: u64, buckets: usize, seed: u64) -> Self {
        Self {
            items,
            buckets: buckets.max(CHOICES),
            seed,
        }
    }

    /// The number of items.
    pub fn items(&self) -> u64 {
        self.items
    }

    /// The number of buckets.
    pub fn buckets(&self) -> usize {
        self.buckets
    }

    /// The 3 distinct buckets of item `i`.
    pub fn candidates(&self, i: u64) -> [usize; CHOICES] {
        let mut out = [usize::MAX; CHOICES];
        for j in 0..CHOICES {
            let mut t = 0u64;
            out[j] = loop {
                let h = mix(self.seed ^ mix((i << 8) | ((j as u64) << 4) | t));
                let b = ((u128::from(h) * self.buckets as u128) >> 64) as usize;
                if !out[..j].contains(&b) {
                    break b;
                }
                t += 1;
            };
        }
        out
    }

    /// The items of every bucket, ascending (each item appears in its 3 buckets).
    pub fn bucket_contents(&self) -> Vec<Vec<u64>> {
        let mut contents = vec![Vec::new(); self.buckets];
        for i in 0..self.items {
            for b in self.candidates(i) {
                contents[b].push(i);
            }
        }
        contents
    }

    /// The position of item `i` in bucket `b` (one of its candidates): the number of smaller
    /// items stored there, found by hashing every smaller item.
    pub fn position(&self, b: usize, i: u64) -> u64 {
        (0..i)
            .into_par_iter()
            .filter(|&j| self.candidates(j).contains(&b))
            .count() as u64
    }

    /// An injective assignment of `items` (distinct) to buckets among their candidates, or
    /// `None` when there is none (augmenting paths: finds one whenever one exists).
    pub fn assign(&self, items: &[u64]) -> Option<Vec<usize>> {
        let candidates: Vec<[usize; CHOICES]> = items.iter().map(|&i| self.candidates(i)).collect();
        let mut owner: Vec<Option<usize>> = vec![None; self.buckets];
        for item in 0..items.len() {
            let mut visited = vec![false; self.buckets];
            if !augment(item, &candidates, &mut owner, &mut visited) {
                return None;
            }
        }
        let mut assignment = vec![0; items.len()];
        for (bucket, owner) in owner.iter().enumerate() {
            if let Some(item) = owner {
                assignment[*item] = bucket;
            }
        }
        Some(assignment)
    }
}

/// Tries to give `item` a bucket, moving earlier items along an augmenting path.
fn augment(
    item: usize,
    candidates: &[[usize; CHOICES]],
    owner: &mut [Option<usize>],
    visited: &mut [bool],
) -> bool {
    for &b in &candidates[item] {
        if std::mem::replace(&mut visited[b], true) {
            continue;
        }
        if owner[b].is_none_or(|other| augment(other, candidates, owner, visited)) {
            owner[b] = Some(item);
            return true;
        }
    }
    false
}

/// A 64-bit mixing function (the MurmurHash3 finalizer): public placement, not secrecy.
fn mix(mut x: u64) -> u64 {
    x ^= x >> 33;
    x = x.wrapping_mul(0xff51_afd7_ed55_8ccd);
    x ^= x >> 33;
    x = x.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    x ^ (x >> 33)
}

/// What a client needs: the placement, the record size and one LWE setup per bucket.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PbcSetup {
    placement: Placement,
    record_bytes: u64,
    databases: Vec<PublicSetup>,
    digest: Digest,
}

/// The most buckets a setup may announce (batches of up to about 2^20 items).
const MAX_BUCKETS: u64 = 1 << 21;

impl PbcSetup {
    fn new(placement: Placement, record_bytes: u64, databases: Vec<PublicSetup>) -> Self {
        let mut hash = Sha256::new();
        hash.update(b"obscura/pbc/setup/v1");
        hash.update(placement.items.to_le_bytes());
        hash.update((placement.buckets as u64).to_le_bytes());
        hash.update(placement.seed.to_le_bytes());
        hash.update(record_bytes.to_le_bytes());
        for database in &databases {
            hash.update(database.digest());
        }
        Self {
            placement,
            record_bytes,
            databases,
            digest: hash.finalize().into(),
        }
    }

    /// The encoded setup:
    ///
    /// ```text
    /// envelope (kind = PBC setup, digest) | items: u64 LE | buckets: u64 LE | seed: u64 LE
    /// record bytes: u64 LE | per bucket: length: u64 LE | the bucket's encoded LWE setup
    /// ```
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::new();
        wire::write_header(&mut out, Kind::PBC_SETUP, &self.digest);
        for field in [
            self.placement.items,
            self.placement.buckets as u64,
            self.placement.seed,
            self.record_bytes,
        ] {
            out.extend_from_slice(&field.to_le_bytes());
        }
        shards::write_setups(&mut out, &self.databases);
        out
    }

    /// Decodes and checks a setup: one database per bucket, each holding records of the
    /// setup's size, and the digest must match.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, PirError> {
        let (mut reader, digest) = Reader::open(bytes, Kind::PBC_SETUP)?;
        let (items, buckets, seed, record_bytes) =
            (reader.u64()?, reader.u64()?, reader.u64()?, reader.u64()?);
        if items == 0 || !(CHOICES as u64..=MAX_BUCKETS).contains(&buckets) {
            return Err(reader.error(format!(
                "{items} items in {buckets} buckets (1 item and {CHOICES} to {MAX_BUCKETS} buckets at least)"
            )));
        }
        let databases = shards::read_setups(&mut reader, buckets as usize, |b, database| {
            if database.geometry().record_bytes() != record_bytes {
                return Err(format!(
                    "bucket {b} holds records of {} bytes, not {record_bytes}",
                    database.geometry().record_bytes()
                ));
            }
            Ok(())
        })?;
        reader.finish()?;
        let setup = Self::new(
            Placement::new(items, buckets as usize, seed),
            record_bytes,
            databases,
        );
        if setup.digest != digest {
            return Err(PirError::malformed(
                Kind::PBC_SETUP.describe(),
                "the digest does not match the contents",
            ));
        }
        Ok(setup)
    }

    /// The placement of items into buckets.
    pub fn placement(&self) -> &Placement {
        &self.placement
    }

    /// The public setup of each bucket's database.
    pub fn databases(&self) -> &[PublicSetup] {
        &self.databases
    }
}

/// The server: one LWE database per bucket, each padded to the fullest bucket.
#[derive(Clone)]
pub struct PbcServer {
    setup: PbcSetup,
    shards: ShardServers,
}

impl PbcServer {
    /// Stores `n = data.len() / record_bytes` records of `record_bytes` bytes in
    /// [`bucket_count`]`(batch)` buckets (3 copies each), for batches of up to `batch` items.
    /// `progress(done, total)` counts the buckets built.
    pub fn from_records(
        data: &[u8],
        record_bytes: u64,
        batch: usize,
        seed: u64,
        options: EngineOptions,
        progress: Progress<'_>,
    ) -> Result<Self, PirError> {
        let size = record_bytes as usize;
        if size == 0 || !data.len().is_multiple_of(size) || data.is_empty() {
            return Err(PirError::InvalidParameters(format!(
                "{} bytes are not whole records of {record_bytes} bytes",
                data.len()
            )));
        }
        let placement = Placement::new((data.len() / size) as u64, bucket_count(batch), seed);
        let items = placement.bucket_contents();
        let longest = items.iter().map(Vec::len).max().unwrap_or(0).max(1);
        let contents: Vec<Vec<u8>> = items
            .par_iter()
            .map(|items| {
                let mut bucket = vec![0u8; longest * size];
                for (slot, &i) in bucket.chunks_exact_mut(size).zip(items) {
                    slot.copy_from_slice(&data[i as usize * size..][..size]);
                }
                bucket
            })
            .collect();
        let shards = ShardServers::from_records(&contents, record_bytes, &|_| options, progress)?;
        let setup = PbcSetup::new(placement, record_bytes, shards.public_setups());
        Ok(Self { setup, shards })
    }

    /// The public setup to hand to clients.
    pub fn public_setup(&self) -> &PbcSetup {
        &self.setup
    }

    /// The bucket databases (for measuring them one by one).
    pub fn databases(&self) -> &[Server] {
        self.shards.servers()
    }

    /// Answers a batch request: one query per bucket, in bucket order.
    pub fn answer(&self, queries: &[Query]) -> Result<Vec<Answer>, PirError> {
        self.shards.answer(queries, "PBC request")
    }
}

impl Sharded for PbcSetup {
    fn shards(&self) -> &[PublicSetup] {
        &self.databases
    }
}

impl SetupMessage for PbcSetup {
    fn to_bytes(&self) -> Vec<u8> {
        PbcSetup::to_bytes(self)
    }

    fn from_bytes(bytes: &[u8]) -> Result<Self, PirError> {
        PbcSetup::from_bytes(bytes)
    }

    fn digest(&self) -> &Digest {
        &self.digest
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
            "{} records of {} bytes in {} buckets",
            self.placement.items,
            self.record_bytes,
            self.databases.len()
        )
    }

    fn summary(&self) -> Summary<'_> {
        Summary {
            items: self.placement.items,
            item_bytes: self.record_bytes,
            version: 0,
            engine: self.largest_shard(),
            sub_queries: Some(self.databases.len() as u32),
            root: None,
        }
    }
}

impl PirServer for PbcServer {
    type Scheme = Pbc;
    type Data<'a> = Records<'a>;
    type Options = PbcOptions;

    fn build(
        records: Records<'_>,
        options: PbcOptions,
        progress: Progress<'_>,
    ) -> Result<Self, PirError> {
        let Records::Raw {
            bytes,
            record_bytes,
        } = records
        else {
            return Err(PirError::InvalidParameters(
                "a batch-code database is built from fixed-size records".into(),
            ));
        };
        Self::from_records(
            bytes,
            record_bytes,
            options.batch,
            options.seed,
            options.engine,
            progress,
        )
    }

    fn public_setup(&self) -> &PbcSetup {
        &self.setup
    }

    fn answer(&self, request: &Shards<Query>) -> Result<Shards<Answer>, PirError> {
        self.shards.answer(&request.0, "PBC request").map(Shards)
    }

    fn answer_batch(&self, requests: &[Shards<Query>]) -> Result<Vec<Shards<Answer>>, PirError> {
        self.shards.answer_batch(requests, "PBC request")
    }

    fn matrices(&self) -> Vec<&PlaintextMatrix> {
        self.shards.matrices()
    }

    fn from_parts(setup: PbcSetup, matrices: Vec<PlaintextMatrix>) -> Result<Self, PirError> {
        let shards = ShardServers::from_parts(&setup.databases, matrices, "PBC database")?;
        Ok(Self { setup, shards })
    }
}

impl PirClient for PbcClient {
    type Scheme = Pbc;
    type Target<'a> = &'a [u64];
    type State = BatchState;
    /// The records, in the order they were asked for.
    type Output = Vec<Vec<u8>>;
    const LOOKUP: Lookup = Lookup::Batch;
    type Pending = (BatchState, bool);

    fn new(setup: PbcSetup) -> Self {
        PbcClient::new(setup)
    }

    fn setup(&self) -> &PbcSetup {
        PbcClient::setup(self)
    }

    fn query(&mut self, items: &[u64]) -> Result<(Shards<Query>, BatchState), PirError> {
        PbcClient::query(self, items).map(|(queries, state)| (Shards(queries), state))
    }

    fn decode(&self, state: BatchState, answer: &Shards<Answer>) -> Result<Vec<Vec<u8>>, PirError> {
        PbcClient::decode(self, state, &answer.0)
    }

    /// One index is a batch of one, found as a [`Found::Record`].
    fn lookup(&mut self, target: Target<'_>) -> Result<(Vec<u8>, (BatchState, bool)), PirError> {
        let (items, one) = match &target {
            Target::Index(index) => (std::slice::from_ref(index), true),
            Target::Indices(items) => (*items, false),
            other => return Err(lookup::wrong_lookup(Self::LOOKUP, other)),
        };
        let (query, state) = lookup::encoded_query(self, items)?;
        Ok((query, (state, one)))
    }

    fn found(&self, (state, one): (BatchState, bool), answer: &[u8]) -> Result<Found, PirError> {
        let records = lookup::decoded_answer(self, state, answer)?;
        if !one {
            return Ok(Found::Records(records));
        }
        let [record]: [Vec<u8>; 1] = records
            .try_into()
            .map_err(|_| PirError::malformed("batch answer", "not one record"))?;
        Ok(Found::Record(record))
    }
}

/// The client: one LWE client per bucket.
pub struct PbcClient {
    setup: PbcSetup,
    shards: ShardClients,
}

/// The secret state of one batch request: which bucket answers which item.
pub struct BatchState {
    /// For each bucket, the position in the batch of the item it serves, if any.
    serves: Vec<Option<usize>>,
    states: Vec<QueryState>,
}

impl PbcClient {
    /// A client for the buckets described by `setup`.
    pub fn new(setup: PbcSetup) -> Self {
        let shards = ShardClients::new(&setup.databases);
        Self { setup, shards }
    }

    /// The public setup this client queries.
    pub fn setup(&self) -> &PbcSetup {
        &self.setup
    }

    /// One query per bucket (always all of them) fetching the distinct `items`. A batch that
    /// cannot be matched to buckets fails here, before anything is sent.
    pub fn query(&mut self, items: &[u64]) -> Result<(Vec<Query>, BatchState), PirError> {
        let placement = self.setup.placement;
        if let Some(&i) = items.iter().find(|&&i| i >= placement.items) {
            return Err(PirError::IndexOutOfRange {
                index: i,
                records: placement.items,
            });
        }
        let mut distinct = items.to_vec();
        distinct.sort_unstable();
        distinct.dedup();
        if distinct.len() != items.len() {
            return Err(PirError::InvalidParameters(
                "a batch holds each item once".into(),
            ));
        }
        let assignment = placement.assign(items).ok_or_else(|| {
            PirError::InvalidParameters(format!(
                "these {} items cannot be matched to {} buckets; retry the batch later",
                items.len(),
                placement.buckets
            ))
        })?;
        let mut serves = vec![None; placement.buckets];
        let mut targets = vec![0u64; placement.buckets];
        for (k, (&item, &bucket)) in items.iter().zip(&assignment).enumerate() {
            serves[bucket] = Some(k);
            targets[bucket] = placement.position(bucket, item);
        }
        let (queries, states) = self.shards.query(&targets)?;
        Ok((queries, BatchState { serves, states }))
    }

    /// The records of the batch, in the order they were asked for.
    pub fn decode(&self, state: BatchState, answers: &[Answer]) -> Result<Vec<Vec<u8>>, PirError> {
        let serves = &state.serves;
        let decoded = self.shards.decode(
            state.states,
            answers,
            |b| serves[b].is_some(),
            "PBC answers",
        )?;
        let mut records = vec![Vec::new(); serves.iter().flatten().count()];
        for (serves, record) in serves.iter().zip(decoded) {
            if let (Some(k), Some(record)) = (serves, record) {
                records[*k] = record;
            }
        }
        Ok(records)
    }
}

/// Bytes of one entry of the swapped tree: a SHA-256 hash.
const ENTRY_BYTES: u64 = 32;

/// The items that carry the audit path of leaf `m` of a tree of height `h`: the nodes `k_1 … k_h`
/// on its path (depth 1 first), node `v` as item `v − 2`.
pub fn proof_items(h: u32, m: u64) -> Vec<u64> {
    swapped::path_nodes(h, m).iter().map(|v| v - 2).collect()
}

impl PbcServer {
    /// The baseline serving Merkle proofs of `tree` (height at least 1): the swapped entry of
    /// every node below the root, node `v` as item `v − 2`, in buckets for batches of `h`
    /// items, one audit path each (see [`PbcProofClient`]).
    pub fn for_merkle_tree(
        tree: &MerkleTree,
        seed: u64,
        options: EngineOptions,
    ) -> Result<Self, PirError> {
        let h = tree.height();
        if h == 0 {
            return Err(PirError::InvalidParameters(
                "a tree of one leaf has no audit path to fetch".into(),
            ));
        }
        let entries: Vec<u8> = (2..2u64 << h)
            .into_par_iter()
            .flat_map_iter(|v| swapped::entry(tree, h, v))
            .collect();
        Self::from_records(&entries, ENTRY_BYTES, h as usize, seed, options, &|_, _| {})
    }
}

/// A client fetching Merkle audit paths from a [`PbcServer::for_merkle_tree`] store: each
/// request is the batch of the leaf's path items ([`proof_items`]), and each retrieved path is
/// verified against the root before it is returned.
pub struct PbcProofClient {
    client: PbcClient,
    leaves: u64,
    root: Hash,
}

/// The secret state of one audit-path request; decodes its answers once.
pub struct PbcProofState {
    leaf: u64,
    batch: BatchState,
}

impl PbcProofClient {
    /// A client for the store described by `setup`, holding the tree of `leaves` leaves whose
    /// root is `root` (both from a source the client trusts). Refuses a setup whose items are
    /// not the nodes of such a tree.
    pub fn new(setup: PbcSetup, leaves: u64, root: Hash) -> Result<Self, PirError> {
        let h = merkle::height_for(leaves);
        let items = setup.placement.items;
        if h == 0 || items != coloring::nodes(h) || setup.record_bytes != ENTRY_BYTES {
            return Err(PirError::InvalidParameters(format!(
                "a PBC store of {items} items of {} bytes does not hold the nodes of a tree of {leaves} leaves",
                setup.record_bytes
            )));
        }
        Ok(Self {
            client: PbcClient::new(setup),
            leaves,
            root,
        })
    }

    /// The store's public setup.
    pub fn setup(&self) -> &PbcSetup {
        self.client.setup()
    }

    /// One query per bucket fetching the audit path of leaf `leaf`. A path that cannot be
    /// matched to buckets fails here, before anything is sent (see [`Placement::assign`]).
    pub fn query(&mut self, leaf: u64) -> Result<(Vec<Query>, PbcProofState), PirError> {
        if leaf >= self.leaves {
            return Err(PirError::IndexOutOfRange {
                index: leaf,
                records: self.leaves,
            });
        }
        let items = proof_items(merkle::height_for(self.leaves), leaf);
        let (queries, batch) = self.client.query(&items)?;
        Ok((queries, PbcProofState { leaf, batch }))
    }

    /// The audit path (bottom-up, RFC 6962) carried by `answers`, after checking that it proves
    /// that `leaf_hash` is the leaf asked for under the root.
    pub fn decode(
        &self,
        state: PbcProofState,
        answers: &[Answer],
        leaf_hash: &Hash,
    ) -> Result<Vec<Hash>, PirError> {
        let by_level = self
            .client
            .decode(state.batch, answers)?
            .iter()
            .rev()
            .map(|record| Hash::try_from(record.as_slice()))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|_| PirError::malformed("PBC answer", "an entry is not 32 bytes"))?;
        let (n, m) = (self.leaves, state.leaf);
        let path = swapped::audit_path(n, m, &by_level);
        merkle::verify_audit_path(m, n, leaf_hash, &path, &self.root)?;
        Ok(path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn candidates_are_distinct_and_contents_hold_three_copies() {
        let placement = Placement::new(1000, bucket_count(10), 42);
        assert_eq!(placement.buckets(), 15);
        let contents = placement.bucket_contents();
        assert_eq!(contents.iter().map(Vec::len).sum::<usize>(), 3000);
        for i in 0..1000 {
            let c = placement.candidates(i);
            assert!(c[0] != c[1] && c[1] != c[2] && c[0] != c[2]);
            for b in c {
                let position = placement.position(b, i) as usize;
                assert_eq!(contents[b][position], i);
            }
        }
    }

    #[test]
    fn matching_finds_an_assignment_whenever_one_exists() {
        let placement = Placement::new(1 << 16, bucket_count(20), 7);
        let mut failures = 0;
        for batch in 0..200u64 {
            let items: Vec<u64> = (0..20)
                .map(|j| (batch * 7919 + j * 104_729) % (1 << 16))
                .collect();
            match placement.assign(&items) {
                Some(assignment) => {
                    let mut used = assignment.clone();
                    used.sort_unstable();
                    used.dedup();
                    assert_eq!(used.len(), items.len());
                    for (&i, &b) in items.iter().zip(&assignment) {
                        assert!(placement.candidates(i).contains(&b));
                    }
                }
                None => failures += 1,
            }
        }
        assert!(failures <= 2, "{failures} of 200 batches failed");
        // Four items sharing three buckets cannot be matched.
        let tiny = Placement::new(4, 3, 1);
        assert_eq!(tiny.assign(&[0, 1, 2, 3]), None);
        assert!(tiny.assign(&[0, 1, 2]).is_some());
    }

    /// Audit paths retrieved through the baseline equal the tree's own, for every leaf of a
    /// tree whose size is not a power of two (empty levels left out), and a wrong leaf hash or
    /// an index beyond the tree is refused.
    #[test]
    fn proofs_retrieved_through_buckets_are_the_trees_audit_paths() {
        let leaves: Vec<[u8; 8]> = (0..45u64).map(u64::to_le_bytes).collect();
        let tree = MerkleTree::from_leaves(&leaves);
        let server = PbcServer::for_merkle_tree(&tree, 5, EngineOptions::default()).unwrap();
        let mut client =
            PbcProofClient::new(server.public_setup().clone(), tree.len(), tree.root()).unwrap();
        let placement = *client.setup().placement();
        let mut retrieved = 0;
        for m in 0..tree.len() {
            if placement.assign(&proof_items(tree.height(), m)).is_none() {
                continue;
            }
            let (queries, state) = client.query(m).unwrap();
            assert_eq!(queries.len(), placement.buckets());
            let answers = server.answer(&queries).unwrap();
            let leaf = merkle::leaf_hash(&leaves[m as usize]);
            let path = client.decode(state, &answers, &leaf).unwrap();
            assert_eq!(Some(path), tree.audit_path(m), "leaf {m}");
            retrieved += 1;
        }
        assert!(
            retrieved >= 40,
            "only {retrieved} of 45 paths matched to buckets"
        );

        let m = (0..tree.len())
            .find(|&m| placement.assign(&proof_items(tree.height(), m)).is_some())
            .unwrap();
        let (queries, state) = client.query(m).unwrap();
        let answers = server.answer(&queries).unwrap();
        let wrong = merkle::leaf_hash(b"not a leaf");
        assert!(matches!(
            client.decode(state, &answers, &wrong),
            Err(PirError::InvalidProof(_))
        ));
        assert!(matches!(
            client.query(45),
            Err(PirError::IndexOutOfRange {
                index: 45,
                records: 45
            })
        ));
    }

    #[test]
    fn a_proof_client_refuses_a_store_of_another_tree() {
        let leaves: Vec<[u8; 8]> = (0..8u64).map(u64::to_le_bytes).collect();
        let tree = MerkleTree::from_leaves(&leaves);
        let server = PbcServer::for_merkle_tree(&tree, 5, EngineOptions::default()).unwrap();
        let setup = server.public_setup().clone();
        assert!(PbcProofClient::new(setup.clone(), 8, tree.root()).is_ok());
        assert!(PbcProofClient::new(setup, 9, tree.root()).is_err());
        let single = MerkleTree::from_leaves(&leaves[..1]);
        assert!(PbcServer::for_merkle_tree(&single, 5, EngineOptions::default()).is_err());
    }
}
