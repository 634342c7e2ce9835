//! The client's vectors: for one database of every kind, the query that a fixed secret stream
//! makes and the value its answer decodes to, as SHA-256s and bytes in `vectors/queries.json`.
//! This test makes them with the native build of the page's client and checks them against the
//! file; `tests/node/vectors.test.mjs` makes them again with the WebAssembly build, fed the
//! same stream through `crypto.getRandomValues`, and checks them against the same file. So the
//! two builds agree byte for byte. The databases' setups and answers are written under
//! `target/tmp/wasm-vectors/` for the Node.js test. `OBSCURA_WRITE_VECTORS=1` rewrites the file
//! (after a deliberate change of a wire format or of the client's arithmetic).

use std::fs;
use std::path::{Path, PathBuf};

use obscura_client::setup::SetupPolicy;
use obscura_client::{Ask, Exchange, Outcome, Request, Session, Step};
use obscura_math::sample::test_secrets;
use obscura_pir::batch::merkle::{leaf_hash, MerkleTree};
use obscura_pir::lwe::{EngineOptions, Layout};
use obscura_registry::Registry;
use obscura_store::build::{build, BuildOptions, Records};
use obscura_store::store::Database;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

/// What a vector asks for.
enum Target {
    Index(u64),
    Key(&'static str),
    LeafHash(u64),
    AuditPath(u64, [u8; 32]),
}

impl Target {
    /// What a client asks for this target.
    fn ask(&self) -> Ask {
        match *self {
            Self::Index(index) => Ask::Record(index),
            Self::Key(key) => Ask::Value(key.as_bytes().to_vec()),
            Self::LeafHash(leaf) => Ask::AuditPath {
                leaf,
                leaf_hash: None,
                root: None,
            },
            Self::AuditPath(leaf, hash) => Ask::AuditPath {
                leaf,
                leaf_hash: Some(hash),
                root: None,
            },
        }
    }

    /// What the answer to the first request decoded to: the step after it, and for a leaf
    /// hash, the hash the exchange learnt.
    fn value(&self, step: Step, exchange: &Exchange) -> Option<Vec<u8>> {
        match (self, step) {
            (Self::LeafHash(_), Step::Send(_)) => exchange.leaf_hash().map(|h| h.to_vec()),
            (_, Step::Done(Outcome::Record(record))) => Some(record),
            (_, Step::Done(Outcome::Value(value))) => value,
            (_, Step::Done(Outcome::AuditPath(path))) => Some(path.path.concat()),
            (_, step) => panic!("unexpected step {step:?}"),
        }
    }

    /// What the answer must decode to: the plain data.
    fn expected(&self) -> Option<Vec<u8>> {
        match *self {
            Self::Index(index) => Some(records()[index as usize].clone()),
            Self::Key(key) => key
                .strip_prefix("+1555")
                .and_then(|n| n.parse::<u32>().ok())
                .filter(|&n| n < 500)
                .map(|n| format!("caller {n}").into_bytes()),
            Self::LeafHash(leaf) => Some(leaf_hash(&leaves()[leaf as usize]).to_vec()),
            Self::AuditPath(leaf, _) => {
                let tree = MerkleTree::from_leaves(&leaves());
                Some(tree.audit_path(leaf).unwrap().concat())
            }
        }
    }

    fn describe(&self) -> Value {
        match self {
            Self::Index(index) => json!({ "index": index }),
            Self::Key(key) => json!({ "key": key }),
            Self::LeafHash(leaf) => json!({ "leafHash": leaf }),
            Self::AuditPath(leaf, hash) => {
                json!({ "auditPath": leaf, "leafHash": hex::encode(hash) })
            }
        }
    }
}

/// The stream key of a vector's secrets: its number in every byte.
fn secret_key(number: u8) -> [u8; 16] {
    [number; 16]
}

fn records() -> Vec<Vec<u8>> {
    (0..300u32)
        .map(|i| format!("record {i}: {}", "x".repeat(i as usize % 40)).into_bytes())
        .collect()
}

fn index_database(scheme: &str, layout: Layout) -> Database {
    let options = BuildOptions {
        scheme: obscura_registry::builder(scheme).unwrap(),
        engine: EngineOptions {
            layout,
            ..EngineOptions::default()
        },
        ..BuildOptions::default()
    };
    build(Records::values(&records()), &options, &|_, _| {}).unwrap()
}

fn keyword_database() -> Database {
    let pairs: Vec<(Vec<u8>, Vec<u8>)> = (0..500u32)
        .map(|i| (format!("+1555{i:04}").into(), format!("caller {i}").into()))
        .collect();
    build(Records::Pairs(&pairs), &BuildOptions::default(), &|_, _| {}).unwrap()
}

fn leaves() -> Vec<Vec<u8>> {
    (0..37).map(|i| format!("cert {i}").into_bytes()).collect()
}

fn tree_database() -> Database {
    let leaves = leaves();
    let slices: Vec<&[u8]> = leaves.iter().map(Vec::as_slice).collect();
    build(
        Records::Leaves(&slices),
        &BuildOptions::default(),
        &|_, _| {},
    )
    .unwrap()
}

/// A database (its name and how it is built) and the vectors made of it.
type Case = (&'static str, fn() -> Database, Vec<Target>);

/// Every case.
fn cases() -> Vec<Case> {
    vec![
        (
            "simplepir",
            || index_database("index", Layout::Square),
            vec![Target::Index(123)],
        ),
        (
            "frodopir",
            || index_database("index", Layout::OnePerColumn),
            vec![Target::Index(7)],
        ),
        (
            "doublepir",
            || index_database("double", Layout::Square),
            vec![Target::Index(299)],
        ),
        (
            "ypir",
            || index_database("ypir", Layout::Square),
            vec![Target::Index(0)],
        ),
        (
            "ypir-sp",
            || index_database("ypir-sp", Layout::Square),
            vec![Target::Index(42)],
        ),
        (
            "keyword",
            keyword_database,
            vec![Target::Key("+15550042"), Target::Key("+15559999")],
        ),
        (
            "merkle",
            tree_database,
            vec![
                Target::LeafHash(20),
                Target::AuditPath(20, leaf_hash(&leaves()[20])),
            ],
        ),
    ]
}

fn sha256(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

fn vectors_file() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/vectors/queries.json")
}

#[test]
fn the_native_client_makes_the_recorded_queries_and_values() {
    let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join("wasm-vectors");
    fs::create_dir_all(&out).unwrap();
    // One thread: the secret stream is drawn in the order a browser draws it.
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .unwrap();
    let mut made = Vec::new();
    let mut number = 0u8;
    pool.install(|| {
        for (name, make, targets) in cases() {
            number += 1;
            let database = {
                let _stream = test_secrets::install(secret_key(number)); // its public seeds
                make()
            };
            let setup_bytes = database.setup_bytes();
            fs::write(out.join(format!("{name}.setup")), &setup_bytes).unwrap();
            for (i, target) in targets.iter().enumerate() {
                number += 1;
                // The session is made in the stream too, as a page makes it.
                let (mut session, mut exchange, request): (Session, Exchange, Request) = {
                    let _stream = test_secrets::install(secret_key(number));
                    let mut session = Session::new(
                        name,
                        &setup_bytes,
                        obscura_registry::setup_sha256(&setup_bytes),
                        false,
                        &SetupPolicy::default(),
                        &Registry::default(),
                    )
                    .unwrap();
                    let (exchange, request) = session.begin(target.ask()).unwrap();
                    (session, exchange, request)
                };
                let query = database.decode_query(&request.body).unwrap();
                let answer = database.answer(vec![query]).unwrap().remove(0);
                fs::write(out.join(format!("{name}-{i}.answer")), &answer).unwrap();
                let step = session.receive(&mut exchange, Ok(&answer)).unwrap();
                let value = target.value(step, &exchange);
                assert_eq!(value, target.expected(), "{name} {i}");
                made.push(json!({
                    "database": name,
                    "setupSha256": sha256(&setup_bytes),
                    "secretKey": hex::encode(secret_key(number)),
                    "target": target.describe(),
                    "queryBytes": request.body.len(),
                    "querySha256": sha256(&request.body),
                    "answer": format!("{name}-{i}.answer"),
                    "answerSha256": sha256(&answer),
                    "value": value.map(hex::encode),
                }));
            }
        }
    });
    let made = serde_json::to_string_pretty(&made).unwrap() + "\n";
    if std::env::var_os("OBSCURA_WRITE_VECTORS").is_some() {
        fs::write(vectors_file(), &made).unwrap();
    }
    let recorded = fs::read_to_string(vectors_file()).unwrap();
    assert_eq!(
        made, recorded,
        "the native client's queries or values differ from tests/vectors/queries.json"
    );
}
