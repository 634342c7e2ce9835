//! `obscura merkle prove`: a leaf's audit path, fetched privately and verified against the root;
//! or the consistency proof that an earlier version of the tree is a prefix of the one served.

use anyhow::{bail, Result};
use clap::Args;
use obscura_client::blocking::Client;
use obscura_client::ClientError;
use obscura_pir::batch::merkle::{self, Hash};
use obscura_pir::PirError;

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
    #[arg(long, required_unless_present = "since")]
    leaf: Option<u64>,
    /// Prove instead that the tree's earlier version of this many leaves, with head
    /// --since-root, is a prefix of the tree served (RFC 6962 consistency: the log only grew).
    #[arg(long, requires = "since_root", conflicts_with_all = ["leaf", "leaf_data", "leaf_hash"])]
    since: Option<u64>,
    /// The head of the earlier version, in hex (with --since).
    #[arg(long, value_parser = parse_sha256, requires = "since")]
    since_root: Option<Hash>,
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
    let mut client = args.remote.open(&args.db)?;
    if let (Some(first), Some(first_root)) = (args.since, args.since_root) {
        return consistency(&mut client, &args, first, &first_root);
    }
    let leaf = args.leaf.expect("clap requires --leaf without --since");
    let leaf_hash = args
        .leaf_data
        .as_ref()
        .map(|data| merkle::leaf_hash(data.as_bytes()))
        .or(args.leaf_hash);
    let proof = match client.audit_path(leaf, leaf_hash, args.root) {
        Err(ClientError::Lookup {
            error: PirError::WrongLookup { serves, .. },
            ..
        }) => bail!(
            "{} is not a Merkle tree (it is a database of kind {serves}): build one with `obscura merkle build`",
            args.db
        ),
        Err(ClientError::LeafOutOfRange { leaf, leaves }) => bail!(
            "leaf {leaf} is out of range: the tree has {leaves} leaves (0 to {})",
            leaves - 1
        ),
        Err(error @ ClientError::Pir(PirError::InvalidProof(_))) => {
            return Err(anyhow::Error::new(error).context(format!(
                "leaf {} with hash {} under root {}",
                leaf,
                leaf_hash.map_or("(fetched)".into(), hex::encode),
                client
                    .session()
                    .listing()
                    .root
                    .map_or("(unknown)".into(), hex::encode)
            )))
        }
        proof => proof?,
    };
    let origin = match (&args.leaf_data, proof.leaf_hash_fetched) {
        (Some(_), _) => "given: the hash of --leaf-data".to_string(),
        (None, false) => "given with --leaf-hash".into(),
        (None, true) if proof.leaves == 1 => "the root: the tree has one leaf".into(),
        (None, true) => "fetched privately, in a request of its own".into(),
    };
    println!("leaf {} of {}", proof.leaf, proof.leaves);
    println!("leaf hash {} ({origin})", hex::encode(proof.leaf_hash));
    println!(
        "audit path, leaf to root (fetched with {} queries):",
        proof.queries
    );
    for hash in &proof.path {
        println!("{}", hex::encode(hash));
    }
    let pinned = if args.root.is_some() {
        ", the expected one"
    } else {
        ""
    };
    println!("root {} (verified{pinned})", hex::encode(proof.root));
    Ok(())
}

/// Proves and prints that the tree of `first` leaves with head `first_root` is a prefix of the
/// tree served (and that the tree served has the root `--root`, when given).
fn consistency(client: &mut Client, args: &ProveArgs, first: u64, first_root: &Hash) -> Result<()> {
    let proved = match client.consistency(first, first_root) {
        Err(error @ ClientError::Inconsistent { .. }) => {
            return Err(anyhow::Error::new(error).context(format!(
                "{}: the tree served does not extend the one of {first} leaves with root {}",
                args.db,
                hex::encode(first_root)
            )))
        }
        proved => proved?,
    };
    if let Some(expected) = args.root.filter(|root| *root != proved.root) {
        bail!(ClientError::RootMismatch {
            root: proved.root,
            expected
        });
    }
    println!(
        "tree of {} leaves, root {} (given)",
        proved.first,
        hex::encode(first_root)
    );
    println!(
        "consistency proof to the tree served ({} hashes):",
        proved.proof.len()
    );
    for hash in &proved.proof {
        println!("{}", hex::encode(hash));
    }
    println!(
        "tree of {} leaves, root {} (verified: it extends the first)",
        proved.second,
        hex::encode(proved.root)
    );
    Ok(())
}
