//! `obscura merkle`: Merkle trees served with TreePIR, and their audit paths fetched privately.

mod build;
mod prove;

use anyhow::Result;
use clap::{Args, Subcommand};

/// Arguments of `obscura merkle`.
#[derive(Args)]
pub struct MerkleArgs {
    #[command(subcommand)]
    command: MerkleCommand,
}

#[derive(Subcommand)]
enum MerkleCommand {
    /// Build a TreePIR database file from the leaves of an RFC 6962 Merkle tree.
    Build(build::BuildArgs),
    /// Fetch a leaf's audit path privately and verify it against the root, or prove that an
    /// earlier version of the tree is a prefix of the one served.
    Prove(Box<prove::ProveArgs>),
}

/// Runs `obscura merkle`.
pub fn run(args: MerkleArgs) -> Result<()> {
    match args.command {
        MerkleCommand::Build(args) => build::run(args),
        MerkleCommand::Prove(args) => prove::run(*args),
    }
}
