//! The session against real databases of every scheme, its requests and replies carried as
//! bytes exactly as the service carries them: records, values, absent keys, Merkle audit
//! paths (with the leaf hash given or fetched), and refusals of wrong lookups and bad replies.

use obscura_client::setup::SetupPolicy;
use obscura_client::{Ask, ClientError, Outcome, Session, Step};
use obscura_pir::batch::merkle::{leaf_hash, MerkleTree};
use obscura_pir::{Lookup, PirError};
use obscura_registry::{setup_sha256, Database, Registry};
use obscura_store::build::{build, BuildOptions, Records};

/// The session of `database`, from its encoded setup.
fn session(database: &Database) -> Session {
    let setup = database.setup_bytes();
    let policy = SetupPolicy::default();
    let registry = Registry::default();
    Session::new(
        "db",
        &setup,
        setup_sha256(&setup),
        false,
        &policy,
        &registry,
    )
    .unwrap()
}

/// Answers the encoded `query` as the service does: decoded for the database, answered, encoded.
fn serve(database: &Database, query: &[u8]) -> Vec<u8> {
    let decoded = database.decode_query(query).unwrap();
    database.answer(vec![decoded]).unwrap().remove(0)
}

/// Runs the exchange of `ask` against `database`: the outcome and the requests it took.
fn fetch(
    session: &mut Session,
    database: &Database,
    ask: Ask,
) -> Result<(Outcome, usize), ClientError> {
    let (mut exchange, mut request) = session.begin(ask)?;
    loop {
        assert_eq!(request.route, session.lookup().route());
        let answer = serve(database, &request.body);
        assert_eq!(answer.len() as u64, request.answer_bytes);
        match session.receive(&mut exchange, Ok(&answer))? {
            Step::Send(next) => request = next,
            Step::Done(outcome) => return Ok((outcome, exchange.requests())),
            Step::Refresh => panic!("a database in memory never changes"),
        }
    }
}

/// Whether `result` refuses a lookup the database does not serve.
fn wrong_lookup<T: std::fmt::Debug>(result: Result<T, ClientError>) -> bool {
    matches!(
        result,
        Err(ClientError::Lookup {
            error: PirError::WrongLookup { .. },
            ..
        })
    )
}

#[test]
fn every_index_scheme_returns_its_records_from_one_session() {
    let records: Vec<Vec<u8>> = (0..300u32)
        .map(|i| format!("record {i}").into_bytes())
        .collect();
    // The built-in index schemes (a scheme registered for tests may take fixed-size records
    // only).
    for name in ["index", "double", "ypir", "ypir-sp"] {
        let scheme = obscura_registry::builder(name).unwrap();
        let options = BuildOptions {
            scheme,
            ..BuildOptions::default()
        };
        let database = build(Records::values(&records), &options, &|_, _| {}).unwrap();
        let mut session = session(&database);
        assert_eq!(session.lookup(), Lookup::Index);
        assert_eq!(session.listing().items, 300);
        for index in [0, 1, 150, 299, 1] {
            let (outcome, requests) = fetch(&mut session, &database, Ask::Record(index)).unwrap();
            assert_eq!(requests, 1);
            let expected = Outcome::Record(records[index as usize].clone());
            assert_eq!(outcome, expected, "{scheme:?} {index}");
        }
        let out_of_range = fetch(&mut session, &database, Ask::Record(300));
        assert!(
            matches!(out_of_range, Err(ClientError::Lookup { .. })),
            "{out_of_range:?}"
        );
        assert!(wrong_lookup(fetch(
            &mut session,
            &database,
            Ask::Value(b"k".to_vec())
        )));
    }
}

#[test]
fn keyword_lookups_find_values_and_absent_keys() {
    let pairs: Vec<(Vec<u8>, Vec<u8>)> = (0..500u32)
        .map(|i| {
            let key = format!("+1555{i:04}").into_bytes();
            (key, format!("caller {i}").into_bytes())
        })
        .collect();
    let database = build(Records::Pairs(&pairs), &BuildOptions::default(), &|_, _| {}).unwrap();
    let mut session = session(&database);
    assert_eq!(session.lookup(), Lookup::Key);
    let found = fetch(&mut session, &database, Ask::Value(b"+15550042".to_vec()));
    assert_eq!(
        found.unwrap().0,
        Outcome::Value(Some(b"caller 42".to_vec()))
    );
    let absent = fetch(&mut session, &database, Ask::Value(b"+15559999".to_vec()));
    assert_eq!(absent.unwrap().0, Outcome::Value(None));
    assert!(wrong_lookup(fetch(&mut session, &database, Ask::Record(0))));
}

#[test]
fn bad_answers_and_oversized_queries_are_refused() {
    let records = vec![b"a".to_vec(), b"b".to_vec()];
    let database = build(
        Records::values(&records),
        &BuildOptions::default(),
        &|_, _| {},
    )
    .unwrap();
    let mut session = session(&database);
    let (mut exchange, request) = session.begin(Ask::Record(1)).unwrap();
    let answer = serve(&database, &request.body);
    let cut = session.receive(&mut exchange, Ok(&answer[..answer.len() - 1]));
    assert!(matches!(cut, Err(ClientError::Pir(_))), "{cut:?}");
    // A setup whose queries are larger than the client makes is refused before any query.
    let setup = database.setup_bytes();
    let query_bytes = session.listing().query_bytes;
    let policy = |max_query_bytes| SetupPolicy {
        max_query_bytes,
        ..SetupPolicy::default()
    };
    let sha256 = setup_sha256(&setup);
    let registry = Registry::default();
    assert!(Session::new("db", &setup, sha256, false, &policy(query_bytes), &registry).is_ok());
    let refused = Session::new(
        "db",
        &setup,
        sha256,
        false,
        &policy(query_bytes - 1),
        &registry,
    )
    .err()
    .unwrap()
    .to_string();
    assert!(
        refused.contains(&format!("queries of {query_bytes}")),
        "{refused}"
    );
    assert!(refused.contains("--max-query-bytes"), "{refused}");
    for cut in [0, 1, 8, setup.len() / 2, setup.len() - 1] {
        let refused = Session::new(
            "db",
            &setup[..cut],
            sha256,
            false,
            &policy(u64::MAX),
            &registry,
        );
        assert!(refused.is_err(), "{cut}");
    }
}

#[test]
fn a_stale_setup_asks_for_one_refresh_then_the_lookup_runs_again() {
    let records: Vec<Vec<u8>> = (0..10u32).map(|i| vec![i as u8; 4]).collect();
    let database = build(
        Records::values(&records),
        &BuildOptions::default(),
        &|_, _| {},
    )
    .unwrap();
    let mut session = session(&database);
    let (mut exchange, _) = session.begin(Ask::Record(3)).unwrap();
    let stale = || ClientError::StaleSetup {
        url: "u".into(),
        message: "replaced".into(),
    };
    let step = session.receive(&mut exchange, Err(stale())).unwrap();
    assert!(matches!(step, Step::Refresh));
    let request = session.restart(&mut exchange).unwrap();
    let answer = serve(&database, &request.body);
    let step = session.receive(&mut exchange, Ok(&answer)).unwrap();
    assert!(matches!(step, Step::Done(Outcome::Record(ref r)) if r == &records[3]));
    // A second 409 in the same lookup is an error, not another refresh.
    let (mut exchange, _) = session.begin(Ask::Record(3)).unwrap();
    assert!(matches!(
        session.receive(&mut exchange, Err(stale())),
        Ok(Step::Refresh)
    ));
    session.restart(&mut exchange).unwrap();
    assert!(matches!(
        session.receive(&mut exchange, Err(stale())),
        Err(ClientError::StaleSetup { .. })
    ));
}

#[test]
fn merkle_audit_paths_are_fetched_and_verified() {
    for n in [1usize, 2, 37] {
        let leaves: Vec<Vec<u8>> = (0..n).map(|i| format!("cert {i}").into_bytes()).collect();
        let tree = MerkleTree::from_leaves(&leaves);
        let slices: Vec<&[u8]> = leaves.iter().map(Vec::as_slice).collect();
        let database = build(
            Records::Leaves(&slices),
            &BuildOptions::default(),
            &|_, _| {},
        )
        .unwrap();
        let mut session = session(&database);
        assert_eq!(session.lookup(), Lookup::AuditPath);
        assert_eq!(session.listing().root, Some(tree.root()));
        for leaf in [0, n as u64 / 2, n as u64 - 1] {
            let expected = tree.audit_path(leaf).unwrap();
            // Knowing only the index, the session fetches the leaf's hash first.
            let ask = Ask::AuditPath {
                leaf,
                leaf_hash: None,
                root: Some(tree.root()),
            };
            let (outcome, requests) = fetch(&mut session, &database, ask).unwrap();
            let Outcome::AuditPath(path) = outcome else {
                panic!("{outcome:?}")
            };
            assert_eq!((requests, path.leaf_hash_fetched), (2, true));
            assert_eq!(path.leaf_hash, leaf_hash(&leaves[leaf as usize]));
            assert_eq!(path.path, expected, "{n} {leaf}");
            // With the hash given, one request.
            let ask = Ask::AuditPath {
                leaf,
                leaf_hash: Some(path.leaf_hash),
                root: None,
            };
            let (outcome, requests) = fetch(&mut session, &database, ask).unwrap();
            assert_eq!(requests, 1);
            assert!(matches!(outcome, Outcome::AuditPath(p) if p.path == expected));
        }
        // The path of a leaf under another leaf's hash does not verify.
        let ask = Ask::AuditPath {
            leaf: 0,
            leaf_hash: Some(leaf_hash(b"not a leaf")),
            root: None,
        };
        let refused = fetch(&mut session, &database, ask);
        assert!(
            matches!(refused, Err(ClientError::Pir(PirError::InvalidProof(_)))),
            "{refused:?}"
        );
        let past = Ask::AuditPath {
            leaf: n as u64,
            leaf_hash: None,
            root: None,
        };
        assert!(matches!(
            fetch(&mut session, &database, past),
            Err(ClientError::LeafOutOfRange { .. })
        ));
        let other_root = Ask::AuditPath {
            leaf: 0,
            leaf_hash: None,
            root: Some([9; 32]),
        };
        assert!(matches!(
            fetch(&mut session, &database, other_root),
            Err(ClientError::RootMismatch { .. })
        ));
        assert!(wrong_lookup(fetch(&mut session, &database, Ask::Record(0))));
    }
}
