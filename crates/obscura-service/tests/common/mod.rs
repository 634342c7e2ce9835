//! What the service's test files share.

use std::path::Path;
use std::time::Duration;

use obscura_client::http::HttpClient;
use obscura_pir::lwe::{Client, Lwe};
use obscura_pir::PirClient;

use obscura_service::catalog::{Catalog, CatalogError};
use obscura_service::service::{BackgroundService, ServiceConfig};

/// A service of the database file at `path` on a free loopback port, with the default limits.
pub fn serve_file(path: &Path) -> BackgroundService {
    serve_file_with(path, ServiceConfig::default())
}

/// A service of the database file at `path` on a free loopback port, configured by `config`.
pub fn serve_file_with(path: &Path, config: ServiceConfig) -> BackgroundService {
    BackgroundService::start(
        Catalog::open(&[path]).unwrap(),
        config,
        "127.0.0.1:0".parse().unwrap(),
    )
    .unwrap()
}

/// Reloads the service's databases from `path`, as `obscura serve` does on SIGHUP; returns why
/// files were refused (their databases are then served on as they were).
pub fn reload(service: &BackgroundService, path: &Path) -> Vec<CatalogError> {
    let databases = service.databases();
    let (catalog, failures) = databases.catalog().reload(&[path]).unwrap();
    databases.replace(catalog);
    failures
}

/// A service of the LWE database file at `path` whose queries wait 400 ms in its batch.
#[allow(dead_code)] // Not every test file has queries wait.
pub fn serve_file_batching(path: &Path) -> BackgroundService {
    let config = ServiceConfig {
        batch_window: Duration::from_millis(400),
        ..ServiceConfig::default()
    };
    serve_file_with(path, config)
}

/// What a query for record `index` of the database `db` of `service` (from
/// [`serve_file_batching`]) decodes to when, while it waits in the batch, `change` changes the
/// file at `path` and the service reloads it.
#[allow(dead_code)] // Not every test file has queries wait.
pub fn read_across_reload(
    service: &BackgroundService,
    path: &Path,
    index: u64,
    change: impl FnOnce(),
) -> Vec<u8> {
    let http = HttpClient::new(&service.url(), None);
    let mut client = Client::new(http.setup::<Lwe>("db").unwrap());
    let (query, state) = client.query(index).unwrap();
    std::thread::scope(|scope| {
        let waiting = scope.spawn(|| http.query::<Lwe>("db", client.setup(), &query));
        std::thread::sleep(Duration::from_millis(100));
        change();
        assert!(reload(service, path).is_empty());
        let answer = waiting.join().unwrap().unwrap();
        client.decode(state, &answer).unwrap()
    })
}
