//! Transposing square bit matrices: the step between the column form of OT extension (one
//! 128-bit word per base OT) and its row form (one row per bin).
//!
//! Portable code on 64-bit words: Eklundh's recursive block swap, seven rounds of masked shifts
//! and XORs over the 128 rows, with no table lookups and no data-dependent branches.

/// Rows (and columns) of the matrices [`transpose_128`] transposes.
pub(crate) const SIDE: usize = 128;

/// The 64-bit word whose bits `c` with `c & width == 0` are set (`width` a power of two below
/// 64): the bits of each half-row that stay in place in the round of that width.
const fn low_half_mask(width: u32) -> u64 {
    u64::MAX / ((1u64 << width) + 1)
}

/// Transposes in place the 128 x 128 bit matrix whose entry `(r, c)` is bit `c` of `rows[r]`:
/// afterwards it is bit `r` of `rows[c]`.
///
/// In the round of width `w`, every pair of rows `(i, i + w)` with bit `w` of `i` clear swaps
/// the `w x w` blocks above and below the diagonal of their `2w x 2w` block; after the rounds of
/// all widths every entry has moved across the main diagonal. The round of width 64 exchanges
/// 64-bit halves; in the narrower rounds no bit crosses between the halves of a row, so they
/// work on the two 64-bit halves separately, with constant shifts.
pub(crate) fn transpose_128(rows: &mut [u128; SIDE]) {
    let (top, bottom) = rows.split_at_mut(SIDE / 2);
    for (a, b) in top.iter_mut().zip(bottom) {
        let (a_low, a_high) = (*a as u64, (*a >> 64) as u64);
        let (b_low, b_high) = (*b as u64, (*b >> 64) as u64);
        *a = u128::from(a_low) | u128::from(b_low) << 64;
        *b = u128::from(a_high) | u128::from(b_high) << 64;
    }
    swap_round::<32>(rows);
    swap_round::<16>(rows);
    swap_round::<8>(rows);
    swap_round::<4>(rows);
    swap_round::<2>(rows);
    swap_round::<1>(rows);
}

/// The round of width `W` (below 64), on each 64-bit half of the rows.
fn swap_round<const W: u32>(rows: &mut [u128; SIDE]) {
    let mask = low_half_mask(W);
    let swap = |a: u64, b: u64| {
        let swapped = ((a >> W) ^ b) & mask;
        (a ^ (swapped << W), b ^ swapped)
    };
    let w = W as usize;
    for pair in rows.chunks_exact_mut(2 * w) {
        let (top, bottom) = pair.split_at_mut(w);
        for (a, b) in top.iter_mut().zip(bottom) {
            let (a_low, b_low) = swap(*a as u64, *b as u64);
            let (a_high, b_high) = swap((*a >> 64) as u64, (*b >> 64) as u64);
            *a = u128::from(a_low) | u128::from(a_high) << 64;
            *b = u128::from(b_low) | u128::from(b_high) << 64;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn naive(rows: &[u128; SIDE]) -> [u128; SIDE] {
        let mut out = [0u128; SIDE];
        for (r, row) in rows.iter().enumerate() {
            for (c, column) in out.iter_mut().enumerate() {
                *column |= ((row >> c) & 1) << r;
            }
        }
        out
    }

    #[test]
    fn masks_keep_the_low_half_of_each_block() {
        assert_eq!(low_half_mask(1), 0x5555_5555_5555_5555);
        assert_eq!(low_half_mask(8), 0x00ff_00ff_00ff_00ff);
        assert_eq!(low_half_mask(32), 0x0000_0000_ffff_ffff);
    }

    #[test]
    fn single_bits_cross_the_diagonal() {
        for (r, c) in [(0, 0), (0, 127), (127, 0), (5, 77), (100, 3)] {
            let mut rows = [0u128; SIDE];
            rows[r] = 1 << c;
            transpose_128(&mut rows);
            let mut expected = [0u128; SIDE];
            expected[c] = 1 << r;
            assert_eq!(rows, expected, "({r}, {c})");
        }
    }

    proptest! {
        #[test]
        fn equals_the_naive_transpose_and_is_an_involution(
            words in prop::collection::vec(any::<u128>(), SIDE)
        ) {
            let original: [u128; SIDE] = words.try_into().unwrap();
            let mut rows = original;
            transpose_128(&mut rows);
            prop_assert_eq!(rows, naive(&original));
            transpose_128(&mut rows);
            prop_assert_eq!(rows, original);
        }
    }
}
