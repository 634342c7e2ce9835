//! A secret scalar recoded for fixed-window multiplication, shared by all lanes.

use curve25519_dalek::scalar::Scalar;
use zeroize::Zeroize;

/// Digits of a radix-16 recoding.
pub(crate) const DIGITS: usize = 64;

/// A scalar `s < 2^253` as 64 signed radix-16 digits `d_i` in `[-8, 8]`, `s = Σ d_i 16^i`, so a
/// multiplication needs a table of `1P ... 8P` only (a negative digit negates the entry). The
/// recoding has no branches on the scalar, and the digits are wiped on drop.
pub(crate) struct Digits(pub(crate) [i8; DIGITS]);

impl Digits {
    /// The recoding of `scalar` (canonical, so below ℓ < 2^253: the top digit is at most 2).
    pub(crate) fn new(scalar: &Scalar) -> Self {
        let mut bytes = scalar.to_bytes();
        let mut digits = [0i8; DIGITS];
        for (i, byte) in bytes.iter().enumerate() {
            digits[2 * i] = (byte & 15) as i8;
            digits[2 * i + 1] = (byte >> 4) as i8;
        }
        bytes.zeroize();
        // Move each digit from [0, 16) into [-8, 8) by borrowing 16 from the next one.
        for i in 0..DIGITS - 1 {
            let carry = (digits[i] + 8) >> 4;
            digits[i] -= carry << 4;
            digits[i + 1] += carry;
        }
        Self(digits)
    }
}

impl Drop for Digits {
    fn drop(&mut self) {
        self.0.zeroize();
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    proptest! {
        /// The digits are in range and sum back to the scalar.
        #[test]
        fn digits_recompose_the_scalar(wide in proptest::array::uniform32(any::<u8>())) {
            let scalar = Scalar::from_bytes_mod_order(wide);
            let digits = Digits::new(&scalar);
            let sixteen = Scalar::from(16u8);
            let mut sum = Scalar::ZERO;
            for &digit in digits.0.iter().rev() {
                prop_assert!((-8..=8).contains(&digit));
                let magnitude = Scalar::from(digit.unsigned_abs());
                sum = sum * sixteen + if digit < 0 { -magnitude } else { magnitude };
            }
            prop_assert_eq!(sum, scalar);
        }
    }
}
