//! The schemes this server knows, by the wire kind of their public setups: the one place that
//! decides which scheme loads, lists and answers a database.
//!
//! A database of any scheme is a [`Database`]: a trait object over the scheme's server that
//! the store writes and loads, the catalog lists and the service answers, all in bytes. The
//! built-in schemes are matched in [`built_in`]; a scheme defined elsewhere (a test, an
//! experiment) is added to a [`Registry`] with [`Registry::with`], and is then stored, served
//! and queried like the others.

use std::any::Any;
use std::marker::PhantomData;
use std::sync::Arc;

use obscura_math::matrix::PlaintextMatrix;
use obscura_pir::batch::pbc::Pbc;
use obscura_pir::batch::treepir::TreePir;
use obscura_pir::double::Double;
use obscura_pir::keyword::Keyword;
use obscura_pir::lwe::{self, Lwe};
use obscura_pir::params::LweParams;
use obscura_pir::scheme::{QueryOf, SetupOf};
use obscura_pir::wire::{Digest, Kind, Reader};
use obscura_pir::ypir::Ypir;
use obscura_pir::{Encode, Message, PirError, PirServer, Scheme, SetupMessage};

/// A query decoded for a [`Database`], waiting to be answered (its type is the scheme's).
pub struct DecodedQuery(Box<dyn Any + Send>);

/// What a listing says about a database, whatever its scheme.
#[derive(Clone, Debug, PartialEq)]
pub struct Listing {
    /// The scheme's name for its databases (`index`, `double`, `ypir`, `keyword`, `treepir`,
    /// `pbc`).
    pub kind: &'static str,
    /// Records, keys or leaves.
    pub items: u64,
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
}

/// The parameters and geometry of an LWE engine (what a listing shows of it, without its hint).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Engine {
    /// Its parameters.
    pub params: LweParams,
    /// Its matrix's shape and layout.
    pub geometry: lwe::Geometry,
}

/// A database of some scheme, as the store, the catalog and the service handle it.
trait Hosted: Send + Sync {
    fn kind(&self) -> Kind;
    fn setup_bytes(&self) -> Vec<u8>;
    fn digest(&self) -> Digest;
    fn listing(&self) -> Listing;
    fn matrices(&self) -> Vec<&PlaintextMatrix>;
    fn decode_query(&self, bytes: &[u8]) -> Result<DecodedQuery, PirError>;
    fn answer(&self, queries: Vec<DecodedQuery>) -> Result<Vec<Vec<u8>>, PirError>;
    fn as_any(&self) -> &dyn Any;
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
        let setup = self.0.public_setup();
        let summary = setup.summary();
        Listing {
            kind: S::NAME,
            items: summary.items,
            item_bytes: summary.item_bytes,
            engine: summary.engine.map(|setup| Engine {
                params: setup.params(),
                geometry: *setup.geometry(),
            }),
            sub_queries: summary.sub_queries,
            query_bytes: setup.query_bytes(),
            answer_bytes: setup.answer_bytes(),
        }
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

    fn as_any(&self) -> &dyn Any {
        &self.0
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

    /// Decodes a query for this database: its setup tag and length are checked.
    pub fn decode_query(&self, bytes: &[u8]) -> Result<DecodedQuery, PirError> {
        self.0.decode_query(bytes)
    }

    /// Answers queries decoded by [`Database::decode_query`] in one pass; the answers come
    /// encoded, in order.
    pub fn answer(&self, queries: Vec<DecodedQuery>) -> Result<Vec<Vec<u8>>, PirError> {
        self.0.answer(queries)
    }

    /// The server, if the database is of scheme `S`.
    pub fn server<S: Scheme>(&self) -> Option<&S::Server> {
        self.0.as_any().downcast_ref::<S::Server>()
    }
}

impl<T: PirServer> From<T> for Database {
    fn from(server: T) -> Self {
        Self::new(server)
    }
}

/// Where a loaded database's matrices come from: given the `(rows, cols)` of each, in file
/// order, the matrices (or why the file does not hold them).
pub type MatrixSource<'a> =
    &'a mut dyn FnMut(&[(usize, usize)]) -> Result<Vec<PlaintextMatrix>, String>;

/// How a scheme's database is loaded from its stored parts.
pub trait StoredScheme: Send + Sync {
    /// The wire kind of its setups.
    fn kind(&self) -> Kind;

    /// What users call its databases (`index`, `keyword`, ...).
    fn name(&self) -> &'static str;

    /// The database with the encoded public setup `setup`, whose matrices `matrices` gives
    /// for the shapes the setup announces (`(rows, cols)`, in file order).
    fn load(&self, setup: &[u8], matrices: MatrixSource<'_>) -> Result<Database, LoadError>;
}

/// Why a stored database could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// The setup or a matrix is not valid.
    #[error(transparent)]
    Pir(#[from] PirError),
    /// The matrices could not be taken from the file.
    #[error("{0}")]
    Matrices(String),
    /// No scheme of the registry has setups of this kind.
    #[error("the setup is of kind {0}, which no scheme of this build serves")]
    UnknownKind(u8),
}

/// The [`StoredScheme`] of scheme `S`.
pub struct Stored<S>(PhantomData<S>);

impl<S> Stored<S> {
    /// The stored scheme of `S`.
    pub const SCHEME: Self = Self(PhantomData);
}

impl<S: Scheme> StoredScheme for Stored<S> {
    fn kind(&self) -> Kind {
        S::KIND
    }

    fn name(&self) -> &'static str {
        S::NAME
    }

    fn load(&self, setup: &[u8], matrices: MatrixSource<'_>) -> Result<Database, LoadError> {
        let setup = <SetupOf<S> as SetupMessage>::from_bytes(setup)?;
        let matrices = matrices(&setup.matrix_shapes()).map_err(LoadError::Matrices)?;
        Ok(Database::new(S::Server::from_parts(setup, matrices)?))
    }
}

/// The scheme of this build that has setups of `kind`: the one match that decides.
pub fn built_in(kind: Kind) -> Option<&'static dyn StoredScheme> {
    match kind {
        Kind::LWE_PUBLIC_SETUP => Some(&Stored::<Lwe>::SCHEME),
        Kind::KEYWORD_SETUP => Some(&Stored::<Keyword>::SCHEME),
        Kind::TREEPIR_SETUP => Some(&Stored::<TreePir>::SCHEME),
        Kind::PBC_SETUP => Some(&Stored::<Pbc>::SCHEME),
        Kind::DOUBLE_SETUP => Some(&Stored::<Double>::SCHEME),
        Kind::YPIR_SETUP => Some(&Stored::<Ypir>::SCHEME),
        _ => None,
    }
}

/// The schemes a store or a service knows: the built-in ones and those added.
#[derive(Clone, Default)]
pub struct Registry {
    added: Vec<Arc<dyn StoredScheme>>,
}

impl Registry {
    /// Adds `scheme` (whose kind no built-in scheme has: those always win).
    pub fn with(mut self, scheme: impl StoredScheme + 'static) -> Self {
        self.added.push(Arc::new(scheme));
        self
    }

    /// The scheme whose setups are of `kind`.
    pub fn get(&self, kind: Kind) -> Option<&dyn StoredScheme> {
        built_in(kind).or_else(|| {
            self.added
                .iter()
                .find(|scheme| scheme.kind() == kind)
                .map(|scheme| scheme.as_ref())
        })
    }

    /// Loads a database from its encoded public setup (the envelope's kind picks the scheme)
    /// and its matrices.
    pub fn load(&self, setup: &[u8], matrices: MatrixSource<'_>) -> Result<Database, LoadError> {
        let kind = setup_kind(setup)?;
        self.get(kind)
            .ok_or(LoadError::UnknownKind(kind.code()))?
            .load(setup, matrices)
    }
}

/// The kind an encoded setup's envelope names, once its magic and version are checked.
pub fn setup_kind(setup: &[u8]) -> Result<Kind, PirError> {
    Reader::envelope_kind(setup)
}
