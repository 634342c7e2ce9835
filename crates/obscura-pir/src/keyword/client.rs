//! The client: queries a key's filter slots and decodes and checks the row it gets back.

use obscura_math::pack;

use super::index::{IndexState, KeywordIndex};
use super::row::{filter_hash, key_digest, mask_digit, row_check, CHECK_BYTES, DIGEST_BYTES};
use super::setup::Setup;
use super::Keyword;
use crate::lookup::{self, Found, Lookup, Target};
use crate::scheme::{AnswerOf, QueryOf};
use crate::{PirClient, PirError};

/// The client of a keyword database on index scheme `I`.
pub struct Client<I: KeywordIndex> {
    index: I::Client,
    setup: Setup<I>,
}

/// The secret state of one lookup.
pub struct KeyLookup<I: KeywordIndex> {
    index: IndexState<I>,
    digest: [u8; DIGEST_BYTES],
    hash: u64,
}

impl<I: KeywordIndex> Client<I> {
    /// Prepares `count` queries ahead of time (see [`crate::lwe::Client::preprocess`]).
    pub fn preprocess(&mut self, count: usize) -> Result<(), PirError> {
        I::preprocess(&mut self.index, count)
    }
}

impl<I: KeywordIndex> PirClient for Client<I> {
    type Scheme = Keyword<I>;
    type Target<'a> = &'a [u8];
    type State = KeyLookup<I>;
    /// The value stored under the key, or `None` when the key is absent.
    type Output = Option<Vec<u8>>;
    const LOOKUP: Lookup = Lookup::Key;
    type Pending = KeyLookup<I>;

    fn new(setup: Setup<I>) -> Self {
        Self {
            index: I::Client::new(setup.index.clone()),
            setup,
        }
    }

    fn setup(&self) -> &Setup<I> {
        &self.setup
    }

    /// A query for `key`: Δ at its filter slots. The server cannot tell keys apart.
    fn query(&mut self, key: &[u8]) -> Result<(QueryOf<I>, KeyLookup<I>), PirError> {
        let digest = key_digest(key);
        let hash = filter_hash(&self.setup.seed, &digest);
        let positions = self.setup.shape().positions(hash);
        let (query, index) =
            I::query_slots(&mut self.index, &positions[..self.setup.arity().get()])?;
        Ok((
            query,
            KeyLookup {
                index,
                digest,
                hash,
            },
        ))
    }

    /// The value stored under the key, or `None` when the key is absent. An answer altered on
    /// the way fails the row's check and also gives `None` (or an error), never a wrong value.
    fn decode(
        &self,
        state: KeyLookup<I>,
        answer: &AnswerOf<I>,
    ) -> Result<Option<Vec<u8>>, PirError> {
        let log_p = I::engine(&self.setup.index).params().log_p;
        let p_mask = (1u16 << log_p) - 1;
        let mut digits = I::decode_slots(&self.index, state.index, answer)?;
        for (j, digit) in digits.iter_mut().enumerate() {
            *digit =
                ((u16::from(*digit) + u16::from(mask_digit(state.hash, j, log_p))) & p_mask) as u8;
        }
        let (header, max_value) = (self.setup.row_header(), self.setup.max_value);
        let row = pack::unpack(&digits, u32::from(log_p), header + max_value as usize);
        let len = if header == CHECK_BYTES {
            max_value
        } else {
            let mut len = [0u8; 8];
            len[..header - CHECK_BYTES].copy_from_slice(&row[CHECK_BYTES..header]);
            u64::from_le_bytes(len)
        };
        // A length past the longest value is checked over the whole value area, then refused.
        let (value, padding) = row[header..].split_at(len.min(max_value) as usize);
        let expected = row_check(&state.digest, value);
        // Constant time in the check: OR of all byte differences.
        let difference = row[..CHECK_BYTES]
            .iter()
            .zip(&expected)
            .fold(0u8, |acc, (a, b)| acc | (a ^ b));
        if std::hint::black_box(difference) != 0
            || len > max_value
            || padding.iter().any(|&b| b != 0)
        {
            return Ok(None);
        }
        Ok(Some(value.to_vec()))
    }

    fn lookup(&mut self, target: Target<'_>) -> Result<(Vec<u8>, KeyLookup<I>), PirError> {
        match target {
            Target::Key(key) => lookup::encoded_query(self, key),
            other => Err(lookup::wrong_lookup(Self::LOOKUP, &other)),
        }
    }

    fn found(&self, state: KeyLookup<I>, answer: &[u8]) -> Result<Found, PirError> {
        lookup::decoded_answer(self, state, answer).map(Found::Value)
    }
}
