//! The client: queries a key's filter slots in every table and decodes and checks the rows it
//! gets back, the delta's deciding over the main table's.

use super::index::{IndexState, KeywordIndex};
use super::row::{filter_hash, key_digest, DIGEST_BYTES};
use super::setup::Setup;
use super::Keyword;
use crate::batch::shards::Shards;
use crate::lookup::{self, Found, Lookup, Target};
use crate::scheme::{AnswerOf, QueryOf};
use crate::{PirClient, PirError};

/// The client of a keyword database on index scheme `I`.
pub struct Client<I: KeywordIndex> {
    /// One index client per table, in the setup's order.
    tables: Vec<I::Client>,
    setup: Setup<I>,
}

/// The secret state of one lookup: the key's digest and, per table, the index state and the
/// key's filter hash.
pub struct KeyLookup<I: KeywordIndex> {
    tables: Vec<(IndexState<I>, u64)>,
    digest: [u8; DIGEST_BYTES],
}

impl<I: KeywordIndex> Client<I> {
    /// Prepares `count` queries ahead of time (see [`crate::lwe::Client::preprocess`]).
    pub fn preprocess(&mut self, count: usize) -> Result<(), PirError> {
        self.tables
            .iter_mut()
            .try_for_each(|table| I::preprocess(table, count))
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
            tables: setup
                .tables()
                .map(|table| I::Client::new(table.index().clone()))
                .collect(),
            setup,
        }
    }

    fn setup(&self) -> &Setup<I> {
        &self.setup
    }

    /// A query for `key`: Δ at its filter slots in every table, whatever the key's history,
    /// so the server cannot tell keys apart.
    fn query(&mut self, key: &[u8]) -> Result<(QueryOf<Keyword<I>>, KeyLookup<I>), PirError> {
        let digest = key_digest(key);
        let mut queries = Vec::with_capacity(self.tables.len());
        let mut states = Vec::with_capacity(self.tables.len());
        for (client, table) in self.tables.iter_mut().zip(self.setup.tables()) {
            let hash = filter_hash(&table.seed, &digest);
            let positions = table.shape().positions(hash);
            let (query, state) = I::query_slots(client, &positions[..table.arity().get()])?;
            queries.push(query);
            states.push((state, hash));
        }
        Ok((
            Shards(queries),
            KeyLookup {
                tables: states,
                digest,
            },
        ))
    }

    /// The value stored under the key, or `None` when the key is absent: the delta's row when
    /// it holds the key (a value, or a deletion), else the main table's. An answer altered on
    /// the way fails a row's check and also gives `None` (or an error), never a wrong value.
    fn decode(
        &self,
        state: KeyLookup<I>,
        answer: &AnswerOf<Keyword<I>>,
    ) -> Result<Option<Vec<u8>>, PirError> {
        if answer.0.len() != self.tables.len() {
            return Err(PirError::malformed(
                "keyword answer",
                format!("{} parts for {} tables", answer.0.len(), self.tables.len()),
            ));
        }
        let mut rows = Vec::with_capacity(self.tables.len());
        for (((client, table), (index, hash)), part) in self
            .tables
            .iter()
            .zip(self.setup.tables())
            .zip(state.tables)
            .zip(&answer.0)
        {
            let mut digits = I::decode_slots(client, index, part)?;
            rows.push(table.read_row(&mut digits, &state.digest, hash));
        }
        let mut rows = rows.into_iter();
        let main = rows.next().flatten();
        Ok(match rows.next().flatten() {
            Some(delta) => super::delta::present(&delta),
            None => main,
        })
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
