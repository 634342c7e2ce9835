//! Clients catch up by patch: a client whose cached setup is an earlier version asks for the
//! patches from it (`A-IM: obscura-patch`) and applies them, getting the setup a download would
//! have given it; clients that do not ask, and clients of versions no longer kept, get the
//! whole setup.

mod common;

use std::path::{Path, PathBuf};

use obscura_client::blocking::Client as BlockingClient;
use obscura_client::http::{ClientOptions, HttpClient};
use obscura_client::setup::{etag_of, PATCH_IM};
use obscura_client::{Ask, Outcome};
use obscura_pir::lwe::{EngineOptions, Layout, Server};
use obscura_pir::Change;
use obscura_registry::{setup_sha256, Registry};
use obscura_service::service::BackgroundService;
use obscura_store::patches::Patches;
use obscura_store::store::{self, Database};
use obscura_store::update::update_file;
use ureq::Agent;

const RECORDS: u64 = 200;
const RECORD_BYTES: u64 = 24;

/// Record `index` of version `version`: version v sets records v, v + 7, v + 14, ... (those
/// below 50).
fn record(version: u64, index: u64) -> Vec<u8> {
    let last = (1..=version)
        .rev()
        .find(|v| index >= *v && index < 50 && (index - v).is_multiple_of(7));
    let tag = last.unwrap_or(0);
    (0..RECORD_BYTES)
        .map(|k| (index * 31 + k * 7 + tag * 101) as u8)
        .collect()
}

/// Applies version `version`'s changes to the file at `path`, keeping `keep` patches.
fn update(path: &Path, version: u64, keep: usize) {
    let changes: Vec<Change> = (version..50)
        .step_by(7)
        .map(|index| Change::Set {
            index,
            value: record(version, index),
        })
        .collect();
    update_file(
        path,
        |_| Ok(changes),
        &Registry::default(),
        keep,
        &|_, _| {},
    )
    .unwrap();
}

/// The status of a setup request offering the setup with SHA-256 `held`, asking for patches
/// or not.
fn setup_status(url: &str, held: &[u8; 32], patches: bool) -> u16 {
    let agent: Agent = Agent::config_builder()
        .http_status_as_error(false)
        .build()
        .into();
    let mut request = agent
        .get(format!("{url}/v1/databases/db/setup"))
        .header("If-None-Match", etag_of(held));
    if patches {
        request = request.header("A-IM", PATCH_IM);
    }
    request.call().unwrap().status().as_u16()
}

fn client(url: &str, cache: &Path) -> HttpClient {
    let options = ClientOptions {
        cache_dir: Some(cache.to_path_buf()),
        ..ClientOptions::default()
    };
    HttpClient::with_options(url, options)
}

/// Every record, fetched through `http` (its cache), equals version `version`'s.
fn assert_reads(http: HttpClient, version: u64) {
    let mut session = BlockingClient::connect(http, "db").unwrap();
    for index in [0, version, version + 7, 49, 50, RECORDS - 1] {
        let (outcome, _) = session.fetch(Ask::Record(index)).unwrap();
        assert_eq!(
            outcome,
            Outcome::Record(record(version, index)),
            "record {index}"
        );
    }
}

/// A service of version 0's records in `layout`, from `db.obs` in a new folder.
fn serve(layout: Layout) -> (tempfile::TempDir, PathBuf, BackgroundService) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db.obs");
    let data: Vec<u8> = (0..RECORDS).flat_map(|i| record(0, i)).collect();
    let options = EngineOptions {
        layout,
        ..EngineOptions::default()
    };
    let server = Server::from_records(&data, RECORD_BYTES, options, &|_, _| {}).unwrap();
    store::write_database(&path, &Database::from(server)).unwrap();
    let service = common::serve_file(&path);
    (dir, path, service)
}

#[test]
fn clients_of_kept_versions_catch_up_by_patch() {
    let (dir, path, service) = serve(Layout::Square);
    let url = service.url();
    let (cache, old_cache) = (dir.path().join("cache"), dir.path().join("cache-v0"));
    let first = client(&url, &cache).fetch_setup("db").unwrap();
    assert_eq!((first.from_cache, first.patch_bytes), (false, None));
    let copy = |from: &Path, to: &Path| {
        let status = std::process::Command::new("cp")
            .arg("-r")
            .arg(from)
            .arg(to)
            .status();
        assert!(status.unwrap().success());
    };
    copy(&cache, &old_cache);

    // One version on: the cached client gets a patch and the new setup.
    update(&path, 1, 16);
    assert!(common::reload(&service, &path).is_empty());
    let patched = client(&url, &cache).fetch_setup("db").unwrap();
    let downloaded = HttpClient::new(&url, None).fetch_setup("db").unwrap();
    let patch_bytes = patched.patch_bytes.expect("a patch");
    assert!(
        patch_bytes < downloaded.bytes.len() as u64 / 10,
        "{patch_bytes} bytes"
    );
    assert_eq!(patched.bytes, downloaded.bytes);
    assert_eq!(patched.sha256, setup_sha256(&downloaded.bytes));
    assert_reads(client(&url, &cache), 1);
    // The cache now holds version 1: confirmed, not patched again.
    let again = client(&url, &cache).fetch_setup("db").unwrap();
    assert_eq!((again.from_cache, again.patch_bytes), (true, None));

    // Three versions on: the client of version 0 applies a chain of three patches.
    update(&path, 2, 16);
    update(&path, 3, 16);
    assert!(common::reload(&service, &path).is_empty());
    let chained = client(&url, &old_cache).fetch_setup("db").unwrap();
    assert!(chained.patch_bytes.is_some());
    assert_eq!(
        chained.bytes,
        HttpClient::new(&url, None).fetch_setup("db").unwrap().bytes
    );
    assert_reads(client(&url, &old_cache), 3);

    // A request that does not ask for patches gets the whole setup, whatever it holds.
    assert_eq!(setup_status(&url, &first.sha256, false), 200);

    // Keeping one patch: a client two versions back downloads the whole setup.
    copy(&cache, &dir.path().join("cache-v1"));
    update(&path, 4, 1);
    assert_eq!(Patches::read(&path).unwrap().iter().count(), 1);
    assert!(common::reload(&service, &path).is_empty());
    let behind = client(&url, &dir.path().join("cache-v1"))
        .fetch_setup("db")
        .unwrap();
    assert_eq!((behind.from_cache, behind.patch_bytes), (false, None));
    assert_reads(client(&url, &dir.path().join("cache-v1")), 4);
}

#[test]
fn a_patch_that_does_not_apply_costs_a_download() {
    let (dir, path, service) = serve(Layout::OnePerColumn);
    let url = service.url();
    let cache = dir.path().join("cache");
    let held = client(&url, &cache).fetch_setup("db").unwrap();
    update(&path, 1, 16);
    // The kept patch is damaged after its checksum was made (a server bug or a bad disk the
    // checksum did not see): the client refuses what it makes and downloads the setup.
    let mut patches = Patches::read(&path).unwrap();
    let mut kept: Vec<_> = patches.iter().cloned().collect();
    let last = kept[0].bytes.len() - 1;
    kept[0].bytes[last] ^= 1;
    patches = Patches::default();
    for patch in kept {
        patches.push(patch, 16, u64::MAX);
    }
    patches.write(&path).unwrap();
    assert!(common::reload(&service, &path).is_empty());
    assert_eq!(setup_status(&url, &held.sha256, true), 226);
    let fetched = client(&url, &cache).fetch_setup("db").unwrap();
    assert_eq!(fetched.patch_bytes, None);
    assert_reads(client(&url, &cache), 1);
}
