//! Both roles over the in-memory transport give exactly the plain intersection.

use std::collections::HashSet;
use std::time::Duration;

use obscura_psi::transport::memory;
use obscura_psi::{run, Intersection, Options, Outcome, Protocol, Role, Stage};
use proptest::prelude::*;

/// Runs a session with the client holding `client` and the server `server`.
fn session(client: &[Vec<u8>], server: &[Vec<u8>], both_learn: bool) -> (Outcome, Outcome) {
    let (mut client_link, mut server_link) = memory::pair(Duration::from_secs(30));
    let options = |role| Options {
        protocol: Protocol::Ecdh,
        role,
        both_learn,
    };
    std::thread::scope(|scope| {
        let server = scope.spawn(|| {
            run(
                &mut server_link,
                server,
                options(Role::Server),
                &|_, _, _| {},
            )
        });
        let client = run(
            &mut client_link,
            client,
            options(Role::Client),
            &|_, _, _| {},
        );
        (client.unwrap(), server.join().unwrap().unwrap())
    })
}

/// The rows of `ours` whose value `theirs` holds, and how many distinct values that is.
fn plain_intersection(ours: &[Vec<u8>], theirs: &[Vec<u8>]) -> Intersection {
    let theirs: HashSet<&Vec<u8>> = theirs.iter().collect();
    let rows: Vec<usize> = (0..ours.len())
        .filter(|&i| theirs.contains(&ours[i]))
        .collect();
    let size = rows.iter().map(|&i| &ours[i]).collect::<HashSet<_>>().len();
    Intersection { rows, size }
}

fn distinct(values: &[Vec<u8>]) -> usize {
    values.iter().collect::<HashSet<_>>().len()
}

/// Checks both outcomes against the plain computation.
fn check(client: &[Vec<u8>], server: &[Vec<u8>], both_learn: bool) {
    let (c, s) = session(client, server, both_learn);
    assert_eq!(c.intersection, Some(plain_intersection(client, server)));
    let expected_server = both_learn.then(|| plain_intersection(server, client));
    assert_eq!(s.intersection, expected_server);
    for (outcome, ours, theirs) in [(&c, client, server), (&s, server, client)] {
        assert_eq!(outcome.rows, ours.len());
        assert_eq!(outcome.unique_items, distinct(ours));
        assert_eq!(outcome.duplicates_dropped, ours.len() - distinct(ours));
        assert_eq!(outcome.peer_items, distinct(theirs) as u64);
    }
    assert_eq!(c.bytes_sent, s.bytes_received);
    assert_eq!(s.bytes_sent, c.bytes_received);
}

/// `count` items named with `prefix` (distinct prefixes give disjoint sets).
fn items(prefix: &str, range: std::ops::Range<usize>) -> Vec<Vec<u8>> {
    range.map(|i| format!("{prefix}{i}").into_bytes()).collect()
}

#[test]
fn empty_sets_give_empty_intersections() {
    let some = items("x", 0..10);
    for both_learn in [false, true] {
        check(&[], &some, both_learn);
        check(&some, &[], both_learn);
        check(&[], &[], both_learn);
    }
}

#[test]
fn disjoint_full_and_partial_overlaps() {
    for both_learn in [false, true] {
        check(&items("a", 0..300), &items("b", 0..300), both_learn);
        check(&items("a", 0..300), &items("a", 0..300), both_learn);
        check(&items("a", 0..5000), &items("a", 4000..9000), both_learn);
    }
}

#[test]
fn unequal_sizes() {
    let many = items("a", 0..1000);
    check(&items("a", 500..501), &many, true);
    check(&many, &items("a", 999..1000), true);
    check(&items("z", 0..1), &many, false);
}

#[test]
fn duplicates_are_counted_once_and_every_copy_is_reported() {
    let mut client = items("a", 0..50);
    client.extend(items("a", 10..20));
    client.push(b"a3".to_vec());
    let mut server = items("a", 15..100);
    server.extend(items("a", 15..30));
    let (c, s) = session(&client, &server, true);
    assert_eq!(c.duplicates_dropped, 11);
    assert_eq!(s.duplicates_dropped, 15);
    let rows = c.intersection.unwrap().rows;
    assert!(rows.contains(&55) && rows.contains(&15) && !rows.contains(&60));
    check(&client, &server, true);
}

/// Empty and binary items are items like any other.
#[test]
fn arbitrary_bytes_are_items() {
    let client = vec![vec![], vec![0u8; 3], vec![0xff; 1000], b"a".to_vec()];
    let server = vec![vec![0u8; 3], vec![], vec![0u8; 4]];
    check(&client, &server, true);
}

/// The progress callback reaches each stage's total.
#[test]
fn progress_reaches_the_totals() {
    let (mut client_link, mut server_link) = memory::pair(Duration::from_secs(30));
    let client = items("a", 0..5000);
    let server = items("a", 0..7000);
    let options = |role| Options {
        protocol: Protocol::Ecdh,
        role,
        both_learn: false,
    };
    let reports = std::sync::Mutex::new(Vec::new());
    std::thread::scope(|scope| {
        scope.spawn(|| {
            run(
                &mut server_link,
                &server,
                options(Role::Server),
                &|_, _, _| {},
            )
        });
        let record = |stage, done, total| reports.lock().unwrap().push((stage, done, total));
        run(&mut client_link, &client, options(Role::Client), &record).unwrap();
    });
    let reports = reports.into_inner().unwrap();
    assert!(reports.contains(&(Stage::OwnItems, 5000, 5000)));
    assert!(reports.contains(&(Stage::PeerItems, 7000, 7000)));
    assert!(reports
        .windows(2)
        .all(|w| w[0].0 != w[1].0 || w[0].1 < w[1].1));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    /// Random sets over a small alphabet (so they overlap and repeat) give the plain result.
    #[test]
    fn random_sets_give_the_plain_intersection(
        client in prop::collection::vec(prop::collection::vec(0u8..4, 0..3), 0..40),
        server in prop::collection::vec(prop::collection::vec(0u8..4, 0..3), 0..40),
        both_learn: bool,
    ) {
        check(&client, &server, both_learn);
    }
}
