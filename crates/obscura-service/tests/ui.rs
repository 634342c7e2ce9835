//! The built-in page: served at `/` with its files under `/ui/` and a strict content security
//! policy when the service is built with the browser client's package (scripts/test builds it
//! so); without the package, asking for the page says how to get it.

use obscura_service::catalog::Catalog;
use obscura_service::service::{BackgroundService, ServiceConfig, Ui};
use ureq::Agent;

fn get(url: &str) -> (u16, Option<String>, Vec<u8>, Option<String>) {
    let agent: Agent = Agent::config_builder()
        .http_status_as_error(false)
        .build()
        .into();
    let mut response = agent.get(url).call().unwrap();
    let header = |name: &str| {
        response
            .headers()
            .get(name)
            .map(|value| value.to_str().unwrap().to_string())
    };
    let (kind, policy) = (header("content-type"), header("content-security-policy"));
    let body = response.body_mut().read_to_vec().unwrap();
    (response.status().as_u16(), kind, body, policy)
}

fn start(ui: Option<Ui>) -> BackgroundService {
    let config = ServiceConfig {
        ui,
        ..ServiceConfig::default()
    };
    BackgroundService::start(Catalog::default(), config, "127.0.0.1:0".parse().unwrap()).unwrap()
}

#[test]
fn the_page_and_its_client_are_served_when_asked_for() {
    let ui = match Ui::embedded() {
        Ok(ui) => ui,
        Err(missing) => {
            // Built without OBSCURA_WASM_PKG: the refusal names the way to the page.
            let message = missing.to_string();
            assert!(message.contains("scripts/build-wasm"), "{message}");
            assert!(message.contains("OBSCURA_WASM_PKG"), "{message}");
            return;
        }
    };
    // A configuration printed for a log names the files, not their bytes.
    let shown = format!("{ui:?}");
    assert!(
        shown.contains("\"obscura_wasm_bg.wasm\": ") && shown.len() < 300,
        "{shown}"
    );
    let service = start(Some(ui));
    let url = service.url();

    let (status, kind, body, policy) = get(&format!("{url}/"));
    assert_eq!(status, 200);
    assert_eq!(kind.as_deref(), Some("text/html; charset=utf-8"));
    assert!(String::from_utf8(body)
        .unwrap()
        .contains("src=\"/ui/app.js\""));
    let policy = policy.expect("the page has a content security policy");
    assert!(
        policy.contains("script-src 'self' 'wasm-unsafe-eval'"),
        "{policy}"
    );
    assert!(policy.contains("connect-src 'self'"), "{policy}");

    for (file, expected) in [
        ("app.js", "text/javascript; charset=utf-8"),
        ("obscura.js", "text/javascript; charset=utf-8"),
        ("obscura_wasm.js", "text/javascript; charset=utf-8"),
        ("style.css", "text/css; charset=utf-8"),
        ("obscura_wasm_bg.wasm", "application/wasm"),
    ] {
        let (status, kind, body, _) = get(&format!("{url}/ui/{file}"));
        assert_eq!((status, kind.as_deref()), (200, Some(expected)), "{file}");
        assert!(!body.is_empty(), "{file}");
    }
    let (_, _, wasm, _) = get(&format!("{url}/ui/obscura_wasm_bg.wasm"));
    assert_eq!(&wasm[..4], b"\0asm");
    for missing in ["/ui/index.htm", "/ui/..%2Fbuild.rs", "/ui/"] {
        assert_eq!(get(&format!("{url}{missing}")).0, 404, "{missing}");
    }
}

#[test]
fn without_the_page_there_is_nothing_at_the_root() {
    let service = start(None);
    let (status, _, body, _) = get(&format!("{}/", service.url()));
    assert_eq!(status, 404);
    assert!(String::from_utf8(body).unwrap().contains("/v1/databases"));
    assert_eq!(get(&format!("{}/ui/app.js", service.url())).0, 404);
}
