//! RFC 6962 Merkle trees (SHA-256, `0x00` leaf and `0x01` node prefixes), their audit paths and
//! consistency proofs, and their RFC 9162 verification.
//!
//! A tree of `n` leaves is stored as its embedding in the perfect tree of height
//! `h = ⌈log2 n⌉`: node (level `ℓ` from the bottom, position `i`) covers leaves
//! `[i·2^ℓ, (i+1)·2^ℓ)` and holds `MTH(D[i·2^ℓ : min((i+1)·2^ℓ, n)])` when `i·2^ℓ < n`; the other
//! positions are *empty*. A node whose right child is empty takes its left child's value, so the
//! top node is the RFC root, and the RFC audit path of leaf `m` is the perfect tree's sibling
//! path with the empty levels left out (`docs/design/batch-and-keyword.md` §4.4).

use rayon::prelude::*;
use sha2::{Digest, Sha256};

/// A SHA-256 hash: a leaf hash, an interior node or a root.
pub type Hash = [u8; 32];

/// The hash of a leaf's bytes: `SHA-256(0x00 ‖ data)`.
pub fn leaf_hash(data: &[u8]) -> Hash {
    Sha256::new()
        .chain_update([0x00])
        .chain_update(data)
        .finalize()
        .into()
}

/// The hash of an interior node: `SHA-256(0x01 ‖ left ‖ right)`.
pub fn node_hash(left: &Hash, right: &Hash) -> Hash {
    Sha256::new()
        .chain_update([0x01])
        .chain_update(left)
        .chain_update(right)
        .finalize()
        .into()
}

/// The height of the perfect tree a tree of `leaves` leaves embeds in: `⌈log2 leaves⌉` (0 for
/// zero or one leaf).
pub fn height_for(leaves: u64) -> u32 {
    if leaves <= 1 {
        0
    } else {
        u64::BITS - (leaves - 1).leading_zeros()
    }
}

/// An RFC 6962 Merkle tree, every node kept.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MerkleTree {
    /// `levels[ℓ][i]`: the value of node (ℓ, i), for the non-empty positions.
    levels: Vec<Vec<Hash>>,
}

impl MerkleTree {
    /// The tree over leaves whose bytes are `leaves` (hashed in parallel).
    pub fn from_leaves<L: AsRef<[u8]> + Sync>(leaves: &[L]) -> Self {
        Self::from_leaf_hashes(leaves.par_iter().map(|l| leaf_hash(l.as_ref())).collect())
    }

    /// The tree over already hashed leaves (see [`leaf_hash`]).
    pub fn from_leaf_hashes(hashes: Vec<Hash>) -> Self {
        let mut levels = vec![hashes];
        while levels.last().is_some_and(|level| level.len() > 1) {
            let below = levels.last().expect("a level");
            let above = below
                .par_chunks(2)
                .map(|pair| match pair {
                    [left, right] => node_hash(left, right),
                    [promoted] => *promoted,
                    _ => unreachable!("chunks of one or two"),
                })
                .collect();
            levels.push(above);
        }
        Self { levels }
    }

    /// The number of leaves.
    pub fn len(&self) -> u64 {
        self.levels[0].len() as u64
    }

    /// Whether the tree has no leaves.
    pub fn is_empty(&self) -> bool {
        self.levels[0].is_empty()
    }

    /// The height of the perfect tree it is embedded in (`⌈log2 n⌉`).
    pub fn height(&self) -> u32 {
        height_for(self.len())
    }

    /// The tree head `MTH(D[n])`; for no leaves, `SHA-256("")`.
    pub fn root(&self) -> Hash {
        match self.levels.last().and_then(|top| top.first()) {
            Some(root) => *root,
            None => Sha256::digest([]).into(),
        }
    }

    /// The value of node (`level`, `index`), or `None` where the position is empty. Above the
    /// top of the tree (in a taller embedding), node (`level`, 0) is the root.
    pub fn node(&self, level: u32, index: u64) -> Option<&Hash> {
        match self.levels.get(level as usize) {
            Some(nodes) => nodes.get(usize::try_from(index).ok()?),
            None if index == 0 => self.levels.last()?.first(),
            None => None,
        }
    }

    /// The RFC 6962 consistency proof that the tree of this tree's first `m` leaves is a
    /// prefix of this tree (see [`consistency_proof`]); `None` when `m` is 0 or more than the
    /// leaves.
    pub fn consistency_proof(&self, m: u64) -> Option<Vec<Hash>> {
        consistency_proof(m, self.len(), |level, index| {
            *self.node(level, index).expect("a node")
        })
    }

    /// The RFC 6962 audit path of leaf `m` (bottom-up, leaf's sibling first); `None` when `m`
    /// is not a leaf.
    pub fn audit_path(&self, m: u64) -> Option<Vec<Hash>> {
        if m >= self.len() {
            return None;
        }
        Some(
            (0..self.height())
                .filter_map(|level| self.node(level, (m >> level) ^ 1).copied())
                .collect(),
        )
    }
}

/// The RFC 6962 consistency proof that the tree of the first `m` leaves of a tree of `n`
/// leaves is its prefix (RFC 9162 §2.1.4.1, `PROOF(m, D[n])`), from the nodes of the latter's
/// embedding (`node(level, index)`, asked only for non-empty positions): empty for `m = n`;
/// `None` when `m` is 0 or more than `n`. Every subtree hash the proof names is a node of the
/// embedding, so nothing is hashed.
pub fn consistency_proof(m: u64, n: u64, node: impl Fn(u32, u64) -> Hash) -> Option<Vec<Hash>> {
    if m == 0 || m > n {
        return None;
    }
    let mut proof = Vec::new();
    if m < n {
        subproof(m, 0, n, height_for(n), true, &node, &mut proof);
    }
    Some(proof)
}

/// `SUBPROOF(m, D[start:end], b)` appended to `proof`, the range being the one node
/// (`level`, `start >> level`) covers within the tree.
fn subproof(
    m: u64,
    start: u64,
    end: u64,
    level: u32,
    b: bool,
    node: &impl Fn(u32, u64) -> Hash,
    proof: &mut Vec<Hash>,
) {
    if m == end - start {
        if !b {
            proof.push(node(level, start >> level));
        }
        return;
    }
    // The largest power of two below the range's length: the left part's width, and the
    // level of the nodes of both parts (the right one is cut off at the tree's end).
    let k = 1u64 << (u64::BITS - 1 - (end - start - 1).leading_zeros());
    let below = k.trailing_zeros();
    if m <= k {
        subproof(m, start, start + k, below, b, node, proof);
        proof.push(node(below, (start + k) >> below));
    } else {
        subproof(m - k, start + k, end, below, false, node, proof);
        proof.push(node(below, start >> below));
    }
}

/// The nodes a tree of `n` leaves changes when `hashes` (at least one) are appended as leaves
/// `n, n + 1, …`, in its embedding of height `height` (which must hold them all): for each
/// level `ℓ` from 0 (the new leaves) to `height` (the new root), the first position whose range
/// takes new leaves, and the new values from there to the one over the last leaf. Reads with
/// `old(level, index)` only nodes whose range is all old leaves, at most one per level.
pub fn appended_nodes(
    n: u64,
    hashes: &[Hash],
    height: u32,
    old: impl Fn(u32, u64) -> Hash,
) -> Vec<(u64, Vec<Hash>)> {
    let last = n + hashes.len() as u64 - 1;
    let mut levels = vec![(n, hashes.to_vec())];
    for level in 1..=height {
        let (below_first, below) = levels.last().expect("a level below");
        let below_value = |index: u64| match index.checked_sub(*below_first) {
            Some(offset) => below.get(offset as usize).copied(),
            None => Some(old(level - 1, index)),
        };
        let first = n >> level;
        let values = (first..=last >> level)
            .map(|i| {
                let left = below_value(2 * i).expect("a left child that takes leaves");
                match below_value(2 * i + 1) {
                    Some(right) => node_hash(&left, &right),
                    None => left,
                }
            })
            .collect();
        levels.push((first, values));
    }
    levels
}

/// Why an audit path does not prove a leaf.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ProofError {
    /// The leaf index is not below the tree size.
    #[error("leaf {index} is not in a tree of {size} leaves")]
    LeafOutOfRange {
        /// The leaf index.
        index: u64,
        /// The tree size.
        size: u64,
    },
    /// The path has more entries than a path in a tree of this size.
    #[error("the audit path is too long for leaf {index} of {size}")]
    TooLong {
        /// The leaf index.
        index: u64,
        /// The tree size.
        size: u64,
    },
    /// The path has fewer entries than a path in a tree of this size.
    #[error("the audit path is too short for leaf {index} of {size}")]
    TooShort {
        /// The leaf index.
        index: u64,
        /// The tree size.
        size: u64,
    },
    /// The path leads to another root.
    #[error("the audit path of leaf {index} leads to another root")]
    RootMismatch {
        /// The leaf index.
        index: u64,
    },
}

/// Checks that `path` proves that leaf `index` of a tree of `size` leaves has hash `leaf`, in
/// the tree with head `root` (RFC 9162 §2.1.3.2).
pub fn verify_audit_path(
    index: u64,
    size: u64,
    leaf: &Hash,
    path: &[Hash],
    root: &Hash,
) -> Result<(), ProofError> {
    if index >= size {
        return Err(ProofError::LeafOutOfRange { index, size });
    }
    let (mut f, mut s) = (index, size - 1);
    let mut r = *leaf;
    for p in path {
        if s == 0 {
            return Err(ProofError::TooLong { index, size });
        }
        if f % 2 == 1 || f == s {
            r = node_hash(p, &r);
            while f % 2 == 0 && f != 0 {
                f >>= 1;
                s >>= 1;
            }
        } else {
            r = node_hash(&r, p);
        }
        f >>= 1;
        s >>= 1;
    }
    if s != 0 {
        return Err(ProofError::TooShort { index, size });
    }
    if &r != root {
        return Err(ProofError::RootMismatch { index });
    }
    Ok(())
}

/// Why a consistency proof does not prove that one tree head is a prefix of another.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ConsistencyError {
    /// The sizes cannot be of a tree and one of its prefixes (the first 0 or past the second).
    #[error("no consistency proof goes from a tree of {first} leaves to one of {second}")]
    Sizes {
        /// The earlier tree's size.
        first: u64,
        /// The later tree's size.
        second: u64,
    },
    /// The proof has another number of hashes than one between these sizes.
    #[error("the consistency proof from {first} to {second} leaves has the wrong length")]
    Length {
        /// The earlier tree's size.
        first: u64,
        /// The later tree's size.
        second: u64,
    },
    /// The proof does not lead to both heads.
    #[error("the consistency proof from {first} to {second} leaves leads to other heads")]
    Mismatch {
        /// The earlier tree's size.
        first: u64,
        /// The later tree's size.
        second: u64,
    },
}

/// Checks that `proof` proves that the tree of `first` leaves with head `first_root` is a prefix
/// of the tree of `second` leaves with head `second_root` (RFC 9162 §2.1.4.2).
pub fn verify_consistency(
    first: u64,
    second: u64,
    first_root: &Hash,
    second_root: &Hash,
    proof: &[Hash],
) -> Result<(), ConsistencyError> {
    if first == 0 || first > second {
        return Err(ConsistencyError::Sizes { first, second });
    }
    let length = ConsistencyError::Length { first, second };
    if first == second {
        return match (proof.is_empty(), first_root == second_root) {
            (false, _) => Err(length),
            (true, true) => Ok(()),
            (true, false) => Err(ConsistencyError::Mismatch { first, second }),
        };
    }
    let mut path = proof.iter();
    // A first tree of a power of two leaves is a node of the second: its head starts the path.
    let start = if first.is_power_of_two() {
        *first_root
    } else {
        *path.next().ok_or(length)?
    };
    let (mut f, mut s) = (first - 1, second - 1);
    while f & 1 == 1 {
        f >>= 1;
        s >>= 1;
    }
    let (mut fr, mut sr) = (start, start);
    for c in path {
        if s == 0 {
            return Err(length);
        }
        if f & 1 == 1 || f == s {
            fr = node_hash(c, &fr);
            sr = node_hash(c, &sr);
            while f & 1 == 0 && f != 0 {
                f >>= 1;
                s >>= 1;
            }
        } else {
            sr = node_hash(&sr, c);
        }
        f >>= 1;
        s >>= 1;
    }
    if s != 0 {
        return Err(length);
    }
    if (&fr, &sr) != (first_root, second_root) {
        return Err(ConsistencyError::Mismatch { first, second });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Leaves `leaf 0`, `leaf 1`, ...
    fn leaves(n: u64) -> Vec<Vec<u8>> {
        (0..n).map(|i| format!("leaf {i}").into_bytes()).collect()
    }

    /// Appending any number of leaves to a tree of any size (up to 40 leaves in all) changes
    /// exactly the nodes `appended_nodes` lists, to the values a tree of all the leaves has, in
    /// embeddings of its own height and taller.
    #[test]
    fn appended_nodes_are_those_of_the_grown_tree() {
        let all = leaves(40);
        for total in 2..=40u64 {
            let grown = MerkleTree::from_leaves(&all[..total as usize]);
            for n in 1..total {
                let old = MerkleTree::from_leaves(&all[..n as usize]);
                let hashes: Vec<Hash> = all[n as usize..total as usize]
                    .iter()
                    .map(|leaf| leaf_hash(leaf))
                    .collect();
                for height in grown.height()..grown.height() + 2 {
                    let levels = appended_nodes(n, &hashes, height, |level, index| {
                        let range_end = (index + 1) << level;
                        assert!(range_end <= n, "read a node that takes new leaves");
                        *old.node(level, index).unwrap()
                    });
                    assert_eq!(levels.len() as u32, height + 1);
                    for (level, (first, values)) in (0u32..).zip(&levels) {
                        assert_eq!(*first, n >> level);
                        assert_eq!(values.len() as u64, ((total - 1) >> level) - first + 1);
                        for (index, value) in (*first..).zip(values) {
                            assert_eq!(
                                Some(value),
                                grown.node(level, index),
                                "{n} + {level} {index}"
                            );
                        }
                        // Every other non-empty node is unchanged.
                        for index in 0..*first {
                            assert_eq!(old.node(level, index), grown.node(level, index));
                        }
                    }
                    assert_eq!(levels[height as usize].1, [grown.root()]);
                }
            }
        }
    }

    /// Every consistency proof between sizes 1..=70 is the one ct-merkle (an independent RFC 6962
    /// implementation) makes, byte for byte, and each verifies with both; a proof with a hash
    /// changed, or checked against other sizes or heads, does not verify.
    #[test]
    fn consistency_proofs_match_an_independent_implementation() {
        type Reference = ct_merkle::mem_backed_tree::MemoryBackedTree<sha2_next::Sha256, Vec<u8>>;
        let all = leaves(70);
        let mut reference = Reference::new();
        let mut roots = Vec::new();
        for (n, leaf) in (1u64..).zip(&all) {
            reference.push(leaf.clone());
            let tree = MerkleTree::from_leaves(&all[..n as usize]);
            assert_eq!(
                tree.root().as_slice(),
                reference.root().as_bytes().as_slice()
            );
            roots.push(tree.root());
            for m in 1..=n {
                let proof = tree.consistency_proof(m).unwrap();
                let theirs = reference.prove_consistency((n - m) as usize);
                assert_eq!(proof.concat(), theirs.as_bytes(), "{m} -> {n}");
                let first = &roots[m as usize - 1];
                verify_consistency(m, n, first, &tree.root(), &proof).unwrap();
                let new_root = ct_merkle::RootHash::<sha2_next::Sha256>::new(tree.root().into(), n);
                let old_root = ct_merkle::RootHash::<sha2_next::Sha256>::new((*first).into(), m);
                new_root.verify_consistency(&old_root, &theirs).unwrap();
                if m < n {
                    for k in 0..proof.len() {
                        let mut bad = proof.clone();
                        bad[k][7] ^= 1;
                        assert!(verify_consistency(m, n, first, &tree.root(), &bad).is_err());
                    }
                    let mut longer = proof.clone();
                    longer.push([0; 32]);
                    assert!(verify_consistency(m, n, first, &tree.root(), &longer).is_err());
                    assert!(verify_consistency(m, n, &tree.root(), first, &proof).is_err());
                    assert!(verify_consistency(m + 1, n, first, &tree.root(), &proof).is_err());
                }
            }
            assert_eq!(tree.consistency_proof(0), None);
            assert_eq!(tree.consistency_proof(n + 1), None);
        }
        assert!(matches!(
            verify_consistency(0, 3, &roots[0], &roots[2], &[]),
            Err(ConsistencyError::Sizes { .. })
        ));
        assert!(matches!(
            verify_consistency(4, 3, &roots[3], &roots[2], &[]),
            Err(ConsistencyError::Sizes { .. })
        ));
    }

    fn hex(hash: &Hash) -> String {
        hash.iter().map(|b| format!("{b:02x}")).collect()
    }

    fn unhex(text: &str) -> Vec<u8> {
        (0..text.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&text[i..i + 2], 16).unwrap())
            .collect()
    }

    /// The leaves of the transparency-dev test data.
    /// The known answers of RFC 6962 trees, shared with the Python tests.
    #[derive(serde::Deserialize)]
    struct Vectors {
        leaves_hex: Vec<String>,
        roots: Vec<String>,
        paths_in_7: std::collections::BTreeMap<u64, Vec<String>>,
    }

    fn vectors() -> Vectors {
        serde_json::from_str(include_str!("../../vectors/rfc6962.json")).expect("valid vectors")
    }

    fn test_leaves() -> Vec<Vec<u8>> {
        vectors().leaves_hex.iter().map(|h| unhex(h)).collect()
    }

    /// The RFC 6962 definition, recursively: the reference the embedding is checked against.
    fn mth(leaves: &[Vec<u8>]) -> Hash {
        match leaves.len() {
            0 => Sha256::digest([]).into(),
            1 => leaf_hash(&leaves[0]),
            n => {
                let k = 1 << (u64::BITS - (n as u64 - 1).leading_zeros() - 1);
                node_hash(&mth(&leaves[..k]), &mth(&leaves[k..]))
            }
        }
    }

    fn rfc_path(m: usize, leaves: &[Vec<u8>]) -> Vec<Hash> {
        let n = leaves.len();
        if n <= 1 {
            return Vec::new();
        }
        let k = 1 << (u64::BITS - (n as u64 - 1).leading_zeros() - 1);
        let (mut path, sibling) = if m < k {
            (rfc_path(m, &leaves[..k]), mth(&leaves[k..]))
        } else {
            (rfc_path(m - k, &leaves[k..]), mth(&leaves[..k]))
        };
        path.push(sibling);
        path
    }

    #[test]
    fn known_answer_roots() {
        let leaves = test_leaves();
        let roots = vectors().roots;
        assert_eq!(roots.len(), leaves.len() + 1);
        for (n, root) in roots.iter().enumerate() {
            assert_eq!(
                hex(&MerkleTree::from_leaves(&leaves[..n]).root()),
                *root,
                "n = {n}"
            );
        }
    }

    #[test]
    fn known_answer_paths() {
        let tree = MerkleTree::from_leaves(&test_leaves()[..7]);
        let paths = vectors().paths_in_7;
        assert_eq!(paths.len(), 2);
        for (m, expected) in paths {
            let path: Vec<String> = tree.audit_path(m).unwrap().iter().map(hex).collect();
            assert_eq!(path, expected, "m = {m}");
        }
        assert_eq!(tree.audit_path(7), None);
    }

    /// For every n ≤ 130 and every leaf: the embedding's root and paths are the RFC ones, and
    /// they verify; wrong indices, sizes, lengths and roots are refused.
    #[test]
    fn embedding_matches_the_rfc_for_every_size_and_leaf() {
        let leaves: Vec<Vec<u8>> = (0..130u32).map(|i| i.to_le_bytes().to_vec()).collect();
        for n in 1..=130 {
            let tree = MerkleTree::from_leaves(&leaves[..n]);
            let root = mth(&leaves[..n]);
            assert_eq!(tree.root(), root, "n = {n}");
            for m in 0..n {
                let path = tree.audit_path(m as u64).unwrap();
                assert_eq!(path, rfc_path(m, &leaves[..n]), "n = {n}, m = {m}");
                let leaf = leaf_hash(&leaves[m]);
                let (m, n) = (m as u64, n as u64);
                assert_eq!(verify_audit_path(m, n, &leaf, &path, &root), Ok(()));
                let other = leaf_hash(b"other");
                assert!(verify_audit_path(m, n, &other, &path, &root).is_err());
                assert!(verify_audit_path(n, n, &leaf, &path, &root).is_err());
                let mut longer = path.clone();
                longer.push(root);
                assert!(verify_audit_path(m, n, &leaf, &longer, &root).is_err());
                if !path.is_empty() {
                    let shorter = &path[..path.len() - 1];
                    assert!(verify_audit_path(m, n, &leaf, shorter, &root).is_err());
                }
            }
        }
    }
}
