//! What the service's test files share.

use std::path::Path;

use obscura_service::catalog::CatalogError;
use obscura_service::service::BackgroundService;

/// Reloads the service's databases from `path`, as `obscura serve` does on SIGHUP; returns why
/// files were refused (their databases are then served on as they were).
pub fn reload(service: &BackgroundService, path: &Path) -> Vec<CatalogError> {
    let databases = service.databases();
    let (catalog, failures) = databases.catalog().reload(&[path]).unwrap();
    databases.replace(catalog);
    failures
}
