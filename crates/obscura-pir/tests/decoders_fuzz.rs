//! Decoders never panic on random, truncated or corrupted bytes, and refuse truncations.

use obscura_pir::lwe::{Answer, Client, EngineOptions, PublicSetup, Query, Server};
use obscura_pir::wire::{COMPACT_HEADER_BYTES, HEADER_BYTES};
use obscura_pir::{PirClient, PirServer};
use proptest::prelude::*;
use std::sync::OnceLock;

struct Fixture {
    server: Server,
    setup_bytes: Vec<u8>,
    query_bytes: Vec<u8>,
    answer_bytes: Vec<u8>,
}

fn fixture() -> &'static Fixture {
    static FIXTURE: OnceLock<Fixture> = OnceLock::new();
    FIXTURE.get_or_init(|| {
        let data: Vec<u8> = (0..300u32).map(|i| i as u8).collect();
        let server = Server::from_records(&data, 7, EngineOptions::default(), &|_, _| {}).unwrap();
        let mut client = Client::new(server.public_setup().clone());
        let (query, _) = client.query(1).unwrap();
        let answer = server.answer(&query).unwrap();
        Fixture {
            setup_bytes: server.public_setup().to_bytes(),
            query_bytes: query.to_bytes(),
            answer_bytes: answer.to_bytes(),
            server,
        }
    })
}

fn decode_all(bytes: &[u8]) -> [bool; 3] {
    let setup = fixture().server.public_setup();
    [
        PublicSetup::from_bytes(bytes).is_ok(),
        Query::from_bytes(bytes, setup).is_ok(),
        Answer::from_bytes(bytes, setup).is_ok(),
    ]
}

proptest! {
    #[test]
    fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
        decode_all(&bytes);
    }

    #[test]
    fn random_bodies_behind_a_valid_header_never_panic(
        which in 0usize..3,
        body in proptest::collection::vec(any::<u8>(), 0..512),
    ) {
        let f = fixture();
        let source = [&f.setup_bytes, &f.query_bytes, &f.answer_bytes][which];
        let header = [HEADER_BYTES, COMPACT_HEADER_BYTES, COMPACT_HEADER_BYTES][which];
        let mut bytes = source[..header].to_vec();
        bytes.extend_from_slice(&body);
        decode_all(&bytes);
    }

    #[test]
    fn truncations_are_refused(which in 0usize..3, cut in 0usize..100_000) {
        let f = fixture();
        let source = [&f.setup_bytes, &f.query_bytes, &f.answer_bytes][which];
        let cut = cut % source.len();
        prop_assert_eq!(decode_all(&source[..cut]), [false; 3]);
    }

    #[test]
    fn corrupted_bytes_never_panic(which in 0usize..3, position in 0usize..120, value in any::<u8>()) {
        let f = fixture();
        let mut bytes = [&f.setup_bytes, &f.query_bytes, &f.answer_bytes][which].clone();
        let position = position.min(bytes.len() - 1);
        bytes[position] = value;
        decode_all(&bytes);
    }
}

#[test]
fn valid_messages_decode_only_as_their_kind() {
    let f = fixture();
    assert_eq!(decode_all(&f.setup_bytes), [true, false, false]);
    assert_eq!(decode_all(&f.query_bytes), [false, true, false]);
    assert_eq!(decode_all(&f.answer_bytes), [false, false, true]);
}
