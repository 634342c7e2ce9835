//! Dense packing of bytes into plaintext digits of `width` bits (1 ≤ width ≤ 8), and back.
//!
//! A byte string is read as a little-endian bit stream (bit `b` is bit `b % 8` of byte `b / 8`)
//! and cut into consecutive `width`-bit digits, the first bit of a digit being its least
//! significant one. With `width = 8` a digit is a byte; with smaller widths no bit is wasted
//! except at the very end. Bits past the end of the input read as zero.

/// The largest supported digit width: a digit must fit in one byte.
pub const MAX_WIDTH: u32 = 8;

/// The `width`-bit digit starting at bit `offset` of `bytes`, where only the bits before `limit`
/// belong to the stream (bits at or after `limit`, or past the end of `bytes`, read as zero).
#[inline]
pub fn digit_at(bytes: &[u8], offset: u64, width: u32, limit: u64) -> u8 {
    debug_assert!((1..=MAX_WIDTH).contains(&width));
    if offset >= limit {
        return 0;
    }
    let valid = (limit - offset).min(u64::from(width)) as u32;
    let byte = (offset / 8) as usize;
    let shift = (offset % 8) as u32;
    let low = u16::from(bytes.get(byte).copied().unwrap_or(0));
    let high = u16::from(bytes.get(byte + 1).copied().unwrap_or(0));
    let window = (low | (high << 8)) >> shift;
    (window & ((1u16 << valid) - 1)) as u8
}

/// Cuts `bytes` into `width`-bit digits: `ceil(8 · len / width)` of them.
pub fn pack(bytes: &[u8], width: u32) -> Vec<u8> {
    let bits = 8 * bytes.len() as u64;
    let count = bits.div_ceil(u64::from(width));
    (0..count)
        .map(|i| digit_at(bytes, i * u64::from(width), width, bits))
        .collect()
}

/// Reassembles bytes from `width`-bit digits: fills `out` with the bit stream that starts
/// `skip` bits into the stream the digits describe. Digits must be below `2^width`.
///
/// # Panics
/// If the digits hold fewer than `skip + 8 · out.len()` bits (a programming error).
pub fn unpack_into(digits: &[u8], width: u32, skip: u64, out: &mut [u8]) {
    let needed = skip + 8 * out.len() as u64;
    assert!(
        digits.len() as u64 * u64::from(width) >= needed,
        "not enough digits"
    );
    if width == 8 && skip.is_multiple_of(8) {
        // Byte digits: the stream is the digits themselves.
        let start = (skip / 8) as usize;
        out.copy_from_slice(&digits[start..start + out.len()]);
        return;
    }
    let mut acc: u32 = 0;
    let mut held: u32 = 0;
    let mut digits = digits.iter();
    let mut to_skip = skip;
    // Drop whole digits first, then single bits.
    let whole = to_skip / u64::from(width);
    for _ in 0..whole {
        digits.next();
    }
    to_skip -= whole * u64::from(width);
    for byte in out.iter_mut() {
        while held < 8 + to_skip as u32 {
            let digit = *digits.next().expect("checked above");
            acc |= u32::from(digit) << held;
            held += width;
        }
        if to_skip > 0 {
            acc >>= to_skip;
            held -= to_skip as u32;
            to_skip = 0;
        }
        *byte = acc as u8;
        acc >>= 8;
        held -= 8;
    }
}

/// Reassembles `len` bytes from the start of the stream that `digits` describe.
pub fn unpack(digits: &[u8], width: u32, len: usize) -> Vec<u8> {
    let mut out = vec![0u8; len];
    unpack_into(digits, width, 0, &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn width_eight_is_identity() {
        let data = [1u8, 2, 250, 0, 7];
        assert_eq!(pack(&data, 8), data);
        assert_eq!(unpack(&data, 8, 5), data);
    }

    #[test]
    fn width_seven_example() {
        // 0xff 0x01: bits 1111_1111 1000_0000 (LSB first) -> digits 0x7f, 0b0000011, 0
        assert_eq!(pack(&[0xff, 0x01], 7), vec![0x7f, 0x03, 0x00]);
    }

    proptest! {
        #[test]
        fn round_trip(bytes in proptest::collection::vec(any::<u8>(), 0..200), width in 1u32..=8) {
            let digits = pack(&bytes, width);
            prop_assert!(digits.iter().all(|&d| u32::from(d) < (1 << width)));
            prop_assert_eq!(digits.len() as u64, (8 * bytes.len() as u64).div_ceil(u64::from(width)));
            prop_assert_eq!(unpack(&digits, width, bytes.len()), bytes);
        }

        #[test]
        fn unpack_at_offset(
            bytes in proptest::collection::vec(any::<u8>(), 1..100),
            width in 1u32..=8,
            start in 0usize..100,
        ) {
            let start = start % bytes.len();
            let digits = pack(&bytes, width);
            // Skip to `start` bytes: first digit that holds bit 8·start, then the leftover bits.
            let bit = 8 * start as u64;
            let first = (bit / u64::from(width)) as usize;
            let skip = bit - first as u64 * u64::from(width);
            let mut out = vec![0u8; bytes.len() - start];
            unpack_into(&digits[first..], width, skip, &mut out);
            prop_assert_eq!(&out[..], &bytes[start..]);
        }

        #[test]
        fn limit_masks_later_bits(bytes in proptest::collection::vec(any::<u8>(), 2..20), limit in 0u64..160, width in 1u32..=8) {
            let limit = limit.min(8 * bytes.len() as u64);
            for offset in 0..limit + 8 {
                let digit = digit_at(&bytes, offset, width, limit);
                for bit in 0..width {
                    let position = offset + u64::from(bit);
                    let expected = position < limit && (bytes[(position / 8) as usize] >> (position % 8)) & 1 == 1;
                    prop_assert_eq!((digit >> bit) & 1 == 1, expected);
                }
            }
        }
    }
}
