//! Database files changed under a running server, which serves what it loaded into memory:
//! changed in place (truncated, overwritten at the same size), the version loaded is still
//! served whole, never a crash or a mixed answer, and a reload refuses the damaged file and
//! keeps it; replaced by renaming, the old version is served until a reload, which moves the
//! ETag.

mod common;

use std::fs::OpenOptions;
use std::io::{Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use obscura_client::blocking::Client as BlockingClient;
use obscura_client::http::HttpClient;
use obscura_client::ClientError;
use obscura_pir::lwe::{Client, EngineOptions, Layout, Lwe, Server};
use obscura_pir::PirClient;
use obscura_service::catalog::CatalogError;
use obscura_service::service::BackgroundService;
use obscura_store::store::{self, Database, InvalidFile, StoreError};

fn records(seed: u8) -> Vec<u8> {
    (0..64u32 * 32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 7) as u8 ^ seed)
        .collect()
}

/// Writes a database of 64 records of 32 bytes, made from `seed`, to `path`.
fn build(path: &Path, seed: u8) -> Vec<u8> {
    let data = records(seed);
    let options = EngineOptions {
        layout: Layout::Square,
        ..EngineOptions::default()
    };
    let server = Server::from_records(&data, 32, options, &|_, _| {}).unwrap();
    store::write_database(path, &Database::from(server)).unwrap();
    data
}

struct Fixture {
    _dir: tempfile::TempDir,
    path: PathBuf,
    data: Vec<u8>,
    service: BackgroundService,
}

fn serve() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db.obs");
    let data = build(&path, 1);
    let service = common::serve_file(&path);
    Fixture {
        _dir: dir,
        path,
        data,
        service,
    }
}

/// Fetches record `index` with a fresh client (no cache), returning it or the error.
fn fetch(url: &str, index: u64) -> Result<Vec<u8>, ClientError> {
    let http = HttpClient::new(url, None);
    let mut client = Client::new(http.setup::<Lwe>("db")?);
    let (query, state) = client.query(index).unwrap();
    let answer = http.query::<Lwe>("db", client.setup(), &query)?;
    Ok(client.decode(state, &answer)?)
}

fn record(data: &[u8], index: u64) -> &[u8] {
    &data[index as usize * 32..][..32]
}

/// Every record, fetched through one client session, is the record of `data`.
fn assert_serves(url: &str, data: &[u8]) {
    let mut session = BlockingClient::connect(HttpClient::new(url, None), "db").unwrap();
    for index in 0..64 {
        assert_eq!(
            session.get(index).unwrap().unwrap(),
            record(data, index),
            "record {index}"
        );
    }
}

/// Why `failure` found the file invalid, if it did.
fn invalid(failure: &CatalogError) -> Option<&InvalidFile> {
    match failure {
        CatalogError::Store(StoreError::Invalid { source, .. }) => Some(source),
        _ => None,
    }
}

fn healthy(url: &str) -> bool {
    ureq::get(&format!("{url}/healthz"))
        .call()
        .is_ok_and(|r| r.status() == 200)
}

/// A file truncated in place changes nothing served: the version loaded is served whole, a
/// reload refuses the truncated file and keeps it, and a reload after a good file is written
/// serves that one.
#[test]
fn a_file_truncated_in_place_leaves_the_loaded_version_served() {
    let fixture = serve();
    let url = fixture.service.url();
    OpenOptions::new()
        .write(true)
        .truncate(true)
        .open(&fixture.path)
        .unwrap();
    assert!(healthy(&url));
    assert_serves(&url, &fixture.data);
    let failures = common::reload(&fixture.service, &fixture.path);
    assert_eq!(failures.len(), 1, "{failures:?}");
    assert!(
        matches!(invalid(&failures[0]), Some(InvalidFile::Short(0))),
        "{:?}",
        failures[0]
    );
    assert_serves(&url, &fixture.data);

    let data = build(&fixture.path, 2);
    assert!(common::reload(&fixture.service, &fixture.path).is_empty());
    assert_serves(&url, &data);
}

/// Bytes overwritten in place, at the same size, never reach an answer: the version loaded is
/// served whole, and a reload finds the file damaged (its checksum) and keeps that version.
#[test]
fn a_file_overwritten_in_place_is_never_mixed_into_answers() {
    let fixture = serve();
    let url = fixture.service.url();
    let mut file = OpenOptions::new().write(true).open(&fixture.path).unwrap();
    let len = file.metadata().unwrap().len();
    file.seek(SeekFrom::Start(len - 64 * 32)).unwrap();
    file.write_all(&[0x5a; 64 * 32]).unwrap();
    drop(file);
    assert_serves(&url, &fixture.data);
    let failures = common::reload(&fixture.service, &fixture.path);
    assert_eq!(failures.len(), 1, "{failures:?}");
    assert!(
        matches!(invalid(&failures[0]), Some(InvalidFile::Checksum)),
        "{:?}",
        failures[0]
    );
    assert_serves(&url, &fixture.data);
}

/// A file replaced by renaming a new one over it keeps the old version served, with its ETag,
/// until a reload; then the new version and a new ETag, and queries made for the old setup are
/// refused as stale (a [`BlockingClient`] then fetches the new setup and asks again).
#[test]
fn a_renamed_replacement_is_served_after_a_reload() {
    let fixture = serve();
    let url = fixture.service.url();
    let etag = |url: &str| {
        ureq::get(&format!("{url}/v1/databases/db/setup"))
            .call()
            .unwrap()
            .headers()
            .get("etag")
            .unwrap()
            .to_str()
            .unwrap()
            .to_string()
    };
    let before = etag(&url);
    let http = HttpClient::new(&url, None);
    let old_setup = http.setup::<Lwe>("db").unwrap();
    let mut session = BlockingClient::connect(HttpClient::new(&url, None), "db").unwrap();
    let new_data = build(&fixture.path, 3); // written to a temporary name, renamed over
    assert_eq!(fetch(&url, 7).unwrap(), record(&fixture.data, 7));
    assert_eq!(etag(&url), before);

    assert!(common::reload(&fixture.service, &fixture.path).is_empty());
    assert_ne!(etag(&url), before);
    assert_eq!(fetch(&url, 7).unwrap(), record(&new_data, 7));
    // A query made for the old setup is refused as stale, not answered from the new data.
    let mut client = Client::new(old_setup);
    let (query, _) = client.query(7).unwrap();
    let stale = http.query::<Lwe>("db", client.setup(), &query).unwrap_err();
    assert!(matches!(stale, ClientError::StaleSetup { .. }), "{stale}");
    // A client that holds the old setup fetches the new one and asks again.
    assert_eq!(session.get(7).unwrap().unwrap(), record(&new_data, 7));
    assert_eq!(session.get(8).unwrap().unwrap(), record(&new_data, 8));

    // A reload with nothing changed keeps the entry as it is.
    let current = fixture.service.databases().catalog();
    let (again, _) = current.reload(&[&fixture.path]).unwrap();
    assert!(std::sync::Arc::ptr_eq(
        again.get("db").unwrap(),
        current.get("db").unwrap()
    ));
}

/// A query waiting in a database's batch when the databases are replaced is answered by the
/// version it was sent to.
#[test]
fn requests_in_flight_finish_across_a_reload() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db.obs");
    let data = build(&path, 4);
    let service = common::serve_file_batching(&path);
    let read = common::read_across_reload(&service, &path, 11, || {
        build(&path, 5);
    });
    assert_eq!(read, record(&data, 11));
}
