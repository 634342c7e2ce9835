//! KKRT-PSI's own checks: its traffic is its cost model, a 2^16-per-side session, and (run by
//! hand) the standard 2^20-per-side workload over TCP. The checks both protocols share are in
//! `intersection.rs`.

mod common;

use std::time::{Duration, Instant};

use common::{check, items, options, session};
use obscura_psi::{kkrt, run, Protocol, Role};

/// The traffic is what the module documentation says: 64 bytes per bin and 48 more from the
/// client, two points per base OT (512) and three tags per item from the server, plus frame
/// headers.
#[test]
fn traffic_matches_the_cost_model() {
    let (client, server) = (items("a", 0..20_000), items("a", 10_000..30_000));
    let outcome = check(Protocol::Kkrt, &client, &server, false);
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
        hello + 5 + 512 * 64 + tags + 5 * 20_000u64.div_ceil(4096)
    );
}

/// 2^16 items per side, half shared, give the plain intersection size.
#[test]
fn two_to_the_16_items_per_side() {
    let client = items("item", 0..1 << 16);
    let server = items("item", 1 << 15..3 << 15);
    let (c, _) = session(Protocol::Kkrt, &client, &server, true);
    assert_eq!(c.intersection.unwrap().size, 1 << 15);
}

/// The standard workload: 2^20 items per side over TCP loopback, both parties in this process.
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
                options(Protocol::Kkrt, Role::Server, false),
                &|_, _, _| {},
            )
            .unwrap()
        });
        let mut link = tcp::connect(addr, timeout).unwrap();
        let client = run(
            &mut link,
            &client,
            options(Protocol::Kkrt, Role::Client, false),
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
