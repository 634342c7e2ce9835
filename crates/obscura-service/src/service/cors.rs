//! Cross-origin requests, for clients in web pages: which origins may call the service, and the
//! CORS layer that answers their preflight requests and marks every response.

use std::time::Duration;

use axum::http::{header, HeaderName, HeaderValue, Method};
use tower_http::cors::{AllowOrigin, CorsLayer};

/// How long a browser may cache a preflight answer.
const PREFLIGHT_MAX_AGE: Duration = Duration::from_secs(3600);

/// The web origins allowed to call the service from a page.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum CorsOrigins {
    /// None: no CORS headers, so browsers refuse cross-origin calls (the default).
    #[default]
    None,
    /// Any origin (`*`).
    Any,
    /// These origins only (e.g. `https://lookup.example`), as browsers send them.
    List(Vec<String>),
}

/// An origin that is not one: what a browser sends is `scheme://host[:port]`, nothing more.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("{0:?} is not a web origin: give scheme://host[:port] (e.g. https://lookup.example), or * for any")]
pub struct InvalidOrigin(pub String);

impl CorsOrigins {
    /// The origins of `values` as a user gives them: `*` alone for any, else each
    /// `scheme://host[:port]`, checked.
    pub fn parse(values: &[String]) -> Result<Self, InvalidOrigin> {
        if values.is_empty() {
            return Ok(Self::None);
        }
        if values.iter().any(|value| value == "*") {
            return match values.len() {
                1 => Ok(Self::Any),
                _ => Err(InvalidOrigin("* with other origins".into())),
            };
        }
        values
            .iter()
            .map(|value| {
                let origin = value.trim_end_matches('/');
                let (scheme, host) = origin
                    .split_once("://")
                    .ok_or_else(|| InvalidOrigin(value.clone()))?;
                let valid = matches!(scheme, "http" | "https")
                    && !host.is_empty()
                    && !host.contains(['/', '?', '#', '@', ' '])
                    && HeaderValue::from_str(origin).is_ok();
                valid
                    .then(|| origin.to_ascii_lowercase())
                    .ok_or_else(|| InvalidOrigin(value.clone()))
            })
            .collect::<Result<_, _>>()
            .map(Self::List)
    }

    /// The layer that lets these origins call the service (`None` for no origin): preflight
    /// requests answered for GET and POST with the `Authorization`, `Content-Type` and
    /// `If-None-Match` headers, and the `ETag` of setups readable by the page.
    pub fn layer(&self) -> Option<CorsLayer> {
        let origins = match self {
            Self::None => return None,
            Self::Any => AllowOrigin::any(),
            Self::List(origins) => AllowOrigin::list(
                origins
                    .iter()
                    .map(|origin| HeaderValue::from_str(origin).expect("checked by parse")),
            ),
        };
        Some(
            CorsLayer::new()
                .allow_origin(origins)
                .allow_methods([Method::GET, Method::POST])
                .allow_headers([
                    header::AUTHORIZATION,
                    header::CONTENT_TYPE,
                    header::IF_NONE_MATCH,
                    HeaderName::from_static("a-im"),
                ])
                .expose_headers([header::ETAG])
                .max_age(PREFLIGHT_MAX_AGE),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn origins_parse_as_browsers_send_them() {
        assert_eq!(CorsOrigins::parse(&[]), Ok(CorsOrigins::None));
        assert_eq!(CorsOrigins::parse(&["*".into()]), Ok(CorsOrigins::Any));
        assert_eq!(
            CorsOrigins::parse(&[
                "https://Lookup.example/".into(),
                "http://127.0.0.1:8000".into()
            ]),
            Ok(CorsOrigins::List(vec![
                "https://lookup.example".into(),
                "http://127.0.0.1:8000".into()
            ]))
        );
        for bad in [
            "lookup.example",
            "ftp://x",
            "https://",
            "https://a/b",
            "https://a b",
            "*,x",
        ] {
            assert!(CorsOrigins::parse(&[bad.into()]).is_err(), "{bad}");
        }
        assert!(CorsOrigins::parse(&["*".into(), "https://a".into()]).is_err());
    }
}
