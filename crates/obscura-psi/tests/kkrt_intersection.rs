//! KKRT-PSI over the in-memory transport gives exactly the plain intersection.

use std::collections::HashSet;
use std::time::{Duration, Instant};

use obscura_psi::kkrt;
use obscura_psi::transport::memory;
use obscura_psi::{run, Intersection, Options, Outcome, Protocol, Role, Stage};
use proptest::prelude::*;

fn options(role: Role, both_learn: bool) -> Options {
    Options {
        protocol: Protocol::Kkrt,
        role,
        both_learn,
    }
}

/// Runs a session with the client holding `client` and the server `server`.
fn session(client: &[Vec<u8>], server: &[Vec<u8>], both_learn: bool) -> (Outcome, Outcome) {
    let (mut client_link, mut server_link) = memory::pair(Duration::from_secs(30));
    std::thread::scope(|scope| {
        let server = scope.spawn(|| {
            let options = options(Role::Server, both_learn);
            run(&mut server_link, server, options, &|_, _, _| {})
        });
        let options = options(Role::Client, both_learn);
        let client = run(&mut client_link, client, options, &|_, _, _| {});
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

/// Checks both outcomes against the plain computation; returns the client's outcome.
fn check(client: &[Vec<u8>], server: &[Vec<u8>], both_learn: bool) -> Outcome {
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
    c
}

/// Items named with `prefix` (distinct prefixes give disjoint sets).
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
    check(&items("a", 0..1), &items("a", 0..1), true);
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

/// The traffic is what the module documentation says: 64 bytes per bin and 48 more from the
/// client, 512 points and three tags per item from the server, plus frame headers.
#[test]
fn traffic_matches_the_cost_model() {
    let (client, server) = (items("a", 0..20_000), items("a", 10_000..30_000));
    let outcome = check(&client, &server, false);
    let bins = u64::from(kkrt::bins(20_000).unwrap());
    let frames = bins.div_ceil(128 * kkrt::FRAME_BLOCKS as u64);
    let hello = 5 + 21;
    assert_eq!(
        outcome.bytes_sent,
        hello + 5 + 32 + 5 + 16 + 64 * bins + 5 * frames
    );
    let tags = 3 * kkrt::tag_bytes(20_000, 20_000) as u64 * 20_000;
    assert_eq!(
        outcome.bytes_received,
        hello + 5 + 512 * 32 + tags + 5 * 20_000u64.div_ceil(4096)
    );
}

/// The progress callback reaches each stage's total.
#[test]
fn progress_reaches_the_totals() {
    let (mut client_link, mut server_link) = memory::pair(Duration::from_secs(30));
    let client = items("a", 0..5000);
    let server = items("a", 0..7000);
    let reports = std::sync::Mutex::new(Vec::new());
    std::thread::scope(|scope| {
        scope.spawn(|| {
            run(
                &mut server_link,
                &server,
                options(Role::Server, false),
                &|_, _, _| {},
            )
        });
        let record = |stage, done, total| reports.lock().unwrap().push((stage, done, total));
        run(
            &mut client_link,
            &client,
            options(Role::Client, false),
            &record,
        )
        .unwrap();
    });
    let reports = reports.into_inner().unwrap();
    let bins = u64::from(kkrt::bins(5000).unwrap());
    assert!(reports.contains(&(Stage::OwnItems, bins, bins)));
    assert!(reports.contains(&(Stage::PeerItems, 7000, 7000)));
    assert!(reports
        .windows(2)
        .all(|w| w[0].0 != w[1].0 || w[0].1 < w[1].1));
}

/// 2^16 items per side, half shared, in the optimized test profile: a few seconds at most.
#[test]
fn two_to_the_16_items_per_side_is_quick() {
    let client = items("item", 0..1 << 16);
    let server = items("item", 1 << 15..3 << 15);
    let started = Instant::now();
    let (c, _) = session(&client, &server, true);
    let elapsed = started.elapsed();
    assert_eq!(c.intersection.unwrap().size, 1 << 15);
    assert!(elapsed < Duration::from_secs(10), "{elapsed:?}");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(16))]

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

/// The workload: 2^20 items per side over TCP loopback, both parties in this process.
/// Run by hand: `cargo test --release -p obscura-psi --test kkrt_intersection -- --ignored
/// --nocapture`.
#[test]
#[ignore = "a benchmark: 2^20 items per side"]
fn two_to_the_20_items_per_side_over_tcp() {
    use obscura_psi::transport::tcp;
    let n = 1 << 20;
    let client = items("user-", 0..n);
    let server = items("user-", n / 2..n + n / 2);
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let timeout = Duration::from_secs(60);
    let started = Instant::now();
    let (c, s) = std::thread::scope(|scope| {
        let server = scope.spawn(|| {
            let (mut link, _) = tcp::accept(&listener, timeout).unwrap();
            run(
                &mut link,
                &server,
                options(Role::Server, false),
                &|_, _, _| {},
            )
            .unwrap()
        });
        let mut link = tcp::connect(addr, timeout).unwrap();
        let client = run(
            &mut link,
            &client,
            options(Role::Client, false),
            &|_, _, _| {},
        );
        (client.unwrap(), server.join().unwrap())
    });
    let elapsed = started.elapsed();
    assert_eq!(c.intersection.unwrap().size, n / 2);
    let bits_per_item = (c.bytes_sent + c.bytes_received) as f64 * 8.0 / n as f64;
    eprintln!(
        "2^20 per side: {elapsed:.2?} (client {:.2?}, server {:.2?}), client sent {} B, \
         server sent {} B, {bits_per_item:.0} bits per item",
        c.elapsed, s.elapsed, c.bytes_sent, s.bytes_sent
    );
}
