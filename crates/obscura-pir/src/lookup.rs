//! What a front end looks up, whatever the scheme: the kind of lookup a database serves
//! ([`Lookup`]), what a lookup asks for ([`Target`]) and what it finds ([`Found`]).
//!
//! Every scheme's client declares its [`Lookup`] and turns a [`Target`] into encoded query
//! bytes and an answer's bytes into a [`Found`] ([`PirClient::lookup`],
//! [`PirClient::found`]), so a client session, the CLI, Python and the browser look up any
//! scheme through one interface and never decide by scheme.

use crate::batch::merkle::Hash;
use crate::scheme::AnswerOf;
use crate::{Encode, Message, PirClient, PirError};

/// The kind of lookup a scheme's databases serve.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Lookup {
    /// Records by index (the LWE engine, DoublePIR, YPIR).
    Index,
    /// Several records by index in one request (probabilistic batch codes); one index is a
    /// batch of one.
    Batch,
    /// Values by key, an absent key reported absent (keyword PIR).
    Key,
    /// Audit paths of a Merkle tree by leaf, verified against its root (TreePIR).
    AuditPath,
    /// None of its own: a shard of a database answers its part of the queries a gateway sends
    /// ([`crate::lwe::ShardPlan`]).
    Shard,
}

impl Lookup {
    /// Its name in listings, the CLI, Python and the browser: `index`, `batch`, `keyword`,
    /// `audit-path`.
    pub fn name(self) -> &'static str {
        match self {
            Self::Index => "index",
            Self::Batch => "batch",
            Self::Key => "keyword",
            Self::AuditPath => "audit-path",
            Self::Shard => "shard",
        }
    }

    /// The service route its requests are posted to (`/v1/databases/{name}/{route}`).
    pub fn route(self) -> &'static str {
        match self {
            Self::AuditPath => "audit-path",
            Self::Index | Self::Batch | Self::Key | Self::Shard => "query",
        }
    }

    /// What a database serving this lookup is, and how to read it.
    pub fn advice(self) -> &'static str {
        match self {
            Self::Index => "an index database: fetch records by index",
            Self::Batch => "a batch database: fetch records by index",
            Self::Key => "a keyword database: fetch values by key",
            Self::AuditPath => "a Merkle tree: fetch audit paths by leaf",
            Self::Shard => "a shard of a database: query the gateway that serves the whole",
        }
    }
}

impl std::fmt::Display for Lookup {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// What a lookup asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target<'a> {
    /// Record `n`, from 0.
    Index(u64),
    /// These records, in this order.
    Indices(&'a [u64]),
    /// The value under this key.
    Key(&'a [u8]),
    /// The audit path of `leaf`, whose hash is `leaf_hash` (the path is verified with it).
    AuditPath {
        /// The leaf, from 0.
        leaf: u64,
        /// Its hash, `SHA-256(0x00 ‖ data)`.
        leaf_hash: Hash,
    },
    /// The hash of this leaf, for a client that knows only its index: the request looks like
    /// any audit path request, and the hash is proved when its path verifies with it.
    LeafHash(u64),
}

impl Target<'_> {
    /// The lookup that serves this target.
    pub fn lookup(&self) -> Lookup {
        match self {
            Self::Index(_) => Lookup::Index,
            Self::Indices(_) => Lookup::Batch,
            Self::Key(_) => Lookup::Key,
            Self::AuditPath { .. } | Self::LeafHash(_) => Lookup::AuditPath,
        }
    }
}

/// What a lookup found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Found {
    /// The record asked for.
    Record(Vec<u8>),
    /// The record asked for was deleted: its index reads as absent.
    Absent,
    /// The records asked for, in order.
    Records(Vec<Vec<u8>>),
    /// The value under the key; `None` when the key is absent.
    Value(Option<Vec<u8>>),
    /// The verified audit path, leaf to root.
    Path(Vec<Hash>),
    /// A leaf's hash (proved only once its audit path verifies with it).
    LeafHash(Hash),
}

/// The error for `target` asked of a database that serves `serves`.
pub fn wrong_lookup(serves: Lookup, target: &Target<'_>) -> PirError {
    PirError::WrongLookup {
        serves,
        asked: target.lookup(),
    }
}

/// [`PirClient::lookup`] for a client whose own target is given: the query, encoded, and its
/// state.
pub fn encoded_query<C: PirClient>(
    client: &mut C,
    target: C::Target<'_>,
) -> Result<(Vec<u8>, C::State), PirError> {
    let (query, state) = client.query(target)?;
    Ok((Encode::to_bytes(&query), state))
}

/// [`PirClient::found`]'s first step: `answer` decoded against the client's setup and
/// decoded with `state`.
pub fn decoded_answer<C: PirClient>(
    client: &C,
    state: C::State,
    answer: &[u8],
) -> Result<C::Output, PirError> {
    let answer = AnswerOf::<C::Scheme>::from_bytes(answer, client.setup())?;
    client.decode(state, &answer)
}

/// The [`PirClient::LOOKUP`], [`PirClient::lookup`] and [`PirClient::found`] of a client of
/// records by index whose own target is the index, whose output is the record and whose state
/// is `$state`.
macro_rules! index_lookup {
    ($state:ty) => {
        const LOOKUP: $crate::Lookup = $crate::Lookup::Index;
        type Pending = $state;

        fn lookup(
            &mut self,
            target: $crate::Target<'_>,
        ) -> Result<(Vec<u8>, $state), $crate::PirError> {
            match target {
                $crate::Target::Index(index) => $crate::lookup::encoded_query(self, index),
                other => Err($crate::lookup::wrong_lookup(Self::LOOKUP, &other)),
            }
        }

        fn found(&self, state: $state, answer: &[u8]) -> Result<$crate::Found, $crate::PirError> {
            match $crate::lookup::decoded_answer(self, state, answer) {
                Err($crate::PirError::Absent) => Ok($crate::Found::Absent),
                found => found.map($crate::Found::Record),
            }
        }
    };
}
pub(crate) use index_lookup;
