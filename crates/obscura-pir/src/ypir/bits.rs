//! Bit streams: values of one width re-cut into values of another, least significant bit
//! first (how records become words and rounded values become chunks, and back).

/// The stream of `values`, each `from` bits wide (1 to 32; higher bits ignored), cut into
/// `count` values of `to` bits (1 to 32); the stream is padded with zero bits or truncated.
pub(super) fn regroup(
    values: impl IntoIterator<Item = u32>,
    from: u32,
    to: u32,
    count: usize,
) -> Vec<u32> {
    debug_assert!((1..=32).contains(&from) && (1..=32).contains(&to));
    let (from_mask, to_mask) = (mask(from), mask(to));
    let mut out = Vec::with_capacity(count);
    let (mut buffer, mut held) = (0u64, 0u32);
    let mut input = values.into_iter();
    while out.len() < count {
        while held < to {
            match input.next() {
                Some(v) => {
                    buffer |= (u64::from(v) & from_mask) << held;
                    held += from;
                }
                None => held = to,
            }
        }
        out.push((buffer & to_mask) as u32);
        buffer >>= to;
        held -= to;
    }
    out
}

/// `len` bytes of the stream of `words` (each `width` bits wide, 8 to 32) from bit `start`;
/// bits past the last word read as zero.
pub(super) fn bytes_at(words: &[u32], width: u32, start: u64, len: usize) -> Vec<u8> {
    debug_assert!((8..=32).contains(&width));
    let word = |i: u64| u64::from(words.get(i as usize).copied().unwrap_or(0)) & mask(width);
    (0..len as u64)
        .map(|b| {
            let bit = start + 8 * b;
            let (i, shift) = (bit / u64::from(width), bit % u64::from(width));
            let window = word(i) | word(i + 1) << width;
            (window >> shift) as u8
        })
        .collect()
}

/// The `bits`-bit value with every bit set.
fn mask(bits: u32) -> u64 {
    (1u64 << bits) - 1
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn regrouping_round_trips(
            values in proptest::collection::vec(any::<u32>(), 0..60),
            from in 1u32..=32,
            to in 1u32..=32,
        ) {
            let bits = values.len() * from as usize;
            let count = bits.div_ceil(to as usize);
            let cut = regroup(values.iter().copied(), from, to, count);
            prop_assert!(cut.iter().all(|&v| u64::from(v) <= mask(to)));
            let back = regroup(cut, to, from, values.len());
            let want: Vec<u32> = values.iter().map(|&v| (u64::from(v) & mask(from)) as u32).collect();
            prop_assert_eq!(back, want);
        }
    }

    proptest! {
        #[test]
        fn bytes_are_read_back_at_any_offset(
            bytes in proptest::collection::vec(any::<u8>(), 1..40),
            width in 8u32..=32,
            skip in 0usize..5,
        ) {
            let count = (8 * bytes.len()).div_ceil(width as usize);
            let words = regroup(bytes.iter().map(|&b| u32::from(b)), 8, width, count);
            let len = bytes.len() - skip.min(bytes.len() - 1);
            let start = bytes.len() - len;
            prop_assert_eq!(bytes_at(&words, width, 8 * start as u64, len), &bytes[start..]);
        }
    }

    #[test]
    fn bytes_become_fourteen_bit_words() {
        // 0xFF, 0x3F, 0x01: bits 0..14 are all set, then 0x00 | 1 << 2.
        assert_eq!(regroup([0xFF, 0x3F, 0x01], 8, 14, 2), vec![0x3FFF, 0b100]);
    }
}
