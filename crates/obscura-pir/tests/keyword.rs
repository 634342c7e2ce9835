//! Keyword PIR end to end: present keys return their values, absent keys are reported absent,
//! and a corrupted answer never yields a wrong value.

use std::sync::OnceLock;

use obscura_pir::batch::shards::Shards;
use obscura_pir::keyword::fuse::Arity;
use obscura_pir::keyword::{KeywordClient, KeywordOptions, KeywordServer, KeywordSetup};
use obscura_pir::lwe::Answer;
use obscura_pir::wire::{self, COMPACT_HEADER_BYTES};
use obscura_pir::{Encode, Message, PirClient, PirError, PirServer};
use proptest::prelude::*;
use rayon::prelude::*;

/// Key-value pairs.
type Pairs = Vec<(Vec<u8>, Vec<u8>)>;

fn pairs(n: usize) -> Pairs {
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
            let server = KeywordServer::from_pairs(&pairs, options, &|_, _| {}).unwrap();
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
        let server =
            KeywordServer::from_pairs(&pairs, KeywordOptions::default(), &|_, _| {}).unwrap();
        let setup = KeywordSetup::from_bytes(&server.public_setup().to_bytes()).unwrap();
        assert_eq!(setup.main().index().geometry().record_bytes(), row_bytes);
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
        let server = KeywordServer::from_pairs(&pairs, options, &|_, _| {}).unwrap();
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
    let setup =
        KeywordServer::from_pairs(&pairs(5), KeywordOptions::default(), &|_, _| {}).unwrap();
    let bytes = setup.public_setup().to_bytes();
    // The main table's key count follows the envelope header, the setup's key count, version
    // and table count, then the table's arity byte and 32-byte seed.
    let keys_at = obscura_pir::wire::HEADER_BYTES + 8 + 8 + 1 + 1 + 32;
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
    match KeywordServer::from_pairs(&pairs, KeywordOptions::default(), &|_, _| {}) {
        Err(PirError::InvalidParameters(message)) => {
            assert!(message.contains("\"alice\""), "{message}")
        }
        other => panic!(
            "expected a duplicate-key error, got {:?}",
            other.map(|_| ())
        ),
    }
    let empty: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
    assert!(KeywordServer::from_pairs(&empty, KeywordOptions::default(), &|_, _| {}).is_err());
}

/// A keyword database with values of many lengths (empty ones included), built once.
fn corruption_world() -> &'static (Pairs, KeywordServer) {
    static WORLD: OnceLock<(Pairs, KeywordServer)> = OnceLock::new();
    WORLD.get_or_init(|| {
        let pairs = pairs(60);
        let server =
            KeywordServer::from_pairs(&pairs, KeywordOptions::default(), &|_, _| {}).unwrap();
        (pairs, server)
    })
}

/// Bytes of a one-table answer's framing: the part count and the part's length.
const FRAME_BYTES: usize = 8;

/// Bytes of a one-table answer before its entries: the framing and the part's envelope.
const ENVELOPE_BYTES: usize = FRAME_BYTES + COMPACT_HEADER_BYTES;

/// Looks `key` up with bit `bit` of the answer's encoding flipped on the way (no flip when
/// `bit` is `None`).
fn lookup_with_flip(
    server: &KeywordServer,
    key: &[u8],
    bit: Option<usize>,
) -> Result<Option<Vec<u8>>, PirError> {
    let mut client = KeywordClient::new(server.public_setup().clone());
    let (query, state) = client.query(key).unwrap();
    let mut bytes = server.answer(&query).unwrap().to_bytes();
    if let Some(bit) = bit {
        bytes[bit / 8] ^= 1 << (bit % 8);
    }
    Shards::<Answer>::from_bytes(&bytes, client.setup())
        .and_then(|answer| client.decode(state, &answer))
}

/// The answer entries (16 bits each, after the envelope) whose digit lies wholly inside the row:
/// flipping such an entry's top bit moves the digit by p/2, so the decoded row changes.
fn entries_inside_the_row(setup: &KeywordSetup) -> usize {
    let index = setup.main().index();
    let row_bits = 8 * index.geometry().record_bytes() as usize;
    row_bits / usize::from(index.params().log_p)
}

/// Flipping the top bit of any answer entry inside the row (the check's, the length's or the
/// value's digits) makes the present key read as absent: the check covers the whole row.
#[test]
fn a_changed_row_digit_reads_as_absent() {
    let (pairs, server) = corruption_world();
    let (key, value) = pairs.iter().max_by_key(|(_, v)| v.len()).unwrap();
    assert_eq!(
        lookup_with_flip(server, key, None).unwrap().as_ref(),
        Some(value)
    );
    assert!(value.len() > 32, "{} value bytes", value.len());
    for entry in 0..entries_inside_the_row(server.public_setup()) {
        let top_bit = 8 * (ENVELOPE_BYTES + 2 * entry + 1) + 7;
        let decoded = lookup_with_flip(server, key, Some(top_bit));
        assert!(matches!(decoded, Ok(None)), "entry {entry}: {decoded:?}");
    }
}

/// A keyword setup of another format version is refused by name, not read with the wrong row
/// check (which would make every key read as absent).
#[test]
fn a_setup_of_another_format_version_is_refused() {
    let (_, server) = corruption_world();
    let mut bytes = server.public_setup().to_bytes();
    let old = wire::VERSION - 1;
    bytes[4..6].copy_from_slice(&old.to_le_bytes());
    let message = KeywordSetup::from_bytes(&bytes).unwrap_err().to_string();
    let expected = format!(
        "format version {old} is not supported (this build reads version {})",
        wire::VERSION
    );
    assert!(message.contains(&expected), "{message}");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Any one bit flipped in an answer gives the right value, "absent" or an error, never a
    /// wrong value, for present and absent keys; a flip in the envelope is an error and a flip
    /// of an entry's top bit inside the row reads as absent.
    #[test]
    fn a_flipped_answer_bit_never_yields_a_wrong_value(key in 0usize..=60, bit in any::<usize>()) {
        let (pairs, server) = corruption_world();
        let (key, expected) = pairs
            .get(key)
            .map_or((&b"absent"[..], None), |(k, v)| (&k[..], Some(v)));
        let len = FRAME_BYTES + Answer::encoded_len(server.public_setup().main().index()) as usize;
        let bit = bit % (8 * len);
        let decoded = lookup_with_flip(server, key, Some(bit));
        if let Ok(Some(value)) = &decoded {
            prop_assert_eq!(Some(value), expected, "bit {}", bit);
        }
        let byte = bit / 8;
        if byte < ENVELOPE_BYTES {
            prop_assert!(decoded.is_err(), "bit {}: {:?}", bit, decoded);
        } else {
            let at = byte - ENVELOPE_BYTES;
            let (entry, top) = (at / 2, at % 2 == 1 && bit % 8 == 7);
            if top && entry < entries_inside_the_row(server.public_setup()) {
                prop_assert!(matches!(decoded, Ok(None)), "bit {}: {:?}", bit, decoded);
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn setup_decoder_never_panics(cut in 0usize..10_000, flip in 0usize..200, value in any::<u8>()) {
        static BYTES: std::sync::OnceLock<Vec<u8>> = std::sync::OnceLock::new();
        let bytes = BYTES.get_or_init(|| {
            KeywordServer::from_pairs(&pairs(5), KeywordOptions::default(), &|_, _| {}).unwrap().public_setup().to_bytes()
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
