//! AES-128 on 128-bit words (little-endian byte order), encrypted in batches so that the
//! AES-NI backend of the `aes` crate (chosen at run time) keeps several blocks in flight.

use aes::cipher::{BlockEncrypt, KeyInit};
use aes::{Aes128, Block};
use obscura_math::sample::{OsSampler, RngError};

/// Blocks per call to the cipher.
const BATCH: usize = 16;

/// The AES-128 cipher under `key`.
pub(crate) fn cipher(key: [u8; 16]) -> Aes128 {
    Aes128::new(&key.into())
}

/// A uniformly random word from the OS CSPRNG.
pub(crate) fn random_word(rng: &mut OsSampler) -> Result<u128, RngError> {
    Ok(u128::from(rng.next_u64()?) << 64 | u128::from(rng.next_u64()?))
}

/// Encrypts each word of `inputs` (as its 16 little-endian bytes) under `cipher` and hands
/// `output` its position and the ciphertext (as a little-endian word), in order.
pub(crate) fn encrypt_each(
    cipher: &Aes128,
    inputs: impl IntoIterator<Item = u128>,
    mut output: impl FnMut(usize, u128),
) {
    let mut inputs = inputs.into_iter();
    let mut blocks = [Block::default(); BATCH];
    let mut done = 0;
    loop {
        let mut filled = 0;
        for (block, input) in blocks.iter_mut().zip(&mut inputs) {
            *block = input.to_le_bytes().into();
            filled += 1;
        }
        if filled == 0 {
            return;
        }
        cipher.encrypt_blocks(&mut blocks[..filled]);
        for (k, block) in blocks[..filled].iter().enumerate() {
            output(done + k, u128::from_le_bytes((*block).into()));
        }
        done += filled;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// FIPS-197 appendix C.1, and batches across the batch boundary agree with single blocks.
    #[test]
    fn fips197_vector_and_batches() {
        let key: [u8; 16] = std::array::from_fn(|i| i as u8);
        let plain = u128::from_le_bytes(std::array::from_fn(|i| (i * 0x11) as u8));
        let aes = cipher(key);
        let mut out = Vec::new();
        encrypt_each(&aes, [plain], |_, word| out.push(word));
        assert_eq!(
            out[0].to_le_bytes(),
            [
                0x69, 0xc4, 0xe0, 0xd8, 0x6a, 0x7b, 0x04, 0x30, 0xd8, 0xcd, 0xb7, 0x80, 0x70, 0xb4,
                0xc5, 0x5a
            ]
        );
        let inputs: Vec<u128> = (0..150).map(|i| i * 0x1234_5678_9abc).collect();
        let mut batch = vec![0; inputs.len()];
        encrypt_each(&aes, inputs.iter().copied(), |k, word| batch[k] = word);
        for (input, output) in inputs.iter().zip(&batch) {
            let mut single = 0;
            encrypt_each(&aes, [*input], |_, word| single = word);
            assert_eq!(single, *output);
        }
    }
}
