//! Punctured PRFs from GGM trees, as the sparse part of silent VOLE: the sender expands a random
//! root into `2^d` leaves and, per level, the XORs of all left and of all right children; with
//! the sums of the sides its punctured point does *not* take (obtained by OT), the receiver
//! rebuilds every leaf but that point.
//!
//! The length-doubling PRG is `G(x) = (AES_{K_0}(x) ⊕ x, AES_{K_1}(x) ⊕ x)` under two fixed public
//! keys `K_b` = the first 16 bytes of `SHA-256("obscura-psi rr22 ggm key v1\0" ‖ b)` (AES in the
//! ideal-cipher model; the Davies-Meyer style feed-forward makes each half one-way). Children of
//! node `i` at level `l` are nodes `2i` (left) and `2i + 1` (right) at level `l + 1`; the
//! punctured point's bits, most significant first, say which side its path takes at each level.

use std::sync::LazyLock;

use aes::Aes128;
use sha2::{Digest, Sha256};

use crate::block::{cipher, encrypt_each};

const KEY_DOMAIN: &[u8] = b"obscura-psi rr22 ggm key v1\0";

/// The two fixed ciphers of the PRG.
static PRG: LazyLock<[Aes128; 2]> = LazyLock::new(|| {
    std::array::from_fn(|side| {
        let digest = Sha256::new()
            .chain_update(KEY_DOMAIN)
            .chain_update([side as u8])
            .finalize();
        cipher(digest[..16].try_into().expect("16 of 32 bytes"))
    })
});

/// Expands the nodes in `level` (the first `half` words of `nodes`) into their children (all
/// `2 · half` words), in place: node `i` becomes nodes `2i` and `2i + 1`. Entries of `skip` (the
/// receiver's unknown node) expand to zeros.
fn expand_level(nodes: &mut [u128], half: usize, skip: Option<usize>) {
    // Children are written from the last parent backwards, so no parent is overwritten before
    // it is read (children of `i` sit at `2i, 2i + 1 ≥ i`).
    let parents: Vec<u128> = nodes[..half].to_vec();
    for (side, prg) in PRG.iter().enumerate() {
        encrypt_each(prg, parents.iter().copied(), |i, word| {
            nodes[2 * i + side] = word ^ parents[i];
        });
    }
    if let Some(unknown) = skip {
        nodes[2 * unknown] = 0;
        nodes[2 * unknown + 1] = 0;
    }
}

/// The XORs of the left (even) and right (odd) nodes.
fn side_sums(nodes: &[u128]) -> [u128; 2] {
    nodes
        .as_chunks::<2>()
        .0
        .iter()
        .fold([0, 0], |[left, right], pair| {
            [left ^ pair[0], right ^ pair[1]]
        })
}

/// The sender's tree from `root`: writes the `2^depth` leaves into `leaves` and returns, for each
/// level `1..=depth`, the sums of its left and right nodes.
pub(crate) fn expand(root: u128, depth: u32, leaves: &mut [u128]) -> Vec<[u128; 2]> {
    debug_assert_eq!(leaves.len(), 1 << depth);
    leaves[0] = root;
    (0..depth)
        .map(|level| {
            let half = 1 << level;
            expand_level(leaves, half, None);
            side_sums(&leaves[..2 * half])
        })
        .collect()
}

/// The receiver's tree punctured at `point`, from the sums `sums[l]` of the side the path does
/// not take at level `l + 1`: writes every leaf but `point` (which is zero) into `leaves`.
pub(crate) fn puncture(point: usize, depth: u32, sums: &[u128], leaves: &mut [u128]) {
    debug_assert_eq!(leaves.len(), 1 << depth);
    leaves[0] = 0;
    for (level, &sum) in (0..depth).zip(sums) {
        let half = 1 << level;
        let parent = point >> (depth - level);
        expand_level(leaves, half, Some(parent));
        let on_path = point >> (depth - level - 1);
        let sibling = on_path ^ 1;
        // Every node of the sibling's side but the sibling itself is known.
        let known = side_sums(&leaves[..2 * half])[sibling & 1];
        leaves[sibling] = sum ^ known;
        leaves[on_path] = 0;
    }
}

/// For a punctured point, the choice bits of its levels' OTs: the side the path does not take,
/// level 1 first.
pub(crate) fn choices(point: usize, depth: u32) -> impl Iterator<Item = bool> {
    (0..depth).map(move |level| (point >> (depth - level - 1)) & 1 == 0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(32))]

        /// The receiver rebuilds every leaf but its point from the other sides' sums.
        #[test]
        fn punctured_trees_agree_off_the_point(root in any::<u128>(), depth in 1u32..10, point in any::<usize>()) {
            let point = point % (1 << depth);
            let mut full = vec![0u128; 1 << depth];
            let sums = expand(root, depth, &mut full);
            let chosen: Vec<u128> = choices(point, depth)
                .zip(&sums)
                .map(|(side, sums)| sums[usize::from(side)])
                .collect();
            let mut punctured = vec![1u128; 1 << depth];
            puncture(point, depth, &chosen, &mut punctured);
            for (j, (a, b)) in full.iter().zip(&punctured).enumerate() {
                if j == point {
                    prop_assert_eq!(*b, 0);
                } else {
                    prop_assert_eq!(a, b, "leaf {}", j);
                }
            }
            let mut distinct = full.clone();
            distinct.sort_unstable();
            distinct.dedup();
            prop_assert_eq!(distinct.len(), full.len());
        }
    }

    /// Known answer: the first level of the tree of root 0 is the two fixed ciphers on 0.
    #[test]
    fn the_prg_is_aes_with_feed_forward() {
        let mut leaves = [0u128; 2];
        expand(7, 1, &mut leaves);
        for (side, leaf) in leaves.iter().enumerate() {
            let mut word = 0;
            encrypt_each(&PRG[side], [7u128], |_, w| word = w);
            assert_eq!(*leaf, word ^ 7);
        }
        assert_eq!(choices(0b101, 3).collect::<Vec<_>>(), [false, true, false]);
    }
}
