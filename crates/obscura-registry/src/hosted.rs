//! A database of any scheme as a [`Database`]: a trait object over the scheme's server that
//! the store writes and loads, the catalog lists and the service answers, all in bytes.

use std::any::Any;
use std::sync::Arc;

use obscura_math::matrix::PlaintextMatrix;
use obscura_pir::lwe::{self, Lwe};
use obscura_pir::scheme::QueryOf;
use obscura_pir::wire::{Digest, Kind};
use obscura_pir::{Change, Encode, Message, PirError, PirServer, Scheme, SetupMessage};

use crate::listing::{listing, Listing};

/// A query decoded for a [`Database`], waiting to be answered (its type is the scheme's).
pub struct DecodedQuery(Box<dyn Any + Send>);

/// A database of some scheme, as the store, the catalog and the service handle it.
trait Hosted: Send + Sync {
    fn kind(&self) -> Kind;
    fn setup_bytes(&self) -> Vec<u8>;
    fn digest(&self) -> Digest;
    fn listing(&self) -> Listing;
    fn matrices(&self) -> Vec<&PlaintextMatrix>;
    fn decode_query(&self, bytes: &[u8]) -> Result<DecodedQuery, PirError>;
    fn answer(&self, queries: Vec<DecodedQuery>) -> Result<Vec<Vec<u8>>, PirError>;
    fn update(&mut self, changes: &[Change]) -> Result<Option<Vec<u8>>, PirError>;
    fn replay(&mut self, changes: &[Change]) -> Result<(), PirError>;
    fn duplicate(&self) -> Arc<dyn Hosted>;
    fn metrics(&self, _name: &str) -> String {
        String::new()
    }
    fn as_any(&self) -> &dyn Any;
    fn as_any_mut(&mut self) -> &mut dyn Any;
}

/// The server of scheme `S`, hosted.
struct Server<S: Scheme>(S::Server);

impl<S: Scheme> Hosted for Server<S> {
    fn kind(&self) -> Kind {
        S::KIND
    }

    fn setup_bytes(&self) -> Vec<u8> {
        SetupMessage::to_bytes(self.0.public_setup())
    }

    fn digest(&self) -> Digest {
        *self.0.public_setup().digest()
    }

    fn listing(&self) -> Listing {
        listing::<S>(self.0.public_setup())
    }

    fn matrices(&self) -> Vec<&PlaintextMatrix> {
        self.0.matrices()
    }

    fn decode_query(&self, bytes: &[u8]) -> Result<DecodedQuery, PirError> {
        let query = QueryOf::<S>::from_bytes(bytes, self.0.public_setup())?;
        Ok(DecodedQuery(Box::new(query)))
    }

    fn answer(&self, queries: Vec<DecodedQuery>) -> Result<Vec<Vec<u8>>, PirError> {
        let queries = queries
            .into_iter()
            .map(|query| {
                query.0.downcast::<QueryOf<S>>().map(|q| *q).map_err(|_| {
                    PirError::InvalidParameters(format!(
                        "a query decoded for another database reached a {} database",
                        S::NAME
                    ))
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        let answers = self.0.answer_batch(&queries)?;
        Ok(answers.iter().map(Encode::to_bytes).collect())
    }

    fn update(&mut self, changes: &[Change]) -> Result<Option<Vec<u8>>, PirError> {
        self.0.update(changes)
    }

    fn replay(&mut self, changes: &[Change]) -> Result<(), PirError> {
        self.0.replay(changes)
    }

    fn duplicate(&self) -> Arc<dyn Hosted> {
        Arc::new(Self(self.0.clone()))
    }

    fn as_any(&self) -> &dyn Any {
        &self.0
    }

    fn as_any_mut(&mut self) -> &mut dyn Any {
        &mut self.0
    }
}

/// What answers the queries of a database held elsewhere ([`Database::remote`]): a gateway's
/// shards.
pub trait Remote: Send + Sync + 'static {
    /// Answers `queries`, decoded against the database's setup, in order; a part of the
    /// database out of reach is [`PirError::Unavailable`].
    fn answer(&self, queries: &[lwe::Query]) -> Result<Vec<lwe::Answer>, PirError>;

    /// Its own metrics, in the Prometheus text format, for the database called `name`.
    fn metrics(&self, name: &str) -> String;
}

/// A database of the LWE engine answered by a [`Remote`].
#[derive(Clone)]
struct RemoteLwe {
    setup: lwe::PublicSetup,
    remote: Arc<dyn Remote>,
}

impl Hosted for RemoteLwe {
    fn kind(&self) -> Kind {
        Lwe::KIND
    }

    fn setup_bytes(&self) -> Vec<u8> {
        self.setup.to_bytes()
    }

    fn digest(&self) -> Digest {
        *self.setup.digest()
    }

    fn listing(&self) -> Listing {
        listing::<Lwe>(&self.setup)
    }

    fn matrices(&self) -> Vec<&PlaintextMatrix> {
        Vec::new()
    }

    fn decode_query(&self, bytes: &[u8]) -> Result<DecodedQuery, PirError> {
        let query = lwe::Query::from_bytes(bytes, &self.setup)?;
        Ok(DecodedQuery(Box::new(query)))
    }

    fn answer(&self, queries: Vec<DecodedQuery>) -> Result<Vec<Vec<u8>>, PirError> {
        let queries = queries
            .into_iter()
            .map(|query| {
                query.0.downcast::<lwe::Query>().map(|q| *q).map_err(|_| {
                    PirError::InvalidParameters(
                        "a query decoded for another database reached a sharded one".into(),
                    )
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        let answers = self.remote.answer(&queries)?;
        Ok(answers.iter().map(lwe::Answer::to_bytes).collect())
    }

    fn update(&mut self, _changes: &[Change]) -> Result<Option<Vec<u8>>, PirError> {
        Err(Self::held_elsewhere())
    }

    fn replay(&mut self, _changes: &[Change]) -> Result<(), PirError> {
        Err(Self::held_elsewhere())
    }

    fn duplicate(&self) -> Arc<dyn Hosted> {
        Arc::new(self.clone())
    }

    fn metrics(&self, name: &str) -> String {
        self.remote.metrics(name)
    }

    fn as_any(&self) -> &dyn Any {
        self
    }

    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }
}

impl RemoteLwe {
    /// Why a database held elsewhere takes no changes here.
    fn held_elsewhere() -> PirError {
        PirError::InvalidParameters(
            "a sharded database is changed on its shards, not at its gateway".into(),
        )
    }
}

/// A database of any scheme, shared by the tasks that answer it.
#[derive(Clone)]
pub struct Database(Arc<dyn Hosted>);

impl Database {
    /// Hosts `server`, of any scheme.
    pub fn new<T: PirServer>(server: T) -> Self {
        Self(Arc::new(Server::<T::Scheme>(server)))
    }

    /// A database of the LWE engine with public `setup` whose queries `remote` answers (a
    /// gateway over the database's shards): listed, its setup served and its queries decoded
    /// as any database's. It holds no matrices here and takes no changes: its shards do.
    pub fn remote(setup: lwe::PublicSetup, remote: Arc<dyn Remote>) -> Self {
        Self(Arc::new(RemoteLwe { setup, remote }))
    }

    /// The wire kind of its public setup, which names its scheme.
    pub fn kind(&self) -> Kind {
        self.0.kind()
    }

    /// The encoded public setup clients download.
    pub fn setup_bytes(&self) -> Vec<u8> {
        self.0.setup_bytes()
    }

    /// The digest that names the public setup.
    pub fn digest(&self) -> Digest {
        self.0.digest()
    }

    /// What a listing says about it.
    pub fn listing(&self) -> Listing {
        self.0.listing()
    }

    /// The matrices a database file stores, in file order.
    pub fn matrices(&self) -> Vec<&PlaintextMatrix> {
        self.0.matrices()
    }

    /// Metrics of its own, in the Prometheus text format, under `name` (a gateway's per shard;
    /// none for a database answered here).
    pub fn metrics(&self, name: &str) -> String {
        self.0.metrics(name)
    }

    /// Decodes a query for this database: its setup tag and length are checked.
    pub fn decode_query(&self, bytes: &[u8]) -> Result<DecodedQuery, PirError> {
        self.0.decode_query(bytes)
    }

    /// Answers queries decoded by [`Database::decode_query`] in one pass; the answers come
    /// encoded, in order.
    pub fn answer(&self, queries: Vec<DecodedQuery>) -> Result<Vec<Vec<u8>>, PirError> {
        self.0.answer(queries)
    }

    /// Applies `changes` as the database's next version ([`PirServer::update`]): a new
    /// setup digest, everything checked before anything changes. A database shared with
    /// others (a clone is answering) is not changed under them: this one becomes a copy (its
    /// matrices are copied only where the changes write), and the others keep the version
    /// they had. Returns the patch from the previous version's setup to the new one, if the
    /// scheme makes patches ([`Registry::patch_setup`](crate::Registry::patch_setup) applies
    /// it).
    pub fn update(&mut self, changes: &[Change]) -> Result<Option<Vec<u8>>, PirError> {
        self.alone().update(changes)
    }

    /// [`Database::update`] without making the patch ([`PirServer::replay`]): a version
    /// replayed from a change log.
    pub fn replay(&mut self, changes: &[Change]) -> Result<(), PirError> {
        self.alone().replay(changes)
    }

    /// The server, held alone: a database shared with others becomes a copy of its own.
    fn alone(&mut self) -> &mut dyn Hosted {
        if Arc::get_mut(&mut self.0).is_none() {
            self.0 = self.0.duplicate();
        }
        Arc::get_mut(&mut self.0).expect("held alone")
    }

    /// The server, if the database is of scheme `S`.
    pub fn server<S: Scheme>(&self) -> Option<&S::Server> {
        self.0.as_any().downcast_ref::<S::Server>()
    }

    /// The server to change, if the database is of scheme `S` and not shared with others.
    pub fn server_mut<S: Scheme>(&mut self) -> Option<&mut S::Server> {
        Arc::get_mut(&mut self.0)?
            .as_any_mut()
            .downcast_mut::<S::Server>()
    }
}

impl<T: PirServer> From<T> for Database {
    fn from(server: T) -> Self {
        Self::new(server)
    }
}
