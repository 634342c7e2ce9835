//! What a setup costs, computed from its shape alone, before anything is allocated: the memory
//! it holds at its peak and the bytes of what it produces. A front end checks these figures
//! against the machine before it starts a setup that could not finish.
//!
//! The figures follow the setup code step by step, from the geometry it plans
//! ([`Geometry::plan`]): encoding the matrix (then its row norms), the blocked hint product, and
//! the encoded public setup that is written out afterwards. The planned geometry has the
//! narrowest digits a setup may use, so its matrix and hint are the largest; a setup whose own
//! data allow wider digits ([`crate::params`]) ends up smaller, never larger.

use super::layout::Geometry;
use super::setup::PublicSetup;
use crate::params::ParamSet;
use obscura_math::hint;

/// Memory and output sizes of a setup, in bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Footprint {
    matrix_bytes: u64,
    hint_bytes: u64,
    setup_bytes: u64,
    /// Held through the setup besides the matrices and hints (input copies, filter state).
    held_bytes: u64,
    /// The most held for a while besides those (row norms, hint-product blocks, a fill's
    /// slot-major copy of the matrix).
    working_bytes: u64,
    /// The most held besides those at the end: the public setup being encoded.
    final_bytes: u64,
}

impl Footprint {
    /// The footprint of one LWE engine of `geometry` under the parameter set `set`.
    pub(crate) fn engine(geometry: &Geometry, set: ParamSet) -> Self {
        let (rows, n) = (geometry.rows(), set.n() as u64);
        let hint_bytes = rows.saturating_mul(n).saturating_mul(4);
        let setup_bytes = PublicSetup::encoded_len(geometry, set);
        // Row norms: one u64 per row, and one per row of the panel being summed.
        let norms = rows.saturating_mul(16);
        // What the hint product holds besides D and H.
        let product = hint::working_bytes(
            geometry.cols() as usize,
            n as usize,
            rayon::current_num_threads(),
        );
        Self {
            matrix_bytes: rows.saturating_mul(geometry.cols()),
            hint_bytes,
            setup_bytes,
            held_bytes: 0,
            working_bytes: norms.max(product),
            final_bytes: setup_bytes,
        }
    }

    /// A setup that keeps `matrix_bytes` of matrices, holds `held_bytes` besides them through
    /// the setup (and after: what a server keeps in memory), `working_bytes` for a while, and
    /// writes an encoded setup of `setup_bytes` (a scheme without an engine's hint).
    pub fn of(matrix_bytes: u64, held_bytes: u64, working_bytes: u64, setup_bytes: u64) -> Self {
        Self {
            matrix_bytes,
            hint_bytes: 0,
            setup_bytes,
            held_bytes,
            working_bytes,
            final_bytes: setup_bytes,
        }
    }

    /// This footprint with `bytes` more held through the whole setup.
    pub(crate) fn holding(self, bytes: u64) -> Self {
        Self {
            held_bytes: self.held_bytes.saturating_add(bytes),
            ..self
        }
    }

    /// This footprint with a step that holds `bytes` for a while.
    pub(crate) fn working(self, bytes: u64) -> Self {
        Self {
            working_bytes: self.working_bytes.max(bytes),
            ..self
        }
    }

    /// This footprint with its encoded setup replaced by one of `setup_bytes` (a setup that
    /// wraps the engines' setups) whose encoding holds `encoding_bytes` more while it runs (an
    /// engine's setup encoded on its own, then copied in).
    pub(crate) fn encoded_as(self, setup_bytes: u64, encoding_bytes: u64) -> Self {
        Self {
            setup_bytes,
            final_bytes: setup_bytes.saturating_add(encoding_bytes),
            ..self
        }
    }

    /// Several engines set up side by side (all at once, in the worst case), each keeping its
    /// matrix and hint: the sums of their figures.
    pub(crate) fn side_by_side(engines: impl IntoIterator<Item = Self>) -> Self {
        engines.into_iter().fold(Self::default(), |sum, e| Self {
            matrix_bytes: sum.matrix_bytes.saturating_add(e.matrix_bytes),
            hint_bytes: sum.hint_bytes.saturating_add(e.hint_bytes),
            setup_bytes: sum.setup_bytes.saturating_add(e.setup_bytes),
            held_bytes: sum.held_bytes.saturating_add(e.held_bytes),
            working_bytes: sum.working_bytes.saturating_add(e.working_bytes),
            final_bytes: sum.final_bytes.saturating_add(e.final_bytes),
        })
    }

    /// Bytes of the database matrices: one per digit, stored in the database file as they are.
    pub fn matrix_bytes(&self) -> u64 {
        self.matrix_bytes
    }

    /// Bytes of the hints, four per entry: the bulk of the public setup clients download.
    pub fn hint_bytes(&self) -> u64 {
        self.hint_bytes
    }

    /// Bytes of the encoded public setup.
    pub fn setup_bytes(&self) -> u64 {
        self.setup_bytes
    }

    /// The most memory the setup holds at once, writing its encoded setup included (not the
    /// caller's own copy of the input).
    pub fn peak_bytes(&self) -> u64 {
        let resident = self.matrix_bytes.saturating_add(self.hint_bytes);
        self.held_bytes
            .saturating_add(resident)
            .saturating_add(self.working_bytes.max(self.final_bytes))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::batch::merkle::MerkleTree;
    use crate::batch::treepir::TreePirServer;
    use crate::keyword::{KeywordOptions, KeywordServer};
    use crate::lwe::{EngineOptions, Layout, Server};

    fn options(layout: Layout, params: ParamSet) -> EngineOptions {
        EngineOptions {
            params,
            layout,
            matrix: None,
            value_bytes: None,
            capacity: None,
        }
    }

    /// The sizes a built engine really has: matrix, hint and encoded setup.
    fn built(server: &Server) -> (u64, u64, u64) {
        let setup = server.public_setup();
        (
            server.database().as_bytes().len() as u64,
            setup.hint().as_slice().len() as u64 * 4,
            setup.to_bytes().len() as u64,
        )
    }

    fn figures(footprint: &Footprint) -> (u64, u64, u64) {
        (
            footprint.matrix_bytes(),
            footprint.hint_bytes(),
            footprint.setup_bytes(),
        )
    }

    #[test]
    fn records_match_their_setup() {
        for (len, record, layout, params) in [
            (1000, 10, Layout::Square, ParamSet::Ypir1024),
            (999, 7, Layout::OnePerColumn, ParamSet::Ypir1024),
            (4096, 512, Layout::PerColumn(3), ParamSet::Hintless1408),
            (3 * 1024, 1024, Layout::Square, ParamSet::Frodo1774),
        ] {
            let data: Vec<u8> = (0..len).map(|i| (i * 31 % 256) as u8).collect();
            let options = options(layout, params);
            let server = Server::from_records(&data, record, options, &|_, _| {}).unwrap();
            let footprint = Server::footprint(len as u64, record, options).unwrap();
            assert_eq!(figures(&footprint), built(&server), "{len} {record}");
            let (matrix, hint, setup) = built(&server);
            assert!(footprint.peak_bytes() >= matrix + hint + setup);
        }
    }

    #[test]
    fn values_match_their_setup() {
        let values: Vec<Vec<u8>> = (0..50).map(|i| vec![b'v'; i % 13]).collect();
        let options = options(Layout::Square, ParamSet::Ypir1024);
        let server = Server::from_values(&values, options, &|_, _| {}).unwrap();
        let footprint = Server::values_footprint(50, 12, options).unwrap();
        assert_eq!(figures(&footprint), built(&server));
        assert!(Server::values_footprint(1, 1 << 20, options).is_err());
    }

    #[test]
    fn keyword_stores_match_their_setup() {
        for (keys, uniform) in [(40usize, false), (300, true)] {
            let pairs: Vec<(Vec<u8>, Vec<u8>)> = (0..keys)
                .map(|i| {
                    let len = if uniform { 9 } else { i % 9 + 1 };
                    (format!("key {i}").into_bytes(), vec![b'x'; len])
                })
                .collect();
            let options = KeywordOptions::default();
            let server = KeywordServer::from_pairs(&pairs, options, &|_, _| {}).unwrap();
            let footprint = KeywordServer::footprint(keys as u64, 9, uniform, options).unwrap();
            let (matrix, hint, _) = built(server.engine());
            let setup = server.public_setup().to_bytes().len() as u64;
            // The keys' digests are a matrix of the file too.
            let digests = 32 * keys as u64;
            assert_eq!(
                figures(&footprint),
                (matrix + digests, hint, setup),
                "{keys}"
            );
        }
    }

    #[test]
    fn trees_match_their_setup() {
        for leaves in [1usize, 2, 37] {
            let data: Vec<Vec<u8>> = (0..leaves).map(|i| vec![i as u8; 5]).collect();
            let tree = MerkleTree::from_leaves(&data);
            let options = options(Layout::Square, ParamSet::Ypir1024);
            let server = TreePirServer::from_tree(&tree, options, &|_, _| {}).unwrap();
            let footprint = TreePirServer::footprint(leaves as u64, options).unwrap();
            let (matrix, hint) = server
                .databases()
                .iter()
                .map(built)
                .fold((0, 0), |(m, h), (matrix, hint, _)| (m + matrix, h + hint));
            let setup = server.public_setup().to_bytes().len() as u64;
            assert_eq!(figures(&footprint), (matrix, hint, setup), "{leaves}");
        }
    }

    /// The reported shapes: 4,000 records per column of 1 KiB records (3 MB), and three records
    /// of 1 MiB, need gigabytes for a hint of a few megabytes of data.
    #[test]
    fn large_hints_are_seen_before_allocating() {
        let per_column = options(Layout::PerColumn(4000), ParamSet::Ypir1024);
        let footprint = Server::footprint(3 << 20, 1024, per_column).unwrap();
        assert_eq!(footprint.hint_bytes(), 3072 * 1024 * 1024 * 4);
        let square = options(Layout::Square, ParamSet::Ypir1024);
        let footprint = Server::footprint(3 << 20, 1 << 20, square).unwrap();
        assert_eq!(footprint.hint_bytes(), 1 << 32);
        assert!(footprint.peak_bytes() > 2 << 32);
    }
}
