//! The service over TLS, and databases behind bearer tokens.

use obscura_client::http::{ClientOptions, HttpClient};
use obscura_client::ClientError;
use obscura_pir::lwe::{Client, EngineOptions, Layout, Lwe, Server};
use obscura_pir::PirClient;
use obscura_service::auth::Tokens;
use obscura_service::catalog::Catalog;
use obscura_service::service::{BackgroundService, ServiceConfig};
use obscura_service::tls;

fn catalog() -> (Catalog, Vec<u8>) {
    let data: Vec<u8> = (0..40u32 * 8).map(|i| (i * 7 % 253) as u8).collect();
    let options = EngineOptions {
        layout: Layout::Square,
        ..EngineOptions::default()
    };
    let mut catalog = Catalog::default();
    for name in ["open", "secret"] {
        let server = Server::from_records(&data, 8, options, &|_, _| {}).unwrap();
        catalog.insert(name.into(), server).unwrap();
    }
    (catalog, data)
}

/// Fetches record `index` of `name`, or the error.
fn fetch(http: &HttpClient, name: &str, index: u64) -> Result<Vec<u8>, ClientError> {
    let mut client = Client::new(http.setup::<Lwe>(name)?);
    let (query, state) = client.query(index).unwrap();
    let answer = http.query::<Lwe>(name, client.setup(), &query)?;
    Ok(client.decode(state, &answer)?)
}

fn client(url: &str, token: Option<&str>, roots: Option<Vec<Vec<u8>>>) -> HttpClient {
    let options = ClientOptions {
        token: token.map(str::to_string),
        trusted_roots: roots,
        ..ClientOptions::default()
    };
    HttpClient::with_options(url, options)
}

#[test]
fn records_over_tls_with_a_pinned_root() {
    let key =
        rcgen::generate_simple_self_signed(vec!["127.0.0.1".into(), "localhost".into()]).unwrap();
    let (chain, private) = (key.cert.pem(), key.signing_key.serialize_pem());
    let config = tls::server_config(chain.as_bytes(), private.as_bytes()).unwrap();
    let (catalog, data) = catalog();
    let service = BackgroundService::start_with_tls(
        catalog,
        ServiceConfig::default(),
        "127.0.0.1:0".parse().unwrap(),
        Some(config),
    )
    .unwrap();
    let url = service.url();
    assert!(url.starts_with("https://"));

    let roots = tls::certificates_from_pem(chain.as_bytes(), "chain").unwrap();
    let roots: Vec<Vec<u8>> = roots.iter().map(|c| c.to_vec()).collect();
    let trusted = client(&url, None, Some(roots));
    assert_eq!(fetch(&trusted, "open", 13).unwrap(), &data[13 * 8..14 * 8]);

    // The WebPKI roots do not know a self-signed certificate.
    let error = fetch(&client(&url, None, None), "open", 13).unwrap_err();
    assert!(
        matches!(&error, ClientError::Transport { source, .. } if source.to_string().to_lowercase().contains("certificate")),
        "{error}"
    );
    // Plain HTTP to a TLS port gets no answer.
    let plain = url.replace("https://", "http://");
    assert!(matches!(
        fetch(&client(&plain, None, None), "open", 13),
        Err(ClientError::Transport { .. })
    ));
}

#[test]
fn bad_pem_files_are_refused_clearly() {
    let key = rcgen::generate_simple_self_signed(vec!["localhost".into()]).unwrap();
    let (chain, private) = (key.cert.pem(), key.signing_key.serialize_pem());
    for (chain, key, expected, with_cause) in [
        (
            "",
            private.as_str(),
            "the certificate file: no usable PEM certificate",
            false,
        ),
        (
            chain.as_str(),
            "",
            "the key file: no usable PEM private key",
            true,
        ),
        (
            private.as_str(),
            chain.as_str(),
            "the certificate file: no usable PEM certificate",
            false,
        ),
    ] {
        let error = tls::server_config(chain.as_bytes(), key.as_bytes()).unwrap_err();
        assert!(error.to_string().starts_with(expected), "{error}");
        // The cause is kept as the error's source, not repeated in its message.
        let source = std::error::Error::source(&error);
        assert_eq!(source.is_some(), with_cause, "{error}");
        if let Some(source) = source {
            assert!(!error.to_string().contains(&source.to_string()), "{error}");
        }
    }
    // A key that is not the certificate's.
    let other = rcgen::generate_simple_self_signed(vec!["localhost".into()]).unwrap();
    let error = tls::server_config(
        chain.as_bytes(),
        other.signing_key.serialize_pem().as_bytes(),
    );
    assert!(error.is_err());
}

#[test]
fn databases_behind_tokens() {
    let (catalog, data) = catalog();
    let tokens = Tokens::parse("secret s3cret-token-of-16+chars\n", "tokens").unwrap();
    let config = ServiceConfig {
        tokens,
        ..ServiceConfig::default()
    };
    let service =
        BackgroundService::start(catalog, config, "127.0.0.1:0".parse().unwrap()).unwrap();
    let url = service.url();
    let record = &data[5 * 8..6 * 8];

    let anonymous = client(&url, None, None);
    assert_eq!(fetch(&anonymous, "open", 5).unwrap(), record);
    let names = |http: &HttpClient| -> Vec<String> {
        http.list().unwrap().into_iter().map(|i| i.name).collect()
    };
    assert_eq!(names(&anonymous), ["open"]);
    for http in [
        &anonymous,
        &client(&url, Some("s3cret-token-of-16+chars!"), None),
    ] {
        match fetch(http, "secret", 5) {
            Err(ClientError::Status {
                status, message, ..
            }) => {
                assert_eq!(status, 401);
                assert!(message.contains("bearer token"), "{message}");
            }
            other => panic!("expected 401, got {other:?}"),
        }
    }
    // A query without the token is refused too, not only the setup.
    let authorized = client(&url, Some("s3cret-token-of-16+chars"), None);
    let mut secret_client = Client::new(authorized.setup::<Lwe>("secret").unwrap());
    let (query, _) = secret_client.query(5).unwrap();
    assert!(matches!(
        anonymous.query::<Lwe>("secret", secret_client.setup(), &query),
        Err(ClientError::Status { status: 401, .. })
    ));

    assert_eq!(fetch(&authorized, "secret", 5).unwrap(), record);
    assert_eq!(names(&authorized), ["open", "secret"]);

    // New tokens take effect at once.
    service
        .databases()
        .replace_tokens(Tokens::parse("* another-token-16-chars", "tokens").unwrap());
    assert!(matches!(
        fetch(&authorized, "secret", 5),
        Err(ClientError::Status { status: 401, .. })
    ));
    assert!(matches!(
        fetch(&anonymous, "open", 5),
        Err(ClientError::Status { status: 401, .. })
    ));
}
