//! The bucketed driver gives exactly the plain intersection, whatever the number of buckets,
//! and refuses peers that do not follow the same plan.

use std::collections::HashSet;
use std::path::Path;
use std::time::Duration;

use obscura_psi::bucketed::{run_bucketed, BucketOptions, BucketedOutcome};
use obscura_psi::transport::memory;
use obscura_psi::{run, HelloError, Options, Protocol, PsiError, Role};

fn options(role: Role, both_learn: bool, bucket_items: u64) -> BucketOptions {
    BucketOptions {
        session: Options {
            protocol: Protocol::Ecdh,
            role,
            both_learn,
        },
        bucket_items,
    }
}

/// Runs a bucketed session; returns the client's and the server's outcomes.
fn session(
    client: &[Vec<u8>],
    server: &[Vec<u8>],
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
    let folder = tempfile::tempdir().unwrap();
    let (c, s) = session(
        client,
        server,
        options(Role::Client, both_learn, bucket_items),
        options(Role::Server, both_learn, bucket_items),
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
    for bucket_items in [1 << 20, 300, 64, 7] {
        check(&client, &server, bucket_items, false);
    }
    check(&client, &server, 64, true);
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
        &items(0..10, "a"),
        &items(0..10, "a"),
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
    use obscura_psi::transport::{FrameKind, Transport};
    use obscura_psi::PeerError;
    let folder = tempfile::tempdir().unwrap();
    let (mut client_link, mut server_link) = memory::pair(Duration::from_secs(5));
    let server = std::thread::spawn(move || {
        // Plan: 10 rows, buckets of 100 items, a zero nonce; then only 3 items in the bucket.
        let mut plan = 10u64.to_le_bytes().to_vec();
        plan.extend_from_slice(&100u64.to_le_bytes());
        plan.extend_from_slice(&[0u8; 32]);
        server_link.send(FrameKind::BucketPlan, &plan).unwrap();
        server_link.recv(FrameKind::BucketPlan, 48).unwrap();
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
