//! The HTTP client: fetches public setups, verified by their SHA-256 on every download and every
//! load from the cache, and exchanges queries for answers. Every response is bounded by what
//! its request can legitimately receive, before anything is allocated for it.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::Duration;

use obscura_pir::framing;
use obscura_pir::scheme::{AnswerOf, QueryOf, SetupOf};
use obscura_pir::{Encode, Message, PirClient, Scheme, SetupMessage};
use obscura_registry::setup_sha256;
use ureq::tls::{Certificate, RootCerts, TlsConfig, TlsProvider};
use ureq::Agent;

use crate::api::{ConsistencyInfo, DatabaseInfo};

/// The bytes a database name keeps in a URL path segment (RFC 3986's unreserved characters);
/// every other byte is percent-encoded.
const PATH_SEGMENT: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'_')
    .remove(b'.')
    .remove(b'~');
use crate::error::ClientError;
use crate::session::Request;
use crate::setup::{
    etag_of, refusal, sha256_of_etag, Accepted, Cached, SetupPolicy, Sha256,
    DEFAULT_MAX_QUERY_BYTES, DEFAULT_MAX_SETUP_BYTES, MAX_ERROR_BYTES, PATCH_IM,
};

/// The largest database list read.
const MAX_LIST_BYTES: u64 = 16 << 20;

/// The most bytes a consistency proof's JSON may take: 124 hashes in hex, the most a tree of
/// the largest height has, are under 9 KB.
const MAX_CONSISTENCY_BYTES: u64 = 64 << 10;

/// How a client fetches, verifies and caches setups. Built once, handed to
/// [`HttpClient::with_options`].
#[derive(Clone, Debug)]
pub struct ClientOptions {
    /// Folder where verified setups are cached, one subfolder per server (`None`: no cache).
    pub cache_dir: Option<PathBuf>,
    /// The SHA-256 every setup this client fetches must have, taken out of band (e.g. as
    /// `obscura build` printed it). Without it a setup is checked against the server's ETag,
    /// which catches corruption but not a server or network that lies.
    pub setup_sha256: Option<Sha256>,
    /// The largest setup accepted, in bytes; a larger one is refused before it is read.
    pub max_setup_bytes: u64,
    /// The largest query (or all the queries of an audit-path request) this client makes, in bytes;
    /// a setup that asks for more is refused.
    pub max_query_bytes: u64,
    /// Time limit of each request, from connecting to the last byte of the response.
    pub timeout: Duration,
    /// The bearer token sent with every request, for databases behind tokens.
    pub token: Option<String>,
    /// The certificates (DER) trusted as roots for `https://` servers, in place of the WebPKI
    /// roots: e.g. a server's self-signed certificate or a private CA (`obscura-service`'s
    /// `tls::certificates_from_pem` reads them from PEM).
    pub trusted_roots: Option<Vec<Vec<u8>>>,
}

/// The default cache folder of downloaded setups: `$XDG_CACHE_HOME/obscura` or
/// `~/.cache/obscura` (`None` where neither variable is set).
pub fn default_cache_dir() -> Option<PathBuf> {
    let base = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".cache")))?;
    Some(base.join("obscura"))
}

impl Default for ClientOptions {
    fn default() -> Self {
        Self {
            cache_dir: None,
            setup_sha256: None,
            max_setup_bytes: DEFAULT_MAX_SETUP_BYTES,
            max_query_bytes: DEFAULT_MAX_QUERY_BYTES,
            timeout: Duration::from_secs(300),
            token: None,
            trusted_roots: None,
        }
    }
}

/// A response that is not an error: its status, its ETag and its body.
struct Reply {
    status: u16,
    etag: Option<String>,
    body: Vec<u8>,
}

/// A client of one Obscura server.
pub struct HttpClient {
    base: String,
    agent: Agent,
    options: ClientOptions,
}

impl HttpClient {
    /// A client for the server at `base_url` (e.g. `http://127.0.0.1:8080`; a bare `host:port`
    /// means `http://`), caching public setups under `cache_dir` when given, with the other
    /// [`ClientOptions`] at their defaults.
    pub fn new(base_url: &str, cache_dir: Option<PathBuf>) -> Self {
        Self::with_options(
            base_url,
            ClientOptions {
                cache_dir,
                ..ClientOptions::default()
            },
        )
    }

    /// A client for the server at `base_url` (see [`HttpClient::new`]) with `options`.
    pub fn with_options(base_url: &str, options: ClientOptions) -> Self {
        let mut tls = TlsConfig::builder().provider(TlsProvider::Rustls);
        if let Some(roots) = &options.trusted_roots {
            let roots: Vec<Certificate<'static>> = roots
                .iter()
                .map(|der| Certificate::from_der(der).to_owned())
                .collect();
            tls = tls.root_certs(RootCerts::new_with_certs(&roots));
        }
        let agent: Agent = Agent::config_builder()
            .http_status_as_error(false)
            .timeout_global(Some(options.timeout))
            .tls_config(tls.build())
            .build()
            .into();
        // A bare host:port means plain HTTP.
        let base = base_url.trim_end_matches('/');
        let base = if base.contains("://") {
            base.to_string()
        } else {
            format!("http://{base}")
        };
        Self {
            base,
            agent,
            options,
        }
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// A GET request to `url`, with the token if there is one.
    fn get(&self, url: &str) -> ureq::RequestBuilder<ureq::typestate::WithoutBody> {
        self.authorized(self.agent.get(url))
    }

    /// A POST request of binary messages to `url`, with the token if there is one.
    fn post(&self, url: &str) -> ureq::RequestBuilder<ureq::typestate::WithBody> {
        self.authorized(
            self.agent
                .post(url)
                .header("content-type", "application/octet-stream"),
        )
    }

    /// `request` with the bearer token, if this client has one.
    fn authorized<B>(&self, request: ureq::RequestBuilder<B>) -> ureq::RequestBuilder<B> {
        match &self.options.token {
            Some(token) => request.header("authorization", format!("Bearer {token}")),
            None => request,
        }
    }

    /// Reads a response of at most `limit` bytes (`what` says why that is the limit), turning
    /// error statuses into [`ClientError::Status`]. A `Content-Length` above the limit is
    /// refused before the body is read, and reading stops at the limit whatever the server
    /// announced, so memory grows only with the bytes that arrived, never beyond the limit.
    fn receive(
        &self,
        url: &str,
        response: Result<ureq::http::Response<ureq::Body>, ureq::Error>,
        limit: u64,
        what: &'static str,
    ) -> Result<Reply, ClientError> {
        let transport = |source: ureq::Error| ClientError::Transport {
            url: url.to_string(),
            source,
        };
        let mut response = response.map_err(transport)?;
        let status = response.status().as_u16();
        let etag = response
            .headers()
            .get("etag")
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        let body = response.body_mut();
        if status >= 400 {
            let (text, cut) = read_at_most(body, MAX_ERROR_BYTES).map_err(transport)?;
            return Err(refusal(url, status, &text, cut));
        }
        let too_large = || ClientError::TooLarge {
            url: url.to_string(),
            limit,
            what,
        };
        if body.content_length().is_some_and(|length| length > limit) {
            return Err(too_large());
        }
        let (body, cut) = read_at_most(body, limit).map_err(transport)?;
        if cut {
            return Err(too_large());
        }
        Ok(Reply { status, etag, body })
    }

    /// The databases the server offers.
    pub fn list(&self) -> Result<Vec<DatabaseInfo>, ClientError> {
        let url = self.url("/v1/databases");
        let reply = self.receive(
            &url,
            self.get(&url).call(),
            MAX_LIST_BYTES,
            "the most a database list may take",
        )?;
        serde_json::from_slice(&reply.body).map_err(|source| ClientError::BadList { url, source })
    }

    /// The consistency proof from the first `first` leaves of Merkle tree `name` to the tree
    /// the server holds now, as the server sends it (unverified; see
    /// [`crate::blocking::Client::consistency`]).
    pub fn consistency(&self, name: &str, first: u64) -> Result<ConsistencyInfo, ClientError> {
        let url = format!("{}?first={first}", self.database_url(name, "consistency"));
        let reply = self.receive(
            &url,
            self.get(&url).call(),
            MAX_CONSISTENCY_BYTES,
            "the most a consistency proof may take",
        )?;
        serde_json::from_slice(&reply.body).map_err(|source| ClientError::Unexpected {
            url,
            message: format!("not a consistency proof: {source}"),
        })
    }

    /// What this client accepts of setups and queries.
    pub fn policy(&self) -> SetupPolicy {
        SetupPolicy {
            pin: self.options.setup_sha256,
            max_setup_bytes: self.options.max_setup_bytes,
            max_query_bytes: self.options.max_query_bytes,
        }
    }

    /// The public setup of database `name`, of scheme `S` (see [`HttpClient::fetch_setup`]).
    pub fn setup<S: Scheme>(&self, name: &str) -> Result<SetupOf<S>, ClientError> {
        let setup = <SetupOf<S> as SetupMessage>::from_bytes(&self.fetch_setup(name)?.bytes)?;
        self.policy()
            .check_query_bytes(&self.setup_url(name), setup.query_bytes())?;
        Ok(setup)
    }

    fn setup_url(&self, name: &str) -> String {
        self.database_url(name, "setup")
    }

    /// The URL of `route` of database `name`, the name percent-encoded as one path segment.
    fn database_url(&self, name: &str, route: &str) -> String {
        let name = percent_encoding::utf8_percent_encode(name, PATH_SEGMENT);
        self.url(&format!("/v1/databases/{name}/{route}"))
    }

    /// The encoded public setup of database `name`, verified ([`SetupPolicy::accept`]): its
    /// SHA-256 must equal the server's ETag and the pinned [`ClientOptions::setup_sha256`]
    /// when given. A cached copy is offered with `If-None-Match` when its bytes still have the
    /// SHA-256 recorded beside them (a damaged entry is deleted) and used when the server
    /// confirms it is current; else the server is asked for the patches from it to the current
    /// setup (`A-IM`), applied when it sends them, or the setup is downloaded. A new setup is
    /// cached only once verified; when patches do not apply, the whole setup is downloaded.
    pub fn fetch_setup(&self, name: &str) -> Result<Accepted, ClientError> {
        let policy = self.policy();
        let cache = self
            .options
            .cache_dir
            .as_deref()
            .map(|dir| CacheEntry::new(dir, &self.base, name));
        let cached = policy.usable(
            cache
                .as_ref()
                .and_then(|entry| entry.load(policy.max_setup_bytes)),
        );
        let offered = cached.is_some();
        let accepted = match self.request_setup(name, &policy, cached) {
            Err(ClientError::BadPatch { .. } | ClientError::SetupSha256 { .. }) if offered => {
                self.request_setup(name, &policy, None)
            }
            accepted => accepted,
        }?;
        if let (Some(entry), false) = (cache, accepted.from_cache) {
            // A cache that cannot be written only costs a download next time.
            let _ = entry.store(&accepted.sha256, &accepted.bytes);
        }
        Ok(accepted)
    }

    /// Requests the setup of database `name`, offering `cached` for revalidation or patching.
    fn request_setup(
        &self,
        name: &str,
        policy: &SetupPolicy,
        cached: Option<Cached>,
    ) -> Result<Accepted, ClientError> {
        let url = self.setup_url(name);
        let mut request = self.get(&url);
        if let Some(cached) = &cached {
            request = request
                .header("If-None-Match", etag_of(&cached.sha256))
                .header("A-IM", PATCH_IM);
        }
        let reply = self.receive(
            &url,
            request.call(),
            policy.max_setup_bytes,
            "the most this client accepts for a setup",
        )?;
        policy.accept(
            &url,
            reply.status,
            reply.etag.as_deref(),
            reply.body,
            cached,
        )
    }

    /// Sends `request`, a session's request for database `name`, and reads its answer (no
    /// more than the bytes it is due).
    pub fn send(&self, name: &str, request: &Request) -> Result<Vec<u8>, ClientError> {
        let url = self.database_url(name, request.route);
        let reply = self.receive(
            &url,
            self.post(&url).send(&request.body[..]),
            request.answer_bytes,
            "the size of an answer",
        )?;
        Ok(reply.body)
    }

    /// Sends one query for database `name`, of scheme `S`, to the route of the scheme's
    /// lookup, and decodes the answer against `setup`.
    pub fn query<S: Scheme>(
        &self,
        name: &str,
        setup: &SetupOf<S>,
        query: &QueryOf<S>,
    ) -> Result<AnswerOf<S>, ClientError> {
        let request = Request {
            route: <S::Client as PirClient>::LOOKUP.route(),
            body: Encode::to_bytes(query),
            answer_bytes: setup.answer_bytes(),
        };
        Ok(AnswerOf::<S>::from_bytes(
            &self.send(name, &request)?,
            setup,
        )?)
    }

    /// Sends several queries for database `name` in one request; the answers come back in
    /// order, from one pass over the database.
    pub fn batch<S: Scheme>(
        &self,
        name: &str,
        setup: &SetupOf<S>,
        queries: &[QueryOf<S>],
    ) -> Result<Vec<AnswerOf<S>>, ClientError> {
        let url = self.database_url(name, "batch");
        let unexpected = |message: String| ClientError::Unexpected {
            url: url.clone(),
            message,
        };
        let request = self.post(&url);
        let messages: Vec<Vec<u8>> = queries.iter().map(Encode::to_bytes).collect();
        let expected = (queries.len() as u64)
            .saturating_mul(setup.answer_bytes().saturating_add(4))
            .saturating_add(4);
        let reply = self.receive(
            &url,
            request.send(&framing::encode(&messages)[..]),
            expected,
            "the size of the framed answers",
        )?;
        let answers = framing::decode_exact(&reply.body, queries.len()).map_err(unexpected)?;
        Ok(answers
            .into_iter()
            .map(|answer| AnswerOf::<S>::from_bytes(answer, setup))
            .collect::<Result<_, _>>()?)
    }
}

/// Reads at most `limit` bytes of `body`; says whether more followed. The buffer grows with the
/// bytes read, whatever length the server announced.
fn read_at_most(body: &mut ureq::Body, limit: u64) -> Result<(Vec<u8>, bool), ureq::Error> {
    let mut bytes = Vec::new();
    body.as_reader()
        .take(limit.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(ureq::Error::Io)?;
    let cut = bytes.len() as u64 > limit;
    bytes.truncate(usize::try_from(limit).unwrap_or(usize::MAX));
    Ok((bytes, cut))
}

/// Where a database's cached setup lies: one folder per server, the setup's ETag (its SHA-256)
/// beside it.
struct CacheEntry {
    setup: PathBuf,
    etag: PathBuf,
}

impl CacheEntry {
    /// The entry of database `name` of server `base` under `dir`. Server and database names are
    /// reduced to letters, digits, `-` and `_`, so no name reaches outside the cache folder
    /// (names that collide only share a slot: the server's ETag check refuses a stale setup).
    fn new(dir: &Path, base: &str, name: &str) -> Self {
        let safe = |text: &str| -> String {
            text.chars()
                .map(|c| {
                    if c.is_ascii_alphanumeric() || c == '-' {
                        c
                    } else {
                        '_'
                    }
                })
                .collect()
        };
        let (folder, name) = (dir.join(safe(base)), safe(name));
        Self {
            setup: folder.join(format!("{name}.setup")),
            etag: folder.join(format!("{name}.etag")),
        }
    }

    /// The cached setup and its SHA-256, recomputed over the bytes; an entry whose bytes do
    /// not have the recorded SHA-256 (damaged, half written, or from another version) is
    /// deleted, as is one larger than `max_bytes`.
    fn load(&self, max_bytes: u64) -> Option<Cached> {
        let recorded = std::fs::read_to_string(&self.etag).ok();
        let size = std::fs::metadata(&self.setup).ok().map(|m| m.len());
        let (recorded, size) = match (recorded, size) {
            (None, None) => return None,
            (Some(recorded), Some(size)) if size <= max_bytes => (recorded, size),
            _ => return self.remove(),
        };
        let bytes = std::fs::read(&self.setup).ok()?;
        let found = setup_sha256(&bytes);
        if bytes.len() as u64 != size || sha256_of_etag(&recorded) != Some(found) {
            return self.remove();
        }
        Some(Cached {
            sha256: found,
            bytes,
        })
    }

    /// Deletes the entry (what cannot be deleted is verified again next time).
    fn remove(&self) -> Option<Cached> {
        let _ = std::fs::remove_file(&self.setup);
        let _ = std::fs::remove_file(&self.etag);
        None
    }

    /// Caches `bytes`, whose SHA-256 is `sha256`; each file is replaced whole (written beside
    /// it, then renamed), so a reader sees the old file or the new one.
    fn store(&self, sha256: &Sha256, bytes: &[u8]) -> std::io::Result<()> {
        let folder = self.setup.parent().expect("cache paths have a folder");
        std::fs::create_dir_all(folder)?;
        for (path, contents) in [
            (&self.setup, bytes),
            (&self.etag, etag_of(sha256).as_bytes()),
        ] {
            let temp = tempfile::NamedTempFile::new_in(folder)?;
            std::fs::write(temp.path(), contents)?;
            temp.persist(path).map_err(|e| e.error)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cache_paths_stay_in_the_cache_folder() {
        let dir = Path::new("/cache");
        for name in ["../../etc/passwd", "a/b", "..", "db"] {
            let entry = CacheEntry::new(dir, "http://127.0.0.1:8080", name);
            for path in [entry.setup, entry.etag] {
                assert_eq!(
                    path.parent().unwrap().parent(),
                    Some(dir),
                    "{name}: {path:?}"
                );
                assert!(!path.to_string_lossy().contains(".."), "{name}: {path:?}");
            }
        }
    }

    #[test]
    fn database_names_are_one_path_segment() {
        let client = HttpClient::new("http://127.0.0.1:8080/", None);
        for (name, url) in [
            (
                "db-1_v2.~",
                "http://127.0.0.1:8080/v1/databases/db-1_v2.~/query",
            ),
            ("a/b", "http://127.0.0.1:8080/v1/databases/a%2Fb/query"),
            (
                "x?y#z",
                "http://127.0.0.1:8080/v1/databases/x%3Fy%23z/query",
            ),
            ("é ", "http://127.0.0.1:8080/v1/databases/%C3%A9%20/query"),
        ] {
            assert_eq!(client.database_url(name, "query"), url, "{name}");
        }
    }
}
