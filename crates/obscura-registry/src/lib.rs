//! The PIR schemes of this build, by the wire kind of their public setups: the one place that
//! decides by kind which scheme loads, lists, answers and queries a database.
//!
//! A scheme's entry ([`Entry`]) makes a client from a public setup ([`Client`], what every
//! client front end queries through) and, with the `server` feature (on by default; off in the
//! browser client, which carries no server code), a server of the scheme from a stored setup
//! and matrices (`Database`, what the store, the catalog and the service handle). The built-in
//! schemes are matched in [`built_in`]; a scheme defined outside Obscura's crates is either
//! added there by one line behind a feature (as the `test-scheme` feature adds
//! `obscura-test-scheme`'s), or to a [`Registry`] at run time with [`Registry::with`].
//!
//! ```
//! use obscura_pir::lwe::{Server, EngineOptions};
//! use obscura_pir::{Found, Lookup, PirServer, SetupMessage, Target};
//! use obscura_registry::{Database, Registry};
//!
//! let data: Vec<u8> = (0..640u32).map(|i| i as u8).collect();
//! let database = Database::new(Server::from_records(&data, 64, EngineOptions::default(), &|_, _| {})?);
//! let mut client = Registry::default().client(&database.setup_bytes())?;
//! assert_eq!(client.lookup(), Lookup::Index);
//! let (request, pending) = client.query(Target::Index(3))?;
//! let answers = database.answer(vec![database.decode_query(&request)?])?;
//! assert_eq!(client.decode(pending, &answers[0])?, Found::Record(data[192..256].to_vec()));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod builders;
mod client;
#[cfg(feature = "server")]
mod hosted;
mod listing;

use std::marker::PhantomData;
use std::sync::Arc;

#[cfg(feature = "server")]
use obscura_math::matrix::PlaintextMatrix;
use obscura_pir::batch::pbc::Pbc;
use obscura_pir::batch::treepir::TreePir;
use obscura_pir::double::Double;
use obscura_pir::framing;
use obscura_pir::keyword::Keyword;
use obscura_pir::lwe::{Lwe, LweShard};
use obscura_pir::scheme::SetupOf;
use obscura_pir::wire::{Kind, Reader};
use obscura_pir::ypir::Ypir;
#[cfg(feature = "server")]
use obscura_pir::PirServer;
use obscura_pir::{PirError, Scheme, SetupMessage};

pub use builders::{builder, builders, Builder};
pub use client::{Client, Pending};
#[cfg(feature = "server")]
pub use hosted::{Database, DecodedQuery, Remote};
pub use listing::{Engine, Listing};

/// Where a loaded database's matrices come from: given the `(rows, cols)` of each, in file
/// order, the matrices (or why the file does not hold them).
#[cfg(feature = "server")]
pub type MatrixSource<'a> =
    &'a mut dyn FnMut(&[(usize, usize)]) -> Result<Vec<PlaintextMatrix>, MatricesError>;

/// Why a file's matrices do not have the shapes its setup announces.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum MatricesError {
    /// A matrix needs more bytes than the file has left.
    #[error("matrix {index} ({rows} x {cols}) is larger than the {left} bytes left")]
    TooLarge {
        /// Its place in file order.
        index: usize,
        /// Its rows.
        rows: usize,
        /// Its columns.
        cols: usize,
        /// The bytes the file has left.
        left: usize,
    },
    /// A matrix's bytes cannot be taken from the file.
    #[error("matrix {index} ({rows} x {cols}) is not all there")]
    Incomplete {
        /// Its place in file order.
        index: usize,
        /// Its rows.
        rows: usize,
        /// Its columns.
        cols: usize,
    },
    /// Bytes follow the last matrix.
    #[error("{0} bytes follow the last matrix")]
    Trailing(usize),
}

/// One scheme of the registry: what it is called and serves, and how its servers and clients
/// are made from bytes.
pub trait Entry: Send + Sync {
    /// The wire kind of its setups.
    fn kind(&self) -> Kind;

    /// What users call its databases (`index`, `keyword`, ...).
    fn name(&self) -> &'static str;

    /// The database with the encoded public setup `setup`, whose matrices `matrices` gives
    /// for the shapes the setup announces (`(rows, cols)`, in file order).
    #[cfg(feature = "server")]
    fn load(&self, setup: &[u8], matrices: MatrixSource<'_>) -> Result<Database, LoadError>;

    /// The client of the database with the encoded public setup `setup` (its lengths and
    /// digest checked).
    fn client(&self, setup: &[u8]) -> Result<Client, PirError>;

    /// The encoded setup that `patch` makes of the encoded setup `setup`
    /// ([`SetupMessage::patch_encoded`]).
    fn patch_setup(&self, setup: Vec<u8>, patch: &[u8]) -> Result<Vec<u8>, PirError>;
}

/// Why a stored database could not be loaded.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LoadError {
    /// The setup or a matrix is not valid.
    #[error(transparent)]
    Pir(#[from] PirError),
    /// The matrices could not be taken from the file.
    #[error(transparent)]
    Matrices(#[from] MatricesError),
    /// No scheme of the registry has setups of this kind.
    #[error("the setup is of kind {0}, which no scheme of this build serves")]
    UnknownKind(u8),
}

/// The [`Entry`] of scheme `S`.
pub struct Of<S>(PhantomData<S>);

impl<S> Of<S> {
    /// The entry of `S`.
    pub const ENTRY: Self = Self(PhantomData);
}

impl<S: Scheme> Entry for Of<S> {
    fn kind(&self) -> Kind {
        S::KIND
    }

    fn name(&self) -> &'static str {
        S::NAME
    }

    #[cfg(feature = "server")]
    fn load(&self, setup: &[u8], matrices: MatrixSource<'_>) -> Result<Database, LoadError> {
        let setup = <SetupOf<S> as SetupMessage>::from_bytes(setup)?;
        let matrices = matrices(&setup.matrix_shapes())?;
        Ok(Database::new(S::Server::from_parts(setup, matrices)?))
    }

    fn client(&self, setup: &[u8]) -> Result<Client, PirError> {
        Ok(Client::new::<S>(SetupOf::<S>::from_bytes(setup)?))
    }

    fn patch_setup(&self, setup: Vec<u8>, patch: &[u8]) -> Result<Vec<u8>, PirError> {
        SetupOf::<S>::patch_encoded(setup, patch)
    }
}

/// The scheme of this build that has setups of `kind`: the one match that decides.
pub fn built_in(kind: Kind) -> Option<&'static dyn Entry> {
    match kind {
        Kind::LWE_PUBLIC_SETUP => Some(&Of::<Lwe>::ENTRY),
        Kind::KEYWORD_SETUP => Some(&Of::<Keyword>::ENTRY),
        Kind::TREEPIR_SETUP => Some(&Of::<TreePir>::ENTRY),
        Kind::PBC_SETUP => Some(&Of::<Pbc>::ENTRY),
        Kind::DOUBLE_SETUP => Some(&Of::<Double>::ENTRY),
        Kind::YPIR_SETUP => Some(&Of::<Ypir>::ENTRY),
        Kind::LWE_SHARD_SETUP => Some(&Of::<LweShard>::ENTRY),
        #[cfg(feature = "test-scheme")]
        obscura_test_scheme::KIND => Some(&Of::<obscura_test_scheme::TestScheme>::ENTRY),
        _ => None,
    }
}

/// The schemes a store, a service or a client knows: the built-in ones and those added.
#[derive(Clone, Default)]
pub struct Registry {
    added: Vec<Arc<dyn Entry>>,
}

impl Registry {
    /// Adds `entry` (whose kind no built-in scheme has: those always win).
    pub fn with(mut self, entry: impl Entry + 'static) -> Self {
        self.added.push(Arc::new(entry));
        self
    }

    /// The scheme whose setups are of `kind`.
    pub fn get(&self, kind: Kind) -> Option<&dyn Entry> {
        built_in(kind).or_else(|| {
            self.added
                .iter()
                .find(|entry| entry.kind() == kind)
                .map(|entry| entry.as_ref())
        })
    }

    /// The scheme of the encoded setup `setup` (its envelope's kind), or why there is none.
    fn entry_of(&self, setup: &[u8]) -> Result<&dyn Entry, LoadError> {
        let kind = setup_kind(setup)?;
        self.get(kind).ok_or(LoadError::UnknownKind(kind.code()))
    }

    /// Loads a database from its encoded public setup (the envelope's kind picks the scheme)
    /// and its matrices.
    #[cfg(feature = "server")]
    pub fn load(&self, setup: &[u8], matrices: MatrixSource<'_>) -> Result<Database, LoadError> {
        self.entry_of(setup)?.load(setup, matrices)
    }

    /// The client of the database with encoded public setup `setup` (the envelope's kind
    /// picks the scheme).
    pub fn client(&self, setup: &[u8]) -> Result<Client, LoadError> {
        Ok(self.entry_of(setup)?.client(setup)?)
    }

    /// The encoded setup that the patch chain `chain` makes of the encoded setup `setup` (the
    /// envelope's kind picks the scheme), in its own bytes where the scheme can. A chain is one
    /// or more patches, oldest first, each the next version's, framed
    /// ([`obscura_pir::framing`]); each is checked to name the setup it applies to and to make
    /// the setup it names. On an error the bytes are dropped: they may be half patched.
    pub fn patch_setup(&self, mut setup: Vec<u8>, chain: &[u8]) -> Result<Vec<u8>, LoadError> {
        let entry = self.entry_of(&setup)?;
        let patches = framing::decode(chain, usize::MAX)
            .map_err(|reason| PirError::malformed("patch chain", reason))?;
        for patch in patches {
            setup = entry.patch_setup(setup, patch)?;
        }
        Ok(setup)
    }
}

/// The SHA-256 over every byte of an encoded public setup (hint included): what
/// `obscura build` prints, `GET /v1/databases` lists as `setup_sha256` and the service sends as
/// the setup's ETag, and what clients check a downloaded or cached setup against.
pub fn setup_sha256(setup_bytes: &[u8]) -> [u8; 32] {
    use sha2::Digest as _;
    sha2::Sha256::digest(setup_bytes).into()
}

/// The kind an encoded setup's envelope names, once its magic and version are checked.
pub fn setup_kind(setup: &[u8]) -> Result<Kind, PirError> {
    Reader::envelope_kind(setup)
}
