//! A Merkle tree grown by appending leaves, as certificate-transparency logs grow, within the
//! height its setup was built for ([`TreePirSetup::capacity`]); and consistency proofs read
//! from the served entries.
//!
//! Appending `k` leaves to a tree of `n` changes the nodes whose range takes a new leaf: the new
//! leaves and their ancestors, fewer than `2k + h` ([`merkle::appended_nodes`]). A changed node's
//! value is the entry of its sibling, in the sub-database of the sibling's colour, so each
//! sub-database takes its changed entries as an update of the LWE engine (`ΔD·A` added to its
//! hint). The old nodes the new ones are hashed from (at most one per level) are read back from
//! the entries too: the server keeps nothing beside its sub-databases. Every sub-database's
//! next version is computed and checked before any of them changes.

use rayon::prelude::*;

use super::{TreePirServer, TreePirSetup};
use crate::batch::coloring;
use crate::batch::merkle::{self, Hash};
use crate::batch::swapped;
use crate::{Change, PirError};

impl TreePirServer {
    /// Appends the leaves of `changes` (each a [`Change::Append`] of the next index, in order;
    /// the value is the leaf's data, hashed as `SHA-256(0x00 ‖ data)`) as the tree's next
    /// version: new root and leaf count, the sub-databases' changed entries and hints.
    ///
    /// Refused before anything changes: any other change, or an index out of order
    /// ([`PirError::InvalidParameters`]); more leaves than the tree's height holds
    /// ([`PirError::NeedsNewSetup`]). Returns the [patch](super::patch) that turns the previous
    /// version's setup into the new one.
    pub(super) fn append(&mut self, changes: &[Change]) -> Result<Vec<u8>, PirError> {
        let (n, h) = (self.setup.leaves, self.setup.height);
        let mut values = Vec::with_capacity(changes.len());
        for (expected, change) in (n..).zip(changes) {
            match change {
                Change::Append { index, value } if *index == expected => values.push(value),
                Change::Append { index, .. } => {
                    return Err(PirError::InvalidParameters(format!(
                        "leaf {index} is appended where leaf {expected} is next: a tree of {n} leaves takes appended leaves in order from index {n}"
                    )))
                }
                other => {
                    return Err(PirError::InvalidParameters(format!(
                        "a Merkle tree changes only by appending leaves, not by {}",
                        other.op()
                    )))
                }
            }
        }
        if values.is_empty() {
            return Err(PirError::InvalidParameters("no leaves to append".into()));
        }
        let total = n + values.len() as u64;
        let capacity = self.setup.capacity();
        if total > capacity {
            return Err(PirError::NeedsNewSetup(Box::new(
                PirError::InvalidParameters(format!(
                    "{total} leaves do not fit the tree's height {h}, which holds {capacity}"
                )),
            )));
        }
        let hashes: Vec<Hash> = values.par_iter().map(|v| merkle::leaf_hash(v)).collect();
        let levels = merkle::appended_nodes(n, &hashes, h, |level, index| self.node(level, index));
        let root = levels[h as usize].1[0];
        // Each changed node below the top is its sibling's entry.
        let changed: Vec<(u64, Hash)> = (0..h)
            .zip(&levels)
            .flat_map(|(level, (first, values))| {
                (*first..)
                    .zip(values)
                    .map(move |(index, value)| (swapped::node_at(h, level, index) ^ 1, *value))
            })
            .collect();
        // The places of the new leaves' paths and their siblings, worked out together, a level's
        // nodes (contiguous) in one slice, the top level first.
        let positions = coloring::range_positions(h, &coloring::balanced_sizes(h), n..total)?;
        let levels: Vec<_> = positions.chunk_by(|a, b| a.0 .0 == b.0 .0).collect();
        let placed: Vec<((u8, u64), Hash)> = changed
            .par_iter()
            .map(|&(node, value)| {
                let (level, index) = swapped::node_position(h, node);
                let listed = levels
                    .get((h - 1 - level) as usize)
                    .and_then(|nodes| nodes.get(index.checked_sub(nodes[0].0 .1)? as usize))
                    .filter(|listed| listed.0 == (level, index));
                match listed {
                    Some(&(_, position)) => Ok((position, value)),
                    None => Ok((self.position(node)?, value)),
                }
            })
            .collect::<Result<_, PirError>>()?;
        let mut by_shard: Vec<Vec<Change>> = vec![Vec::new(); h as usize];
        for ((color, position), value) in placed {
            by_shard[usize::from(color)].push(Change::Set {
                index: position,
                value: value.to_vec(),
            });
        }
        let servers = self.shards.servers_mut();
        let prepared = servers
            .par_iter_mut()
            .zip(&by_shard)
            .map(|(server, changes)| match changes.is_empty() {
                true => Ok(None),
                false => server.prepare(changes).map(Some),
            })
            .collect::<Result<Vec<_>, PirError>>()?;
        // Every change is checked: the old setup's copies of the sub-databases' setups are let
        // go first, so that each sub-database changes its hint in place instead of copying it.
        let base = *self.setup.digest();
        self.setup.databases = Vec::new();
        let patches: Vec<(u8, Vec<u8>)> = servers
            .par_iter_mut()
            .zip(prepared)
            .enumerate()
            .filter_map(|(color, (server, prepared))| {
                let color = u8::try_from(color).expect("fewer than 256 colours");
                prepared.map(|prepared| (color, server.commit(prepared)))
            })
            .collect();
        let next = TreePirSetup::new(
            total,
            h,
            self.setup.version + 1,
            root,
            self.shards.public_setups(),
        );
        let patch = super::patch::encode(&base, &next, &patches);
        self.setup = next;
        Ok(patch)
    }

    /// The RFC 6962 consistency proof that the tree of the first `first` leaves is a prefix of
    /// the tree served (RFC 9162 §2.1.4.1), its hashes read from the sub-databases' entries;
    /// `None` when `first` is 0 or more than the leaves.
    pub fn consistency_proof(&self, first: u64) -> Option<Vec<Hash>> {
        merkle::consistency_proof(first, self.setup.leaves, |level, index| {
            self.node(level, index)
        })
    }

    /// The value of node (`level`, `index`) of the tree's embedding, a non-empty one: the root
    /// at the top, below it the entry its sibling stores.
    fn node(&self, level: u32, index: u64) -> Hash {
        let h = self.setup.height;
        if level == h {
            return self.setup.root;
        }
        let sibling = swapped::node_at(h, level, index) ^ 1;
        // A node of the perfect tree of the setup's height has a place in its colour class, and
        // the sub-databases are those classes (both checked when the server was made).
        let (color, position) = self
            .position(sibling)
            .expect("a node of the tree has a place");
        let entry = self.shards.servers()[usize::from(color)]
            .record(position)
            .expect("a place within its class");
        entry.try_into().expect("entries of 32 bytes")
    }

    /// The colour of node `v` and its position in its colour class.
    fn position(&self, v: u64) -> Result<(u8, u64), PirError> {
        let h = self.setup.height;
        let (level, index) = swapped::node_position(h, v);
        let depth = h - level;
        let first_leaf = index << level;
        let positions = coloring::path_positions(h, &coloring::balanced_sizes(h), first_leaf)?;
        Ok(positions[depth as usize - 1])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::batch::coloring::Coloring;
    use crate::batch::merkle::MerkleTree;
    use crate::batch::treepir::TreePirClient;
    use crate::lwe::server::encode_database;
    use crate::lwe::{EngineOptions, Layout};
    use crate::params::ParamSet;
    use crate::PirServer;
    use obscura_math::hint;
    use proptest::prelude::*;

    /// Leaves `leaf 0`, `leaf 1`, ...
    fn leaves(n: u64) -> Vec<Vec<u8>> {
        (0..n).map(|i| format!("leaf {i}").into_bytes()).collect()
    }

    fn appends(from: u64, leaves: &[Vec<u8>]) -> Vec<Change> {
        (from..)
            .zip(leaves)
            .map(|(index, value)| Change::Append {
                index,
                value: value.clone(),
            })
            .collect()
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(10))]

        /// After any sequence of appends within the capacity the sub-databases and hints are
        /// those a build of the final tree makes with the same seeds, every audit path verifies
        /// against the new root, and the served consistency proofs are the RFC's from every
        /// earlier size.
        #[test]
        fn appends_leave_what_a_build_of_the_final_tree_makes(
            first in 1u64..20,
            rounds in proptest::collection::vec(1u64..12, 1..4),
            room in 0u64..20,
        ) {
            let total = first + rounds.iter().sum::<u64>();
            let all = leaves(total);
            let options = EngineOptions {
                params: ParamSet::Ypir1024,
                layout: Layout::Square,
                matrix: None,
                value_bytes: None,
                capacity: Some(total + room),
            };
            let tree = MerkleTree::from_leaves(&all[..first as usize]);
            let mut server = TreePirServer::from_tree(&tree, options, &|_, _| {}).unwrap();
            let h = server.public_setup().height();
            prop_assert_eq!(h, merkle::height_for(total + room));
            let mut n = first;
            let mut roots = vec![tree.root()];
            for (version, k) in (1..).zip(rounds) {
                let before = server.public_setup().clone();
                let patch = server.update(&appends(n, &all[n as usize..(n + k) as usize])).unwrap().unwrap();
                prop_assert_eq!(&before.clone().patched(&patch).unwrap(), server.public_setup());
                // Not twice, nor to another setup, nor cut short.
                let again = server.public_setup().clone().patched(&patch);
                prop_assert!(matches!(again, Err(PirError::SetupMismatch { .. })), "patched twice");
                prop_assert!(before.patched(&patch[..patch.len() - 1]).is_err());
                n += k;
                let grown = MerkleTree::from_leaves(&all[..n as usize]);
                let setup = server.public_setup();
                prop_assert_eq!((setup.leaves(), setup.root(), setup.version()), (n, &grown.root(), version));
                roots.push(grown.root());
                for m in 1..=n {
                    prop_assert_eq!(server.consistency_proof(m), grown.consistency_proof(m));
                }
                let mut client = TreePirClient::new(setup.clone());
                for leaf in [0, n / 2, n - 1] {
                    let (queries, state) = client.query(leaf).unwrap();
                    let answers = server.answer(&queries).unwrap();
                    let path = client.decode(state, &answers, &merkle::leaf_hash(&all[leaf as usize])).unwrap();
                    prop_assert_eq!(Some(path), grown.audit_path(leaf));
                }
            }
            prop_assert_eq!(server.consistency_proof(0), None);
            prop_assert_eq!(server.consistency_proof(n + 1), None);
            let grown = MerkleTree::from_leaves(&all);
            let classes = Coloring::balanced(h).unwrap().classes();
            for (class, database) in classes.iter().zip(server.databases()) {
                let contents: Vec<u8> = class.iter().flat_map(|&v| swapped::entry(&grown, h, v)).collect();
                let setup = database.public_setup();
                let expected = encode_database(&contents, setup.geometry());
                prop_assert!(database.database() == &expected);
                let hint = hint::hint_product(&expected, &setup.matrix_a(), &|_, _| {});
                prop_assert_eq!(setup.hint(), &hint);
            }
        }
    }

    /// Appends past the height, out of order or of another kind are refused, the tree unchanged.
    #[test]
    fn appends_that_do_not_fit_are_refused() {
        let all = leaves(5);
        let tree = MerkleTree::from_leaves(&all[..3]);
        let options = EngineOptions {
            params: ParamSet::Ypir1024,
            layout: Layout::Square,
            matrix: None,
            value_bytes: None,
            capacity: None,
        };
        let mut server = TreePirServer::from_tree(&tree, options, &|_, _| {}).unwrap();
        let before = server.public_setup().clone();
        assert_eq!(before.capacity(), 4);
        let error = server.update(&appends(3, &all[3..5])).unwrap_err();
        assert!(matches!(error, PirError::NeedsNewSetup(_)), "{error}");
        let error = server.update(&appends(4, &all[3..4])).unwrap_err();
        assert!(
            error
                .to_string()
                .contains("leaf 4 is appended where leaf 3 is next"),
            "{error}"
        );
        let error = server
            .update(&[Change::Set {
                index: 0,
                value: vec![1],
            }])
            .unwrap_err();
        assert!(
            error.to_string().contains("only by appending leaves"),
            "{error}"
        );
        assert!(server.update(&[]).is_err());
        assert_eq!(server.public_setup(), &before);
        server.update(&appends(3, &all[3..4])).unwrap();
        assert_eq!(
            server.public_setup().root(),
            &MerkleTree::from_leaves(&all[..4]).root()
        );
    }
}
