//! The page's client against real databases: every index scheme, keyword PIR and Merkle audit
//! paths, the query and answer carried as bytes exactly as the service carries them.

use obscura_pir::batch::merkle::{leaf_hash, MerkleTree};
use obscura_pir::batch::treepir::TreePirServer;
use obscura_pir::lwe::SetupOptions;
use obscura_server::build::{build, BuildOptions, RecordScheme, Records};
use obscura_server::store::Database;
use obscura_wasm::lookup::{LookupError, Setup};

/// Answers the encoded `query` as the service does: decoded for the database, answered, encoded.
fn serve(database: &Database, query: &[u8]) -> Vec<u8> {
    let decoded = database.decode_query(query).unwrap();
    database.answer(vec![decoded]).unwrap().remove(0)
}

#[test]
fn every_index_scheme_returns_its_records() {
    let records: Vec<Vec<u8>> = (0..300u32)
        .map(|i| format!("record {i}").into_bytes())
        .collect();
    for scheme in RecordScheme::ALL {
        let options = BuildOptions {
            scheme,
            ..BuildOptions::default()
        };
        let database = build(Records::Values(&records), &options, &|_, _| {}).unwrap();
        let setup = Setup::from_bytes(&database.setup_bytes()).unwrap();
        assert_eq!((setup.lookup(), setup.items()), ("index", 300));
        for index in [0, 1, 150, 299] {
            let mut pending = setup.query_index(index).unwrap();
            let answer = serve(&database, &pending.query);
            assert_eq!(answer.len() as u64, pending.answer_bytes);
            let record = pending.decode(&answer).unwrap().unwrap();
            assert_eq!(record, records[index as usize], "{scheme:?} {index}");
            assert!(matches!(pending.decode(&answer), Err(LookupError::Spent)));
        }
        assert!(setup.query_index(300).is_err());
        assert!(matches!(setup.query_key(b"k"), Err(LookupError::Wrong(_))));
    }
}

#[test]
fn keyword_lookups_find_values_and_absent_keys() {
    let pairs: Vec<(Vec<u8>, Vec<u8>)> = (0..500u32)
        .map(|i| {
            (
                format!("+1555{i:04}").into_bytes(),
                format!("caller {i}").into_bytes(),
            )
        })
        .collect();
    let database = build(Records::Pairs(&pairs), &BuildOptions::default(), &|_, _| {}).unwrap();
    let setup = Setup::from_bytes(&database.setup_bytes()).unwrap();
    assert_eq!((setup.lookup(), setup.items()), ("keyword", 500));
    let mut found = setup.query_key(b"+15550042").unwrap();
    let answer = serve(&database, &found.query);
    assert_eq!(found.decode(&answer).unwrap(), Some(b"caller 42".to_vec()));
    let mut absent = setup.query_key(b"+15559999").unwrap();
    let answer = serve(&database, &absent.query);
    assert_eq!(absent.decode(&answer).unwrap(), None);
    assert!(matches!(setup.query_index(0), Err(LookupError::Wrong(_))));
}

#[test]
fn bad_setups_and_answers_are_refused() {
    let records = vec![b"a".to_vec(), b"b".to_vec()];
    let database = build(
        Records::Values(&records),
        &BuildOptions::default(),
        &|_, _| {},
    )
    .unwrap();
    let bytes = database.setup_bytes();
    for cut in [0, 1, 8, bytes.len() / 2, bytes.len() - 1] {
        assert!(Setup::from_bytes(&bytes[..cut]).is_err(), "{cut}");
    }
    // A byte of the hint changed on the way: the hash the server announced catches it.
    let sha256 = hex::encode(obscura_server::store::setup_sha256(&bytes));
    let mut corrupted = bytes.clone();
    let middle = corrupted.len() / 2;
    corrupted[middle] ^= 1;
    let refused = Setup::from_verified(&corrupted, &sha256).err().unwrap();
    assert!(
        refused.to_string().contains("not the expected"),
        "{refused}"
    );
    let setup = Setup::from_verified(&bytes, &format!("\"{}\"", sha256.to_uppercase())).unwrap();
    let mut pending = setup.query_index(1).unwrap();
    let answer = serve(&database, &pending.query);
    assert!(pending.decode(&answer[..answer.len() - 1]).is_err());
}

#[test]
fn merkle_audit_paths_are_fetched_and_verified() {
    for n in [1usize, 2, 37] {
        let leaves: Vec<Vec<u8>> = (0..n).map(|i| format!("cert {i}").into_bytes()).collect();
        let tree = MerkleTree::from_leaves(&leaves);
        let server = TreePirServer::setup(&tree, SetupOptions::default(), &|_, _| {}).unwrap();
        let database = Database::from(server);
        let setup = Setup::from_bytes(&database.setup_bytes()).unwrap();
        assert_eq!((setup.lookup(), setup.items()), ("merkle", n as u64));
        assert_eq!(setup.root(), Some(tree.root()));
        for leaf in [0, n as u64 / 2, n as u64 - 1] {
            // A page that knows only the index fetches the leaf's hash first.
            let mut hash_request = setup.query_leaf_hash(leaf).unwrap();
            let answer = serve(&database, &hash_request.query);
            let hash = hash_request.decode(&answer).unwrap().unwrap();
            assert_eq!(hash, leaf_hash(&leaves[leaf as usize]));
            let mut path_request = setup
                .query_audit_path(leaf, hash.try_into().unwrap())
                .unwrap();
            let answer = serve(&database, &path_request.query);
            let path = path_request.decode(&answer).unwrap().unwrap();
            assert_eq!(path, tree.audit_path(leaf).unwrap().concat(), "{n} {leaf}");
        }
        // The path of a leaf under another leaf's hash does not verify.
        let mut wrong = setup.query_audit_path(0, leaf_hash(b"not a leaf")).unwrap();
        let answer = serve(&database, &wrong.query);
        assert!(wrong.decode(&answer).is_err());
        assert!(setup.query_leaf_hash(n as u64).is_err());
        assert!(matches!(setup.query_index(0), Err(LookupError::Wrong(_))));
    }
}
