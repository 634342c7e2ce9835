//! Byte mutations of corpus inputs, driven by a small seeded generator so that a run can be
//! repeated.

/// A splitmix64 generator: fast, seedable, good enough to pick mutations.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    /// A generator started at `seed`.
    pub fn new(seed: u64) -> Self {
        Self(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A number below `bound` (0 when `bound` is 0).
    pub fn below(&mut self, bound: usize) -> usize {
        if bound == 0 {
            0
        } else {
            (self.next_u64() % bound as u64) as usize
        }
    }

    /// One element of `items`.
    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

/// Bytes worth trying in any position.
const BYTES: [u8; 8] = [0, 1, 2, 0x7f, 0x80, 0xfe, 0xff, b'O'];

/// Values worth trying in a length or count field.
const WORDS: [u64; 14] = [
    0,
    1,
    2,
    3,
    64,
    255,
    4096,
    0x7fff_ffff,
    0x8000_0000,
    0xffff_ffff,
    1 << 32,
    1 << 40,
    1 << 62,
    u64::MAX,
];

/// Mutations concentrate on the first bytes (envelopes, headers and length fields) this often
/// out of 4.
const HEADER_BIAS: usize = 3;

/// How far the header region reaches.
const HEADER_BYTES: usize = 160;

/// Longest input a mutation may produce.
pub const MAX_INPUT: usize = 1 << 20;

/// Applies one to four random mutations to `input`; `other` is another corpus entry to splice
/// with.
pub fn mutate(rng: &mut Rng, input: &mut Vec<u8>, other: &[u8]) {
    for _ in 0..=rng.below(4) {
        mutate_once(rng, input, other);
    }
    input.truncate(MAX_INPUT);
}

/// A position in `len` bytes, often in the header region.
fn position(rng: &mut Rng, len: usize) -> usize {
    if rng.below(4) < HEADER_BIAS {
        rng.below(len.min(HEADER_BYTES))
    } else {
        rng.below(len)
    }
}

fn mutate_once(rng: &mut Rng, input: &mut Vec<u8>, other: &[u8]) {
    let len = input.len();
    match rng.below(11) {
        0 if len > 0 => {
            let at = position(rng, len);
            input[at] ^= 1 << rng.below(8);
        }
        1 if len > 0 => {
            let at = position(rng, len);
            input[at] = *rng.pick(&BYTES);
        }
        2 if len > 0 => {
            let at = position(rng, len);
            input[at] = input[at].wrapping_add(rng.below(33) as u8).wrapping_sub(16);
        }
        3 => input.truncate(rng.below(len + 1)),
        4 => {
            let extra = 1 + rng.below(64);
            let byte = if rng.below(2) == 0 {
                0
            } else {
                rng.next_u64() as u8
            };
            input.extend(std::iter::repeat_n(byte, extra));
        }
        5..=7 => {
            // A little-endian field of 2, 4 or 8 bytes set to a boundary value or the length.
            let width = *rng.pick(&[2usize, 4, 8]);
            if len >= width {
                let at = position(rng, len - width + 1);
                let value = match rng.below(4) {
                    0 => len as u64,
                    1 => (len as u64 + rng.below(9) as u64).wrapping_sub(4),
                    _ => *rng.pick(&WORDS),
                };
                input[at..at + width].copy_from_slice(&value.to_le_bytes()[..width]);
            }
        }
        8 if !other.is_empty() => {
            // Our head, their tail.
            let head = rng.below(len + 1);
            let tail = rng.below(other.len());
            input.truncate(head);
            input.extend_from_slice(&other[tail..]);
        }
        9 if len > 0 => {
            let start = position(rng, len);
            let end = (start + 1 + rng.below(64)).min(len);
            input.drain(start..end);
        }
        10 if len > 0 => {
            let start = position(rng, len);
            let end = (start + 1 + rng.below(64)).min(len);
            let copy = input[start..end].to_vec();
            let at = rng.below(len + 1);
            input.splice(at..at, copy);
        }
        _ => input.push(rng.next_u64() as u8),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_seed_gives_the_same_mutations() {
        let run = |seed| {
            let mut rng = Rng::new(seed);
            let mut input = b"OBSC\x04\x00\x01\x00 a setup of some length".to_vec();
            for _ in 0..100 {
                mutate(&mut rng, &mut input, b"another entry");
            }
            input
        };
        assert_eq!(run(7), run(7));
        assert_ne!(run(7), run(8));
    }

    #[test]
    fn mutations_change_the_input_and_stay_bounded() {
        let mut rng = Rng::new(1);
        let original = vec![0x55u8; 300];
        let changed = (0..200)
            .filter(|_| {
                let mut input = original.clone();
                mutate(&mut rng, &mut input, &original);
                assert!(input.len() <= MAX_INPUT);
                input != original
            })
            .count();
        assert!(
            changed > 150,
            "{changed} of 200 mutations changed the input"
        );
    }
}
