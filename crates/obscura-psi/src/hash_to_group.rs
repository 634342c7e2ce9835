//! Hashing byte strings to ristretto255 (RFC 9380 suite `ristretto255_XMD:SHA-512_R255MAP_RO_`).
//!
//! A message is expanded to 64 uniform bytes with `expand_message_xmd` over SHA-512 (RFC 9380
//! §5.3.1) under a domain separation tag, and the bytes are mapped to the group with the
//! ristretto255 one-way map (RFC 9496 §4.3.4: two Elligator maps, added). The result is a random
//! oracle into the group whose discrete logarithms nobody knows, which is what ECDH-PSI needs.

use curve25519_dalek::ristretto::RistrettoPoint;
use sha2::{Digest, Sha512};

/// The domain separation tag of Obscura's PSI, wire version 1.
pub const PSI_DST: &[u8] = b"OBSCURA-PSI-V01-CS01-with-ristretto255_XMD:SHA-512_R255MAP_RO_";

/// SHA-512's input block size (`s_in_bytes` in RFC 9380).
const BLOCK_BYTES: usize = 128;
/// SHA-512's output size (`b_in_bytes` in RFC 9380).
const HASH_BYTES: usize = 64;
/// The longest tag used as is; longer ones are hashed first (RFC 9380 §5.3.3).
const MAX_DST_BYTES: usize = 255;

/// A hash to ristretto255 under one domain separation tag.
#[derive(Clone)]
pub struct HashToGroup {
    /// SHA-512 after absorbing `Z_pad` (one zero block): every message's first hash starts here.
    after_zero_block: Sha512,
    /// `DST_prime = DST || I2OSP(len(DST), 1)`.
    dst_prime: Vec<u8>,
}

impl HashToGroup {
    /// The hash under domain separation tag `dst` (a tag over 255 bytes is replaced by
    /// `SHA-512("H2C-OVERSIZE-DST-" || dst)`, as RFC 9380 prescribes).
    pub fn new(dst: &[u8]) -> Self {
        let hashed;
        let dst = if dst.len() > MAX_DST_BYTES {
            hashed = Sha512::new()
                .chain_update(b"H2C-OVERSIZE-DST-")
                .chain_update(dst)
                .finalize();
            hashed.as_slice()
        } else {
            dst
        };
        let mut dst_prime = dst.to_vec();
        dst_prime.push(dst.len() as u8);
        Self {
            after_zero_block: Sha512::new().chain_update([0u8; BLOCK_BYTES]),
            dst_prime,
        }
    }

    /// The hash of Obscura's PSI (tag [`PSI_DST`]).
    pub fn psi() -> Self {
        Self::new(PSI_DST)
    }

    /// RFC 9380 `expand_message_xmd(msg, DST, LEN)` with SHA-512: `LEN` pseudorandom bytes
    /// (1 to 16,320, checked at compile time).
    pub fn expand_message<const LEN: usize>(&self, msg: &[u8]) -> [u8; LEN] {
        const {
            assert!(
                LEN >= 1 && LEN <= 255 * HASH_BYTES,
                "expand_message_xmd gives 1 to 255 blocks"
            )
        };
        let b_0 = self
            .after_zero_block
            .clone()
            .chain_update(msg)
            .chain_update((LEN as u16).to_be_bytes())
            .chain_update([0u8])
            .chain_update(&self.dst_prime)
            .finalize();
        let mut out = [0u8; LEN];
        // b_i = H((b_0 xor b_(i-1)) || i || DST_prime), with b_1 = H(b_0 || 1 || DST_prime): start
        // from an all-zero "b_0" so the first xor leaves b_0 unchanged.
        let mut previous = [0u8; HASH_BYTES];
        for (i, block) in out.chunks_mut(HASH_BYTES).enumerate() {
            let mixed: [u8; HASH_BYTES] = std::array::from_fn(|j| b_0[j] ^ previous[j]);
            let b_i = Sha512::new()
                .chain_update(mixed)
                .chain_update([i as u8 + 1])
                .chain_update(&self.dst_prime)
                .finalize();
            block.copy_from_slice(&b_i[..block.len()]);
            previous.copy_from_slice(&b_i);
        }
        out
    }

    /// The point of `msg`: RFC 9380 `hash_to_ristretto255(msg)` under this tag.
    pub fn hash(&self, msg: &[u8]) -> RistrettoPoint {
        RistrettoPoint::from_uniform_bytes(&self.expand_message::<64>(msg))
    }
}
