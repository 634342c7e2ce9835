//! What keyword PIR needs of the index scheme it runs on, and the LWE engine's answer.

use obscura_math::expand::MatrixSeed;
use obscura_math::matrix::PlaintextMatrix;

use super::KeywordOptions;
use crate::lwe::{self, EngineOptions, Footprint, Geometry, Layout, Lwe, RecordFormat};
use crate::params::LOG_FAILURE;
use crate::scheme::{PirClient, Progress, Scheme};
use crate::PirError;

/// The client state of index scheme `I`.
pub type IndexState<I> = <<I as Scheme>::Client as PirClient>::State;

/// An index scheme that keyword PIR can run on: its database has one filter slot per column,
/// cut into digits mod p, and one query asks for the sum (mod p) of a key's 3 or 4 slot columns.
pub trait KeywordIndex: Scheme<Query: Clone> {
    /// Sets up the index over a slot matrix: `encode(log_p)` fills the slots as `log_p`-bit
    /// digits in the given geometry, tried from `largest` bits down to `planned`'s (which always
    /// fits), its public matrix from `seed`; `progress` follows the setup's long step.
    fn build_slots(
        planned: Geometry,
        largest: u8,
        encode: &dyn Fn(u8) -> Result<(Geometry, PlaintextMatrix), PirError>,
        options: &KeywordOptions,
        seed: MatrixSeed,
        progress: Progress<'_>,
    ) -> Result<Self::Server, PirError>;

    /// What [`KeywordIndex::build_slots`] of a `planned` slot matrix will hold and produce.
    fn footprint(planned: &Geometry, options: &KeywordOptions) -> Footprint;

    /// The LWE setup under the index setup: its geometry (one slot per column) and parameters.
    fn engine(setup: &Self::Setup) -> &lwe::PublicSetup;

    /// The slot matrix a server streams: one slot per column, its digits centered.
    fn slot_matrix(server: &Self::Server) -> &PlaintextMatrix;

    /// A query for the sum of the slot columns `slots`, with Δ at each.
    fn query_slots(
        client: &mut Self::Client,
        slots: &[u64],
    ) -> Result<(Self::Query, IndexState<Self>), PirError>;

    /// The digits of the sum of the queried slots, one per matrix row.
    fn decode_slots(
        client: &Self::Client,
        state: IndexState<Self>,
        answer: &Self::Answer,
    ) -> Result<Vec<u8>, PirError>;

    /// Prepares `count` queries ahead of time, where the scheme can.
    fn preprocess(client: &mut Self::Client, count: usize) -> Result<(), PirError>;
}

impl KeywordIndex for Lwe {
    fn build_slots(
        planned: Geometry,
        largest: u8,
        encode: &dyn Fn(u8) -> Result<(Geometry, PlaintextMatrix), PirError>,
        options: &KeywordOptions,
        seed: MatrixSeed,
        progress: Progress<'_>,
    ) -> Result<lwe::Server, PirError> {
        let encoded =
            lwe::encode_with_largest_p(options.params, planned, largest, |_| LOG_FAILURE, encode)?;
        let lwe_options = EngineOptions {
            params: options.params,
            layout: Layout::OnePerColumn,
            matrix: options.matrix,
            value_bytes: None,
            capacity: None,
        };
        lwe::Server::with_database_seeded(encoded, RecordFormat::Raw, lwe_options, seed, progress)
    }

    fn footprint(planned: &Geometry, options: &KeywordOptions) -> Footprint {
        Footprint::engine(planned, options.params)
    }

    fn engine(setup: &lwe::PublicSetup) -> &lwe::PublicSetup {
        setup
    }

    fn slot_matrix(server: &lwe::Server) -> &PlaintextMatrix {
        server.database()
    }

    fn query_slots(
        client: &mut lwe::Client,
        slots: &[u64],
    ) -> Result<(lwe::Query, lwe::QueryState), PirError> {
        client.query_columns(slots)
    }

    fn decode_slots(
        client: &lwe::Client,
        state: lwe::QueryState,
        answer: &lwe::Answer,
    ) -> Result<Vec<u8>, PirError> {
        client.decode_digits(state, answer)
    }

    fn preprocess(client: &mut lwe::Client, count: usize) -> Result<(), PirError> {
        client.preprocess(count)
    }
}
