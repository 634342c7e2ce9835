//! RR22-PSI's own checks: its traffic, unbalanced sets of a million items, and (run by hand)
//! the standard workloads over TCP. The checks every protocol shares are in `intersection.rs`.

mod common;

use std::time::{Duration, Instant};

use common::{check, items, options, session};
use obscura_psi::{rr22, run, Protocol, Role};

/// One item against a million, both ways round: exactly the plain intersection.
#[test]
fn one_item_against_a_million() {
    let million = items("user-", 0..1_000_000);
    for (one, expected) in [
        (items("user-", 999_999..1_000_000), 1),
        (items("nobody", 0..1), 0),
    ] {
        let (c, _) = session(Protocol::Rr22, &one, &million, false);
        assert_eq!(c.intersection.unwrap().size, expected);
        let (c, s) = session(Protocol::Rr22, &million, &one, true);
        assert_eq!(c.intersection.unwrap().size, expected);
        assert_eq!(s.intersection.unwrap().size, expected);
    }
}

/// 2^16 items per side, half shared.
#[test]
fn two_to_the_16_items_per_side() {
    let client = items("item", 0..1 << 16);
    let server = items("item", 1 << 15..3 << 15);
    let outcome = check(Protocol::Rr22, &client, &server, true);
    assert_eq!(outcome.intersection.unwrap().size, 1 << 15);
}

/// The traffic is exactly what the message sizes say, plus frame headers.
#[test]
fn traffic_matches_the_cost_model() {
    let n = 1 << 16;
    let (client, server) = (items("a", 0..n), items("b", 0..n));
    let outcome = check(Protocol::Rr22, &client, &server, false);
    let sizes = rr22::message_sizes(n as u64, n as u64, false).unwrap();
    let frames = |count: usize, per_frame: usize| 5 * count.div_ceil(per_frame) as u64;
    let hello = 5 + 21;
    // Base-OT point, seeds, OT extension, OKVS seed, masked store.
    let store = sizes.store_words * sizes.word_bytes;
    assert_eq!(
        outcome.bytes_sent,
        hello
            + 5
            + 32
            + 5
            + 32
            + 2048 * sizes.ot_blocks as u64
            + frames(sizes.ot_blocks, rr22::OT_FRAME_BLOCKS)
            + 5
            + 16
            + store as u64
            + frames(sizes.store_words, rr22::STORE_FRAME_WORDS)
    );
    // Base-OT points, trees, one tag per item in chunks of 4096.
    assert_eq!(
        outcome.bytes_received,
        hello
            + 5
            + 128 * 64
            + 5
            + sizes.tree_bytes as u64
            + (sizes.word_bytes * n) as u64
            + 5 * (n as u64).div_ceil(4096)
    );
    // The fixed cost of the VOLE (about 0.6 MB at this size) still weighs at 2^16 items.
    let bits = (outcome.bytes_sent + outcome.bytes_received) as f64 * 8.0 / n as f64;
    assert!(bits < 250.0, "{bits}");
}

/// Both parties over TCP loopback in this process; prints time and traffic.
fn over_tcp(n: usize) {
    use obscura_psi::transport::tcp;
    let client = items("user-", 0..n);
    let server = items("user-", n / 2..n + n / 2);
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let timeout = Duration::from_secs(120);
    let started = Instant::now();
    let (c, s) = std::thread::scope(|scope| {
        let server = scope.spawn(|| {
            let (mut link, _) = tcp::accept(&listener, timeout).unwrap();
            let options = options(Protocol::Rr22, Role::Server, false);
            run(&mut link, &server, options, &|_, _, _| {}).unwrap()
        });
        let mut link = tcp::connect(addr, timeout).unwrap();
        let options = options(Protocol::Rr22, Role::Client, false);
        let client = run(&mut link, &client, options, &|_, _, _| {});
        (client.unwrap(), server.join().unwrap())
    });
    let elapsed = started.elapsed();
    assert_eq!(c.intersection.unwrap().size, n / 2);
    let bits_per_item = (c.bytes_sent + c.bytes_received) as f64 * 8.0 / n as f64;
    eprintln!(
        "{n} per side: {elapsed:.2?} (client {:.2?}, server {:.2?}), client sent {} B, \
         server sent {} B, {bits_per_item:.1} bits per item",
        c.elapsed, s.elapsed, c.bytes_sent, s.bytes_sent
    );
}

/// The standard workload: 2^20 items per side over TCP loopback. Run by hand:
/// `cargo test --release -p obscura-psi --test rr22_intersection -- --ignored --nocapture`.
#[test]
#[ignore = "a benchmark: 2^20 items per side"]
fn two_to_the_20_items_per_side_over_tcp() {
    over_tcp(1 << 20);
}

/// 2^22 items per side in one session, exact. Run by hand as above.
#[test]
#[ignore = "a benchmark: 2^22 items per side"]
fn two_to_the_22_items_per_side_over_tcp() {
    over_tcp(1 << 22);
}
