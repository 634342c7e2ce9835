//! `obscura merkle prove`: a leaf's audit path, fetched privately and verified against the root.

use anyhow::{bail, ensure, Context, Result};
use clap::Args;
use obscura_pir::batch::merkle::{self, Hash};
use obscura_pir::batch::shards::Shards;
use obscura_pir::batch::treepir::{TreePir, TreePirClient};
use obscura_server::answerer::AnswerError;

use crate::get::{parse_sha256, ServerArgs};

/// Arguments of `obscura merkle prove`.
#[derive(Args)]
pub struct ProveArgs {
    /// The tree: a file written by `obscura merkle build`, or with `--server` a database name.
    #[arg(long)]
    db: String,
    #[command(flatten)]
    remote: ServerArgs,
    /// Index of the leaf (from 0).
    #[arg(long)]
    leaf: u64,
    /// The leaf's data (its line in the leaves file); its hash is `SHA-256(0x00 ‖ data)`.
    /// Without this or --leaf-hash, the leaf hash is fetched privately too, in a second request.
    #[arg(long, conflicts_with = "leaf_hash")]
    leaf_data: Option<String>,
    /// The leaf's hash, in hex.
    #[arg(long, value_parser = parse_sha256)]
    leaf_hash: Option<Hash>,
    /// The root the tree must have, in hex: a tree with another root is refused.
    #[arg(long, value_parser = parse_sha256)]
    root: Option<Hash>,
}

/// Runs `obscura merkle prove`.
pub fn run(args: ProveArgs) -> Result<()> {
    let answerer = args.remote.answerer(&args.db)?;
    let setup = match answerer.setup::<TreePir>() {
        Err(AnswerError::WrongScheme { found, .. }) => bail!(
            "{} is not a Merkle tree (it is a database of kind {found}): build one with `obscura merkle build`",
            args.db
        ),
        setup => setup?,
    };
    let (m, root) = (args.leaf, *setup.root());
    let n = setup.leaves();
    ensure!(
        m < n,
        "leaf {m} is out of range: the tree has {n} leaves (0 to {})",
        n - 1
    );
    if let Some(expected) = args.root {
        ensure!(
            root == expected,
            "the tree's root {} is not the expected {}",
            hex::encode(root),
            hex::encode(expected)
        );
    }
    let mut client = TreePirClient::new(setup.clone());
    let (leaf_hash, origin) = match (&args.leaf_data, args.leaf_hash) {
        (Some(data), _) => (
            merkle::leaf_hash(data.as_bytes()),
            "given: the hash of --leaf-data".into(),
        ),
        (None, Some(hash)) => (hash, "given with --leaf-hash".into()),
        (None, None) => {
            let (queries, state) = client.query_leaf_hash(m)?;
            let count = queries.len();
            let answers = answerer.answer::<TreePir>(&setup, &Shards(queries))?;
            let origin = match count {
                0 => "the root: the tree has one leaf".into(),
                count => format!("fetched privately, in a request of {count} queries"),
            };
            (client.decode_leaf_hash(state, &answers.0)?, origin)
        }
    };
    let (queries, state) = client.query(m)?;
    let count = queries.len();
    let answers = answerer.answer::<TreePir>(&setup, &Shards(queries))?;
    let path = client
        .decode(state, &answers.0, &leaf_hash)
        .with_context(|| {
            format!(
                "leaf {m} with hash {} under root {}",
                hex::encode(leaf_hash),
                hex::encode(root)
            )
        })?;
    println!("leaf {m} of {n}");
    println!("leaf hash {} ({origin})", hex::encode(leaf_hash));
    println!("audit path, leaf to root (fetched with {count} queries):");
    for hash in &path {
        println!("{}", hex::encode(hash));
    }
    let pinned = if args.root.is_some() {
        ", the expected one"
    } else {
        ""
    };
    println!("root {} (verified{pinned})", hex::encode(root));
    Ok(())
}
