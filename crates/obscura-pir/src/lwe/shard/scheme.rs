//! A shard as a [`Scheme`]: stored, loaded, listed and served as every database is; its one
//! client is the gateway that serves the whole database.

use super::messages::{ShardAnswer, ShardQuery, ShardSetup};
use super::{Shard, ShardPlan, Split};
use crate::lookup::{wrong_lookup, Found, Lookup, Target};
use crate::scheme::{
    Encode, Message, PirClient, PirServer, Progress, Scheme, SetupMessage, Summary,
};
use crate::wire::{Digest, Kind};
use crate::PirError;
use obscura_math::matrix::PlaintextMatrix;

/// The scheme of one shard of an LWE database.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LweShard;

impl Scheme for LweShard {
    const KIND: Kind = Kind::LWE_SHARD_SETUP;
    const NAME: &'static str = "shard";
    type Setup = ShardSetup;
    type Query = ShardQuery;
    type Answer = ShardAnswer;
    type Server = Shard;
    type Client = ShardClient;
}

/// What a shard is built from: its plan, its index and the bytes of the input the plan names
/// for it ([`ShardPlan::input`]).
#[derive(Clone, Copy, Debug)]
pub struct ShardInput<'a> {
    /// The plan.
    pub plan: &'a ShardPlan,
    /// The shard's index, from 0.
    pub index: usize,
    /// The input's bytes `plan.input(index)`.
    pub input: &'a [u8],
}

impl SetupMessage for ShardSetup {
    fn to_bytes(&self) -> Vec<u8> {
        ShardSetup::to_bytes(self)
    }

    fn from_bytes(bytes: &[u8]) -> Result<Self, PirError> {
        ShardSetup::from_bytes(bytes)
    }

    fn digest(&self) -> &Digest {
        ShardSetup::digest(self)
    }

    fn query_bytes(&self) -> u64 {
        ShardQuery::encoded_len(&self.tag())
    }

    fn answer_bytes(&self) -> u64 {
        ShardAnswer::encoded_len(&self.tag())
    }

    fn matrix_shapes(&self) -> Vec<(usize, usize)> {
        vec![(self.rows() as usize, self.cols() as usize)]
    }

    fn describe(&self) -> String {
        let plan = self.plan();
        let range = plan.range(self.index());
        let what = match plan.split() {
            Split::Rows => "rows",
            Split::Columns => "columns",
        };
        format!(
            "shard {} of {} ({what} {}..{}) of a database of {} records of {} bytes, {}",
            self.index(),
            plan.shards(),
            range.start,
            range.end,
            plan.geometry().records(),
            plan.geometry().record_bytes(),
            super::super::describe(plan.geometry(), plan.layer().params())
        )
    }

    fn summary(&self) -> Summary<'_> {
        let g = self.plan().geometry();
        Summary {
            items: g.records(),
            item_bytes: g.record_bytes(),
            version: self.version(),
            engine: Some(self.plan().layer()),
            sub_queries: None,
            root: None,
        }
    }
}

impl Encode for ShardQuery {
    const KIND: Kind = Kind::LWE_SHARD_QUERY;

    fn to_bytes(&self) -> Vec<u8> {
        ShardQuery::to_bytes(self)
    }
}

impl Message<ShardSetup> for ShardQuery {
    fn from_bytes(bytes: &[u8], setup: &ShardSetup) -> Result<Self, PirError> {
        ShardQuery::from_bytes(bytes, &setup.tag())
    }
}

impl Encode for ShardAnswer {
    const KIND: Kind = Kind::LWE_SHARD_ANSWER;

    fn to_bytes(&self) -> Vec<u8> {
        ShardAnswer::to_bytes(self)
    }
}

impl Message<ShardSetup> for ShardAnswer {
    fn from_bytes(bytes: &[u8], setup: &ShardSetup) -> Result<Self, PirError> {
        ShardAnswer::from_bytes(bytes, &setup.tag())
    }
}

impl PirServer for Shard {
    type Scheme = LweShard;
    type Data<'a> = ShardInput<'a>;
    type Options = ();

    fn build(data: ShardInput<'_>, (): (), _progress: Progress<'_>) -> Result<Self, PirError> {
        data.plan.build(data.index, data.input)
    }

    fn public_setup(&self) -> &ShardSetup {
        self.setup()
    }

    fn matrices(&self) -> Vec<&PlaintextMatrix> {
        vec![self.database()]
    }

    fn from_parts(setup: ShardSetup, matrices: Vec<PlaintextMatrix>) -> Result<Self, PirError> {
        let [database] = <[PlaintextMatrix; 1]>::try_from(matrices).map_err(|matrices| {
            PirError::malformed(
                "shard",
                format!("{} matrices for one shard", matrices.len()),
            )
        })?;
        Shard::from_parts(setup, database)
    }

    fn answer(&self, query: &ShardQuery) -> Result<ShardAnswer, PirError> {
        Ok(self.answer_batch(std::slice::from_ref(query))?.remove(0))
    }

    fn answer_batch(&self, queries: &[ShardQuery]) -> Result<Vec<ShardAnswer>, PirError> {
        for query in queries {
            query.check(&self.setup().tag())?;
        }
        let parts: Vec<&[u32]> = queries.iter().map(|q| q.values.as_slice()).collect();
        Ok(self
            .answer_parts(&parts)?
            .into_iter()
            .map(|values| ShardAnswer {
                digest: *self.setup().digest(),
                values,
            })
            .collect())
    }
}

/// A shard's client: the gateway, which sends each shard its part of a query and combines
/// the answers ([`ShardPlan::query_part`], [`ShardPlan::answer`]). It looks nothing up itself.
pub struct ShardClient {
    setup: ShardSetup,
}

impl PirClient for ShardClient {
    type Scheme = LweShard;
    type Target<'a> = &'a [u32];
    type State = ();
    type Output = Vec<u32>;
    const LOOKUP: Lookup = Lookup::Shard;
    type Pending = ();

    fn new(setup: ShardSetup) -> Self {
        Self { setup }
    }

    fn setup(&self) -> &ShardSetup {
        &self.setup
    }

    /// The shard's query for `part`, its part of a query of the whole database.
    fn query(&mut self, part: &[u32]) -> Result<(ShardQuery, ()), PirError> {
        Ok((ShardQuery::new(&self.setup.tag(), part)?, ()))
    }

    /// The shard's answer in full words, for [`ShardPlan::answer`].
    fn decode(&self, (): (), answer: &ShardAnswer) -> Result<Vec<u32>, PirError> {
        answer.check(&self.setup.tag())?;
        Ok(answer.values.clone())
    }

    fn lookup(&mut self, target: Target<'_>) -> Result<(Vec<u8>, ()), PirError> {
        Err(wrong_lookup(Lookup::Shard, &target))
    }

    fn found(&self, (): (), _answer: &[u8]) -> Result<Found, PirError> {
        Err(PirError::malformed(
            "answer",
            "a shard's answers are words for its gateway to combine, not records",
        ))
    }
}
