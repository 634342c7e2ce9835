//! Helpers shared by the PSI integration tests: a session over the in-memory transport, and
//! the plain intersection to compare its outcome with.

// Each test file uses its own subset of the helpers.
#![allow(dead_code)]

use std::collections::HashSet;
use std::time::Duration;

use obscura_psi::transport::memory;
use obscura_psi::{run, Intersection, Options, Outcome, Protocol, PsiError, Role, Transport};

/// Every protocol the crate runs.
pub const PROTOCOLS: [Protocol; 4] = [
    Protocol::Ecdh,
    Protocol::Kkrt,
    Protocol::Rr22,
    Protocol::Rr22Malicious,
];

/// The options of one party.
pub fn options(protocol: Protocol, role: Role, both_learn: bool) -> Options {
    Options {
        protocol,
        role,
        both_learn,
    }
}

/// Runs a session with the client holding `client` and the server `server`; returns the
/// client's and the server's outcomes.
pub fn session(
    protocol: Protocol,
    client: &[Vec<u8>],
    server: &[Vec<u8>],
    both_learn: bool,
) -> (Outcome, Outcome) {
    let both_learn = both_learn && both_learn_offered(protocol);
    let (mut client_link, mut server_link) = memory::pair(Duration::from_secs(30));
    std::thread::scope(|scope| {
        let server = scope.spawn(|| {
            let options = options(protocol, Role::Server, both_learn);
            run(&mut server_link, server, options, &|_, _, _| {})
        });
        let options = options(protocol, Role::Client, both_learn);
        let client = run(&mut client_link, client, options, &|_, _, _| {});
        (client.unwrap(), server.join().unwrap().unwrap())
    })
}

/// Whether `protocol` lets both parties learn the intersection; when it does not, checks that
/// either party asking for it is refused before anything is sent.
pub fn both_learn_offered(protocol: Protocol) -> bool {
    if protocol.offers_both_learn() {
        return true;
    }
    for role in [Role::Client, Role::Server] {
        let (mut link, _peer) = memory::pair(Duration::from_secs(1));
        let error = run(
            &mut link,
            &[b"x"],
            options(protocol, role, true),
            &|_, _, _| {},
        );
        assert!(
            matches!(error, Err(PsiError::Unsupported { protocol: refused, .. }) if refused == protocol),
            "{protocol} {role}: {error:?}"
        );
        assert_eq!(link.bytes_sent(), 0);
    }
    false
}

/// The rows of `ours` whose value `theirs` holds, and how many distinct values that is.
pub fn plain_intersection(ours: &[Vec<u8>], theirs: &[Vec<u8>]) -> Intersection {
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

/// Runs a session and checks both outcomes against the plain computation (intersections,
/// counts, traffic both ways); returns the client's outcome.
pub fn check(
    protocol: Protocol,
    client: &[Vec<u8>],
    server: &[Vec<u8>],
    both_learn: bool,
) -> Outcome {
    let (c, s) = session(protocol, client, server, both_learn);
    assert_eq!(
        c.intersection,
        Some(plain_intersection(client, server)),
        "{protocol}"
    );
    let expected_server =
        (both_learn && protocol.offers_both_learn()).then(|| plain_intersection(server, client));
    assert_eq!(s.intersection, expected_server, "{protocol}");
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
pub fn items(prefix: &str, range: std::ops::Range<usize>) -> Vec<Vec<u8>> {
    range.map(|i| format!("{prefix}{i}").into_bytes()).collect()
}

pub mod fake_peer;
