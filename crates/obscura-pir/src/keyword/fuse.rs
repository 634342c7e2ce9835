//! Binary fuse filters (Graf & Lemire, 2022): the hypergraph that places each key at 3 or 4
//! slots, and the peeling order that lets every key's slots be filled so that they sum to any
//! chosen value for that key.
//!
//! A filter over n keys has `size` slots cut into segments of `L = 2^e` slots; a key's 64-bit
//! hash picks one slot in each of `arity` consecutive segments. Such banded hypergraphs peel at
//! 1.125n (3-wise) or 1.07n (4-wise) slots for large n. The size formulas are those of the
//! authors' reference code but for one constant: the 4-wise floor is 1.07 where the reference has 1.075. Measured at n = 2^20 over
//! 40 hash seeds, 4-wise filters peeled 40 times in 40 at 1.0703n and 39 in 40 at 1.0664n,
//! while 3-wise filters peeled 38 times in 40 at the reference's 1.125n and never at 1.117n,
//! so the 3-wise formula is kept. The floor only matters above about 7.5 · 10^5 keys; below, the size term decides.
//! A failed peel is retried with a fresh seed, so the margin costs build time, never
//! correctness.

/// The most keys a filter holds: peeling names keys by `u32` index.
pub const MAX_KEYS: u64 = 1 << 32;

/// Slots per key: 3 (faster and more reliable to build) or 4 (about 4% fewer slots).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Arity {
    /// Three slots per key.
    Three,
    /// Four slots per key.
    Four,
}

/// Parses `3` or `4`.
impl std::str::FromStr for Arity {
    type Err = crate::ParseError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        text.parse::<usize>()
            .ok()
            .and_then(Self::from_count)
            .ok_or_else(|| crate::ParseError::new(text, "3 or 4"))
    }
}

impl Arity {
    /// The number of slots per key.
    pub fn get(self) -> usize {
        match self {
            Self::Three => 3,
            Self::Four => 4,
        }
    }

    /// The arity with this number of slots.
    pub fn from_count(count: usize) -> Option<Self> {
        match count {
            3 => Some(Self::Three),
            4 => Some(Self::Four),
            _ => None,
        }
    }
}

/// The shape of a filter over a given number of keys.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FuseShape {
    arity: Arity,
    segment_length: u64,
    segment_count: u64,
}

impl FuseShape {
    /// The shape for `keys` keys; `None` beyond [`MAX_KEYS`].
    pub fn new(keys: u64, arity: Arity) -> Option<Self> {
        if keys > MAX_KEYS {
            return None;
        }
        let a = arity.get() as u64;
        let n = keys as f64;
        let segment_length = if keys == 0 {
            4
        } else {
            let e = match arity {
                Arity::Three => (n.ln() / 3.33f64.ln() + 2.25).floor(),
                Arity::Four => (n.ln() / 2.91f64.ln() - 0.5).floor(),
            };
            1u64 << (e.clamp(0.0, 18.0) as u32)
        };
        let capacity = if keys <= 1 {
            0
        } else {
            let factor = match arity {
                Arity::Three => (0.875 + 0.25 * 1e6f64.ln() / n.ln()).max(1.125),
                Arity::Four => (0.77 + 0.305 * 6e5f64.ln() / n.ln()).max(1.07),
            };
            (n * factor).round() as u64
        };
        let initial = capacity.div_ceil(segment_length);
        let segment_count = if initial < a { 1 } else { initial - (a - 1) };
        Some(Self {
            arity,
            segment_length,
            segment_count,
        })
    }

    /// Slots per key.
    pub fn arity(&self) -> Arity {
        self.arity
    }

    /// Slots per segment (a power of two).
    pub fn segment_length(&self) -> u64 {
        self.segment_length
    }

    /// Number of slots.
    pub fn size(&self) -> u64 {
        (self.segment_count + self.arity.get() as u64 - 1) * self.segment_length
    }

    /// The slots of a key with 64-bit hash `h`: `arity` distinct slots (the first `arity`
    /// entries), one in each of `arity` consecutive segments.
    pub fn positions(&self, h: u64) -> [u64; 4] {
        let l = self.segment_length;
        let mask = l - 1;
        let span = self.segment_count * l;
        let h0 = ((u128::from(h) * u128::from(span)) >> 64) as u64;
        match self.arity {
            Arity::Three => [
                h0,
                (h0 + l) ^ ((h >> 18) & mask),
                (h0 + 2 * l) ^ (h & mask),
                0,
            ],
            Arity::Four => [
                h0,
                (h0 + l) ^ (h & mask),
                (h0 + 2 * l) ^ ((h >> 16) & mask),
                (h0 + 3 * l) ^ ((h >> 32) & mask),
            ],
        }
    }

    /// One peeling attempt over the keys' hashes. On success, the keys in peeling order, each
    /// with the index (among its positions) of the slot it was peeled at: fill them in reverse
    /// order, each key's slot last, and every key's slots are final once it is filled. `None`
    /// when the hypergraph does not peel (for example two keys with the same hash): retry with
    /// another seed.
    ///
    /// # Panics
    /// If there are more than [`MAX_KEYS`] keys (a shape for that many cannot be made).
    pub fn peel(&self, hashes: &[u64]) -> Option<Vec<(u32, u8)>> {
        assert!(hashes.len() as u64 <= MAX_KEYS, "too many keys");
        let arity = self.arity.get();
        let size = self.size() as usize;
        let mut count = vec![0u32; size];
        let mut keys = vec![0u32; size];
        let mut which = vec![0u8; size];
        for (key, &h) in hashes.iter().enumerate() {
            for (t, &slot) in self.positions(h)[..arity].iter().enumerate() {
                let slot = slot as usize;
                count[slot] += 1;
                keys[slot] ^= key as u32;
                which[slot] ^= t as u8;
            }
        }
        let mut queue: Vec<usize> = (0..size).filter(|&slot| count[slot] == 1).collect();
        let mut order = Vec::with_capacity(hashes.len());
        while let Some(slot) = queue.pop() {
            if count[slot] != 1 {
                continue;
            }
            let (key, t) = (keys[slot], which[slot]);
            order.push((key, t));
            for (u, &other) in self.positions(hashes[key as usize])[..arity]
                .iter()
                .enumerate()
            {
                let other = other as usize;
                count[other] -= 1;
                keys[other] ^= key;
                which[other] ^= u as u8;
                if count[other] == 1 {
                    queue.push(other);
                }
            }
        }
        (order.len() == hashes.len()).then_some(order)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn sizes_match_the_reference_but_for_the_4_wise_floor() {
        let shape = FuseShape::new(1 << 20, Arity::Three).unwrap();
        assert_eq!(
            (shape.segment_length(), shape.segment_count, shape.size()),
            (8192, 142, 1_179_648)
        );
        let shape = FuseShape::new(1 << 20, Arity::Four).unwrap();
        assert_eq!(
            (shape.segment_length(), shape.segment_count, shape.size()),
            (4096, 271, 1_122_304)
        );
        let shape = FuseShape::new(8, Arity::Three).unwrap();
        assert_eq!(
            (shape.segment_length(), shape.segment_count, shape.size()),
            (8, 1, 24)
        );
        assert_eq!(FuseShape::new(1, Arity::Three).unwrap().size(), 12);
        assert_eq!(FuseShape::new(1, Arity::Four).unwrap().size(), 4);
        assert_eq!(FuseShape::new(100, Arity::Three).unwrap().size(), 192);
    }

    proptest! {
        #[test]
        fn positions_are_distinct_and_in_range(h in any::<u64>(), keys in 0u64..5_000_000, four in any::<bool>()) {
            let shape = FuseShape::new(keys, if four { Arity::Four } else { Arity::Three }).unwrap();
            let a = shape.arity().get();
            let p = shape.positions(h);
            for i in 0..a {
                prop_assert!(p[i] < shape.size());
                prop_assert_eq!(p[i] / shape.segment_length(), p[0] / shape.segment_length() + i as u64);
            }
        }
    }

    fn hashes(n: usize, seed: u64) -> Vec<u64> {
        let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
        (0..n)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x.wrapping_mul(0x2545_f491_4f6c_dd1d)
            })
            .collect()
    }

    /// Filling in reverse peeling order makes every key's slots sum to its target.
    #[test]
    fn peeling_order_fills_every_key() {
        for arity in [Arity::Three, Arity::Four] {
            for n in [1usize, 2, 3, 10, 1000, 100_000] {
                let shape = FuseShape::new(n as u64, arity).unwrap();
                let a = arity.get();
                let (hashes, order) = (0..100)
                    .find_map(|seed| {
                        let hashes = hashes(n, seed);
                        shape.peel(&hashes).map(|order| (hashes, order))
                    })
                    .expect("peels within 100 seeds");
                let target = |key: usize| (key as u16).wrapping_mul(40_503);
                let mut slots = vec![0u16; shape.size() as usize];
                for &(key, t) in order.iter().rev() {
                    let p = shape.positions(hashes[key as usize]);
                    let others = (0..a)
                        .filter(|&u| u != t as usize)
                        .fold(0u16, |sum, u| sum.wrapping_add(slots[p[u] as usize]));
                    slots[p[t as usize] as usize] = target(key as usize).wrapping_sub(others);
                }
                for (key, &h) in hashes.iter().enumerate() {
                    let p = shape.positions(h);
                    let sum = p[..a]
                        .iter()
                        .fold(0u16, |s, &q| s.wrapping_add(slots[q as usize]));
                    assert_eq!(sum, target(key), "{arity:?} n = {n} key {key}");
                }
            }
        }
    }

    #[test]
    fn equal_hashes_do_not_peel() {
        let shape = FuseShape::new(3, Arity::Three).unwrap();
        assert!(shape.peel(&[7, 7, 9]).is_none());
    }
}
