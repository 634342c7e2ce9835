//! A server follows the versions of the files it serves: a reload catches a database up from
//! its change log (the new batches applied to a copy, whatever the scheme), adopts the file a
//! checkpoint wrote when it holds the version served, and loads a file again only when neither
//! applies. Whatever way a version arrives, the database served is the one a fresh load of the
//! file gives, matrices and setup alike.

mod common;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use obscura_client::blocking::Client as BlockingClient;
use obscura_client::http::HttpClient;
use obscura_pir::keyword::{KeywordOptions, KeywordServer};
use obscura_pir::lwe::{EngineOptions, Server};
use obscura_pir::ypir::{self, Variant, YpirOptions};
use obscura_pir::Change;
use obscura_registry::{setup_sha256, Registry};
use obscura_service::catalog::{Arrival, Catalog, Entry};
use obscura_store::log;
use obscura_store::store::{self, Database};
use obscura_store::update::{checkpoint_file, update_file};

/// Value `index` of version `version`: version v sets the values v, v + 5, v + 10, ...
fn value(version: u64, index: u64) -> Vec<u8> {
    let last = (1..=version)
        .rev()
        .find(|v| index >= *v && (index - v).is_multiple_of(5));
    format!("value {index} of version {}", last.unwrap_or(0)).into_bytes()
}

/// Values or keys of each database.
const ITEMS: u64 = 120;

/// The changes of version `version` to a database of [`ITEMS`] values or keys.
fn changes(version: u64, keyword: bool) -> Vec<Change> {
    (version..ITEMS)
        .step_by(5)
        .map(|index| match keyword {
            true => Change::Upsert {
                key: format!("key {index}").into_bytes(),
                value: value(version, index),
            },
            false => Change::Set {
                index,
                value: value(version, index),
            },
        })
        .collect()
}

/// Database files of 120 values or keys in `dir`: YPIR's (when `ypir`: each of its versions
/// takes about a second, its packing plans made again), or the LWE engine's and a keyword
/// database's; each with whether it is keyed.
fn databases(dir: &Path, ypir: bool) -> Vec<(PathBuf, bool)> {
    let values: Vec<Vec<u8>> = (0..ITEMS).map(|i| value(0, i)).collect();
    let databases = if ypir {
        let options = YpirOptions {
            variant: Some(Variant::Ypir),
        };
        let server = ypir::Server::from_values(&values, options, &|_, _| {}).unwrap();
        vec![("ypir", Database::from(server), false)]
    } else {
        let lwe = Server::from_values(&values, EngineOptions::default(), &|_, _| {}).unwrap();
        let pairs: Vec<(Vec<u8>, Vec<u8>)> = (0..ITEMS)
            .map(|i| (format!("key {i}").into_bytes(), value(0, i)))
            .collect();
        let keyword: KeywordServer =
            KeywordServer::from_pairs(&pairs, KeywordOptions::default(), &|_, _| {}).unwrap();
        vec![
            ("lwe", Database::from(lwe), false),
            ("keyword", Database::from(keyword), true),
        ]
    };
    databases
        .into_iter()
        .map(|(name, database, keyed)| {
            let path = dir.join(format!("{name}.obs"));
            store::write_database(&path, &database).unwrap();
            (path, keyed)
        })
        .collect()
}

/// Commits version `version` of the file at `path`.
fn update(path: &Path, version: u64, keyword: bool) {
    let batch = changes(version, keyword);
    update_file(path, |_| Ok(batch), &Registry::default(), 4, &|_, _| {}).unwrap();
}

/// Reloads `catalog` from `path`; returns the new catalog and how its entry arrived.
fn reload(catalog: &Catalog, path: &Path) -> (Catalog, Arc<Entry>) {
    let (catalog, failures) = catalog.reload(&[path]).unwrap();
    assert!(failures.is_empty(), "{}", failures[0]);
    let entry = catalog.entries().next().unwrap().clone();
    (catalog, entry)
}

/// How an entry arrived, its time left out.
fn how(entry: &Entry) -> (&'static str, usize, bool) {
    match entry.arrival {
        Arrival::Given => ("given", 0, false),
        Arrival::Loaded { .. } => ("loaded", 0, false),
        Arrival::CaughtUp {
            versions, adopted, ..
        } => ("caught up", versions, adopted),
    }
}

/// The entry serves what a fresh load of its file gives: the same version, setup and
/// matrices.
fn assert_as_loaded(entry: &Entry, path: &Path) {
    let fresh = store::read_database(path).unwrap();
    assert_eq!(entry.info.version, fresh.listing().version);
    assert_eq!(entry.sha256, setup_sha256(&fresh.setup_bytes()));
    assert_eq!(entry.database.setup_bytes(), fresh.setup_bytes());
    assert!(
        matrices(&entry.database) == matrices(&fresh),
        "{}",
        path.display()
    );
}

/// The bytes of a database's matrices.
fn matrices(database: &Database) -> Vec<Vec<u8>> {
    database
        .matrices()
        .iter()
        .map(|m| m.as_bytes().to_vec())
        .collect()
}

/// The entry served before a catch-up is as it was, matrices `before` and all: the copy took
/// the changes.
fn assert_unchanged(entry: &Entry, before: &[Vec<u8>]) {
    assert_eq!(setup_sha256(&entry.database.setup_bytes()), entry.sha256);
    assert!(matrices(&entry.database) == before);
}

#[test]
fn new_versions_are_caught_up_checkpoints_adopted_and_other_files_loaded() {
    let dir = tempfile::tempdir().unwrap();
    for (path, keyed) in databases(dir.path(), false) {
        let catalog = Catalog::open(&[&path]).unwrap();
        let first = catalog.entries().next().unwrap().clone();
        assert_eq!(how(&first), ("loaded", 0, false));
        let before = matrices(&first.database);

        // One version, then two: only the batches appended are applied.
        update(&path, 1, keyed);
        let (catalog, entry) = reload(&catalog, &path);
        assert_eq!(how(&entry), ("caught up", 1, false), "{}", path.display());
        assert_as_loaded(&entry, &path);
        assert_unchanged(&first, &before);
        update(&path, 2, keyed);
        update(&path, 3, keyed);
        let (catalog, entry) = reload(&catalog, &path);
        assert_eq!(how(&entry), ("caught up", 2, false));
        assert_as_loaded(&entry, &path);

        // A reload with nothing new keeps the entry; so does a batch torn at the log's end.
        let (catalog, again) = reload(&catalog, &path);
        assert!(Arc::ptr_eq(&again, &entry));
        let log_path = log::path_of(&path);
        let mut torn = std::fs::read(&log_path).unwrap();
        torn.extend_from_slice(&[9; 50]);
        std::fs::write(&log_path, &torn).unwrap();
        let (catalog, again) = reload(&catalog, &path);
        assert!(Arc::ptr_eq(&again, &entry));

        // The checkpoint's file holds the version served: adopted, with what its log adds.
        checkpoint_file(&path, &Registry::default()).unwrap();
        let (catalog, entry) = reload(&catalog, &path);
        assert_eq!(how(&entry), ("caught up", 0, true));
        assert_as_loaded(&entry, &path);
        update(&path, 4, keyed);
        let (catalog, entry) = reload(&catalog, &path);
        assert_eq!(how(&entry), ("caught up", 1, false));
        assert_as_loaded(&entry, &path);

        // A checkpoint of a version the server never held is not adopted: loaded again.
        update(&path, 5, keyed);
        checkpoint_file(&path, &Registry::default()).unwrap();
        update(&path, 6, keyed);
        let (catalog, entry) = reload(&catalog, &path);
        assert_eq!(how(&entry), ("loaded", 0, false));
        assert_as_loaded(&entry, &path);

        // A log that does not continue the batches applied (another history) is loaded.
        std::fs::remove_file(&log_path).unwrap();
        update(&path, 7, keyed);
        let (_, entry) = reload(&catalog, &path);
        assert_eq!(how(&entry), ("loaded", 0, false));
        assert_as_loaded(&entry, &path);
    }
}

/// A query waiting in a database's batch while a reload catches the database up is answered
/// by the version it was sent to; the next query reads the new version.
#[test]
fn requests_in_flight_finish_across_a_catch_up() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db.obs");
    let values: Vec<Vec<u8>> = (0..120).map(|i| value(0, i)).collect();
    let server = Server::from_values(&values, EngineOptions::default(), &|_, _| {}).unwrap();
    store::write_database(&path, &Database::from(server)).unwrap();
    let service = common::serve_file_batching(&path);
    let read = common::read_across_reload(&service, &path, 11, || update(&path, 1, false));
    assert_eq!(read, value(0, 11));
    let entry = service.databases().catalog().get("db").unwrap().clone();
    assert_eq!(how(&entry), ("caught up", 1, false));
    let mut session = BlockingClient::connect(HttpClient::new(&service.url(), None), "db").unwrap();
    assert_eq!(session.get(11).unwrap().unwrap(), value(1, 11));
    assert_eq!(session.get(12).unwrap().unwrap(), value(0, 12));
}

/// YPIR's server (its first layer, residues, packed hint and packing plans) is caught up on a
/// copy like the others: the copy is what a fresh load gives, the entry served before is as it
/// was, and the setup keeps its digest.
#[test]
fn ypir_is_caught_up_on_a_copy() {
    let dir = tempfile::tempdir().unwrap();
    let (path, _) = databases(dir.path(), true).remove(0);
    let service = common::serve_file(&path);
    let served = || service.databases().catalog().get("ypir").unwrap().clone();
    let first = served();
    let before = matrices(&first.database);
    update(&path, 1, false);
    assert!(common::reload(&service, &path).is_empty());
    let entry = served();
    assert_eq!(how(&entry), ("caught up", 1, false));
    assert_as_loaded(&entry, &path);
    assert_unchanged(&first, &before);
    assert_eq!(entry.database.digest(), first.database.digest());
    assert!(matrices(&entry.database) != before);
}
