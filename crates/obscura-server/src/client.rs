//! The HTTP client: fetches (and caches) public setups and exchanges queries for answers.

use std::path::{Path, PathBuf};
use std::time::Duration;

use obscura_pir::batch::treepir::TreePirSetup;
use obscura_pir::keyword::KeywordSetup;
use obscura_pir::lwe::{Answer, PublicSetup, Query};
use obscura_pir::PirError;
use ureq::Agent;

use crate::catalog::DatabaseInfo;
use crate::framing;

/// Largest response the client reads (a 1 GiB square database has a 128 MiB setup).
const MAX_RESPONSE_BYTES: u64 = 4 << 30;

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
        /// The server's message.
        message: String,
    },
    /// The server's bytes are not a valid message.
    #[error(transparent)]
    Pir(#[from] PirError),
    /// The server's JSON is not a database list.
    #[error("{url}: unexpected response: {message}")]
    Unexpected {
        /// The URL requested.
        url: String,
        /// What was wrong.
        message: String,
    },
}

/// A client of one Obscura server.
pub struct HttpClient {
    base: String,
    agent: Agent,
    cache_dir: Option<PathBuf>,
}

impl HttpClient {
    /// A client for the server at `base_url` (e.g. `http://127.0.0.1:8080`; a bare `host:port`
    /// means `http://`), caching public setups under `cache_dir` when given.
    pub fn new(base_url: &str, cache_dir: Option<PathBuf>) -> Self {
        let agent: Agent = Agent::config_builder()
            .http_status_as_error(false)
            .timeout_global(Some(Duration::from_secs(300)))
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
            cache_dir,
        }
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// Reads a response body, turning error statuses into [`ClientError::Status`].
    fn body(
        &self,
        url: &str,
        response: Result<ureq::http::Response<ureq::Body>, ureq::Error>,
    ) -> Result<(u16, Option<String>, Vec<u8>), ClientError> {
        let transport = |e: ureq::Error| ClientError::Transport {
            url: url.to_string(),
            message: e.to_string(),
        };
        let mut response = response.map_err(transport)?;
        let status = response.status().as_u16();
        let etag = response
            .headers()
            .get("etag")
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        let body = response
            .body_mut()
            .with_config()
            .limit(MAX_RESPONSE_BYTES)
            .read_to_vec()
            .map_err(transport)?;
        if status >= 400 {
            return Err(ClientError::Status {
                url: url.to_string(),
                status,
                message: String::from_utf8_lossy(&body).trim().to_string(),
            });
        }
        Ok((status, etag, body))
    }

    /// The databases the server offers.
    pub fn list(&self) -> Result<Vec<DatabaseInfo>, ClientError> {
        let url = self.url("/v1/databases");
        let (_, _, body) = self.body(&url, self.agent.get(&url).call())?;
        serde_json::from_slice(&body).map_err(|e| ClientError::Unexpected {
            url,
            message: e.to_string(),
        })
    }

    /// The public setup of index database `name` (see [`HttpClient::setup_bytes`]).
    pub fn setup(&self, name: &str) -> Result<PublicSetup, ClientError> {
        Ok(PublicSetup::from_bytes(&self.setup_bytes(name)?)?)
    }

    /// The public setup of keyword database `name` (see [`HttpClient::setup_bytes`]).
    pub fn keyword_setup(&self, name: &str) -> Result<KeywordSetup, ClientError> {
        Ok(KeywordSetup::from_bytes(&self.setup_bytes(name)?)?)
    }

    /// The public setup of Merkle tree (TreePIR) database `name` (see
    /// [`HttpClient::setup_bytes`]).
    pub fn treepir_setup(&self, name: &str) -> Result<TreePirSetup, ClientError> {
        Ok(TreePirSetup::from_bytes(&self.setup_bytes(name)?)?)
    }

    /// The encoded public setup of database `name`: from the cache when the server confirms it
    /// is current (ETag), downloaded otherwise.
    pub fn setup_bytes(&self, name: &str) -> Result<Vec<u8>, ClientError> {
        let url = self.url(&format!("/v1/databases/{name}/setup"));
        let cached = self
            .cache_dir
            .as_deref()
            .and_then(|dir| read_cache(dir, &self.base, name));
        let mut request = self.agent.get(&url);
        if let Some((etag, _)) = &cached {
            request = request.header("If-None-Match", etag);
        }
        let (status, etag, body) = self.body(&url, request.call())?;
        if status == 304 {
            if let Some((_, bytes)) = cached {
                return Ok(bytes);
            }
        }
        if let (Some(dir), Some(etag)) = (self.cache_dir.as_deref(), etag) {
            // A cache that cannot be written only costs a download next time.
            let _ = write_cache(dir, &self.base, name, &etag, &body);
        }
        Ok(body)
    }

    /// Sends one query for database `name` and decodes the answer against `setup`.
    pub fn query(
        &self,
        name: &str,
        setup: &PublicSetup,
        query: &Query,
    ) -> Result<Answer, ClientError> {
        let url = self.url(&format!("/v1/databases/{name}/query"));
        let request = self
            .agent
            .post(&url)
            .header("content-type", "application/octet-stream");
        let (_, _, body) = self.body(&url, request.send(&query.to_bytes()[..]))?;
        Ok(Answer::from_bytes(&body, setup)?)
    }

    /// Sends several queries in one request; the answers come back in order.
    pub fn batch(
        &self,
        name: &str,
        setup: &PublicSetup,
        queries: &[Query],
    ) -> Result<Vec<Answer>, ClientError> {
        let setups = vec![setup; queries.len()];
        self.framed(&format!("/v1/databases/{name}/batch"), &setups, queries)
    }

    /// Asks Merkle tree database `name` for an audit path: `queries` holds one query per
    /// colour class of `setup` (from [`TreePirClient`](obscura_pir::batch::treepir::TreePirClient)),
    /// and the answers come back in the same order. A tree of one leaf needs no request: its
    /// audit path is empty.
    pub fn proof(
        &self,
        name: &str,
        setup: &TreePirSetup,
        queries: &[Query],
    ) -> Result<Vec<Answer>, ClientError> {
        if queries.is_empty() && setup.databases().is_empty() {
            return Ok(Vec::new());
        }
        let setups: Vec<&PublicSetup> = setup.databases().iter().collect();
        self.framed(&format!("/v1/databases/{name}/proof"), &setups, queries)
    }

    /// Posts `queries` framed to `path` and decodes the framed answers, answer `i` against
    /// `setups[i]`.
    fn framed(
        &self,
        path: &str,
        setups: &[&PublicSetup],
        queries: &[Query],
    ) -> Result<Vec<Answer>, ClientError> {
        let url = self.url(path);
        let unexpected = |message: String| ClientError::Unexpected {
            url: url.clone(),
            message,
        };
        if setups.len() != queries.len() {
            return Err(unexpected(format!(
                "{} queries for {} databases",
                queries.len(),
                setups.len()
            )));
        }
        let request = self
            .agent
            .post(&url)
            .header("content-type", "application/octet-stream");
        let messages: Vec<Vec<u8>> = queries.iter().map(Query::to_bytes).collect();
        let (_, _, body) = self.body(&url, request.send(&framing::encode(&messages)[..]))?;
        let answers = framing::decode(&body, queries.len()).map_err(unexpected)?;
        if answers.len() != queries.len() {
            return Err(unexpected(format!(
                "{} answers for {} queries",
                answers.len(),
                queries.len()
            )));
        }
        Ok(answers
            .into_iter()
            .zip(setups)
            .map(|(answer, setup)| Answer::from_bytes(answer, setup))
            .collect::<Result<_, _>>()?)
    }
}

/// The cache file of a database: one folder per server, the ETag beside the setup. Server and
/// database names are reduced to letters, digits, `-` and `_`, so no name reaches outside the
/// cache folder (names that collide only share a slot: the ETag check refuses a stale setup).
fn cache_paths(dir: &Path, base: &str, name: &str) -> (PathBuf, PathBuf) {
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
    (
        folder.join(format!("{name}.setup")),
        folder.join(format!("{name}.etag")),
    )
}

fn read_cache(dir: &Path, base: &str, name: &str) -> Option<(String, Vec<u8>)> {
    let (setup, etag) = cache_paths(dir, base, name);
    Some((
        std::fs::read_to_string(etag).ok()?,
        std::fs::read(setup).ok()?,
    ))
}

fn write_cache(
    dir: &Path,
    base: &str,
    name: &str,
    etag: &str,
    bytes: &[u8],
) -> std::io::Result<()> {
    let (setup, etag_path) = cache_paths(dir, base, name);
    let folder = setup.parent().expect("cache paths have a folder");
    std::fs::create_dir_all(folder)?;
    let temp = tempfile::NamedTempFile::new_in(folder)?;
    std::fs::write(temp.path(), bytes)?;
    temp.persist(&setup).map_err(|e| e.error)?;
    std::fs::write(etag_path, etag)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cache_paths_stay_in_the_cache_folder() {
        let dir = Path::new("/cache");
        for name in ["../../etc/passwd", "a/b", "..", "db"] {
            let (setup, etag) = cache_paths(dir, "http://127.0.0.1:8080", name);
            for path in [setup, etag] {
                assert_eq!(
                    path.parent().unwrap().parent(),
                    Some(dir),
                    "{name}: {path:?}"
                );
                assert!(!path.to_string_lossy().contains(".."), "{name}: {path:?}");
            }
        }
    }
}
