//! Base oblivious transfers: the "simplest OT" of Chou and Orlandi (LATINCRYPT 2015) on
//! ristretto255, as random 1-out-of-2 OTs of 128-bit seeds, all OTs of a session batched into one
//! message each way.
//!
//! # Protocol
//!
//! `G` is the ristretto255 base point; `KDF(i, A, B, P)` is the first 16 bytes of
//! `SHA-256("obscura-psi base-ot v1\0" ‖ i (u64 LE) ‖ A ‖ B ‖ P)` on point encodings.
//!
//! 1. The sender draws a secret scalar `a` and sends `A = a·G`.
//! 2. For OT `i` with choice bit `s_i`, the receiver draws a secret scalar `b_i` and sends
//!    `B_i = b_i·G + s_i·A` (all `B_i` in one message); its seed is `KDF(i, A, B_i, b_i·A)`.
//! 3. The sender's seeds of OT `i` are `k_i^0 = KDF(i, A, B_i, a·B_i)` and
//!    `k_i^1 = KDF(i, A, B_i, a·(B_i − A))`: the receiver's seed is `k_i^{s_i}`, since
//!    `a·(B_i − s_i·A) = a·b_i·G = b_i·A`.
//!
//! # Security
//!
//! Semi-honest security under the computational Diffie-Hellman assumption in ristretto255
//! (about 128-bit security), with the KDF modelled as a random oracle: `B_i` is a uniformly
//! random group element whatever `s_i` is (it hides the choice perfectly), and the seed the
//! receiver did not choose is the KDF of `b_i·A ∓ a·A`, which it cannot compute without `a·A`,
//! that is without solving CDH for `(A, A)` (as hard as CDH). The index `i` and both points in the KDF separate the OTs of one batch, which
//! share `A`. Scalars come from the OS CSPRNG and are wiped after use. Every point received is
//! decoded (canonical encodings of group elements only) and the identity is refused, which an
//! honest party sends with negligible probability.

use curve25519_dalek::ristretto::RistrettoPoint;
use curve25519_dalek::scalar::Scalar;
use obscura_math::sample::{OsSampler, RngError};
use rayon::prelude::*;
use sha2::{Digest, Sha256};
use zeroize::Zeroize;

use crate::chunk::{recv_array, recv_exact};
use crate::exponent::{random_nonzero_scalar, POINT_BYTES};
use crate::transport::{FrameKind, Transport};
use crate::{point, PeerError, PsiError};

/// Bytes of a seed.
pub(crate) const SEED_BYTES: usize = 16;
/// A 128-bit seed obtained by OT.
pub(crate) type Seed = [u8; SEED_BYTES];

const DOMAIN: &[u8] = b"obscura-psi base-ot v1\0";

/// The sender of a batch of base OTs: it ends with both seeds of every OT.
pub(crate) struct Sender {
    secret: Scalar,
    message: [u8; POINT_BYTES],
    /// `a·A`.
    secret_times_message: RistrettoPoint,
}

impl Sender {
    /// A sender with a fresh secret from `rng`.
    pub(crate) fn new(rng: &mut OsSampler) -> Result<Self, RngError> {
        let secret = random_nonzero_scalar(rng)?;
        let point = RistrettoPoint::mul_base(&secret);
        Ok(Self {
            secret,
            message: point.compress().to_bytes(),
            secret_times_message: secret * point,
        })
    }

    /// The message to the receiver: the encoding of `A`.
    pub(crate) fn message(&self) -> [u8; POINT_BYTES] {
        self.message
    }

    /// Both seeds `[k_i^0, k_i^1]` of each OT from the receiver's reply (the encodings of the
    /// `B_i`, 32 bytes each; a trailing partial encoding is ignored, the caller checks the
    /// length). Fails on an invalid encoding or the identity.
    pub(crate) fn seeds(&self, reply: &[u8]) -> Result<Vec<[Seed; 2]>, PeerError> {
        let (points, _) = reply.as_chunks::<POINT_BYTES>();
        points
            .par_iter()
            .enumerate()
            .map(|(i, encoded)| {
                let shared = self.secret * point::decode(encoded)?;
                Ok([
                    kdf(i, &self.message, encoded, &shared),
                    kdf(
                        i,
                        &self.message,
                        encoded,
                        &(shared - self.secret_times_message),
                    ),
                ])
            })
            .collect()
    }
}

impl Sender {
    /// Receives the receiver's reply for `count` OTs ([`FrameKind::BaseOtChoices`], exactly
    /// `count` points) and returns both seeds of each OT.
    pub(crate) fn seeds_from<T: Transport + ?Sized>(
        &self,
        transport: &mut T,
        count: usize,
    ) -> Result<Vec<[Seed; 2]>, PsiError> {
        let reply = recv_exact(transport, FrameKind::BaseOtChoices, count * POINT_BYTES)?;
        Ok(self.seeds(&reply)?)
    }
}

impl Drop for Sender {
    fn drop(&mut self) {
        self.secret.zeroize();
    }
}

/// The receiver's side for the choice bits `choices`, given the sender's message: returns the
/// reply (the encodings of the `B_i`, 32 bytes each) and the seed `k_i^{s_i}` of each OT.
/// Fails on an invalid or identity sender point, or if the OS CSPRNG fails.
pub(crate) fn receive(
    choices: &[bool],
    message: &[u8; POINT_BYTES],
    rng: &mut OsSampler,
) -> Result<(Vec<u8>, Vec<Seed>), crate::PsiError> {
    let sender_point = point::decode(message)?;
    let mut secrets = choices
        .iter()
        .map(|_| random_nonzero_scalar(rng))
        .collect::<Result<Vec<_>, _>>()?;
    let (points, seeds): (Vec<[u8; POINT_BYTES]>, Vec<Seed>) = secrets
        .par_iter()
        .zip(choices)
        .enumerate()
        .map(|(i, (secret, &choice))| {
            // Constant time in the choice: a full scalar multiplication by 0 or 1.
            let point =
                RistrettoPoint::mul_base(secret) + sender_point * Scalar::from(choice as u8);
            let encoded = point.compress().to_bytes();
            (encoded, kdf(i, message, &encoded, &(secret * sender_point)))
        })
        .unzip();
    secrets.zeroize();
    Ok((points.concat(), seeds))
}

/// The receiver's side over `transport`, one OT per bit of `choices` (bit `i % 128` of word
/// `i / 128` for OT `i`): receives the sender's point ([`FrameKind::BaseOtPoint`]), sends the
/// reply ([`FrameKind::BaseOtChoices`]) and returns the chosen seeds.
pub(crate) fn receive_over<T: Transport + ?Sized>(
    transport: &mut T,
    choices: &[u128],
    rng: &mut OsSampler,
) -> Result<Vec<Seed>, PsiError> {
    let message: [u8; POINT_BYTES] = recv_array(transport, FrameKind::BaseOtPoint)?;
    let mut bits: Vec<bool> = (0..128 * choices.len())
        .map(|i| (choices[i / 128] >> (i % 128)) & 1 == 1)
        .collect();
    let received = receive(&bits, &message, rng);
    bits.zeroize();
    let (reply, seeds) = received?;
    transport.send(FrameKind::BaseOtChoices, &reply)?;
    Ok(seeds)
}

/// `KDF(i, A, B, P)`.
fn kdf(
    index: usize,
    sender: &[u8; POINT_BYTES],
    receiver: &[u8; POINT_BYTES],
    shared: &RistrettoPoint,
) -> Seed {
    let digest = Sha256::new()
        .chain_update(DOMAIN)
        .chain_update((index as u64).to_le_bytes())
        .chain_update(sender)
        .chain_update(receiver)
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
        assert_eq!(reply.len(), 64 * POINT_BYTES);
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

    #[test]
    fn invalid_and_identity_points_are_refused() {
        let mut rng = OsSampler::new();
        let sender = Sender::new(&mut rng).unwrap();
        let (mut reply, _) = receive(&[true, false], &sender.message(), &mut rng).unwrap();
        reply[POINT_BYTES..].fill(0);
        assert_eq!(sender.seeds(&reply), Err(PeerError::IdentityPoint));
        reply[POINT_BYTES..].fill(0xff);
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
