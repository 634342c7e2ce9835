//! MurmurHash3's 64-bit finalizer, a bijective mixer of 64-bit words, and a run of its outputs
//! at consecutive inputs (a keyword row's mask digits), vectorized where the CPU multiplies
//! 64-bit lanes.

use crate::backend::{vectorized, Backend};

/// MurmurHash3's 64-bit finalizer: a bijective mixer.
#[inline(always)]
pub fn mix64(mut x: u64) -> u64 {
    x ^= x >> 33;
    x = x.wrapping_mul(0xff51_afd7_ed55_8ccd);
    x ^= x >> 33;
    x = x.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    x ^ (x >> 33)
}

/// `out[j] = mix64(start + j) & mask` (the low byte, wrapping), for every `j`, compiled for the
/// selected backend's vector unit (AVX-512 multiplies eight 64-bit lanes per instruction).
pub fn mixed_bytes(start: u64, mask: u8, out: &mut [u8]) {
    vectorized!(Backend::selected(), fn(start: u64 = start, mask: u8 = mask, out: &mut [u8] = out) {
        mixed_bytes_generic(start, mask, out)
    })
}

/// [`mixed_bytes`] written once, auto-vectorized for the target features of its caller.
#[inline(always)]
fn mixed_bytes_generic(start: u64, mask: u8, out: &mut [u8]) {
    for (j, byte) in out.iter_mut().enumerate() {
        *byte = mix64(start.wrapping_add(j as u64)) as u8 & mask;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn the_finalizer_has_its_known_values() {
        // fmix64 of MurmurHash3: 0 is fixed, and 1 maps to a known word.
        assert_eq!(mix64(0), 0);
        assert_eq!(mix64(1), 0xb456_bcfc_34c2_cb2c);
    }

    proptest! {
        #[test]
        fn runs_are_the_finalizer_at_consecutive_inputs(start in any::<u64>(), mask in any::<u8>(), len in 0usize..300) {
            let mut out = vec![0u8; len];
            mixed_bytes(start, mask, &mut out);
            for (j, &byte) in out.iter().enumerate() {
                prop_assert_eq!(byte, mix64(start.wrapping_add(j as u64)) as u8 & mask);
            }
            let mut generic = vec![0u8; len];
            mixed_bytes_generic(start, mask, &mut generic);
            prop_assert_eq!(out, generic);
        }
    }
}
