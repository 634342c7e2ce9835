//! Pages of allowed web origins may call the service, tokens included; others get no CORS
//! headers, so browsers refuse them.

use obscura_pir::lwe::{EngineOptions, Layout, Server};
use obscura_service::auth::Tokens;
use obscura_service::catalog::Catalog;
use obscura_service::service::{BackgroundService, CorsOrigins, ServiceConfig};
use ureq::http::{Request, Response};
use ureq::{Agent, Body};

fn service(cors: CorsOrigins) -> BackgroundService {
    let data: Vec<u8> = (0..4000u32).map(|i| i as u8).collect();
    let options = EngineOptions {
        layout: Layout::Square,
        ..EngineOptions::default()
    };
    let server = Server::from_records(&data, 40, options, &|_, _| {}).unwrap();
    let mut catalog = Catalog::default();
    catalog.insert("db".into(), server).unwrap();
    let config = ServiceConfig {
        cors,
        tokens: Tokens::parse("db token-of-sixteen-chars\n", "tokens").unwrap(),
        ..ServiceConfig::default()
    };
    BackgroundService::start(catalog, config, "127.0.0.1:0".parse().unwrap()).unwrap()
}

fn agent() -> Agent {
    Agent::config_builder()
        .http_status_as_error(false)
        .build()
        .into()
}

/// A preflight request from `origin` for a POST with an `Authorization` header.
fn preflight(url: &str, origin: &str) -> Response<Body> {
    let request = Request::options(format!("{url}/v1/databases/db/query"))
        .header("Origin", origin)
        .header("Access-Control-Request-Method", "POST")
        .header(
            "Access-Control-Request-Headers",
            "authorization, content-type",
        )
        .body(())
        .unwrap();
    agent().run(request).unwrap()
}

fn header(response: &Response<Body>, name: &str) -> Option<String> {
    response
        .headers()
        .get(name)
        .map(|value| value.to_str().unwrap().to_ascii_lowercase())
}

#[test]
fn allowed_origins_get_preflights_and_headers_others_do_not() {
    let origin = "https://lookup.example";
    let service = service(CorsOrigins::parse(&[origin.into()]).unwrap());
    let url = service.url();

    let answer = preflight(&url, origin);
    assert!(answer.status().is_success(), "{}", answer.status());
    assert_eq!(
        header(&answer, "access-control-allow-origin").as_deref(),
        Some(origin)
    );
    let methods = header(&answer, "access-control-allow-methods").unwrap();
    assert!(
        methods.contains("post") && methods.contains("get"),
        "{methods}"
    );
    let headers = header(&answer, "access-control-allow-headers").unwrap();
    assert!(headers.contains("authorization"), "{headers}");

    // A simple GET from the page: its setup, with the ETag readable, and an error (401: the
    // database needs a token) that the page can read too.
    let setup = agent()
        .get(format!("{url}/v1/databases/db/setup"))
        .header("Origin", origin)
        .header("Authorization", "Bearer token-of-sixteen-chars")
        .call()
        .unwrap();
    assert_eq!(setup.status(), 200);
    assert_eq!(
        header(&setup, "access-control-allow-origin").as_deref(),
        Some(origin)
    );
    assert!(header(&setup, "access-control-expose-headers")
        .unwrap()
        .contains("etag"));
    let refused = agent()
        .get(format!("{url}/v1/databases/db/setup"))
        .header("Origin", origin)
        .call()
        .unwrap();
    assert_eq!(refused.status(), 401);
    assert_eq!(
        header(&refused, "access-control-allow-origin").as_deref(),
        Some(origin)
    );

    // Another origin: no CORS headers, so the browser refuses.
    let other = preflight(&url, "https://evil.example");
    assert_eq!(header(&other, "access-control-allow-origin"), None);
}

#[test]
fn any_origin_and_none() {
    let any = service(CorsOrigins::Any);
    let answer = preflight(&any.url(), "http://127.0.0.1:3000");
    assert_eq!(
        header(&answer, "access-control-allow-origin").as_deref(),
        Some("*")
    );
    assert!(header(&answer, "access-control-allow-headers")
        .unwrap()
        .contains("authorization"));

    let none = service(CorsOrigins::None);
    let answer = preflight(&none.url(), "http://127.0.0.1:3000");
    assert_eq!(header(&answer, "access-control-allow-origin"), None);
}
