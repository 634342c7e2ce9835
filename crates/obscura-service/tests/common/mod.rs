//! What the service's test files share.

use std::path::Path;

use obscura_service::catalog::{Catalog, CatalogError};
use obscura_service::service::{BackgroundService, ServiceConfig};

/// A service of the database file at `path` on a free loopback port, with the default limits.
pub fn serve_file(path: &Path) -> BackgroundService {
    BackgroundService::start(
        Catalog::open(&[path]).unwrap(),
        ServiceConfig::default(),
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
