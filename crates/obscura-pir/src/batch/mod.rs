//! Batch PIR of Merkle proofs: RFC 6962 trees ([`merkle`]); the swapped tree whose paths are
//! audit paths ([`swapped`]); TreePIR ([`treepir`]), which colours that tree ([`coloring`]) into
//! one sub-database per colour so that a whole audit path is fetched with one query per
//! sub-database and no node is stored twice; and the probabilistic-batch-code baseline
//! ([`pbc`]), which serves any batch at three times the storage.

pub mod coloring;
pub mod merkle;
pub mod pbc;
pub mod shards;
pub mod swapped;
pub mod treepir;
