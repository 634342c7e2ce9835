//! What the service's test files share.

use std::path::Path;

use obscura_service::catalog::{Catalog, CatalogError};
use obscura_service::service::{BackgroundService, ServiceConfig};

/// A service of the database file at `path` on a free loopback port, with the default limits.
pub fn serve_file(path: &Path) -> BackgroundService {
    serve_file_with(path, ServiceConfig::default())
}

/// A service of the database file at `path` on a free loopback port, configured by `config`.
#[allow(dead_code)] // Not every test file configures its service.
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
