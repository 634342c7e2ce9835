//! Keyword PIR end to end: present keys return their values, absent keys are reported absent.

use obscura_pir::keyword::fuse::Arity;
use obscura_pir::keyword::{KeywordClient, KeywordOptions, KeywordServer, KeywordSetup};
use obscura_pir::{PirError, PirServer};
use proptest::prelude::*;
use rayon::prelude::*;

fn pairs(n: usize) -> Vec<(Vec<u8>, Vec<u8>)> {
    (0..n)
        .map(|i| {
            let key = format!("user-{i}@example.org").into_bytes();
            let value = format!("value {i} ").repeat(i % 7).into_bytes(); // some empty
            (key, value)
        })
        .collect()
}

fn lookup(server: &KeywordServer, client: &mut KeywordClient, key: &[u8]) -> Option<Vec<u8>> {
    let (query, state) = client.query(key).unwrap();
    let answer = server.answer(&query).unwrap();
    client.decode(state, &answer).unwrap()
}

#[test]
fn every_present_key_returns_its_value() {
    for arity in [Arity::Three, Arity::Four] {
        for n in [1usize, 2, 3, 50, 2000] {
            let pairs = pairs(n);
            let options = KeywordOptions {
                arity: Some(arity),
                ..KeywordOptions::default()
            };
            let server = KeywordServer::setup(&pairs, options, &|_, _| {}).unwrap();
            let setup = KeywordSetup::from_bytes(&server.public_setup().to_bytes()).unwrap();
            assert_eq!(&setup, server.public_setup());
            let mut client = KeywordClient::new(setup);
            client.preprocess(n.min(64)).unwrap();
            for (key, value) in &pairs {
                assert_eq!(
                    lookup(&server, &mut client, key).as_ref(),
                    Some(value),
                    "{arity:?} n = {n}"
                );
            }
            assert_eq!(lookup(&server, &mut client, b"absent"), None);
        }
    }
}

/// Rows hold the 16-byte check, then a length only when values differ in length, in the fewest
/// bytes that hold the longest one; every shape retrieves every value.
#[test]
fn rows_carry_a_length_only_when_values_differ() {
    let same: Vec<_> = (0..40u8).map(|i| (vec![i], vec![i; 24])).collect();
    let mut mixed: Vec<_> = (0..40u8)
        .map(|i| (vec![i], vec![i; usize::from(i)]))
        .collect();
    mixed.push((b"long".to_vec(), vec![7; 300]));
    let mut trailing_zeros = same.clone();
    trailing_zeros[3].1 = vec![0; 20];
    for (pairs, row_bytes) in [
        (same, 16 + 24),
        (mixed, 16 + 2 + 300),
        (trailing_zeros, 16 + 1 + 24),
    ] {
        let server = KeywordServer::setup(&pairs, KeywordOptions::default(), &|_, _| {}).unwrap();
        let setup = KeywordSetup::from_bytes(&server.public_setup().to_bytes()).unwrap();
        assert_eq!(setup.lwe().geometry().record_bytes(), row_bytes);
        let mut client = KeywordClient::new(setup);
        for (key, value) in &pairs {
            assert_eq!(lookup(&server, &mut client, key).as_ref(), Some(value));
        }
        assert_eq!(lookup(&server, &mut client, b"absent"), None);
    }
}

/// 10^5 random absent keys per arity are all reported absent (spread over the threads).
#[test]
fn absent_keys_are_reported_absent() {
    let pairs = pairs(100);
    for arity in [Arity::Three, Arity::Four] {
        let options = KeywordOptions {
            arity: Some(arity),
            ..KeywordOptions::default()
        };
        let server = KeywordServer::setup(&pairs, options, &|_, _| {}).unwrap();
        let setup = server.public_setup().clone();
        let accepted: usize = (0..100u64)
            .into_par_iter()
            .map(|chunk| {
                let mut client = KeywordClient::new(setup.clone());
                client.preprocess(1000).unwrap();
                (0..1000u64)
                    .filter(|i| {
                        let key = format!("absent-{arity:?}-{chunk}-{i}");
                        lookup(&server, &mut client, key.as_bytes()).is_some()
                    })
                    .count()
            })
            .sum();
        assert_eq!(accepted, 0, "{arity:?}");
    }
}

/// A setup that claims an absurd number of keys is refused, whatever the claim: the filter
/// shape is never computed from an unchecked count.
#[test]
fn huge_key_counts_are_refused() {
    let setup = KeywordServer::setup(&pairs(5), KeywordOptions::default(), &|_, _| {}).unwrap();
    let bytes = setup.public_setup().to_bytes();
    // The key count follows the envelope header, the arity byte and the 32-byte seed.
    let keys_at = obscura_pir::wire::HEADER_BYTES + 1 + 32;
    assert_eq!(bytes[keys_at..keys_at + 8], 5u64.to_le_bytes());
    for claim in [u64::MAX, 0xe4 << 56, (1 << 32) + 1, 1 << 32, 1 << 20] {
        let mut corrupted = bytes.clone();
        corrupted[keys_at..keys_at + 8].copy_from_slice(&claim.to_le_bytes());
        assert!(
            matches!(
                KeywordSetup::from_bytes(&corrupted),
                Err(PirError::Malformed { .. })
            ),
            "{claim} keys"
        );
    }
}

#[test]
fn duplicate_keys_are_refused_by_name() {
    let pairs = vec![
        (b"alice".to_vec(), b"1".to_vec()),
        (b"bob".to_vec(), b"2".to_vec()),
        (b"alice".to_vec(), b"3".to_vec()),
    ];
    match KeywordServer::setup(&pairs, KeywordOptions::default(), &|_, _| {}) {
        Err(PirError::InvalidParameters(message)) => {
            assert!(message.contains("\"alice\""), "{message}")
        }
        other => panic!(
            "expected a duplicate-key error, got {:?}",
            other.map(|_| ())
        ),
    }
    let empty: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
    assert!(KeywordServer::setup(&empty, KeywordOptions::default(), &|_, _| {}).is_err());
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn setup_decoder_never_panics(cut in 0usize..10_000, flip in 0usize..200, value in any::<u8>()) {
        static BYTES: std::sync::OnceLock<Vec<u8>> = std::sync::OnceLock::new();
        let bytes = BYTES.get_or_init(|| {
            KeywordServer::setup(&pairs(5), KeywordOptions::default(), &|_, _| {}).unwrap().public_setup().to_bytes()
        });
        let cut = cut % bytes.len();
        prop_assert!(KeywordSetup::from_bytes(&bytes[..cut]).is_err());
        let mut corrupted = bytes.clone();
        corrupted[flip % bytes.len()] = value;
        let _ = KeywordSetup::from_bytes(&corrupted);
    }

    #[test]
    fn random_setup_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..400)) {
        let _ = KeywordSetup::from_bytes(&bytes);
    }
}
