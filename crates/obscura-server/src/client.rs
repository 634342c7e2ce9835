//! The HTTP client: fetches public setups, verified by their SHA-256 on every download and every
//! load from the cache, and exchanges queries for answers. Every response is bounded by what
//! its request can legitimately receive, before anything is allocated for it.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::Duration;

use obscura_pir::scheme::{AnswerOf, QueryOf, SetupOf};
use obscura_pir::{Encode, Message, PirError, Scheme, SetupMessage};
use ureq::tls::{Certificate, RootCerts, TlsConfig, TlsProvider};
use ureq::Agent;

use crate::catalog::DatabaseInfo;
use crate::store::setup_sha256;
use obscura_pir::framing;

/// The largest public setup a client accepts unless told otherwise (1 GiB; a 1 GiB square
/// database has a 128 MiB setup).
pub const DEFAULT_MAX_SETUP_BYTES: u64 = 1 << 30;

/// The largest query a client makes unless told otherwise (1 GiB; a keyword store of 2^25 keys
/// has 144 MB queries, an index database of 2^20 records in the one-per-column layout 4 MiB).
pub const DEFAULT_MAX_QUERY_BYTES: u64 = 1 << 30;

/// The largest database list read.
const MAX_LIST_BYTES: u64 = 16 << 20;

/// The most read of an error response.
const MAX_ERROR_BYTES: u64 = 64 << 10;

/// The most characters of a server's error message shown.
const MAX_ERROR_CHARS: usize = 1000;

/// A SHA-256 hash.
pub type Sha256 = [u8; 32];

/// What went wrong talking to a server.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The server could not be reached, or the connection failed.
    #[error("cannot reach {url}: {message}")]
    Transport {
        /// The URL requested.
        url: String,
        /// The transport error.
        message: String,
    },
    /// The server answered with an error status.
    #[error("{url}: the server answered {status}: {message}")]
    Status {
        /// The URL requested.
        url: String,
        /// The HTTP status.
        status: u16,
        /// The server's message (printable characters only, cut after 1000).
        message: String,
    },
    /// The server answers another setup of the database than the one the query was made for
    /// (HTTP 409): the database was replaced since its setup was fetched. Fetch the setup again
    /// and make a new query.
    #[error("{url}: the server answered 409: {message}")]
    StaleSetup {
        /// The URL requested.
        url: String,
        /// The server's message.
        message: String,
    },
    /// The server's bytes are not a valid message.
    #[error(transparent)]
    Pir(#[from] PirError),
    /// The response is not what the request asked for.
    #[error("{url}: unexpected response: {message}")]
    Unexpected {
        /// The URL requested.
        url: String,
        /// What was wrong.
        message: String,
    },
    /// The response is larger than anything the request can legitimately receive.
    #[error("{url}: the response is larger than {limit} bytes, {what}")]
    TooLarge {
        /// The URL requested.
        url: String,
        /// The most bytes accepted.
        limit: u64,
        /// Why that is the limit.
        what: &'static str,
    },
    /// The setup's bytes do not have the SHA-256 they must have: they were corrupted on the way,
    /// or are not the setup expected. Nothing was cached.
    #[error(
        "{url}: the setup's SHA-256 is {found} where {against} says {expected}: refused, nothing was cached"
    )]
    SetupSha256 {
        /// The URL requested.
        url: String,
        /// The SHA-256 of the bytes received, in hex.
        found: String,
        /// The SHA-256 they must have, in hex.
        expected: String,
        /// Where the expected value comes from.
        against: &'static str,
    },
}

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
    /// The largest query (or all the queries of a proof request) this client makes, in bytes;
    /// a setup that asks for more is refused.
    pub max_query_bytes: u64,
    /// Time limit of each request, from connecting to the last byte of the response.
    pub timeout: Duration,
    /// The bearer token sent with every request, for databases behind tokens.
    pub token: Option<String>,
    /// The certificates (DER) trusted as roots for `https://` servers, in place of the WebPKI
    /// roots: e.g. a server's self-signed certificate or a private CA
    /// ([`tls::certificates_from_pem`](crate::tls::certificates_from_pem) reads them from PEM).
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
        let transport = |message: String| ClientError::Transport {
            url: url.to_string(),
            message,
        };
        let mut response = response.map_err(|e| transport(e.to_string()))?;
        let status = response.status().as_u16();
        let etag = response
            .headers()
            .get("etag")
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        let body = response.body_mut();
        if status >= 400 {
            let (text, cut) = read_at_most(body, MAX_ERROR_BYTES).map_err(transport)?;
            let (url, message) = (url.to_string(), printable(&text, cut));
            return Err(match status {
                409 => ClientError::StaleSetup { url, message },
                _ => ClientError::Status {
                    url,
                    status,
                    message,
                },
            });
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
        serde_json::from_slice(&reply.body).map_err(|e| ClientError::Unexpected {
            url,
            message: e.to_string(),
        })
    }

    /// The public setup of database `name`, of scheme `S` (see [`HttpClient::setup_bytes`]).
    /// A setup whose queries would exceed [`ClientOptions::max_query_bytes`] is refused: a
    /// setup of a few kilobytes can describe a matrix whose query would take gigabytes to make.
    pub fn setup<S: Scheme>(&self, name: &str) -> Result<SetupOf<S>, ClientError> {
        self.decode_setup::<S>(name, &self.setup_bytes(name)?)
    }

    /// Decodes `bytes`, the setup of database `name` from [`HttpClient::setup_bytes`], as a
    /// setup of scheme `S`, refused as [`HttpClient::setup`] says.
    pub fn decode_setup<S: Scheme>(
        &self,
        name: &str,
        bytes: &[u8],
    ) -> Result<SetupOf<S>, ClientError> {
        let setup = <SetupOf<S> as SetupMessage>::from_bytes(bytes)?;
        let (bytes, limit) = (setup.query_bytes(), self.options.max_query_bytes);
        if bytes > limit {
            return Err(ClientError::Unexpected {
                url: self.url(&format!("/v1/databases/{name}/setup")),
                message: format!(
                    "the setup asks for queries of {bytes} bytes, more than the {limit} this client makes (--max-query-bytes)"
                ),
            });
        }
        Ok(setup)
    }

    /// The encoded public setup of database `name`, verified: its SHA-256 must equal the
    /// server's ETag and the pinned [`ClientOptions::setup_sha256`] when given. A cached copy
    /// is used when its bytes still have the SHA-256 recorded beside them (a damaged entry is
    /// deleted) and the server confirms it is current; otherwise the setup is downloaded, and
    /// cached only once verified.
    pub fn setup_bytes(&self, name: &str) -> Result<Vec<u8>, ClientError> {
        let url = self.url(&format!("/v1/databases/{name}/setup"));
        let cache = self
            .options
            .cache_dir
            .as_deref()
            .map(|dir| CacheEntry::new(dir, &self.base, name));
        let cached = cache
            .as_ref()
            .and_then(|entry| entry.load(self.options.max_setup_bytes))
            .filter(|(sha256, _)| self.options.setup_sha256.is_none_or(|pin| pin == *sha256));
        let mut request = self.get(&url);
        if let Some((sha256, _)) = &cached {
            request = request.header("If-None-Match", etag_of(sha256));
        }
        let reply = self.receive(
            &url,
            request.call(),
            self.options.max_setup_bytes,
            "the most this client accepts for a setup",
        )?;
        if reply.status == 304 {
            return match cached {
                Some((_, bytes)) => Ok(bytes),
                None => Err(ClientError::Unexpected {
                    url,
                    message: "304 Not Modified, but no cached setup was offered".into(),
                }),
            };
        }
        let found = setup_sha256(&reply.body);
        self.verify(&url, &found, reply.etag.as_deref())?;
        if let Some(entry) = cache {
            // A cache that cannot be written only costs a download next time.
            let _ = entry.store(&found, &reply.body);
        }
        Ok(reply.body)
    }

    /// Checks the SHA-256 `found` of a downloaded setup against the pin and the server's ETag
    /// (one of them must be there).
    fn verify(&self, url: &str, found: &Sha256, etag: Option<&str>) -> Result<(), ClientError> {
        let mismatch = |expected: &Sha256, against| ClientError::SetupSha256 {
            url: url.to_string(),
            found: hex::encode(found),
            expected: hex::encode(expected),
            against,
        };
        if let Some(pin) = &self.options.setup_sha256 {
            if pin != found {
                return Err(mismatch(pin, "the pinned SHA-256"));
            }
        }
        match (etag.map(sha256_of_etag), &self.options.setup_sha256) {
            (Some(Some(announced)), _) if announced != *found => {
                Err(mismatch(&announced, "the server's ETag"))
            }
            (Some(Some(_)), _) | (_, Some(_)) => Ok(()),
            (etag, None) => Err(ClientError::Unexpected {
                url: url.to_string(),
                message: format!(
                    "the setup cannot be verified: {} (pin its SHA-256 to accept it)",
                    match etag {
                        None => "the server sent no ETag".to_string(),
                        Some(_) => "the server's ETag is not a SHA-256 in hex".to_string(),
                    }
                ),
            }),
        }
    }

    /// Sends one query for database `name`, of scheme `S`, and decodes the answer against
    /// `setup`.
    pub fn query<S: Scheme>(
        &self,
        name: &str,
        setup: &SetupOf<S>,
        query: &QueryOf<S>,
    ) -> Result<AnswerOf<S>, ClientError> {
        let url = self.url(&format!("/v1/databases/{name}/query"));
        let request = self.post(&url);
        let reply = self.receive(
            &url,
            request.send(&Encode::to_bytes(query)[..]),
            setup.answer_bytes(),
            "the size of an answer",
        )?;
        Ok(AnswerOf::<S>::from_bytes(&reply.body, setup)?)
    }

    /// Sends several queries for database `name` in one request; the answers come back in
    /// order, from one pass over the database.
    pub fn batch<S: Scheme>(
        &self,
        name: &str,
        setup: &SetupOf<S>,
        queries: &[QueryOf<S>],
    ) -> Result<Vec<AnswerOf<S>>, ClientError> {
        let url = self.url(&format!("/v1/databases/{name}/batch"));
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
fn read_at_most(body: &mut ureq::Body, limit: u64) -> Result<(Vec<u8>, bool), String> {
    let mut bytes = Vec::new();
    body.as_reader()
        .take(limit.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(|e| e.to_string())?;
    let cut = bytes.len() as u64 > limit;
    bytes.truncate(usize::try_from(limit).unwrap_or(usize::MAX));
    Ok((bytes, cut))
}

/// A server's message made safe for one terminal line: control characters become spaces, and
/// the text is cut after [`MAX_ERROR_CHARS`] characters (or where reading stopped, `cut`).
fn printable(bytes: &[u8], cut: bool) -> String {
    let text = String::from_utf8_lossy(bytes);
    let mut chars = text.trim().chars();
    let shown: String = chars
        .by_ref()
        .take(MAX_ERROR_CHARS)
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    if cut || chars.next().is_some() {
        format!("{shown}… (cut; {} bytes or more)", bytes.len())
    } else {
        shown
    }
}

/// The ETag of a setup with SHA-256 `sha256`: its hex, quoted.
fn etag_of(sha256: &Sha256) -> String {
    format!("\"{}\"", hex::encode(sha256))
}

/// The SHA-256 an ETag names, if it is one in hex (quoted or not).
fn sha256_of_etag(etag: &str) -> Option<Sha256> {
    let text = etag.trim().trim_matches('"');
    hex::decode(text).ok()?.try_into().ok()
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
    fn load(&self, max_bytes: u64) -> Option<(Sha256, Vec<u8>)> {
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
        Some((found, bytes))
    }

    /// Deletes the entry (what cannot be deleted is verified again next time).
    fn remove(&self) -> Option<(Sha256, Vec<u8>)> {
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
    use obscura_pir::lwe::{Lwe, Query};

    #[test]
    fn setups_asking_for_huge_queries_are_refused() {
        let data = vec![7u8; 64 * 10];
        let server = obscura_pir::lwe::Server::setup(
            &data,
            10,
            obscura_pir::lwe::SetupOptions::default(),
            &|_, _| {},
        )
        .unwrap();
        let setup = server.public_setup();
        let bytes = Query::encoded_len(setup);
        let client = |max_query_bytes| {
            HttpClient::with_options(
                "http://127.0.0.1:9",
                ClientOptions {
                    max_query_bytes,
                    ..ClientOptions::default()
                },
            )
        };
        let encoded = setup.to_bytes();
        assert!(client(bytes).decode_setup::<Lwe>("db", &encoded).is_ok());
        let error = client(bytes - 1)
            .decode_setup::<Lwe>("db", &encoded)
            .unwrap_err();
        let text = error.to_string();
        assert!(text.contains(&format!("queries of {bytes}")), "{text}");
        assert!(text.contains("--max-query-bytes"), "{text}");
    }

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
    fn server_messages_are_one_short_printable_line() {
        assert_eq!(printable(b" busy\n", false), "busy");
        assert_eq!(printable(b"a\x1b[2Jb\nc", false), "a [2Jb c");
        let long = vec![b'x'; 5000];
        let shown = printable(&long, false);
        assert!(shown.starts_with(&"x".repeat(MAX_ERROR_CHARS)), "{shown}");
        assert!(shown.ends_with("… (cut; 5000 bytes or more)"), "{shown}");
        assert!(printable(b"short", true).ends_with("(cut; 5 bytes or more)"));
    }

    #[test]
    fn etags_name_sha256_hashes() {
        let sha256 = setup_sha256(b"setup");
        assert_eq!(sha256_of_etag(&etag_of(&sha256)), Some(sha256));
        assert_eq!(sha256_of_etag(&hex::encode(sha256)), Some(sha256));
        assert_eq!(sha256_of_etag("\"abcd\""), None);
        assert_eq!(sha256_of_etag("W/\"zz\""), None);
    }
}
