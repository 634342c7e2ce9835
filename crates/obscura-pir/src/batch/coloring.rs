//! TreePIR's colouring of a perfect binary tree (Cao et al., IEEE S&P 2025): the non-root nodes
//! get `h` colours so that every root-to-leaf path has exactly one node of each colour (an
//! *ancestral* colouring), with class sizes as even as possible. A Merkle proof is the content
//! of such a path in the "swapped" tree (each node standing for its sibling), so one PIR query
//! per colour class fetches a whole proof, with no node stored twice.
//!
//! Nodes are numbered as in a heap: root 1, children `2v` and `2v + 1`, leaves `2^h … 2^(h+1) − 1`.
//! The colouring is the Color-Splitting Algorithm with stable sorting (deterministic), classes
//! are ordered left to right (by each node's leftmost leaf), and [`path_positions`] finds the
//! colour and class position of every node on a leaf's path by replaying the splits along that
//! path only, with no table. The rules, with the correction to the paper's count update, are in
//! `docs/design/batch-and-keyword.md` §1.4–1.6.

use std::collections::hash_map::{Entry, HashMap};

/// The largest tree height whose colouring is built node by node (2^33 nodes).
pub const MAX_COLORED_HEIGHT: u32 = 32;

/// The largest tree height [`path_positions`] accepts.
pub const MAX_HEIGHT: u32 = 62;

/// One colour class during the splitting: how many nodes it still has to colour, and its colour.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct Part {
    size: u64,
    color: u8,
}

/// Why a colour sequence cannot colour a tree.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ColoringError {
    /// The height is 0 or above the supported maximum.
    #[error("a tree of height {height} is not supported (1 ..= {max})")]
    Height {
        /// The height asked for.
        height: u32,
        /// The largest supported height.
        max: u32,
    },
    /// The class sizes are not h-feasible (they cannot cover the top levels, or do not add up
    /// to the number of non-root nodes).
    #[error("class sizes {sizes:?} cannot colour a tree of height {height}")]
    Infeasible {
        /// The sizes.
        sizes: Vec<u64>,
        /// The height.
        height: u32,
    },
}

/// The number of non-root nodes of the perfect tree of height `h`: `2^(h+1) − 2`.
pub fn nodes(h: u32) -> u64 {
    (2u64 << h) - 2
}

/// The balanced class sizes for height `h`: `h` sizes differing by at most one, ascending.
pub fn balanced_sizes(h: u32) -> Vec<u64> {
    let total = nodes(h);
    let (q, r) = (total / u64::from(h), total % u64::from(h));
    (0..u64::from(h))
        .map(|i| q + u64::from(i >= u64::from(h) - r))
        .collect()
}

/// Whether `sizes` (one per colour, any order) can colour the tree of height `h`: sorted
/// ascending, the `ℓ` smallest cover the top `ℓ` levels (`2 + 4 + … + 2^ℓ`) for every `ℓ`, and
/// they add up to `2^(h+1) − 2` (the paper's Theorem 2).
pub fn is_feasible(sizes: &[u64], h: u32) -> bool {
    if sizes.len() != h as usize || h == 0 || h > MAX_HEIGHT {
        return false;
    }
    let mut sorted = sizes.to_vec();
    sorted.sort_unstable();
    let mut sum = 0u64;
    for (l, &size) in (1..).zip(&sorted) {
        sum = match sum.checked_add(size) {
            Some(sum) => sum,
            None => return false,
        };
        if sum < nodes(l) {
            return false;
        }
    }
    sum == nodes(h)
}

/// The initial sequence: colour `i` has `sizes[i]` nodes, stably sorted by size.
fn sequence(sizes: &[u64]) -> Vec<Part> {
    let mut parts: Vec<Part> = (0u8..)
        .zip(sizes)
        .map(|(color, &size)| Part { size, color })
        .collect();
    parts.sort_by_key(|part| part.size);
    parts
}

/// The colours of the two children of a subtree root whose subtree uses `c`.
fn children_colors(c: &[Part]) -> (u8, u8) {
    if c[0].size == 2 {
        (c[0].color, c[0].color)
    } else {
        (c[0].color, c[1].color)
    }
}

/// Splits the sequence of a subtree (height ≥ 2 below its root) into the sequences of its left
/// and right child's subtrees, each stably sorted by size.
fn split(c: &[Part]) -> (Vec<Part>, Vec<Part>) {
    let d = c.len();
    let (mut a, mut b) = (Vec::with_capacity(d - 1), Vec::with_capacity(d - 1));
    let part = |size, color| Part { size, color };
    let next = if c[0].size == 2 {
        a.push(part(c[1].size / 2, c[1].color));
        b.push(part(c[1].size.div_ceil(2), c[1].color));
        2
    } else {
        a.push(part(c[1].size - 1, c[1].color));
        b.push(part(c[0].size - 1, c[0].color));
        if d >= 3 {
            let x = c[2].size + c[0].size - c[1].size;
            a.push(part(x.div_ceil(2), c[2].color));
            b.push(part(c[1].size - c[0].size + x / 2, c[2].color));
            3
        } else {
            2
        }
    };
    let (mut sum_a, mut sum_b): (u64, u64) = (
        a.iter().map(|p| p.size).sum(),
        b.iter().map(|p| p.size).sum(),
    );
    for p in &c[next..] {
        let (half, other) = (p.size / 2, p.size.div_ceil(2));
        let (to_a, to_b) = if sum_a < sum_b {
            (other, half)
        } else {
            (half, other)
        };
        a.push(part(to_a, p.color));
        b.push(part(to_b, p.color));
        sum_a += to_a;
        sum_b += to_b;
    }
    a.sort_by_key(|p| p.size);
    b.sort_by_key(|p| p.size);
    (a, b)
}

fn check(sizes: &[u64], h: u32, max: u32) -> Result<(), ColoringError> {
    if h == 0 || h > max {
        return Err(ColoringError::Height { height: h, max });
    }
    if !is_feasible(sizes, h) {
        return Err(ColoringError::Infeasible {
            sizes: sizes.to_vec(),
            height: h,
        });
    }
    Ok(())
}

/// An ancestral colouring of the perfect tree of height `h`, node by node.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Coloring {
    height: u32,
    sizes: Vec<u64>,
    /// `colors[v]` for nodes `v = 2 … 2^(h+1) − 1` (entries 0 and 1 unused).
    colors: Vec<u8>,
}

impl Coloring {
    /// The balanced colouring of height `h`.
    pub fn balanced(h: u32) -> Result<Self, ColoringError> {
        if h == 0 || h > MAX_COLORED_HEIGHT {
            return Err(ColoringError::Height {
                height: h,
                max: MAX_COLORED_HEIGHT,
            });
        }
        Self::with_sizes(h, &balanced_sizes(h))
    }

    /// The colouring of height `h` whose colour `i` has `sizes[i]` nodes.
    ///
    /// The colouring of a subtree depends only on its height and its sequence of sizes (the
    /// colours are mere labels, carried along in the sequence's order), so a subtree whose
    /// height and sizes were met before is copied level by level from the first one (which the
    /// left-first traversal has finished by then), relabelling its colours: the cost is one
    /// split per distinct subtree plus a pass over the output.
    pub fn with_sizes(h: u32, sizes: &[u64]) -> Result<Self, ColoringError> {
        check(sizes, h, MAX_COLORED_HEIGHT)?;
        let mut colors = vec![0u8; 2 << h];
        // (height, sizes in order) -> the first subtree with them and its colours in that order.
        let mut first_seen: HashMap<(u32, Vec<u64>), (u64, Vec<u8>)> = HashMap::new();
        let mut stack = vec![(1u64, h, sequence(sizes))];
        while let Some((root, below, c)) = stack.pop() {
            let key = (below, c.iter().map(|p| p.size).collect::<Vec<_>>());
            match first_seen.entry(key) {
                Entry::Occupied(seen) => {
                    let (source, source_colors) = seen.get();
                    let mut relabel = [0u8; 256];
                    for (&from, part) in source_colors.iter().zip(&c) {
                        relabel[usize::from(from)] = part.color;
                    }
                    for level in 1..=below {
                        let width = 1usize << level;
                        let from = (*source as usize) << level;
                        let to = (root as usize) << level;
                        let (head, tail) = colors.split_at_mut(to);
                        for (target, &color) in tail[..width].iter_mut().zip(&head[from..]) {
                            *target = relabel[usize::from(color)];
                        }
                    }
                }
                Entry::Vacant(vacant) => {
                    let (left, right) = children_colors(&c);
                    colors[2 * root as usize] = left;
                    colors[2 * root as usize + 1] = right;
                    if below >= 2 {
                        let (a, b) = split(&c);
                        stack.push((2 * root + 1, below - 1, b));
                        stack.push((2 * root, below - 1, a));
                    }
                    vacant.insert((root, c.iter().map(|p| p.color).collect()));
                }
            }
        }
        Ok(Self {
            height: h,
            sizes: sizes.to_vec(),
            colors,
        })
    }

    /// The tree height (and number of colours).
    pub fn height(&self) -> u32 {
        self.height
    }

    /// The size of each colour class.
    pub fn sizes(&self) -> &[u64] {
        &self.sizes
    }

    /// The colour of node `v` (`2 ≤ v < 2^(h+1)`).
    pub fn color(&self, v: u64) -> u8 {
        self.colors[v as usize]
    }

    /// The nodes of each colour class, left to right (by leftmost leaf): entry `i` of class
    /// `c` is the node whose content sub-database `c` stores at position `i`.
    pub fn classes(&self) -> Vec<Vec<u64>> {
        let mut classes: Vec<Vec<u64>> = self
            .sizes
            .iter()
            .map(|&size| Vec::with_capacity(size as usize))
            .collect();
        // Pre-order, left subtree first: a node is listed before everything to its right.
        let mut stack = vec![3u64, 2];
        let first_leaf = 1u64 << self.height;
        while let Some(v) = stack.pop() {
            classes[usize::from(self.color(v))].push(v);
            if v < first_leaf {
                stack.push(2 * v + 1);
                stack.push(2 * v);
            }
        }
        classes
    }
}

/// For leaf `m` of the perfect tree of height `h` coloured with class sizes `sizes`: the colour
/// and the left-to-right class position of each node on its path, from depth 1 (a child of the
/// root) to depth `h` (the leaf). O(h² log h) time, O(h) memory, no table.
pub fn path_positions(h: u32, sizes: &[u64], m: u64) -> Result<Vec<(u8, u64)>, ColoringError> {
    check(sizes, h, MAX_HEIGHT)?;
    let leaf = (1u64 << h) + (m & ((1u64 << h) - 1));
    let mut count = vec![0u64; sizes.len()];
    let mut c = sequence(sizes);
    let mut out = Vec::with_capacity(h as usize);
    for d in 1..=h {
        let k = leaf >> (h - d);
        let right = k & 1 == 1;
        let (left_color, right_color) = children_colors(&c);
        let (mine, sibling) = if right {
            (right_color, left_color)
        } else {
            (left_color, right_color)
        };
        let halves = (d < h).then(|| split(&c));
        if right {
            // The left sibling and its whole subtree precede us.
            count[usize::from(sibling)] += 1;
            if let Some((a, _)) = &halves {
                for part in a {
                    count[usize::from(part.color)] += part.size;
                }
            }
        }
        out.push((mine, count[usize::from(mine)]));
        if let Some((a, b)) = halves {
            c = if right { b } else { a };
        }
    }
    Ok(out)
}

/// A node as `(level, index)` and its place as `(colour, position in the colour's class)`.
pub type PlacedNode = ((u32, u64), (u8, u64));

/// The positions [`path_positions`] gives for the paths of every leaf of `leaves` at once, with
/// their siblings: the colour and class position of both children of every node whose subtree
/// holds one of the leaves, as `(level, index)` (level 0 the leaves, index from the left) and
/// the position, each node once, a level's nodes in increasing index. O(h) work per node
/// reported instead of O(h²) per leaf.
pub fn range_positions(
    h: u32,
    sizes: &[u64],
    leaves: std::ops::Range<u64>,
) -> Result<Vec<PlacedNode>, ColoringError> {
    check(sizes, h, MAX_HEIGHT)?;
    let leaves = leaves.start..leaves.end.min(1u64 << h);
    let mut found = Vec::new();
    if leaves.is_empty() {
        return Ok(found);
    }
    // Each node to descend from: its depth, its index at that depth, the sequence of its
    // subtree below it and the per-colour counts of the nodes left of it. Right children are
    // pushed first, so each level is reported left to right.
    let mut stack = vec![(0u32, 0u64, sequence(sizes), vec![0u64; sizes.len()])];
    let mut by_level: Vec<Vec<PlacedNode>> = vec![Vec::new(); h as usize];
    while let Some((depth, index, c, count)) = stack.pop() {
        let level = h - depth - 1;
        let (left_color, right_color) = children_colors(&c);
        let halves = (level > 0).then(|| split(&c));
        let mut right_count = count.clone();
        right_count[usize::from(left_color)] += 1;
        if let Some((a, _)) = &halves {
            for part in a {
                right_count[usize::from(part.color)] += part.size;
            }
        }
        let (left, right) = (2 * index, 2 * index + 1);
        by_level[level as usize]
            .push(((level, left), (left_color, count[usize::from(left_color)])));
        by_level[level as usize].push((
            (level, right),
            (right_color, right_count[usize::from(right_color)]),
        ));
        if let Some((a, b)) = halves {
            let holds = |child: u64| {
                let first = child << level;
                first < leaves.end && leaves.start < first + (1u64 << level)
            };
            if holds(right) {
                stack.push((depth + 1, right, b, right_count));
            }
            if holds(left) {
                stack.push((depth + 1, left, a, count));
            }
        }
    }
    for level in by_level.iter_mut() {
        level.sort_unstable_by_key(|(node, _)| node.1);
    }
    found.extend(by_level.into_iter().rev().flatten());
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    const R: u8 = 0;
    const G: u8 = 1;
    const B: u8 = 2;
    const P: u8 = 3;

    #[test]
    fn balanced_sizes_and_feasibility() {
        assert_eq!(balanced_sizes(3), [4, 5, 5]);
        assert_eq!(balanced_sizes(4), [7, 7, 8, 8]);
        assert_eq!(balanced_sizes(7), [36, 36, 36, 36, 36, 37, 37]);
        assert_eq!(
            balanced_sizes(10),
            [204, 204, 204, 204, 205, 205, 205, 205, 205, 205]
        );
        for h in 1..=40 {
            assert!(is_feasible(&balanced_sizes(h), h), "h = {h}");
        }
        assert!(!is_feasible(&[1, 5], 2));
        assert!(!is_feasible(&[2, 3, 9], 3));
        assert!(!is_feasible(&[3, 3], 3));
    }

    /// The paper's heterogeneous example (h = 4, sizes 3, 6, 8, 13).
    #[test]
    fn heterogeneous_first_split() {
        let (a, b) = split(&sequence(&[3, 6, 8, 13]));
        let pairs = |v: Vec<Part>| v.iter().map(|p| (p.size, p.color)).collect::<Vec<_>>();
        assert_eq!(pairs(a), [(3, B), (5, G), (6, P)]);
        assert_eq!(pairs(b), [(2, R), (5, B), (7, P)]);
    }

    #[test]
    fn worked_example_height_3() {
        let coloring = Coloring::balanced(3).unwrap();
        assert_eq!(
            coloring.classes(),
            [
                vec![2, 6, 14, 15],
                vec![8, 9, 10, 11, 3],
                vec![4, 5, 12, 13, 7]
            ]
        );
        assert_eq!(
            path_positions(3, &[4, 5, 5], 3).unwrap(),
            [(R, 0), (B, 1), (G, 3)]
        );
    }

    #[test]
    fn worked_example_height_4() {
        let coloring = Coloring::balanced(4).unwrap();
        assert_eq!(
            coloring.classes(),
            [
                vec![2, 24, 25, 13, 28, 29, 15],
                vec![16, 17, 9, 20, 21, 11, 3],
                vec![4, 10, 22, 23, 6, 14, 30, 31],
                vec![8, 18, 19, 5, 12, 26, 27, 7]
            ]
        );
        let sizes = balanced_sizes(4);
        assert_eq!(
            path_positions(4, &sizes, 10).unwrap(),
            [(G, 6), (B, 4), (R, 3), (P, 5)]
        );
        assert_eq!(path_positions(4, &sizes, 11).unwrap()[3], (P, 6));
    }

    /// The left-to-right positions of the h = 10 path of leaf 496
    /// (`docs/design/batch-and-keyword.md` §1.8).
    #[test]
    fn height_10_cross_check() {
        let letters = |s: &str| s.bytes().map(|b| b - b'A').collect::<Vec<u8>>();
        let colors = letters("ADGHJIBEFC");
        let positions = [0, 101, 101, 102, 102, 101, 197, 95, 92, 96];
        let expected: Vec<(u8, u64)> = colors.into_iter().zip(positions).collect();
        assert_eq!(
            path_positions(10, &balanced_sizes(10), 496).unwrap(),
            expected
        );
    }

    /// For every tree up to height 10 and every leaf: the path has one node of each colour, the
    /// classes have the sizes asked for, and the computed positions are the nodes' places in
    /// the classes.
    #[test]
    fn indexing_agrees_with_the_classes_for_every_leaf() {
        for h in 1..=10 {
            let coloring = Coloring::balanced(h).unwrap();
            let classes = coloring.classes();
            let sizes: Vec<u64> = classes.iter().map(|c| c.len() as u64).collect();
            assert_eq!(sizes, coloring.sizes());
            let mut place = vec![(0u8, 0u64); 2 << h];
            for (color, class) in (0u8..).zip(&classes) {
                for (i, &v) in (0u64..).zip(class) {
                    place[v as usize] = (color, i);
                }
            }
            for m in 0..1u64 << h {
                let positions = path_positions(h, coloring.sizes(), m).unwrap();
                let mut seen = vec![false; h as usize];
                for (d, &(color, position)) in (1..=h).zip(&positions) {
                    let v = ((1u64 << h) + m) >> (h - d);
                    assert_eq!(coloring.color(v), color, "h {h} m {m} d {d}");
                    assert_eq!(place[v as usize], (color, position), "h {h} m {m} d {d}");
                    assert!(!std::mem::replace(&mut seen[usize::from(color)], true));
                }
            }
        }
    }

    /// Every node a range of leaves' paths and their siblings hold, with the position the
    /// class lists give it, level by level from the top, each once.
    #[test]
    fn range_positions_are_the_classes_positions() {
        for h in 1..=9 {
            let coloring = Coloring::balanced(h).unwrap();
            let mut place = vec![(0u8, 0u64); 2 << h];
            for (color, class) in (0u8..).zip(&coloring.classes()) {
                for (i, &v) in (0u64..).zip(class) {
                    place[v as usize] = (color, i);
                }
            }
            let all = 1u64 << h;
            for leaves in [
                0..all,
                0..1,
                all - 1..all,
                3..all / 2 + 5,
                all / 3..all / 3 + 1,
            ] {
                let leaves = leaves.start.min(all - 1)..leaves.end.min(all);
                let found = range_positions(h, coloring.sizes(), leaves.clone()).unwrap();
                let mut expected = Vec::new();
                for level in (0..h).rev() {
                    let parents = (leaves.start >> (level + 1))..=((leaves.end - 1) >> (level + 1));
                    for index in parents.flat_map(|p| [2 * p, 2 * p + 1]) {
                        let v = (1u64 << (h - level)) + index;
                        expected.push(((level, index), place[v as usize]));
                    }
                }
                assert_eq!(found, expected, "h {h} leaves {leaves:?}");
            }
        }
        assert!(range_positions(3, &[4, 5], 0..1).is_err());
        assert_eq!(range_positions(3, &[4, 5, 5], 5..5).unwrap(), []);
    }

    /// The colouring without copying, node by node: the reference for the memoized one.
    fn direct(h: u32, sizes: &[u64]) -> Vec<u8> {
        let mut colors = vec![0u8; 2 << h];
        let mut stack = vec![(1u64, h, sequence(sizes))];
        while let Some((root, below, c)) = stack.pop() {
            let (left, right) = children_colors(&c);
            colors[2 * root as usize] = left;
            colors[2 * root as usize + 1] = right;
            if below >= 2 {
                let (a, b) = split(&c);
                stack.push((2 * root + 1, below - 1, b));
                stack.push((2 * root, below - 1, a));
            }
        }
        colors
    }

    #[test]
    fn copied_subtrees_equal_the_direct_colouring() {
        for h in 1..=14 {
            assert_eq!(
                Coloring::balanced(h).unwrap().colors,
                direct(h, &balanced_sizes(h))
            );
        }
        let sizes = [3, 6, 8, 13];
        assert_eq!(
            Coloring::with_sizes(4, &sizes).unwrap().colors,
            direct(4, &sizes)
        );
    }

    #[test]
    fn heterogeneous_coloring_is_ancestral() {
        let coloring = Coloring::with_sizes(4, &[3, 6, 8, 13]).unwrap();
        let sizes: Vec<u64> = coloring.classes().iter().map(|c| c.len() as u64).collect();
        assert_eq!(sizes, [3, 6, 8, 13]);
        for m in 0..16u64 {
            let path: Vec<u8> = (1..=4)
                .map(|d| coloring.color((16 + m) >> (4 - d)))
                .collect();
            let mut sorted = path.clone();
            sorted.sort_unstable();
            assert_eq!(sorted, [0, 1, 2, 3], "leaf {m}: {path:?}");
        }
    }

    #[test]
    fn bad_inputs_are_refused() {
        assert!(Coloring::balanced(0).is_err());
        assert!(Coloring::with_sizes(2, &[1, 5]).is_err());
        assert!(path_positions(63, &[], 0).is_err());
        assert!(path_positions(3, &[4, 5], 0).is_err());
    }
}
