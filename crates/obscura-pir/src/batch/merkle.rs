//! RFC 6962 Merkle trees (SHA-256, `0x00` leaf and `0x01` node prefixes), their audit paths and
//! the RFC 9162 path verification.
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

    /// The value of node (`level`, `index`), or `None` where the position is empty.
    pub fn node(&self, level: u32, index: u64) -> Option<&Hash> {
        self.levels
            .get(level as usize)?
            .get(usize::try_from(index).ok()?)
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

#[cfg(test)]
mod tests {
    use super::*;

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
