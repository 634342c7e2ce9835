//! Fuzzing of Obscura on stable Rust: a target per decoder and per HTTP route body, a mutation
//! runner over a committed seed corpus, and the guards that turn a panic, a huge allocation or
//! a hang into a saved crashing input.
//!
//! - [`targets`]: every target, by name; each takes bytes and returns a [`targets::Verdict`];
//! - [`fixtures`]: the small committed databases the targets decode messages against;
//! - [`mutate`]: the byte mutations (bit flips, length fields set to huge values, splicing...);
//! - [`runner`]: the loop that mutates, runs, catches panics and saves crashing inputs;
//! - [`guard`]: the allocation limit and the per-input watchdog.

pub mod corpus;
pub mod fixtures;
pub mod guard;
pub mod mutate;
pub mod runner;
pub mod targets;
