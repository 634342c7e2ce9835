//! `obscura merkle build`: leaves in, TreePIR database file out.

use std::path::PathBuf;

use anyhow::{ensure, Context, Result};
use clap::Args;
use obscura_pir::lwe::EngineOptions;
use obscura_store::build::{BuildOptions, Records};
use obscura_store::changes::leaf_lines;

use crate::build::{self, EngineArgs};

/// Arguments of `obscura merkle build`.
#[derive(Args)]
pub struct BuildArgs {
    /// The leaves, one per line: a line's bytes without its line ending (`\n` or `\r\n`) are the
    /// leaf's data, hashed as `SHA-256(0x00 ‖ data)` (RFC 6962). With --leaf-bytes, fixed-size
    /// binary leaves laid end to end.
    #[arg(long)]
    leaves: PathBuf,
    /// Cut the file into binary leaves of this many bytes (its size must be a multiple of it).
    #[arg(long, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..))]
    leaf_bytes: Option<usize>,
    /// Room for this many leaves in all, so that `obscura update` can append leaves up to it
    /// (rounded up to a power of two: the tree's height; default: the leaves given, likewise).
    /// Growing past it is a rebuild.
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    capacity: Option<u64>,
    /// Database file to write.
    #[arg(long)]
    out: PathBuf,
    #[command(flatten)]
    engine: EngineArgs,
}

/// Runs `obscura merkle build`.
pub fn run(args: BuildArgs) -> Result<()> {
    let path = args.leaves.display();
    let data = std::fs::read(&args.leaves).with_context(|| format!("cannot read {path}"))?;
    let leaves: Vec<&[u8]> = match args.leaf_bytes {
        Some(size) => {
            ensure!(
                data.len() % size == 0,
                "{path} is {} bytes long, not a multiple of --leaf-bytes {size}",
                data.len()
            );
            data.chunks_exact(size).collect()
        }
        None => leaf_lines(&data),
    };
    ensure!(!leaves.is_empty(), "{path} is empty: there are no leaves");
    let records = Records::Leaves(&leaves);
    let shape = records.shape();
    let options = BuildOptions {
        engine: EngineOptions {
            capacity: args.capacity,
            ..args.engine.options()
        },
        ..BuildOptions::default()
    };
    // The file's bytes, and a slice of them per leaf.
    let input_bytes = (data.len() + leaves.len() * std::mem::size_of::<&[u8]>()) as u64;
    args.engine.check_build(&options, &shape, input_bytes)?;
    build::build_and_write(&args.engine, &args.out, records, &options)
}
