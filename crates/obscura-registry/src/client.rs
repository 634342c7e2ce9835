//! A client of any scheme as a [`Client`]: a trait object over the scheme's client, made once
//! from a public setup (with whatever it precomputes) and kept for every lookup.

use std::any::Any;

use obscura_pir::scheme::SetupOf;
use obscura_pir::wire::Digest;
use obscura_pir::{Found, Lookup, PirClient, PirError, Scheme, SetupMessage, Target};

use crate::listing::{listing, Listing};

/// The secret state of one lookup, which decodes its answer once with the [`Client`] that
/// made it.
pub struct Pending {
    state: Box<dyn Any + Send>,
    digest: Digest,
}

/// A scheme's client, as a [`Client`] holds it.
trait Querying: Send {
    fn digest(&self) -> Digest;
    fn listing(&self) -> Listing;
    fn query(&mut self, target: Target<'_>) -> Result<(Vec<u8>, Pending), PirError>;
    fn decode(&self, pending: Pending, answer: &[u8]) -> Result<Found, PirError>;
}

/// The client of scheme `S`, held.
struct ClientOf<S: Scheme>(S::Client);

impl<S: Scheme> Querying for ClientOf<S> {
    fn digest(&self) -> Digest {
        *self.0.setup().digest()
    }

    fn listing(&self) -> Listing {
        listing::<S>(self.0.setup())
    }

    fn query(&mut self, target: Target<'_>) -> Result<(Vec<u8>, Pending), PirError> {
        let (bytes, state) = self.0.lookup(target)?;
        let pending = Pending {
            state: Box::new(state),
            digest: self.digest(),
        };
        Ok((bytes, pending))
    }

    fn decode(&self, pending: Pending, answer: &[u8]) -> Result<Found, PirError> {
        let foreign = || PirError::SetupMismatch {
            what: "lookup state",
        };
        if pending.digest != self.digest() {
            return Err(foreign());
        }
        let state = pending
            .state
            .downcast::<<S::Client as PirClient>::Pending>()
            .map_err(|_| foreign())?;
        self.0.found(*state, answer)
    }
}

/// A client of one database, whatever its scheme: its public setup decoded once and its
/// scheme's client kept, so every lookup pays only for its query and its decoding.
pub struct Client {
    inner: Box<dyn Querying>,
    listing: Listing,
}

impl Client {
    /// The client of scheme `S` for the database with public setup `setup`.
    pub fn new<S: Scheme>(setup: SetupOf<S>) -> Self {
        let inner = ClientOf::<S>(S::Client::new(setup));
        Self {
            listing: inner.listing(),
            inner: Box::new(inner),
        }
    }

    /// The lookup the database serves.
    pub fn lookup(&self) -> Lookup {
        self.listing.lookup
    }

    /// What the public setup says of the database (scheme, items, sizes, a tree's root).
    pub fn listing(&self) -> &Listing {
        &self.listing
    }

    /// The encoded request for `target` and the state that decodes its answer;
    /// [`PirError::WrongLookup`] for a target of another lookup than the database's.
    pub fn query(&mut self, target: Target<'_>) -> Result<(Vec<u8>, Pending), PirError> {
        self.inner.query(target)
    }

    /// What the encoded `answer` to the request of `pending` carries. A state made by a client
    /// of another setup is refused ([`PirError::SetupMismatch`]).
    pub fn decode(&self, pending: Pending, answer: &[u8]) -> Result<Found, PirError> {
        self.inner.decode(pending, answer)
    }
}
