//! The page of `obscura serve --ui`: a person picks a database, types a key or an index, and
//! sees the value fetched privately by the browser client (WebAssembly), with the sizes and
//! timings of each step. The page is part of the service; the client's package is embedded
//! when the service is built with `OBSCURA_WASM_PKG` (see `build.rs`).

use axum::extract::Path;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;

include!(concat!(env!("OUT_DIR"), "/client_package.rs"));

/// The page's own files.
const PAGE: [(&str, &[u8]); 3] = [
    ("index.html", include_bytes!("../../ui/index.html")),
    ("app.js", include_bytes!("../../ui/app.js")),
    ("style.css", include_bytes!("../../ui/style.css")),
];

/// What the page may load and reach: its own origin's scripts, styles and service, and the
/// WebAssembly module compiled from them; nothing inline, nothing from elsewhere.
const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self' 'wasm-unsafe-eval'; \
     style-src 'self'; connect-src 'self'; img-src 'self'; base-uri 'none'; form-action 'none'; \
     frame-ancestors 'none'";

/// The built-in page, with the browser client it runs.
#[derive(Clone, Copy)]
pub struct Ui {
    package: [(&'static str, &'static [u8]); 3],
}

/// Names the files and their sizes, not their bytes.
impl std::fmt::Debug for Ui {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_map()
            .entries(
                PAGE.iter()
                    .chain(&self.package)
                    .map(|(name, bytes)| (name, bytes.len())),
            )
            .finish()
    }
}

/// The service was built without the browser client's package, so it cannot serve the page.
#[derive(Debug, thiserror::Error)]
#[error(
    "this obscura was built without the browser client's package, which the page runs: build it \
     with scripts/build-wasm, then build obscura with OBSCURA_WASM_PKG set to its folder \
     (OBSCURA_WASM_PKG=$PWD/target/obscura-wasm-pkg cargo install --path crates/obscura-cli)"
)]
pub struct UiUnavailable;

impl Ui {
    /// The page, if the browser client's package was embedded at build time.
    pub fn embedded() -> Result<Self, UiUnavailable> {
        CLIENT_PACKAGE
            .map(|package| Self { package })
            .ok_or(UiUnavailable)
    }

    /// The routes of the page: `/` and its files under `/ui/`.
    pub(super) fn routes<S: Clone + Send + Sync + 'static>(self) -> Router<S> {
        Router::new()
            .route("/", get(move || async move { self.file("index.html") }))
            .route(
                "/ui/{file}",
                get(move |Path(name): Path<String>| async move { self.file(&name) }),
            )
    }

    /// The file called `name`, with its type and the page's security headers; 404 for any
    /// other name.
    fn file(self, name: &str) -> Response {
        let Some((_, bytes)) = PAGE
            .iter()
            .chain(&self.package)
            .find(|(file, _)| *file == name)
        else {
            return (
                StatusCode::NOT_FOUND,
                format!("no file {name:?} in the page\n"),
            )
                .into_response();
        };
        let kind = match name.rsplit_once('.').map(|(_, extension)| extension) {
            Some("html") => "text/html; charset=utf-8",
            Some("js") => "text/javascript; charset=utf-8",
            Some("css") => "text/css; charset=utf-8",
            _ => "application/wasm",
        };
        let mut response = (
            [
                (header::CONTENT_TYPE, kind),
                (header::CACHE_CONTROL, "no-cache"),
                (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
            ],
            *bytes,
        )
            .into_response();
        if name == "index.html" {
            let headers = response.headers_mut();
            headers.insert(
                header::CONTENT_SECURITY_POLICY,
                HeaderValue::from_static(CONTENT_SECURITY_POLICY),
            );
            headers.insert(
                header::REFERRER_POLICY,
                HeaderValue::from_static("no-referrer"),
            );
        }
        response
    }
}
