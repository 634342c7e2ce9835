//! `obscura merkle build`: leaves in, TreePIR database file out.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{ensure, Context, Result};
use clap::Args;
use obscura_pir::batch::merkle::MerkleTree;
use obscura_pir::batch::treepir::TreePirServer;
use obscura_pir::lwe::SetupOptions;
use obscura_store::store::{self, Database};

use crate::build::EngineArgs;
use crate::progress;

/// Arguments of `obscura merkle build`.
#[derive(Args)]
pub struct BuildArgs {
    /// The leaves, one per line: a line's bytes without its line ending (`\n` or `\r\n`) are the
    /// leaf's data, hashed as `SHA-256(0x00 ‖ data)` (RFC 6962). With --leaf-bytes, fixed-size
    /// binary leaves laid end to end.
    #[arg(long)]
    leaves: PathBuf,
    /// Cut the file into binary leaves of this many bytes (its size must be a multiple of it).
    #[arg(long)]
    leaf_bytes: Option<usize>,
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
            ensure!(size >= 1, "--leaf-bytes must be at least 1 byte");
            ensure!(
                data.len() % size == 0,
                "{path} is {} bytes long, not a multiple of --leaf-bytes {size}",
                data.len()
            );
            data.chunks_exact(size).collect()
        }
        None => lines(&data),
    };
    ensure!(!leaves.is_empty(), "{path} is empty: there are no leaves");
    let count = leaves.len() as u64;
    let input_bytes = data.len() as u64 + count * std::mem::size_of::<&[u8]>() as u64;
    // The data served: the tree's nodes, about two 32-byte hashes per leaf.
    args.engine.check_size(input_bytes, count * 64, |layout| {
        TreePirServer::footprint(
            count,
            SetupOptions {
                layout,
                ..args.engine.options()
            },
        )
    })?;
    let pool = args.engine.pool()?;
    let started = Instant::now();
    let server = pool.install(|| {
        let tree = MerkleTree::from_leaves(&leaves);
        progress::treepir_with_bar(
            &tree,
            args.engine.options(),
            "setting up the colour classes",
        )
    })?;
    let setup = server.public_setup().clone();
    let written = store::write_database(&args.out, &Database::from(server))?;
    let size = std::fs::metadata(&args.out)
        .with_context(|| format!("cannot read {}", args.out.display()))?
        .len();
    let shape = match setup.height() {
        0 => "1 leaf, height 0 (the root is the leaf's hash: proofs are empty)".to_string(),
        h => format!(
            "{} leaves, height {h} ({h} sub-databases, one query each per proof)",
            setup.leaves()
        ),
    };
    println!(
        "wrote {}: {shape}, root {}, {size} bytes, setup sha256 {}, setup {:.2?}",
        args.out.display(),
        hex::encode(setup.root()),
        hex::encode(written.sha256),
        started.elapsed()
    );
    Ok(())
}

/// The lines of `data` without their endings (`\n` or `\r\n`); an ending at the very end does
/// not start another line.
fn lines(data: &[u8]) -> Vec<&[u8]> {
    if data.is_empty() {
        return Vec::new();
    }
    data.strip_suffix(b"\n")
        .unwrap_or(data)
        .split(|&b| b == b'\n')
        .map(|line| line.strip_suffix(b"\r").unwrap_or(line))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::lines;

    #[test]
    fn lines_drop_their_endings_only() {
        let cases: [(&[u8], Vec<&[u8]>); 6] = [
            (b"", vec![]),
            (b"\n", vec![b""]),
            (b"a", vec![b"a"]),
            (b"a\nb\n", vec![b"a", b"b"]),
            (b"a\r\n\nb", vec![b"a", b"", b"b"]),
            (b" x \r\n\r\n", vec![b" x ", b""]),
        ];
        for (data, expected) in cases {
            assert_eq!(lines(data), expected, "{data:?}");
        }
    }
}
