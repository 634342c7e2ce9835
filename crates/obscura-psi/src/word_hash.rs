//! Hash maps keyed by values that are already uniformly random 64-bit words (such as prefixes
//! of pseudorandom tags), which need no further hashing.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// A hasher for keys that hash themselves as one uniformly random `u64`: one multiplication
/// spreads the word's entropy into the high bits too, where the table looks first.
#[derive(Default)]
pub(crate) struct WordHasher(u64);

impl Hasher for WordHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &byte in bytes {
            self.write_u64(self.0 ^ u64::from(byte));
        }
    }

    fn write_u64(&mut self, word: u64) {
        self.0 = word.wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }
}

/// A hash map whose keys hash as one random word each.
pub(crate) type WordMap<K, V> = HashMap<K, V, BuildHasherDefault<WordHasher>>;
