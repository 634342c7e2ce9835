//! The bucketed driver gives exactly the plain intersection, whatever the number of buckets,
//! and refuses peers that do not follow the same plan.

use obscura_psi::kinds;
use std::collections::HashSet;
use std::path::Path;
use std::time::Duration;

use obscura_psi::bucketed::{run_bucketed, BucketOptions, BucketedOutcome, ItemSource};
use obscura_psi::transport::memory;
use obscura_psi::{run, HelloError, Options, Protocol, PsiError, Role};

fn options(role: Role, both_learn: bool, bucket_items: u64) -> BucketOptions {
    options_for(Protocol::Ecdh, role, both_learn, bucket_items)
}

fn options_for(
    protocol: Protocol,
    role: Role,
    both_learn: bool,
    bucket_items: u64,
) -> BucketOptions {
    BucketOptions {
        session: Options {
            protocol,
            role,
            both_learn,
        },
        bucket_items,
    }
}

/// Runs a bucketed session; returns the client's and the server's outcomes.
fn session<C: ItemSource + Sync + ?Sized, S: ItemSource + Sync + ?Sized>(
    client: &C,
    server: &S,
    client_options: BucketOptions,
    server_options: BucketOptions,
    folder: &Path,
) -> (
    Result<BucketedOutcome, PsiError>,
    Result<BucketedOutcome, PsiError>,
) {
    let (mut client_link, mut server_link) = memory::pair(Duration::from_secs(30));
    std::thread::scope(|scope| {
        let server = scope.spawn(|| {
            run_bucketed(
                &mut server_link,
                server,
                server_options,
                folder,
                &|_, _, _, _, _| {},
            )
        });
        let client = run_bucketed(
            &mut client_link,
            client,
            client_options,
            folder,
            &|_, _, _, _, _| {},
        );
        (client, server.join().unwrap())
    })
}

/// The rows of `ours` whose value `theirs` holds.
fn plain_rows(ours: &[Vec<u8>], theirs: &[Vec<u8>]) -> Vec<u64> {
    let theirs: HashSet<&Vec<u8>> = theirs.iter().collect();
    (0..ours.len() as u64)
        .filter(|&i| theirs.contains(&ours[i as usize]))
        .collect()
}

fn items(range: std::ops::Range<u32>, tag: &str) -> Vec<Vec<u8>> {
    range.map(|i| format!("{tag}-{i}").into_bytes()).collect()
}

fn check(client: &[Vec<u8>], server: &[Vec<u8>], bucket_items: u64, both_learn: bool) {
    check_protocol(Protocol::Ecdh, client, server, bucket_items, both_learn);
}

fn check_protocol(
    protocol: Protocol,
    client: &[Vec<u8>],
    server: &[Vec<u8>],
    bucket_items: u64,
    both_learn: bool,
) {
    let folder = tempfile::tempdir().unwrap();
    let (c, s) = session(
        client,
        server,
        options_for(protocol, Role::Client, both_learn, bucket_items),
        options_for(protocol, Role::Server, both_learn, bucket_items),
        folder.path(),
    );
    let (c, s) = (c.unwrap(), s.unwrap());
    let expected = plain_rows(client, server);
    let rows: Vec<u64> = c.intersection.as_ref().unwrap().iter().collect();
    assert_eq!(rows, expected, "{bucket_items} items per bucket");
    let distinct: HashSet<&Vec<u8>> = expected.iter().map(|&r| &client[r as usize]).collect();
    assert_eq!(c.intersection_size, Some(distinct.len() as u64));
    let server_rows = s.intersection.map(|set| set.iter().collect::<Vec<_>>());
    assert_eq!(server_rows, both_learn.then(|| plain_rows(server, client)));
    assert_eq!(
        (c.rows, c.peer_rows),
        (client.len() as u64, server.len() as u64)
    );
    assert_eq!(c.plan, s.plan);
    assert_eq!(c.bytes_sent, s.bytes_received);
    // The bucket files are gone.
    assert_eq!(std::fs::read_dir(folder.path()).unwrap().count(), 0);
}

#[test]
fn any_number_of_buckets_gives_the_plain_intersection() {
    let mut client = items(0..600, "x");
    client.extend(items(0..100, "shared"));
    client.push(b"shared-7".to_vec()); // a duplicate row
    let mut server = items(0..300, "y");
    server.extend(items(0..100, "shared"));
    // 1 to 351 buckets: more buckets than the 256 files the rows are split into, too.
    for bucket_items in [1 << 20, 300, 64, 7, 2] {
        check(&client, &server, bucket_items, false);
    }
    check(&client, &server, 64, true);
}

#[test]
fn the_ot_protocols_run_through_buckets() {
    let mut client = items(0..3000, "x");
    client.extend(items(0..500, "shared"));
    let mut server = items(0..2000, "y");
    server.extend(items(0..500, "shared"));
    for protocol in [Protocol::Kkrt, Protocol::Rr22] {
        check_protocol(protocol, &client, &server, 1000, true);
    }
}

/// `count` items `prefix-i`, made as they are read (a set of 2^24 items would take gigabytes
/// as a vector of vectors).
struct Generated {
    prefix: &'static str,
    range: std::ops::Range<u64>,
}

impl ItemSource for Generated {
    fn for_each(
        &self,
        visit: &mut dyn FnMut(&[u8]) -> Result<(), PsiError>,
    ) -> Result<(), PsiError> {
        let mut item = Vec::new();
        for i in self.range.clone() {
            item.clear();
            item.extend_from_slice(self.prefix.as_bytes());
            item.extend_from_slice(i.to_string().as_bytes());
            visit(&item)?;
        }
        Ok(())
    }
}

/// The large workload: 2^24 items per side (half shared) through RR22 in buckets of
/// 2^20, exact. Run by hand: `cargo test --release -p obscura-psi --test bucketed -- --ignored
/// --nocapture` (both parties in this process; the CLI's two processes give each party's
/// resident memory).
#[test]
#[ignore = "a benchmark: 2^24 items per side"]
fn two_to_the_24_items_per_side_through_rr22_buckets() {
    let n = 1u64 << 24;
    let client = Generated {
        prefix: "user-",
        range: 0..n,
    };
    let server = Generated {
        prefix: "user-",
        range: n / 2..n + n / 2,
    };
    let folder = tempfile::tempdir().unwrap();
    let (mut client_link, mut server_link) = memory::pair(Duration::from_secs(600));
    let started = std::time::Instant::now();
    let (c, s) = std::thread::scope(|scope| {
        let server = scope.spawn(|| {
            let options = options_for(Protocol::Rr22, Role::Server, false, 1 << 20);
            run_bucketed(
                &mut server_link,
                &server,
                options,
                folder.path(),
                &|_, _, _, _, _| {},
            )
        });
        let options = options_for(Protocol::Rr22, Role::Client, false, 1 << 20);
        let client = run_bucketed(
            &mut client_link,
            &client,
            options,
            folder.path(),
            &|_, _, _, _, _| {},
        );
        (client.unwrap(), server.join().unwrap().unwrap())
    });
    let elapsed = started.elapsed();
    let rows = c.intersection.unwrap();
    assert_eq!(c.intersection_size, Some(n / 2));
    assert!(rows.iter().eq(n / 2..n), "the shared rows, in order");
    let bits = (c.bytes_sent + s.bytes_sent) as f64 * 8.0 / n as f64;
    eprintln!(
        "2^24 per side through {} buckets: {elapsed:.2?}, {bits:.1} bits per item",
        c.plan.buckets()
    );
}

#[test]
fn empty_and_tiny_sets() {
    check(&[], &items(0..50, "y"), 10, false);
    check(&items(0..50, "y"), &[], 10, true);
    check(&items(0..1, "a"), &items(0..1, "a"), 1, true);
}

#[test]
fn both_parties_must_choose_the_same_bucket_size() {
    let folder = tempfile::tempdir().unwrap();
    let (c, s) = session(
        items(0..10, "a").as_slice(),
        items(0..10, "a").as_slice(),
        options(Role::Client, false, 100),
        options(Role::Server, false, 50),
        folder.path(),
    );
    for result in [c, s] {
        assert!(matches!(
            result,
            Err(PsiError::Hello(HelloError::BucketSizeMismatch { .. }))
        ));
    }
}

/// An input that must not be read.
struct Unread;

impl ItemSource for Unread {
    fn for_each(&self, _: &mut dyn FnMut(&[u8]) -> Result<(), PsiError>) -> Result<(), PsiError> {
        panic!("the input was read before the settings were checked")
    }
}

/// Settings that do not make one session are refused before either party reads its input
/// (which may take long for a large set).
#[test]
fn mismatched_settings_are_refused_before_the_input_is_read() {
    let folder = tempfile::tempdir().unwrap();
    let (c, s) = session(
        &Unread,
        &Unread,
        options_for(Protocol::Ecdh, Role::Client, false, 100),
        options_for(Protocol::Kkrt, Role::Server, false, 100),
        folder.path(),
    );
    for result in [c, s] {
        assert!(
            matches!(
                result,
                Err(PsiError::Hello(HelloError::ProtocolMismatch { .. }))
            ),
            "{result:?}"
        );
    }
}

/// A bucketed party facing a plain session fails at once with a clear error, never a hang.
#[test]
fn a_plain_peer_is_refused() {
    let folder = tempfile::tempdir().unwrap();
    let (mut client_link, mut server_link) = memory::pair(Duration::from_secs(5));
    let client_items = items(0..10, "a");
    let server = std::thread::spawn(move || {
        let options = Options {
            protocol: Protocol::Ecdh,
            role: Role::Server,
            both_learn: false,
        };
        run(&mut server_link, &items(0..10, "a"), options, &|_, _, _| {})
    });
    let client = run_bucketed(
        &mut client_link,
        client_items.as_slice(),
        options(Role::Client, false, 100),
        folder.path(),
        &|_, _, _, _, _| {},
    );
    assert!(matches!(
        client,
        Err(PsiError::Hello(HelloError::BucketingMismatch {
            ours: true
        }))
    ));
    drop(client_link);
    assert!(matches!(
        server.join().unwrap(),
        Err(PsiError::Hello(HelloError::BucketingMismatch {
            ours: false
        }))
    ));
}

/// A peer that announces one row count in the plan and enters a bucket with another number of
/// items is caught after that bucket.
#[test]
fn a_peer_that_breaks_the_padding_is_refused() {
    use obscura_psi::transport::Transport;
    use obscura_psi::PeerError;
    let folder = tempfile::tempdir().unwrap();
    let (mut client_link, mut server_link) = memory::pair(Duration::from_secs(5));
    let server = std::thread::spawn(move || {
        // Opening: an ECDH server's handshake (wire version 3), buckets of 100 items, a zero
        // nonce; then 10 rows announced, and only 3 items in the bucket.
        let mut opening = b"OBSCPSI\0".to_vec();
        opening.extend_from_slice(&3u16.to_le_bytes());
        opening.extend_from_slice(&[1, 1]); // ECDH, server
        opening.extend_from_slice(&[0; 9]); // no item count yet, no flags
        opening.extend_from_slice(&100u64.to_le_bytes());
        opening.extend_from_slice(&[0u8; 32]);
        server_link.send(kinds::BUCKET_PLAN, &opening).unwrap();
        server_link.recv(kinds::BUCKET_PLAN, 61).unwrap();
        server_link
            .send(kinds::BUCKET_ROWS, &10u64.to_le_bytes())
            .unwrap();
        server_link.recv(kinds::BUCKET_ROWS, 8).unwrap();
        let options = Options {
            protocol: Protocol::Ecdh,
            role: Role::Server,
            both_learn: false,
        };
        run(&mut server_link, &items(0..3, "a"), options, &|_, _, _| {})
    });
    let error = run_bucketed(
        &mut client_link,
        items(0..5, "a").as_slice(),
        options(Role::Client, false, 100),
        folder.path(),
        &|_, _, _, _, _| {},
    )
    .unwrap_err();
    assert!(
        matches!(
            error,
            PsiError::Peer(PeerError::BucketSize {
                bucket: 0,
                items: 3,
                expected: 10
            })
        ),
        "{error}"
    );
    assert!(server.join().unwrap().is_ok());
}
