//! Base oblivious transfers: the endemic OT of Masny and Rindal (CCS 2019) from CDH on
//! ristretto255, with their two-slot "Feistel" encoding of the receiver's point, as random
//! 1-out-of-2 OTs of 128-bit seeds, all OTs of a session batched into one message each way.
//!
//! # Protocol
//!
//! `G` is the ristretto255 base point; `H_x(i, R)` (slot `x ∈ {0, 1}`) is the RFC 9380 hash to
//! ristretto255 of `x ‖ i (u64 LE) ‖ R` under the tag `obscura-psi base-ot hash v2`;
//! `KDF(i, x, A, R_0, R_1, P)` is the first 16 bytes of
//! `SHA-256("obscura-psi base-ot v2\0" ‖ i ‖ x ‖ A ‖ R_0 ‖ R_1 ‖ P)` on point encodings.
//!
//! 1. The sender draws a secret scalar `a` and sends `A = a·G`.
//! 2. For OT `i` with choice bit `s`, the receiver draws secret scalars `b`, `u` and sets
//!    `R_{1−s} = u·G` and `R_s = b·G − H_s(i, R_{1−s})`; it sends `(R_0, R_1)` (all OTs in one
//!    message) and its seed is `KDF(i, s, A, R_0, R_1, b·A)`.
//! 3. The sender sets `B_x = R_x + H_x(i, R_{1−x})`; its seeds of OT `i` are
//!    `k_i^x = KDF(i, x, A, R_0, R_1, a·B_x)`. Since `B_s = b·G`, the receiver's seed is `k_i^s`.
//!
//! # Security (against malicious parties)
//!
//! With the hashes modelled as random oracles and CDH hard in ristretto255 (about 128-bit
//! security):
//! - **The receiver's choice** is hidden perfectly: `R_{1−s}` is a uniform point and `R_s` is
//!   `b·G` (uniform) shifted by a value fixed before `b` is drawn, so `(R_0, R_1)` is a uniform
//!   pair whatever `s` is, whatever the sender does. The selection is constant time.
//! - **The seed not chosen** stays hidden even from a receiver that deviates: `B_x` hashes the
//!   other slot, so whichever of `R_0`, `R_1` the receiver fixed last, the other slot's `B` is a
//!   random-oracle output it did not choose, and its seed needs `a·B`, that is CDH of `(A, B)`.
//!   The slot whose point was queried first also tells a simulator the receiver's choice
//!   (Masny and Rindal's extraction), which the VOLE-PSI's malicious mode needs.
//! - The index `i`, the slot `x`, both points and `A` in the KDF separate the OTs of one batch
//!   and the two keys of one OT (even if `B_0 = B_1`). Scalars come
//!   from the OS CSPRNG and are wiped after use. Every point received is decoded (canonical
//!   encodings of group elements only) and the identity is refused, which an honest party sends
//!   with negligible probability.

use std::sync::LazyLock;

use curve25519_dalek::ristretto::RistrettoPoint;
use curve25519_dalek::scalar::Scalar;
use obscura_math::sample::{OsSampler, RngError};
use rayon::prelude::*;
use sha2::{Digest, Sha256};
use subtle::{Choice, ConditionallySelectable};
use zeroize::Zeroize;

use crate::exponent::{random_nonzero_scalar, POINT_BYTES};
use crate::hash_to_group::HashToGroup;
use crate::wire::FrameKind;
use crate::{point, PeerError, PsiError};

/// Sender to receiver: the base-OT sender's point.
pub const BASE_OT_POINT: FrameKind = FrameKind::new(7, "base-ot-point");
/// Receiver to sender: the base-OT receiver's points, one pair per OT.
pub const BASE_OT_CHOICES: FrameKind = FrameKind::new(8, "base-ot-choices");

/// Bytes of a seed.
pub(crate) const SEED_BYTES: usize = 16;
/// A 128-bit seed obtained by OT.
pub(crate) type Seed = [u8; SEED_BYTES];
/// Bytes of the receiver's reply per OT: the encodings of `R_0` and `R_1`.
pub(crate) const REPLY_BYTES: usize = 2 * POINT_BYTES;

const DOMAIN: &[u8] = b"obscura-psi base-ot v2\0";
const HASH_TAG: &[u8] = b"obscura-psi base-ot hash v2";

/// The hash to the group of the slots.
static SLOT_HASH: LazyLock<HashToGroup> = LazyLock::new(|| HashToGroup::new(HASH_TAG));

/// `H_x(i, R)`.
fn slot_hash(slot: u8, index: usize, other: &[u8; POINT_BYTES]) -> RistrettoPoint {
    let mut message = [0u8; 1 + 8 + POINT_BYTES];
    message[0] = slot;
    message[1..9].copy_from_slice(&(index as u64).to_le_bytes());
    message[9..].copy_from_slice(other);
    SLOT_HASH.hash(&message)
}

/// The sender of a batch of base OTs: it ends with both seeds of every OT.
pub(crate) struct Sender {
    secret: Scalar,
    message: [u8; POINT_BYTES],
}

impl Sender {
    /// A sender with a fresh secret from `rng`.
    pub(crate) fn new(rng: &mut OsSampler) -> Result<Self, RngError> {
        let secret = random_nonzero_scalar(rng)?;
        Ok(Self {
            message: RistrettoPoint::mul_base(&secret).compress().to_bytes(),
            secret,
        })
    }

    /// The message to the receiver: the encoding of `A`.
    pub(crate) fn message(&self) -> [u8; POINT_BYTES] {
        self.message
    }

    /// Both seeds `[k_i^0, k_i^1]` of each OT from the receiver's reply ([`REPLY_BYTES`] per
    /// OT; a trailing partial reply is ignored, the caller checks the length). Fails on an
    /// invalid encoding or the identity.
    pub(crate) fn seeds(&self, reply: &[u8]) -> Result<Vec<[Seed; 2]>, PeerError> {
        let (replies, _) = reply.as_chunks::<REPLY_BYTES>();
        replies
            .par_iter()
            .enumerate()
            .map(|(i, reply)| {
                let (first, second) = reply.split_at(POINT_BYTES);
                let encoded: [&[u8; POINT_BYTES]; 2] = [
                    first.try_into().expect("split"),
                    second.try_into().expect("split"),
                ];
                let slots = [point::decode(encoded[0])?, point::decode(encoded[1])?];
                Ok(std::array::from_fn(|x| {
                    let b = slots[x] + slot_hash(x as u8, i, encoded[1 - x]);
                    kdf(i, x as u8, &self.message, reply, &(self.secret * b))
                }))
            })
            .collect()
    }
}

impl Drop for Sender {
    fn drop(&mut self) {
        self.secret.zeroize();
    }
}

/// The receiver's side for the choice bits `choices`, given the sender's message: returns the
/// reply ([`REPLY_BYTES`] per OT) and the seed `k_i^{s_i}` of each OT. Fails on an invalid or
/// identity sender point, or if the OS CSPRNG fails.
pub(crate) fn receive(
    choices: &[bool],
    message: &[u8; POINT_BYTES],
    rng: &mut OsSampler,
) -> Result<(Vec<u8>, Vec<Seed>), crate::PsiError> {
    let sender_point = point::decode(message)?;
    let mut secrets = choices
        .iter()
        .map(|_| Ok([random_nonzero_scalar(rng)?, random_nonzero_scalar(rng)?]))
        .collect::<Result<Vec<_>, RngError>>()?;
    let (replies, seeds): (Vec<[u8; REPLY_BYTES]>, Vec<Seed>) = secrets
        .par_iter()
        .zip(choices)
        .enumerate()
        .map(|(i, ([b, u], &choice))| {
            // `R_{1−s} = u·G`; `R_s = b·G − H_s(i, R_{1−s})`; the slots are swapped in constant
            // time (the choice only enters as a value).
            let slot = u8::from(choice);
            let other = RistrettoPoint::mul_base(u);
            let chosen =
                RistrettoPoint::mul_base(b) - slot_hash(slot, i, other.compress().as_bytes());
            let choice = Choice::from(slot);
            let slots = [
                RistrettoPoint::conditional_select(&chosen, &other, choice),
                RistrettoPoint::conditional_select(&other, &chosen, choice),
            ];
            let mut reply = [0u8; REPLY_BYTES];
            reply[..POINT_BYTES].copy_from_slice(slots[0].compress().as_bytes());
            reply[POINT_BYTES..].copy_from_slice(slots[1].compress().as_bytes());
            (reply, kdf(i, slot, message, &reply, &(b * sender_point)))
        })
        .unzip();
    secrets.zeroize();
    Ok((replies.concat(), seeds))
}

/// [`receive`] with one OT per bit of `choices` (bit `i % 128` of word `i / 128` for OT `i`);
/// the bits are wiped after use.
pub(crate) fn receive_words(
    choices: &[u128],
    message: &[u8; POINT_BYTES],
    rng: &mut OsSampler,
) -> Result<(Vec<u8>, Vec<Seed>), PsiError> {
    let mut bits: Vec<bool> = (0..128 * choices.len())
        .map(|i| (choices[i / 128] >> (i % 128)) & 1 == 1)
        .collect();
    let received = receive(&bits, message, rng);
    bits.zeroize();
    received
}

/// `KDF(i, x, A, R_0, R_1, P)`, `reply` being the encodings of `R_0` and `R_1`.
fn kdf(
    index: usize,
    slot: u8,
    sender: &[u8; POINT_BYTES],
    reply: &[u8; REPLY_BYTES],
    shared: &RistrettoPoint,
) -> Seed {
    let digest = Sha256::new()
        .chain_update(DOMAIN)
        .chain_update((index as u64).to_le_bytes())
        .chain_update([slot])
        .chain_update(sender)
        .chain_update(reply)
        .chain_update(shared.compress().as_bytes())
        .finalize();
    digest[..SEED_BYTES].try_into().expect("16 of 32 bytes")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_receiver_gets_exactly_the_chosen_seed() {
        let mut rng = OsSampler::new();
        let choices: Vec<bool> = (0..64).map(|i| (i * 7) % 3 == 0).collect();
        let sender = Sender::new(&mut rng).unwrap();
        let (reply, chosen) = receive(&choices, &sender.message(), &mut rng).unwrap();
        assert_eq!(reply.len(), 64 * REPLY_BYTES);
        let seeds = sender.seeds(&reply).unwrap();
        for ((pair, &choice), seed) in seeds.iter().zip(&choices).zip(&chosen) {
            assert_eq!(pair[usize::from(choice)], *seed);
            assert_ne!(pair[usize::from(!choice)], *seed);
        }
        // Every seed of the batch is different.
        let mut all: Vec<Seed> = seeds.iter().flatten().copied().collect();
        all.sort_unstable();
        all.dedup();
        assert_eq!(all.len(), 128);
    }

    /// Each slot's point enters the other slot's: a receiver that swaps its two points (or
    /// replays one OT's points in another OT) gets neither seed of the original.
    #[test]
    fn slots_bind_each_other_and_the_index() {
        let mut rng = OsSampler::new();
        let sender = Sender::new(&mut rng).unwrap();
        let (reply, chosen) = receive(&[true, false], &sender.message(), &mut rng).unwrap();
        let honest = sender.seeds(&reply).unwrap();
        assert_eq!(honest[0][1], chosen[0]);
        let mut swapped = reply.clone();
        swapped[..REPLY_BYTES].rotate_left(POINT_BYTES);
        let forged = sender.seeds(&swapped).unwrap();
        for seed in forged[0] {
            assert!(!honest[0].contains(&seed));
        }
        let replayed = [&reply[..REPLY_BYTES], &reply[..REPLY_BYTES]].concat();
        let forged = sender.seeds(&replayed).unwrap();
        assert_eq!(forged[0], honest[0]);
        for seed in forged[1] {
            assert!(!honest[0].contains(&seed) && !honest[1].contains(&seed));
        }
    }

    #[test]
    fn invalid_and_identity_points_are_refused() {
        let mut rng = OsSampler::new();
        let sender = Sender::new(&mut rng).unwrap();
        let (mut reply, _) = receive(&[true, false], &sender.message(), &mut rng).unwrap();
        reply[REPLY_BYTES + POINT_BYTES..].fill(0);
        assert_eq!(sender.seeds(&reply), Err(PeerError::IdentityPoint));
        reply[REPLY_BYTES..].fill(0xff);
        assert_eq!(sender.seeds(&reply), Err(PeerError::InvalidPoint));
        assert!(matches!(
            receive(&[true], &[0u8; 32], &mut rng),
            Err(PsiError::Peer(PeerError::IdentityPoint))
        ));
        assert!(matches!(
            receive(&[true], &[0xffu8; 32], &mut rng),
            Err(PsiError::Peer(PeerError::InvalidPoint))
        ));
    }
}
