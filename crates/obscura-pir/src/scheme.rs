//! The trait family every PIR scheme implements.
//!
//! A [`Scheme`] names the types of one scheme: its public setup, its query and answer (each a
//! message with one binary codec and a wire [`Kind`]), its server and its client. The life
//! cycle is the same for all:
//!
//! 1. [`PirServer::build`] sets the database up from its data and options, reporting progress,
//!    and publishes a [`PirServer::public_setup`];
//! 2. [`PirClient::query`] turns what the client wants (an index, a key, a leaf) into a query
//!    and a secret state;
//! 3. [`PirServer::answer`] (or [`PirServer::answer_batch`], one pass for several queries) turns
//!    queries the server cannot read into answers;
//! 4. [`PirClient::decode`] recovers the result from the answer and the state.
//!
//! Front ends do steps 2 and 4 in bytes through [`PirClient::lookup`] and
//! [`PirClient::found`], with the [`Lookup`] the scheme declares ([`crate::lookup`]).
//!
//! A server is its public setup plus the plaintext matrices it streams
//! ([`PirServer::matrices`]), which is what a database file stores and
//! [`PirServer::from_parts`] takes back; the shapes of those matrices follow from the setup
//! ([`SetupMessage::matrix_shapes`]), so a file is checked before it is mapped.
//!
//! ```
//! use obscura_pir::lwe::{Lwe, Records, EngineOptions};
//! use obscura_pir::{PirClient, PirServer, Scheme};
//!
//! /// Fetches record `index` with any scheme whose target is an index and output the record.
//! fn fetch<S: Scheme>(server: &S::Server, index: u64) -> Result<Vec<u8>, obscura_pir::PirError>
//! where
//!     for<'a> S::Client: PirClient<Target<'a> = u64, Output = Vec<u8>>,
//! {
//!     let mut client = S::Client::new(server.public_setup().clone());
//!     let (query, state) = client.query(index)?;
//!     client.decode(state, &server.answer(&query)?)
//! }
//!
//! let data: Vec<u8> = (0..640u32).map(|i| i as u8).collect();
//! let records = Records::Raw { bytes: &data, record_bytes: 64 };
//! let server = <Lwe as Scheme>::Server::build(records, EngineOptions::default(), &|_, _| {})?;
//! assert_eq!(fetch::<Lwe>(&server, 3)?, &data[192..256]);
//! # Ok::<(), obscura_pir::PirError>(())
//! ```

use obscura_math::matrix::PlaintextMatrix;

use crate::lookup::{Found, Lookup, Target};
use crate::lwe::{self, Footprint, RecordShape, Records};
use crate::wire::{Digest, Kind};
use crate::PirError;

/// A progress report: `(done, total)` of the step under way.
pub type Progress<'a> = &'a (dyn Fn(u64, u64) + Sync);

/// The public setup of a scheme of type `S`.
pub type SetupOf<S> = <S as Scheme>::Setup;
/// The query of a scheme of type `S`.
pub type QueryOf<S> = <S as Scheme>::Query;
/// The answer of a scheme of type `S`.
pub type AnswerOf<S> = <S as Scheme>::Answer;

/// One PIR scheme: the types of its setup, messages, server and client.
///
/// Implemented by a marker type (no data), so it derives the common traits for the generic types
/// that carry it.
pub trait Scheme: Copy + std::fmt::Debug + PartialEq + Send + Sync + 'static {
    /// The wire kind of its public setup, which names the scheme in files and listings.
    const KIND: Kind;
    /// What users call its databases (`index`, `double`, `keyword`, `treepir`, `pbc`).
    const NAME: &'static str;
    /// The public setup: all a client needs.
    type Setup: SetupMessage;
    /// A query, encoded for the setup it belongs to.
    type Query: Message<Self::Setup>;
    /// An answer, encoded for the setup it belongs to.
    type Answer: Message<Self::Setup>;
    /// The server.
    type Server: PirServer<Scheme = Self>;
    /// The client.
    type Client: PirClient<Scheme = Self>;
}

/// A public setup, with its codec and what a server, a store and a listing need to know of it.
pub trait SetupMessage:
    Clone + std::fmt::Debug + PartialEq + Send + Sync + Sized + 'static
{
    /// The encoded setup (full envelope).
    fn to_bytes(&self) -> Vec<u8>;
    /// Decodes a setup, checking every length before allocating and its digest.
    fn from_bytes(bytes: &[u8]) -> Result<Self, PirError>;
    /// The digest that names this setup; queries and answers carry its first bytes.
    fn digest(&self) -> &Digest;
    /// Bytes of one encoded query.
    fn query_bytes(&self) -> u64;
    /// Bytes of one encoded answer.
    fn answer_bytes(&self) -> u64;
    /// The `(rows, cols)` of each plaintext matrix the server streams, in file order.
    fn matrix_shapes(&self) -> Vec<(usize, usize)>;
    /// What the database holds, for listings.
    fn summary(&self) -> Summary<'_>;

    /// What the database holds and how it is laid out, in words: the line a build reports.
    fn describe(&self) -> String;

    /// A note on how this setup serves its records, when another scheme would serve them
    /// better (what a build warns about).
    fn note(&self) -> Option<String> {
        None
    }

    /// The next version of this setup, made from a patch its server's
    /// [`PirServer::update`] returned, checked to make the setup the patch names. A scheme
    /// that makes no patches refuses every patch.
    fn patched(self, patch: &[u8]) -> Result<Self, PirError> {
        let _ = patch;
        Err(PirError::InvalidParameters(
            "setups of this scheme take no patches".into(),
        ))
    }

    /// The encoded setup `patch` makes of the encoded setup `setup`: that of
    /// [`SetupMessage::patched`], decoded and encoded again here; a scheme may make it in
    /// `setup`'s own bytes instead.
    fn patch_encoded(setup: Vec<u8>, patch: &[u8]) -> Result<Vec<u8>, PirError> {
        Ok(Self::from_bytes(&setup)?.patched(patch)?.to_bytes())
    }
}

/// What a public setup says about its database, for listings.
#[derive(Clone, Copy, Debug)]
pub struct Summary<'a> {
    /// What a user counts: records, keys or leaves.
    pub items: u64,
    /// Bytes per item (the longest value of a keyword database, 32 for a tree's hashes).
    pub item_bytes: u64,
    /// The database's version: 0 as built, one more for each batch of changes applied.
    pub version: u64,
    /// The largest LWE engine's layer (parameters and geometry), if the scheme runs on one.
    pub engine: Option<&'a lwe::Layer>,
    /// Queries per request, when a request holds one per sub-database (a tree's height).
    pub sub_queries: Option<u32>,
    /// A Merkle tree's root, which every audit path is verified against.
    pub root: Option<crate::batch::merkle::Hash>,
}

/// A message's encoding and wire kind.
pub trait Encode {
    /// Its wire kind.
    const KIND: Kind;
    /// The encoded message.
    fn to_bytes(&self) -> Vec<u8>;
}

/// A query or an answer: one binary codec, decoded against the setup `S` it belongs to.
pub trait Message<S>: Encode + Sized + Send + 'static {
    /// Decodes a message that must belong to `setup`: tags and lengths are checked before
    /// anything is allocated.
    fn from_bytes(bytes: &[u8], setup: &S) -> Result<Self, PirError>;
}

/// The server side of a scheme: sets a database up and answers queries it cannot read. A clone
/// shares its matrices until one of them is written (see [`PlaintextMatrix`]), so the next
/// version of a served database is made on a clone while the original answers.
pub trait PirServer: Clone + Sized + Send + Sync + 'static {
    /// The scheme it serves.
    type Scheme: Scheme<Server = Self>;
    /// What a database is made of (records, key-value pairs, a Merkle tree).
    type Data<'a>;
    /// The choices made at setup.
    type Options;

    /// Builds the database from `data`; `progress(done, total)` follows the long steps.
    fn build(
        data: Self::Data<'_>,
        options: Self::Options,
        progress: Progress<'_>,
    ) -> Result<Self, PirError>;

    /// The public setup to hand to clients.
    fn public_setup(&self) -> &SetupOf<Self::Scheme>;

    /// Answers one query.
    fn answer(&self, query: &QueryOf<Self::Scheme>) -> Result<AnswerOf<Self::Scheme>, PirError>;

    /// Answers several queries in one pass over the database, in order.
    fn answer_batch(
        &self,
        queries: &[QueryOf<Self::Scheme>],
    ) -> Result<Vec<AnswerOf<Self::Scheme>>, PirError>;

    /// The plaintext matrices it streams, in the order of [`SetupMessage::matrix_shapes`].
    fn matrices(&self) -> Vec<&PlaintextMatrix>;

    /// A server from its public setup and its matrices (as stored), checked to belong together.
    fn from_parts(
        setup: SetupOf<Self::Scheme>,
        matrices: Vec<PlaintextMatrix>,
    ) -> Result<Self, PirError>;

    /// Applies `changes` as the database's next version, its setup's digest new; everything is
    /// checked before anything changes. Returns the patch that turns the previous version's
    /// setup into the new one ([`SetupMessage::patched`]), if the scheme makes patches. A
    /// scheme whose databases are not changed in place refuses with
    /// [`PirError::NeedsNewSetup`].
    fn update(&mut self, changes: &[crate::Change]) -> Result<Option<Vec<u8>>, PirError> {
        let _ = changes;
        Err(PirError::NeedsNewSetup(Box::new(
            PirError::InvalidParameters(format!(
                "{} databases are not changed in place",
                Self::Scheme::NAME
            )),
        )))
    }

    /// [`PirServer::update`] without making the patch: a version replayed from a change log,
    /// whose patch was made when it was committed.
    fn replay(&mut self, changes: &[crate::Change]) -> Result<(), PirError> {
        self.update(changes).map(drop)
    }
}

/// A server of records by index (Apple's `IndexPirServer`): built by [`PirServer::build`] from
/// raw records or values, its footprint known before anything is allocated. What
/// `obscura build --scheme` chooses among.
pub trait IndexServer: for<'a> PirServer<Data<'a> = Records<'a>> {
    /// The labels of the build's progress steps: [`PirServer::build`]'s progress counts from
    /// zero to a new total at each.
    const STEPS: &'static [&'static str];

    /// What a build of records of `shape` with `options` will hold and produce, computed
    /// before anything is allocated.
    fn footprint_for(shape: RecordShape, options: &Self::Options) -> Result<Footprint, PirError>;
}

/// The client side of a scheme: builds queries and decodes answers.
pub trait PirClient: Sized + Send {
    /// The scheme it queries.
    type Scheme: Scheme<Client = Self>;
    /// What a query asks for (an index, a key, a leaf and its hash, a set of indices).
    type Target<'a>: Copy;
    /// The secret state that decodes the answer to one query; use it once.
    type State: Send + 'static;
    /// What an answer decodes to.
    type Output;
    /// The kind of lookup its databases serve.
    const LOOKUP: Lookup;
    /// The secret state of a lookup made through [`PirClient::lookup`]; use it once.
    type Pending: Send + 'static;

    /// A client of the database with public setup `setup`.
    fn new(setup: SetupOf<Self::Scheme>) -> Self;

    /// The public setup this client queries (what its answers are decoded against).
    fn setup(&self) -> &SetupOf<Self::Scheme>;

    /// A query for `target` and the state that decodes its answer.
    fn query(
        &mut self,
        target: Self::Target<'_>,
    ) -> Result<(QueryOf<Self::Scheme>, Self::State), PirError>;

    /// What `answer` carries.
    fn decode(
        &self,
        state: Self::State,
        answer: &AnswerOf<Self::Scheme>,
    ) -> Result<Self::Output, PirError>;

    /// The encoded request for a front end's `target` and the state that decodes its answer;
    /// [`PirError::WrongLookup`] when the database serves another [`Lookup`].
    fn lookup(&mut self, target: Target<'_>) -> Result<(Vec<u8>, Self::Pending), PirError>;

    /// What the encoded `answer` to a [`PirClient::lookup`] request carries.
    fn found(&self, pending: Self::Pending, answer: &[u8]) -> Result<Found, PirError>;
}
