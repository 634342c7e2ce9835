//! The DoublePIR client: queries of both layers (fresh or prepared ahead) and decoding.

use obscura_math::kernels::dot;
use obscura_math::pack;
use zeroize::{Zeroize, ZeroizeOnDrop};

use super::messages::{Answer, Query};
use super::scheme::Double;
use super::setup::{PublicSetup, ENTRY_BYTES};
use crate::lwe::{round_digit, Masker};
use crate::params::ANSWER_BITS;
use crate::wire::Digest;
use crate::{PirClient, PirError};

/// The client side of DoublePIR.
pub struct Client {
    setup: PublicSetup,
    first: Masker,
    second: Masker,
    pool: Vec<Secrets>,
}

/// The masked vectors and secrets of one query, before Δ is added: the first layer's
/// `A1·s1 + e1` and `s1`, and for each second-layer query `A2·s2 + e2` (end to end, as the
/// query carries them), `s2` and `H2·s2`. Wiped when dropped.
#[derive(Zeroize, ZeroizeOnDrop)]
struct Secrets {
    first_masked: Vec<u32>,
    first_secret: Vec<u32>,
    second_masked: Vec<u32>,
    second_secrets: Vec<Vec<u32>>,
    second_masks: Vec<Vec<u32>>,
}

/// The client's secret state for one query; decodes exactly one answer. Wiped when dropped.
#[derive(Zeroize, ZeroizeOnDrop)]
pub struct QueryState {
    #[zeroize(skip)]
    digest: Digest,
    index: u64,
    first_secret: Vec<u32>,
    second_secrets: Vec<Vec<u32>>,
    second_masks: Vec<Vec<u32>>,
}

impl Client {
    /// A client for the database described by `setup`.
    pub fn new(setup: PublicSetup) -> Self {
        Self {
            first: Masker::new(setup.first()),
            second: Masker::new(setup.second().layer()),
            setup,
            pool: Vec::new(),
        }
    }

    /// The public setup this client queries.
    pub fn setup(&self) -> &PublicSetup {
        &self.setup
    }

    /// Prepares `count` more queries for the pool, in one pass over each public matrix. Each
    /// later call to [`PirClient::query`] takes one from the pool, so its online cost is adding
    /// Δ at one column and at one row per second-layer query.
    pub fn preprocess(&mut self, count: usize) -> Result<(), PirError> {
        let prepared = self.secrets(count)?;
        self.pool.extend(prepared);
        Ok(())
    }

    /// How many prepared queries are left in the pool.
    pub fn prepared(&self) -> usize {
        self.pool.len()
    }

    /// `count` sets of secrets and masked vectors.
    fn secrets(&self, count: usize) -> Result<Vec<Secrets>, PirError> {
        let per_query = self.setup.rows_per_query() as usize;
        let firsts = (0..count)
            .map(|_| self.first.secret())
            .collect::<Result<Vec<_>, _>>()?;
        let seconds = (0..count * per_query)
            .map(|_| self.second.secret())
            .collect::<Result<Vec<_>, _>>()?;
        let mut first_masked = self.first.masked(&firsts)?.into_iter();
        let mut second_masked = self.second.masked(&seconds)?.into_iter();
        // H2·s2 for every second-layer secret in one pass over the 16 MiB hint.
        let refs: Vec<&[u32]> = seconds.iter().map(|s| &s[..]).collect();
        let mut masks = self.setup.second().hint().mul_vecs(&refs).into_iter();
        let mut seconds = seconds.into_iter();
        let rows = self.setup.first().geometry().rows() as usize;
        Ok(firsts
            .into_iter()
            .map(|first_secret| {
                let second_secrets: Vec<Vec<u32>> = seconds.by_ref().take(per_query).collect();
                let mut joined = Vec::with_capacity(per_query * rows);
                for mut masked in second_masked.by_ref().take(per_query) {
                    joined.extend_from_slice(&masked);
                    masked.zeroize();
                }
                Secrets {
                    first_masked: first_masked.next().expect("one per secret"),
                    first_secret,
                    second_masked: joined,
                    second_masks: masks.by_ref().take(per_query).collect(),
                    second_secrets,
                }
            })
            .collect())
    }

    /// Decodes second-layer query `i`'s part of an answer: the digits of a row of the first
    /// layer's hint and of its answer entry, each the `log_p`-bit rounding of the received
    /// value less its mask.
    fn second_layer(&self, state: &QueryState, answer: &Answer, i: usize) -> (Vec<u32>, u32) {
        let second = self.setup.second();
        let log_p = second.params().log_p;
        let hint_rows = second.geometry().rows() as usize;
        let per = self.setup.second_answer_rows() as usize;
        let values = &answer.values[i * per..(i + 1) * per];
        let received = |j: usize| u32::from(values[j]) << (32 - ANSWER_BITS);
        // Zipped rather than indexed, so the rounding runs on the vector unit.
        let hint_digits: Vec<u8> = values[..hint_rows]
            .iter()
            .zip(&state.second_masks[i])
            .map(|(&value, &mask)| {
                let received = u32::from(value) << (32 - ANSWER_BITS);
                round_digit(received.wrapping_sub(mask), log_p)
            })
            .collect();
        let n = second.params().n();
        let entry_digits: Vec<u8> = answer
            .hint
            .chunks_exact(n)
            .enumerate()
            .map(|(k, row)| {
                let mask = dot(row, &state.second_secrets[i]);
                round_digit(received(hint_rows + k).wrapping_sub(mask), log_p)
            })
            .collect();
        let mut row = vec![0u8; second.geometry().record_bytes() as usize];
        pack::unpack_into(&hint_digits, u32::from(log_p), 0, &mut row);
        let mut entry = [0u8; ENTRY_BYTES as usize];
        pack::unpack_into(&entry_digits, u32::from(log_p), 0, &mut entry);
        let row = row
            .chunks_exact(4)
            .map(|b| u32::from_le_bytes(b.try_into().expect("4 bytes")))
            .collect();
        (row, u32::from_le_bytes(entry))
    }
}

impl PirClient for Client {
    type Scheme = Double;
    type Target<'a> = u64;
    type State = QueryState;
    type Output = Vec<u8>;
    crate::lookup::index_lookup!(QueryState);

    fn new(setup: PublicSetup) -> Self {
        Client::new(setup)
    }

    fn setup(&self) -> &PublicSetup {
        Client::setup(self)
    }

    fn query(&mut self, index: u64) -> Result<(Query, QueryState), PirError> {
        let first = self.setup.first();
        let location = first.geometry().locate(index)?;
        let mut secrets = match self.pool.pop() {
            Some(prepared) => prepared,
            None => self.secrets(1)?.pop().expect("one query"),
        };
        let mut first_values = std::mem::take(&mut secrets.first_masked);
        let column = location.column as usize;
        first_values[column] = first_values[column].wrapping_add(first.params().delta());
        let rows = first.geometry().rows();
        let delta = self.setup.second().params().delta();
        let mut second_values = std::mem::take(&mut secrets.second_masked);
        for (i, masked) in second_values.chunks_exact_mut(rows as usize).enumerate() {
            // Rows past the record's last are asked for too, so every query has as many.
            let row = ((location.first_row + i as u64) % rows) as usize;
            masked[row] = masked[row].wrapping_add(delta);
        }
        let digest = *self.setup.digest();
        let state = QueryState {
            digest,
            index,
            first_secret: std::mem::take(&mut secrets.first_secret),
            second_secrets: std::mem::take(&mut secrets.second_secrets),
            second_masks: std::mem::take(&mut secrets.second_masks),
        };
        let query = Query {
            digest,
            first: first_values,
            second: second_values,
        };
        Ok((query, state))
    }

    fn decode(&self, state: QueryState, answer: &Answer) -> Result<Vec<u8>, PirError> {
        if state.digest != *self.setup.digest() {
            return Err(PirError::SetupMismatch {
                what: "query state",
            });
        }
        answer.check(&self.setup)?;
        let first = self.setup.first();
        let location = first.geometry().locate(state.index)?;
        let digits: Vec<u8> = (0..location.row_count as usize)
            .map(|i| {
                let (hint_row, entry) = self.second_layer(&state, answer, i);
                let mask = dot(&hint_row, &state.first_secret);
                round_digit(entry.wrapping_sub(mask), first.params().log_p)
            })
            .collect();
        let mut record = vec![0u8; location.len as usize];
        pack::unpack_into(
            &digits,
            u32::from(first.params().log_p),
            location.skip_bits,
            &mut record,
        );
        first.format().value(record)
    }
}
