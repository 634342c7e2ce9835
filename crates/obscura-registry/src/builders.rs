//! How index databases are built, by the name users give a scheme (`obscura build --scheme
//! NAME`, Python's `build_index(scheme=NAME)`): each [`Builder`] is a scheme's
//! [`IndexServer`] with the options its name stands for. [`builders`] lists them; a scheme
//! registered behind a feature adds its builder there.

use std::fmt;

use obscura_pir::lwe::{EngineOptions, Footprint, RecordShape};
use obscura_pir::{double, lwe, ypir, IndexServer, PirError};

#[cfg(feature = "server")]
use crate::Database;
#[cfg(feature = "server")]
use obscura_pir::{lwe::Records, scheme::Progress};

/// One way to build an index database.
pub trait Builder: Send + Sync {
    /// Its name as users type it (`index`, `double`, `ypir`, `ypir-sp`).
    fn name(&self) -> &'static str;

    /// The labels of the build's progress steps, in order.
    fn steps(&self) -> &'static [&'static str];

    /// Whether the build takes the LWE engine's layout (else the scheme fixes its own).
    fn takes_layout(&self) -> bool;

    /// Whether its builds reserve room for appends and longer values
    /// (`EngineOptions::capacity`, `value_bytes`) that its updates
    /// ([`obscura_pir::PirServer::update`]) fill.
    fn changes_in_place(&self) -> bool;

    /// What a build of records of `shape` will hold and produce, before anything is allocated.
    fn footprint(&self, shape: RecordShape, setup: EngineOptions) -> Result<Footprint, PirError>;

    /// The database of `records`, on the current rayon pool, reporting `(done, total)` of each
    /// step to `progress`.
    #[cfg(feature = "server")]
    fn build(
        &self,
        records: Records<'_>,
        setup: EngineOptions,
        progress: Progress<'_>,
    ) -> Result<Database, PirError>;
}

impl fmt::Debug for dyn Builder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The builder named `name` of the server `T`, whose options its name fixes from the engine's.
struct With<T: IndexServer> {
    name: &'static str,
    options: fn(EngineOptions) -> T::Options,
    takes_layout: bool,
    changes_in_place: bool,
}

impl<T: IndexServer> Builder for With<T> {
    fn name(&self) -> &'static str {
        self.name
    }

    fn steps(&self) -> &'static [&'static str] {
        T::STEPS
    }

    fn takes_layout(&self) -> bool {
        self.takes_layout
    }

    fn changes_in_place(&self) -> bool {
        self.changes_in_place
    }

    fn footprint(&self, shape: RecordShape, setup: EngineOptions) -> Result<Footprint, PirError> {
        T::footprint_for(shape, &(self.options)(setup))
    }

    #[cfg(feature = "server")]
    fn build(
        &self,
        records: Records<'_>,
        setup: EngineOptions,
        progress: Progress<'_>,
    ) -> Result<Database, PirError> {
        Ok(Database::new(T::build(
            records,
            (self.options)(setup),
            progress,
        )?))
    }
}

/// The engine's options, as they are.
fn engine(setup: EngineOptions) -> EngineOptions {
    setup
}

/// The LWE engine: SimplePIR (square layout) or FrodoPIR (one record per column).
static INDEX: With<lwe::Server> = With {
    name: "index",
    options: engine,
    takes_layout: true,
    changes_in_place: true,
};

/// DoublePIR: a second LWE layer over the engine's hint.
static DOUBLE: With<double::Server> = With {
    name: "double",
    options: engine,
    takes_layout: true,
    changes_in_place: false,
};

/// YPIR: DoublePIR with its second layer packed into ring ciphertexts; no hint.
static YPIR: With<ypir::Server> = With {
    name: "ypir",
    options: |_| ypir::YpirOptions {
        variant: Some(ypir::Variant::Ypir),
    },
    takes_layout: false,
    changes_in_place: false,
};

/// YPIR+SP: SimplePIR over a ring, its answer packed; no hint.
static YPIR_SP: With<ypir::Server> = With {
    name: "ypir-sp",
    options: |_| ypir::YpirOptions {
        variant: Some(ypir::Variant::YpirSp),
    },
    takes_layout: false,
    changes_in_place: false,
};

/// The trivial scheme of the tests.
#[cfg(feature = "test-scheme")]
static TEST: With<obscura_test_scheme::WholeServer<{ obscura_test_scheme::CODE }>> = With {
    name: "whole",
    options: |_| (),
    takes_layout: false,
    changes_in_place: false,
};

/// Every builder of this build, in the order users see them; the first is the default.
pub fn builders() -> Vec<&'static dyn Builder> {
    #[allow(unused_mut)]
    let mut all: Vec<&'static dyn Builder> = vec![&INDEX, &DOUBLE, &YPIR, &YPIR_SP];
    #[cfg(feature = "test-scheme")]
    all.push(&TEST);
    all
}

/// The builder named `name`.
pub fn builder(name: &str) -> Option<&'static dyn Builder> {
    builders()
        .into_iter()
        .find(|builder| builder.name() == name)
}

/// The default builder: the LWE engine.
pub fn default_builder() -> &'static dyn Builder {
    &INDEX
}
