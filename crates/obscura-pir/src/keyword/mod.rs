//! Keyword PIR: fetch the value stored under a key, or learn that the key is absent, with one
//! query to an index scheme ([`KeywordIndex`]; the LWE engine by default).
//!
//! The store is a binary fuse filter ([`fuse`]) whose slots are whole rows: each key-value pair
//! becomes the row `check ‖ len ‖ value ‖ zero padding`, cut into plaintext digits, where `len`
//! is the value's length in the fewest bytes that hold the longest one (no bytes at all when
//! every value has the same length) and `check` authenticates the whole row: the first 128 bits
//! of SHA-256 over a domain-separation string, the key's digest, the value's length (u64 LE) and
//! the value ([`row_check`]). The slots are filled (mod p) so that for every stored key the sum of
//! its 3 or 4 slots plus a per-key pseudo-random mask is its row. The database matrix has one
//! slot per column (the one-per-column layout), so a lookup is an LWE query with Δ at the key's
//! slots: the answer decodes to the sum of those columns.
//!
//! The client recomputes the check over the key it asked for and the length and value it
//! decoded, and compares it with the row's in constant time. A mismatch, or a wrong length or
//! padding, reads as "absent". So an absent key is accepted with probability about 2^-128, and an
//! answer corrupted on the way (or by the server) makes a present key read as absent, never as a
//! wrong value, except with the same probability.
//!
//! Every row byte is a byte the server streams on each answer, so the row carries no more than
//! that: 16 check bytes and, for equal-length values, no length (1,040 bytes per 1 KiB value).
//!
//! The row header is shorter than a full `digest(32) ‖ len (u32 LE)`: a 128-bit check meets the
//! 2^-128 false-accept bound, and a length is stored only when it carries information.
//!
//! A database is a main table of such rows and, after updates, a delta table of the keys
//! changed since its last compaction: every lookup queries both, the delta deciding (`delta`).
//!
//! The files: [`fuse`] holds the filter, `row` the row layout (digests, check, filter hash and
//! mask digits), `setup` the [`Setup`], its [`Table`]s and their codec, `plan` the store's
//! shape before any data, `fill` the parallel slot fill, `server` the [`Server`], `delta` new
//! versions and compaction, `patch` the setup patches of new versions and `client` the
//! [`Client`].
//! Each is generic over the index scheme; [`KeywordServer`], [`KeywordClient`],
//! [`KeywordSetup`] and [`LookupState`] name them on the LWE engine.

mod client;
mod delta;
mod fill;
pub mod fuse;
mod index;
mod patch;
mod plan;
mod row;
mod server;
mod setup;

pub use client::{Client, KeyLookup};
pub use index::{IndexState, KeywordIndex};
pub use row::{filter_hash, key_digest, row_check, CHECK_BYTES, DIGEST_BYTES};
pub use server::Server;
pub use setup::{Setup, Table};

/// The server of a keyword database on the LWE engine.
pub type KeywordServer = Server<Lwe>;
/// The client of a keyword database on the LWE engine.
pub type KeywordClient = Client<Lwe>;
/// The public setup of a keyword database on the LWE engine.
pub type KeywordSetup = Setup<Lwe>;
/// The secret state of one lookup in a keyword database on the LWE engine.
pub type LookupState = KeyLookup<Lwe>;

use crate::batch::shards::{decode_parts, framed_bytes, Shards};
use crate::framing;
use crate::lwe::Lwe;
use crate::params::{MatrixKind, ParamSet};
use crate::scheme::{Message, Scheme, SetupMessage, Summary};
use crate::wire::{Digest, Kind};
use crate::PirError;
use fuse::Arity;

/// Keyword PIR on index scheme `I`: values fetched by key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Keyword<I: KeywordIndex = Lwe>(std::marker::PhantomData<I>);

impl<I: KeywordIndex> Scheme for Keyword<I> {
    const KIND: Kind = Kind::KEYWORD_SETUP;
    const NAME: &'static str = "keyword";
    type Setup = Setup<I>;
    type Query = Shards<I::Query>;
    type Answer = Shards<I::Answer>;
    type Server = Server<I>;
    type Client = Client<I>;
}

impl<I: KeywordIndex> SetupMessage for Setup<I> {
    fn to_bytes(&self) -> Vec<u8> {
        Setup::to_bytes(self)
    }

    fn from_bytes(bytes: &[u8]) -> Result<Self, PirError> {
        Setup::from_bytes(bytes)
    }

    fn digest(&self) -> &Digest {
        Setup::digest(self)
    }

    fn query_bytes(&self) -> u64 {
        framed_bytes(self.tables().map(|t| t.index.query_bytes()))
    }

    fn answer_bytes(&self) -> u64 {
        framed_bytes(self.tables().map(|t| t.index.answer_bytes()))
    }

    fn matrix_shapes(&self) -> Vec<(usize, usize)> {
        self.tables()
            .flat_map(|table| {
                let mut shapes = table.index.matrix_shapes();
                shapes.push((DIGEST_BYTES, table.keys as usize));
                shapes
            })
            .collect()
    }

    fn describe(&self) -> String {
        let engine = I::engine(&self.main.index);
        let g = engine.geometry();
        let delta = self.delta.as_ref().map_or(String::new(), |delta| {
            format!(
                "; {} keys changed since in a delta of {} slots",
                delta.keys,
                I::engine(&delta.index).geometry().records()
            )
        });
        format!(
            "{} keys in {} slots of {} bytes ({}-wise filter), {}{delta}",
            self.keys(),
            g.records(),
            g.record_bytes(),
            self.main.arity().get(),
            crate::lwe::describe(g, engine.params())
        )
    }

    fn patched(self, patch: &[u8]) -> Result<Self, PirError> {
        Setup::patched(self, patch)
    }

    fn summary(&self) -> Summary<'_> {
        Summary {
            items: self.keys(),
            item_bytes: self.max_value(),
            version: self.version(),
            ..self.main.index.summary()
        }
    }
}

/// A keyword request or reply: one part per table, each the index scheme's message checked
/// against that table's index setup. A request for another version's tables is a
/// [`PirError::SetupMismatch`].
impl<I: KeywordIndex, M: Message<I::Setup>> Message<Setup<I>> for Shards<M> {
    fn from_bytes(bytes: &[u8], setup: &Setup<I>) -> Result<Self, PirError> {
        if let Some(count) = framing::count(bytes) {
            server::check_parts(count, setup, M::KIND.describe())?;
        }
        let indexes: Vec<&I::Setup> = setup.tables().map(|table| &table.index).collect();
        decode_parts(bytes, indexes)
    }
}

/// Choices made when building a keyword database.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct KeywordOptions {
    /// Slots per key; `None` picks 3 below 10^5 keys and 4 from there (fewer slots).
    pub arity: Option<Arity>,
    /// The LWE parameter set.
    pub params: ParamSet,
    /// How the public matrix is expanded; `None` picks the set's default.
    pub matrix: Option<MatrixKind>,
}
