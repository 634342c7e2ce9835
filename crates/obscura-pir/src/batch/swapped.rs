//! The *swapped* tree that turns an audit path into a root-to-leaf path: node `v` of the
//! perfect tree of height `h` stands for the value of its sibling `v XOR 1`, so the entries on
//! the path of leaf `m` (nodes `k_1 … k_h`) are the audit path of `m`. Shared by TreePIR and the
//! batch-code baseline, which store the same entries in different sub-databases.

use super::merkle::{self, Hash, MerkleTree};

/// The value of an empty position of the embedding (never part of a proof).
pub const EMPTY: Hash = [0u8; 32];

/// The entry of node `v` (`2 ≤ v < 2^(h+1)`) of the perfect tree of height `h` (at least the
/// tree's): the value of `v`'s sibling in the embedding of `tree`, or [`EMPTY`].
pub fn entry(tree: &MerkleTree, h: u32, v: u64) -> Hash {
    let (level, index) = node_position(h, v ^ 1);
    tree.node(level, index).copied().unwrap_or(EMPTY)
}

/// The level (from the leaves) and position of node `v` of the perfect tree of height `h`.
pub fn node_position(h: u32, v: u64) -> (u32, u64) {
    let depth = u64::BITS - 1 - v.leading_zeros();
    (h - depth, v - (1 << depth))
}

/// Node `index` of level `level` of the perfect tree of height `h`, numbered as in a heap.
pub fn node_at(h: u32, level: u32, index: u64) -> u64 {
    (1u64 << (h - level)) + index
}

/// The nodes `k_1 … k_h` on the path of leaf `m` (depth 1 to the leaf itself).
pub fn path_nodes(h: u32, m: u64) -> Vec<u64> {
    let leaf = (1u64 << h) + m;
    (1..=h).map(|d| leaf >> (h - d)).collect()
}

/// The RFC 6962 audit path of leaf `m` of a tree of `n` leaves from the entries of its path
/// nodes listed by level (`by_level[ℓ]` is the entry of the path node `ℓ` levels above the leaf
/// level): the levels whose sibling range starts beyond the last leaf are empty and left out.
pub fn audit_path(n: u64, m: u64, by_level: &[Hash]) -> Vec<Hash> {
    (0..by_level.len() as u32)
        .filter(|&level| ((m >> level) ^ 1) << level < n)
        .map(|level| by_level[level as usize])
        .collect()
}

/// Where the swapped tree of a tree of `n` leaves holds the hash of leaf `m` itself:
/// `(carrier, level)` such that the entry `level` levels above leaf `carrier` on its path is
/// that hash. It is the entry of the first sibling position above `m` that is not empty (where
/// the sibling is empty, `m`'s hash is promoted unchanged to the level above), and `carrier` is
/// the first leaf under that position. `None` when `n ≤ 1`: the leaf's hash is then the root.
pub fn leaf_hash_position(n: u64, m: u64) -> Option<(u64, u32)> {
    (0..merkle::height_for(n)).find_map(|level| {
        let first_leaf = ((m >> level) ^ 1) << level;
        (first_leaf < n).then_some((first_leaf, level))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// For every leaf of every tree up to 70 leaves, the entry found is the leaf's own hash.
    #[test]
    fn leaf_hash_position_finds_the_leaf_hash() {
        for n in 1..=70u64 {
            let leaves: Vec<[u8; 8]> = (0..n).map(u64::to_le_bytes).collect();
            let tree = MerkleTree::from_leaves(&leaves);
            let h = tree.height();
            for m in 0..n {
                let expected = merkle::leaf_hash(&leaves[m as usize]);
                match leaf_hash_position(n, m) {
                    None => assert_eq!((n, tree.root()), (1, expected)),
                    Some((carrier, level)) => {
                        assert!(carrier < n, "n = {n}, m = {m}");
                        let node = path_nodes(h, carrier)[(h - 1 - level) as usize];
                        assert_eq!(entry(&tree, h, node), expected, "n = {n}, m = {m}");
                    }
                }
            }
        }
    }
}
