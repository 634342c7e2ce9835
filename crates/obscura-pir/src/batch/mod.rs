//! Batch PIR of Merkle proofs: RFC 6962 trees ([`merkle`]) and TreePIR's colouring of a tree
//! into one sub-database per level-colour ([`coloring`]), so that a whole audit path is fetched
//! with one query per sub-database and no node is stored twice.

pub mod coloring;
pub mod merkle;
pub mod treepir;
