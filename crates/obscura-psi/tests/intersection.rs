//! Every protocol, both roles, over the in-memory transport: exactly the plain intersection.

mod common;

use std::time::Duration;

use common::{check, items, options, session, PROTOCOLS};
use obscura_psi::transport::memory;
use obscura_psi::{kkrt, rr22, run, Protocol, Role, Stage};
use proptest::prelude::*;

#[test]
fn empty_sets_give_empty_intersections() {
    let some = items("x", 0..10);
    for protocol in PROTOCOLS {
        for both_learn in [false, true] {
            check(protocol, &[], &some, both_learn);
            check(protocol, &some, &[], both_learn);
            check(protocol, &[], &[], both_learn);
        }
    }
}

#[test]
fn disjoint_full_and_partial_overlaps() {
    for protocol in PROTOCOLS {
        for both_learn in [false, true] {
            check(
                protocol,
                &items("a", 0..300),
                &items("b", 0..300),
                both_learn,
            );
            check(
                protocol,
                &items("a", 0..300),
                &items("a", 0..300),
                both_learn,
            );
            check(
                protocol,
                &items("a", 0..5000),
                &items("a", 4000..9000),
                both_learn,
            );
        }
    }
}

#[test]
fn unequal_sizes() {
    let many = items("a", 0..1000);
    for protocol in PROTOCOLS {
        check(protocol, &items("a", 500..501), &many, true);
        check(protocol, &many, &items("a", 999..1000), true);
        check(protocol, &items("z", 0..1), &many, false);
        check(protocol, &items("a", 0..1), &items("a", 0..1), true);
    }
}

/// Sets of several chunks (4096 items each) against sets of one.
#[test]
fn unequal_chunk_counts() {
    let chunks = items("a", 0..9000);
    for protocol in PROTOCOLS {
        check(protocol, &items("a", 8990..9010), &chunks, true);
        check(protocol, &chunks, &items("a", 4090..4100), true);
    }
}

#[test]
fn duplicates_are_counted_once_and_every_copy_is_reported() {
    let mut client = items("a", 0..50);
    client.extend(items("a", 10..20));
    client.push(b"a3".to_vec());
    let mut server = items("a", 15..100);
    server.extend(items("a", 15..30));
    for protocol in PROTOCOLS {
        let (c, s) = session(protocol, &client, &server, true);
        assert_eq!(c.duplicates_dropped, 11);
        assert_eq!(s.duplicates_dropped, 15);
        let rows = c.intersection.unwrap().rows;
        assert!(rows.contains(&55) && rows.contains(&15) && !rows.contains(&60));
        check(protocol, &client, &server, true);
    }
}

/// Empty and binary items are items like any other.
#[test]
fn arbitrary_bytes_are_items() {
    let client = vec![vec![], vec![0u8; 3], vec![0xff; 1000], b"a".to_vec()];
    let server = vec![vec![0u8; 3], vec![], vec![0u8; 4]];
    for protocol in PROTOCOLS {
        check(protocol, &client, &server, true);
    }
}

/// The progress callback reaches each stage's total: the client's own items (ECDH), cuckoo
/// bins (KKRT) or OKVS words (RR22), then the server's items.
#[test]
fn progress_reaches_the_totals() {
    let client = items("a", 0..5000);
    let server = items("a", 0..7000);
    for protocol in PROTOCOLS {
        let (mut client_link, mut server_link) = memory::pair(Duration::from_secs(30));
        let reports = std::sync::Mutex::new(Vec::new());
        std::thread::scope(|scope| {
            scope.spawn(|| {
                let options = options(protocol, Role::Server, false);
                run(&mut server_link, &server, options, &|_, _, _| {})
            });
            let record = |stage, done, total| reports.lock().unwrap().push((stage, done, total));
            let options = options(protocol, Role::Client, false);
            run(&mut client_link, &client, options, &record).unwrap();
        });
        let reports = reports.into_inner().unwrap();
        let own = match protocol {
            Protocol::Kkrt => u64::from(kkrt::bins(5000).unwrap()),
            Protocol::Rr22 | Protocol::Rr22Malicious => {
                let malicious = protocol == Protocol::Rr22Malicious;
                rr22::message_sizes(5000, 7000, malicious)
                    .unwrap()
                    .store_words as u64
            }
            _ => 5000,
        };
        assert!(reports.contains(&(Stage::OwnItems, own, own)), "{protocol}");
        assert!(
            reports.contains(&(Stage::PeerItems, 7000, 7000)),
            "{protocol}"
        );
        assert!(reports
            .windows(2)
            .all(|w| w[0].0 != w[1].0 || w[0].1 < w[1].1));
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(16))]

    /// Random sets over a small alphabet (so they overlap and repeat) give the plain result.
    #[test]
    fn random_sets_give_the_plain_intersection(
        client in prop::collection::vec(prop::collection::vec(0u8..4, 0..3), 0..40),
        server in prop::collection::vec(prop::collection::vec(0u8..4, 0..3), 0..40),
        both_learn: bool,
        protocol in 0..PROTOCOLS.len(),
    ) {
        let protocol = PROTOCOLS[protocol];
        check(protocol, &client, &server, both_learn);
    }
}
