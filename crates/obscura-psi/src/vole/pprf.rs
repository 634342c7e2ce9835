//! Punctured PRFs from GGM trees, as the sparse part of silent VOLE: the sender expands a random
//! root into its leaves and, per level, the XORs of all left and of all right children; with
//! the sums of the sides its punctured point does *not* take (obtained by OT), the receiver
//! rebuilds every leaf but that point.
//!
//! A tree may have any number of leaves: its levels hold only the nodes with a leaf below them.
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

/// The depth of a tree of `leaves` leaves (at least 1): `⌈log2 leaves⌉`.
pub(crate) fn depth(leaves: usize) -> u32 {
    leaves.next_power_of_two().trailing_zeros()
}

/// The nodes at `level` of a tree of `leaves` leaves: those with a leaf below them,
/// `⌈leaves / 2^(depth − level)⌉`.
fn width(leaves: usize, level: u32) -> usize {
    leaves.div_ceil(1 << (depth(leaves) - level))
}

/// Parents expanded together (read out first, as their children may overwrite them).
const CHUNK: usize = 64;

/// Expands the `parents` first words of `nodes` into their first `children` children, in
/// place: node `i` becomes nodes `2i` and `2i + 1`. The children of `skip` (the receiver's
/// unknown node) are zero.
///
/// Chunks of parents go from the last down: the children `2i, 2i + 1 ≥ i` of a chunk land on
/// parents already expanded or on the chunk itself, never on one still to be read.
fn expand_level(nodes: &mut [u128], parents: usize, children: usize, skip: Option<usize>) {
    let mut end = parents;
    while end > 0 {
        let start = end.saturating_sub(CHUNK);
        let mut chunk = [0u128; CHUNK];
        let chunk = &mut chunk[..end - start];
        chunk.copy_from_slice(&nodes[start..end]);
        for (side, prg) in PRG.iter().enumerate() {
            encrypt_each(prg, chunk.iter().copied(), |k, word| {
                if let Some(child) = nodes[..children].get_mut(2 * (start + k) + side) {
                    *child = word ^ chunk[k];
                }
            });
        }
        end = start;
    }
    if let Some(unknown) = skip {
        for child in nodes[..children].iter_mut().skip(2 * unknown).take(2) {
            *child = 0;
        }
    }
}

/// The XORs of the left (even) and right (odd) nodes.
fn side_sums(nodes: &[u128]) -> [u128; 2] {
    let (pairs, last) = nodes.as_chunks::<2>();
    let [left, right] = pairs.iter().fold([0, 0], |[left, right], pair| {
        [left ^ pair[0], right ^ pair[1]]
    });
    [last.iter().fold(left, |acc, node| acc ^ node), right]
}

/// The sender's tree from `root`: writes its leaves into `leaves` (any number, at least 1) and
/// returns, for each level `1..=depth`, the sums of its left and right nodes.
pub(crate) fn expand(root: u128, leaves: &mut [u128]) -> Vec<[u128; 2]> {
    let count = leaves.len();
    leaves[0] = root;
    (0..depth(count))
        .map(|level| {
            let children = width(count, level + 1);
            expand_level(leaves, width(count, level), children, None);
            side_sums(&leaves[..children])
        })
        .collect()
}

/// The receiver's tree punctured at `point`, from the sums `sums[l]` of the side the path does
/// not take at level `l + 1`: writes every leaf but `point` (which is zero) into `leaves`.
pub(crate) fn puncture(point: usize, sums: &[u128], leaves: &mut [u128]) {
    let count = leaves.len();
    let depth = depth(count);
    leaves[0] = 0;
    for (level, &sum) in (0..depth).zip(sums) {
        let children = width(count, level + 1);
        let parent = point >> (depth - level);
        expand_level(leaves, width(count, level), children, Some(parent));
        let on_path = point >> (depth - level - 1);
        let sibling = on_path ^ 1;
        // Every node of the sibling's side but the sibling itself (zero now) is known; a
        // sibling past the last node does not exist, and its side's sum goes unused.
        if sibling < children {
            let known = side_sums(&leaves[..children])[sibling & 1];
            leaves[sibling] = sum ^ known;
        }
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
        fn punctured_trees_agree_off_the_point(root in any::<u128>(), count in 2usize..1100, point in any::<usize>()) {
            let point = point % count;
            let depth = depth(count);
            let mut full = vec![0u128; count];
            let sums = expand(root, &mut full);
            prop_assert_eq!(sums.len(), depth as usize);
            let chosen: Vec<u128> = choices(point, depth)
                .zip(&sums)
                .map(|(side, sums)| sums[usize::from(side)])
                .collect();
            let mut punctured = vec![1u128; count];
            puncture(point, &chosen, &mut punctured);
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

    /// A tree of any size is the prefix of the full tree of the next power of two.
    #[test]
    fn trees_are_prefixes_of_full_trees() {
        let mut full = vec![0u128; 1024];
        expand(9, &mut full);
        for count in [513, 700, 1000, 1023] {
            let mut part = vec![0u128; count];
            expand(9, &mut part);
            assert_eq!(part, full[..count], "{count}");
        }
        assert_eq!(
            (depth(1), depth(2), depth(3), depth(1024), depth(1025)),
            (0, 1, 2, 10, 11)
        );
    }

    /// Known answer: the first level of the tree of root 7 is the two fixed ciphers on 7.
    #[test]
    fn the_prg_is_aes_with_feed_forward() {
        let mut leaves = [0u128; 2];
        expand(7, &mut leaves);
        for (side, leaf) in leaves.iter().enumerate() {
            let mut word = 0;
            encrypt_each(&PRG[side], [7u128], |_, w| word = w);
            assert_eq!(*leaf, word ^ 7);
        }
        assert_eq!(choices(0b101, 3).collect::<Vec<_>>(), [false, true, false]);
    }
}
