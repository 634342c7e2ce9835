//! Messages and states are bound to their setup: mixing setups is a typed error, never a wrong
//! record.

use obscura_math::matrix::PlaintextMatrix;
use obscura_pir::lwe::{Answer, Client, EngineOptions, PublicSetup, Query, Server};
use obscura_pir::{PirClient, PirError, PirServer};

fn two_servers() -> (Server, Server, Vec<u8>) {
    let data: Vec<u8> = (0..4000u32).map(|i| (i % 251) as u8).collect();
    let a = Server::from_records(&data, 40, EngineOptions::default(), &|_, _| {}).unwrap();
    let b = Server::from_records(&data, 40, EngineOptions::default(), &|_, _| {}).unwrap();
    (a, b, data)
}

#[test]
fn query_for_another_setup_is_refused() {
    let (a, b, _) = two_servers();
    assert_ne!(a.public_setup().digest(), b.public_setup().digest());
    let mut client = Client::new(a.public_setup().clone());
    let (query, _) = client.query(3).unwrap();
    assert!(matches!(
        b.answer(&query),
        Err(PirError::SetupMismatch { .. })
    ));
    let bytes = query.to_bytes();
    assert!(matches!(
        Query::from_bytes(&bytes, b.public_setup()),
        Err(PirError::SetupMismatch { .. })
    ));
    assert_eq!(Query::from_bytes(&bytes, a.public_setup()).unwrap(), query);
}

#[test]
fn answer_from_another_setup_is_refused() {
    let (a, b, data) = two_servers();
    let mut client_a = Client::new(a.public_setup().clone());
    let mut client_b = Client::new(b.public_setup().clone());
    let (query_b, _) = client_b.query(3).unwrap();
    let answer_b = b.answer(&query_b).unwrap();
    let (_, state_a) = client_a.query(3).unwrap();
    assert!(matches!(
        client_a.decode(state_a, &answer_b),
        Err(PirError::SetupMismatch { .. })
    ));
    let bytes = answer_b.to_bytes();
    assert!(matches!(
        Answer::from_bytes(&bytes, a.public_setup()),
        Err(PirError::SetupMismatch { .. })
    ));
    // A state from one client is refused by a client of another setup.
    let (query_a, state_a) = client_a.query(5).unwrap();
    let answer_a = a.answer(&query_a).unwrap();
    assert!(matches!(
        client_b.decode(state_a, &answer_a),
        Err(PirError::SetupMismatch { .. })
    ));
    // And the right pairing works over encoded bytes.
    let (query_a, state_a) = client_a.query(5).unwrap();
    let query_a = Query::from_bytes(&query_a.to_bytes(), a.public_setup()).unwrap();
    let answer_a =
        Answer::from_bytes(&a.answer(&query_a).unwrap().to_bytes(), a.public_setup()).unwrap();
    assert_eq!(
        client_a.decode(state_a, &answer_a).unwrap(),
        &data[200..240]
    );
}

#[test]
fn public_setup_round_trips_and_verifies_its_digest() {
    let (a, _, _) = two_servers();
    let bytes = a.public_setup().to_bytes();
    let decoded = PublicSetup::from_bytes(&bytes).unwrap();
    assert_eq!(&decoded, a.public_setup());
    // Changing any parameter byte breaks the digest (or the shape checks).
    for position in 40..90 {
        let mut bad = bytes.clone();
        bad[position] ^= 1;
        assert!(
            PublicSetup::from_bytes(&bad).is_err(),
            "flip at byte {position} accepted"
        );
    }
}

/// A setup whose fields are each well formed but do not fit together (a zero records-per-column
/// count) is refused as inconsistent, with the parameter check that failed as its cause.
#[test]
fn a_setup_whose_fields_do_not_fit_keeps_the_reason_as_its_cause() {
    let (a, _, _) = two_servers();
    let mut bytes = a.public_setup().to_bytes();
    // The layer follows the header: four codes, six u64 fields (per_column the fifth) and the
    // 16-byte seed; then the version (u64), the hint's hash, the SHA-256 of each MiB of the
    // hint and the hint.
    let hint = 4 * a.public_setup().hint().as_slice().len();
    let pieces = 32 * hint.div_ceil(1 << 20);
    let layer = bytes.len() - hint - pieces - 32 - 8 - (4 + 6 * 8 + 16);
    let per_column = layer + 4 + 4 * 8;
    bytes[per_column..per_column + 8].copy_from_slice(&0u64.to_le_bytes());
    let error = PublicSetup::from_bytes(&bytes).unwrap_err();
    let PirError::Inconsistent { what, source } = &error else {
        panic!("{error:?}")
    };
    assert_eq!(*what, "public setup");
    assert!(
        matches!(**source, PirError::InvalidParameters(_)),
        "{source:?}"
    );
    assert!(std::error::Error::source(&error).is_some());
}

/// A stored database whose rows are larger than its setup's row norm would decode wrongly: it
/// is refused when the server is assembled.
#[test]
fn a_database_above_the_setup_norm_is_refused() {
    let (a, _, _) = two_servers();
    let database = a.database();
    let (rows, cols) = (database.rows(), database.cols());
    let same = PlaintextMatrix::from_vec(rows, cols, database.as_bytes().to_vec()).unwrap();
    assert!(Server::from_parts(a.public_setup().clone(), same).is_ok());
    let louder = PlaintextMatrix::from_vec(rows, cols, vec![0x80; rows * cols]).unwrap();
    assert!(matches!(
        Server::from_parts(a.public_setup().clone(), louder),
        Err(PirError::InvalidParameters(_))
    ));
}
