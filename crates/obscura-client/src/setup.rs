//! How a client accepts a database's public setup, as pure logic over what a transport
//! received: the size limits, the SHA-256 check against a pinned hash or the server's ETag,
//! revalidation of a cached copy (`If-None-Match`, answered `304`), and the refusals of a
//! server (`409`: the database was replaced, fetch its setup again). The native HTTP adapter
//! and the browser client both go through it.

use obscura_pir::PirError;
use obscura_registry::Registry;

use crate::error::ClientError;

/// A SHA-256 hash.
pub type Sha256 = [u8; 32];

/// The largest public setup a client accepts unless told otherwise (1 GiB; a 1 GiB square
/// database has a 128 MiB setup).
pub const DEFAULT_MAX_SETUP_BYTES: u64 = 1 << 30;

/// The largest query a client makes unless told otherwise (1 GiB; a keyword store of 2^25 keys
/// has 144 MB queries, an index database of 2^20 records in the one-per-column layout 4 MiB).
pub const DEFAULT_MAX_QUERY_BYTES: u64 = 1 << 30;

/// The most read of an error response.
pub const MAX_ERROR_BYTES: u64 = 64 << 10;

/// The most characters of a server's error message shown.
const MAX_ERROR_CHARS: usize = 1000;

/// What a client accepts of setups and queries.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SetupPolicy {
    /// The SHA-256 every setup must have, taken out of band (e.g. as `obscura build` printed
    /// it). Without it a setup is checked against the server's ETag, which catches corruption
    /// but not a server or network that lies.
    pub pin: Option<Sha256>,
    /// The largest setup accepted, in bytes; a larger one is refused before it is read.
    pub max_setup_bytes: u64,
    /// The largest query (or all the queries of an audit-path request) this client makes, in bytes;
    /// a setup that asks for more is refused (a setup of a few kilobytes can describe a matrix
    /// whose query would take gigabytes to make).
    pub max_query_bytes: u64,
}

impl Default for SetupPolicy {
    fn default() -> Self {
        Self {
            pin: None,
            max_setup_bytes: DEFAULT_MAX_SETUP_BYTES,
            max_query_bytes: DEFAULT_MAX_QUERY_BYTES,
        }
    }
}

/// A setup kept in a cache, with the SHA-256 recomputed over its bytes when it was loaded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cached {
    /// The setup's SHA-256.
    pub sha256: Sha256,
    /// The encoded setup.
    pub bytes: Vec<u8>,
}

/// A setup accepted: its bytes, their SHA-256, and how they came.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Accepted {
    /// The encoded setup.
    pub bytes: Vec<u8>,
    /// Its SHA-256.
    pub sha256: Sha256,
    /// Whether the cached copy was confirmed (`304`); else the bytes are new (downloaded or
    /// patched), and a cache should keep them.
    pub from_cache: bool,
    /// Bytes of the patches that made the setup of the cached one (`226`), if it came so.
    pub patch_bytes: Option<u64>,
}

/// The instance manipulation (RFC 3229) a client names in `A-IM` to ask for the patches from
/// the setup it offers with `If-None-Match` to the current one; a server that keeps them
/// answers `226 IM Used` with them ([`obscura_registry::Registry::patch_setup`] reads them).
pub const PATCH_IM: &str = "obscura-patch";

impl SetupPolicy {
    /// The cached setup worth offering the server for revalidation: only one with the pinned
    /// SHA-256, when a hash is pinned.
    pub fn usable(&self, cached: Option<Cached>) -> Option<Cached> {
        cached.filter(|cached| self.pin.is_none_or(|pin| pin == cached.sha256))
    }

    /// The setup a server's successful reply (`status` and `etag`, `body` the bytes read) to
    /// a request for `url` gives, `cached` being the copy offered with `If-None-Match`: the
    /// body (`200`), the cached copy (`304`) or the cached copy patched by the body (`226`),
    /// verified against the pin or the ETag.
    pub fn accept(
        &self,
        url: &str,
        status: u16,
        etag: Option<&str>,
        body: Vec<u8>,
        cached: Option<Cached>,
    ) -> Result<Accepted, ClientError> {
        if status == 304 {
            return match cached {
                Some(Cached { sha256, bytes }) => Ok(Accepted {
                    bytes,
                    sha256,
                    from_cache: true,
                    patch_bytes: None,
                }),
                None => Err(ClientError::Unexpected {
                    url: url.to_string(),
                    message: "304 Not Modified, but no cached setup was offered".into(),
                }),
            };
        }
        let (bytes, patch_bytes) = match (status, cached) {
            (226, Some(cached)) if body.len() >= cached.bytes.len() => {
                return Err(ClientError::BadPatch {
                    url: url.to_string(),
                    source: PirError::malformed(
                        "patch chain",
                        format!(
                            "{} bytes of patches for a setup of {} (a server sends the setup instead)",
                            body.len(),
                            cached.bytes.len()
                        ),
                    )
                    .into(),
                })
            }
            (226, Some(cached)) => {
                let patched = Registry::default()
                    .patch_setup(cached.bytes, &body)
                    .map_err(|source| ClientError::BadPatch {
                        url: url.to_string(),
                        source,
                    })?;
                (patched, Some(body.len() as u64))
            }
            (226, None) => {
                return Err(ClientError::Unexpected {
                    url: url.to_string(),
                    message: "226 IM Used, but no cached setup was offered".into(),
                })
            }
            _ => (body, None),
        };
        let sha256 = obscura_registry::setup_sha256(&bytes);
        self.verify(url, &sha256, etag)?;
        Ok(Accepted {
            bytes,
            sha256,
            from_cache: false,
            patch_bytes,
        })
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
        if let Some(pin) = &self.pin {
            if pin != found {
                return Err(mismatch(pin, "the pinned SHA-256"));
            }
        }
        match (etag.map(sha256_of_etag), &self.pin) {
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

    /// Refuses a setup (of database `url`) whose queries are larger than this client makes.
    pub fn check_query_bytes(&self, url: &str, query_bytes: u64) -> Result<(), ClientError> {
        let limit = self.max_query_bytes;
        if query_bytes > limit {
            return Err(ClientError::Unexpected {
                url: url.to_string(),
                message: format!(
                    "the setup asks for queries of {query_bytes} bytes, more than the {limit} this client makes (--max-query-bytes)"
                ),
            });
        }
        Ok(())
    }
}

/// The error for a server's reply to `url` with error status `status` and body `text` (the
/// first [`MAX_ERROR_BYTES`] of it; `cut` when more followed): `409` is
/// [`ClientError::StaleSetup`], any other [`ClientError::Status`].
pub fn refusal(url: &str, status: u16, text: &[u8], cut: bool) -> ClientError {
    let (url, message) = (url.to_string(), printable(text, cut));
    match status {
        409 => ClientError::StaleSetup { url, message },
        _ => ClientError::Status {
            url,
            status,
            message,
        },
    }
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

/// The ETag of a setup with SHA-256 `sha256` (its hex, quoted): the value of `If-None-Match`
/// when a cached copy is offered.
pub fn etag_of(sha256: &Sha256) -> String {
    format!("\"{}\"", hex::encode(sha256))
}

/// The SHA-256 an ETag names, if it is one in hex (quoted or not, either case).
pub fn sha256_of_etag(etag: &str) -> Option<Sha256> {
    let text = etag.trim().trim_matches('"');
    hex::decode(text).ok()?.try_into().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

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
        let sha256 = obscura_registry::setup_sha256(b"setup");
        assert_eq!(sha256_of_etag(&etag_of(&sha256)), Some(sha256));
        assert_eq!(sha256_of_etag(&hex::encode(sha256)), Some(sha256));
        assert_eq!(sha256_of_etag("\"abcd\""), None);
        assert_eq!(sha256_of_etag("W/\"zz\""), None);
    }

    #[test]
    fn setups_are_accepted_only_with_the_hash_they_must_have() {
        let body = b"setup".to_vec();
        let sha256 = obscura_registry::setup_sha256(&body);
        let open = SetupPolicy::default();
        let etag = etag_of(&sha256);
        let accepted = open
            .accept("u", 200, Some(&etag), body.clone(), None)
            .unwrap();
        assert_eq!((accepted.sha256, accepted.from_cache), (sha256, false));
        let other = etag_of(&[7; 32]);
        let refused = open.accept("u", 200, Some(&other), body.clone(), None);
        assert!(matches!(refused, Err(ClientError::SetupSha256 { .. })));
        // Without an ETag only a pin verifies.
        assert!(open.accept("u", 200, None, body.clone(), None).is_err());
        let pinned = SetupPolicy {
            pin: Some(sha256),
            ..SetupPolicy::default()
        };
        assert!(pinned.accept("u", 200, None, body.clone(), None).is_ok());
        let wrong_pin = SetupPolicy {
            pin: Some([1; 32]),
            ..SetupPolicy::default()
        };
        assert!(wrong_pin.accept("u", 200, Some(&etag), body, None).is_err());
    }

    #[test]
    fn a_cached_copy_is_offered_only_with_the_pinned_hash_and_kept_on_304() {
        let cached = Cached {
            sha256: [3; 32],
            bytes: b"old".to_vec(),
        };
        let pinned = SetupPolicy {
            pin: Some([4; 32]),
            ..SetupPolicy::default()
        };
        assert_eq!(pinned.usable(Some(cached.clone())), None);
        let open = SetupPolicy::default();
        let offered = open.usable(Some(cached.clone()));
        assert_eq!(offered.as_ref(), Some(&cached));
        let kept = open.accept("u", 304, None, Vec::new(), offered).unwrap();
        assert_eq!((kept.bytes, kept.from_cache), (cached.bytes, true));
        assert!(open.accept("u", 304, None, Vec::new(), None).is_err());
    }

    #[test]
    fn patches_need_a_cached_copy_and_must_be_smaller_than_it() {
        let open = SetupPolicy::default();
        let cached = Cached {
            sha256: [3; 32],
            bytes: vec![7; 100],
        };
        let etag = etag_of(&[5; 32]);
        assert!(matches!(
            open.accept("u", 226, Some(&etag), vec![0; 10], None),
            Err(ClientError::Unexpected { .. })
        ));
        assert!(matches!(
            open.accept("u", 226, Some(&etag), vec![0; 100], Some(cached.clone())),
            Err(ClientError::BadPatch { .. })
        ));
        // Bytes that are no patch of the cached copy are refused as one.
        assert!(matches!(
            open.accept("u", 226, Some(&etag), vec![0; 10], Some(cached)),
            Err(ClientError::BadPatch { .. })
        ));
    }

    #[test]
    fn a_409_means_the_setup_changed() {
        assert!(matches!(
            refusal("u", 409, b"replaced", false),
            ClientError::StaleSetup { .. }
        ));
        assert!(matches!(
            refusal("u", 503, b"busy", false),
            ClientError::Status { status: 503, .. }
        ));
    }
}
