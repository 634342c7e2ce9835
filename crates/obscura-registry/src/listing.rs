//! What a public setup says of its database, whatever its scheme: a [`Listing`].

use obscura_pir::batch::merkle::Hash;
use obscura_pir::lwe;
use obscura_pir::params::LweParams;
use obscura_pir::{Lookup, PirClient, Scheme, SetupMessage};

/// What a listing says about a database, whatever its scheme.
#[derive(Clone, Debug, PartialEq)]
pub struct Listing {
    /// The scheme's name for its databases (`index`, `double`, `ypir`, `keyword`, `treepir`,
    /// `pbc`).
    pub kind: &'static str,
    /// The lookup it serves.
    pub lookup: Lookup,
    /// Records, keys or leaves.
    pub items: u64,
    /// Its version: 0 as built, one more for each batch of changes applied.
    pub version: u64,
    /// Bytes per item.
    pub item_bytes: u64,
    /// The parameters and geometry of the largest LWE engine, if the scheme runs on one.
    pub engine: Option<Engine>,
    /// Queries per request, when a request holds one per sub-database.
    pub sub_queries: Option<u32>,
    /// Bytes of one encoded query.
    pub query_bytes: u64,
    /// Bytes of one encoded answer.
    pub answer_bytes: u64,
    /// A Merkle tree's root.
    pub root: Option<Hash>,
    /// What the database holds and how it is laid out, in words (the scheme's own).
    pub description: String,
    /// A note on how it serves its records, when another scheme would serve them better.
    pub note: Option<String>,
}

/// The parameters and geometry of an LWE engine (what a listing shows of it, without its hint).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Engine {
    /// Its parameters.
    pub params: LweParams,
    /// Its matrix's shape and layout.
    pub geometry: lwe::Geometry,
}

/// What a listing says of the database with public setup `setup`, of scheme `S`.
pub(crate) fn listing<S: Scheme>(setup: &S::Setup) -> Listing {
    let summary = setup.summary();
    Listing {
        kind: S::NAME,
        lookup: <S::Client as PirClient>::LOOKUP,
        items: summary.items,
        version: summary.version,
        item_bytes: summary.item_bytes,
        engine: summary.engine.map(|setup| Engine {
            params: setup.params(),
            geometry: *setup.geometry(),
        }),
        sub_queries: summary.sub_queries,
        query_bytes: setup.query_bytes(),
        answer_bytes: setup.answer_bytes(),
        root: summary.root,
        description: setup.describe(),
        note: setup.note(),
    }
}
