//! `obscura merkle prove`: a leaf's audit path, fetched privately and verified against the root.

use std::path::Path;
use std::sync::Arc;

use anyhow::{anyhow, bail, ensure, Context, Result};
use clap::Args;
use obscura_pir::batch::merkle::{self, Hash};
use obscura_pir::batch::treepir::{TreePirClient, TreePirServer, TreePirSetup};
use obscura_pir::lwe::{Answer, Query};
use obscura_server::client::{ClientError, HttpClient};
use obscura_server::store::{self, Database};

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

/// Where the answers come from.
enum Prover {
    /// A database file, answered in this process.
    Local(Arc<TreePirServer>),
    /// A database served over HTTP.
    Remote {
        http: Box<HttpClient>,
        name: String,
        setup: Box<TreePirSetup>,
    },
}

impl Prover {
    fn open(args: &ProveArgs) -> Result<Self> {
        let name = &args.db;
        Ok(match args.remote.client()? {
            None => match store::read_database(Path::new(name))? {
                Database::TreePir(server) => Self::Local(server),
                other => bail!(
                    "{name} is not a Merkle tree (it is a database of kind {}): build one with `obscura merkle build`",
                    other.kind()
                ),
            },
            Some(http) => {
                let setup = http.treepir_setup(name).map_err(|error| match error {
                    ClientError::Pir(error) => {
                        // Most likely another kind of database: say which.
                        let kind = http.list().ok().and_then(|list| {
                            list.into_iter().find(|info| &info.name == name).map(|info| info.kind)
                        });
                        match kind {
                            Some(kind) if kind != "treepir" => anyhow!(
                                "{name} is not a Merkle tree (it is a database of kind {kind}): build one with `obscura merkle build`"
                            ),
                            _ => anyhow!("{name} has no usable Merkle tree setup: {error}"),
                        }
                    }
                    error => error.into(),
                })?;
                Self::Remote {
                    http: Box::new(http),
                    name: name.clone(),
                    setup: Box::new(setup),
                }
            }
        })
    }

    fn setup(&self) -> &TreePirSetup {
        match self {
            Self::Local(server) => server.public_setup(),
            Self::Remote { setup, .. } => setup,
        }
    }

    fn answer(&self, queries: &[Query]) -> Result<Vec<Answer>> {
        Ok(match self {
            Self::Local(server) => server.answer(queries)?,
            Self::Remote { http, name, setup } => http.proof(name, setup, queries)?,
        })
    }
}

/// Runs `obscura merkle prove`.
pub fn run(args: ProveArgs) -> Result<()> {
    let prover = Prover::open(&args)?;
    let setup = prover.setup();
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
            let answers = prover.answer(&queries)?;
            let origin = match queries.len() {
                0 => "the root: the tree has one leaf".into(),
                count => format!("fetched privately, in a request of {count} queries"),
            };
            (client.decode_leaf_hash(state, &answers)?, origin)
        }
    };
    let (queries, state) = client.query(m)?;
    let answers = prover.answer(&queries)?;
    let path = client
        .decode(state, &answers, &leaf_hash)
        .with_context(|| {
            format!(
                "leaf {m} with hash {} under root {}",
                hex::encode(leaf_hash),
                hex::encode(root)
            )
        })?;
    println!("leaf {m} of {n}");
    println!("leaf hash {} ({origin})", hex::encode(leaf_hash));
    println!(
        "audit path, leaf to root (fetched with {} queries):",
        queries.len()
    );
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
