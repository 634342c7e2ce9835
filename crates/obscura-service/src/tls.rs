//! TLS for the service and its clients (rustls with the *ring* provider): the server's
//! certificate chain and key, and the trust roots a client may pin instead of the WebPKI ones.

use std::path::Path;
use std::sync::Arc;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

/// Why a TLS configuration could not be made.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TlsError {
    /// A file could not be read.
    #[error("cannot read {}", path.display())]
    Io {
        /// The file.
        path: std::path::PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// A PEM file holds no usable certificate or key.
    #[error("{what}: no usable PEM {item} in it")]
    Pem {
        /// The file.
        what: String,
        /// What it should hold: `certificate` or `private key`.
        item: &'static str,
        /// Why the PEM could not be read, when it could not.
        #[source]
        source: Option<rustls::pki_types::pem::Error>,
    },
    /// rustls refused the certificate and key.
    #[error("the certificate and key do not make a TLS configuration")]
    Config(#[from] rustls::Error),
}

/// The certificates of a PEM file (a chain, or trust roots), in order.
pub fn certificates_from_pem(
    pem: &[u8],
    what: &str,
) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let no_certificate = |source| TlsError::Pem {
        what: what.into(),
        item: "certificate (-----BEGIN CERTIFICATE-----)",
        source,
    };
    let certificates = CertificateDer::pem_slice_iter(pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| no_certificate(Some(e)))?;
    if certificates.is_empty() {
        return Err(no_certificate(None));
    }
    Ok(certificates)
}

/// The server configuration for a certificate chain and its private key, both PEM (PKCS#8,
/// PKCS#1 or SEC1 keys), speaking HTTP/1.1.
pub fn server_config(
    chain_pem: &[u8],
    key_pem: &[u8],
) -> Result<Arc<rustls::ServerConfig>, TlsError> {
    configure(
        (chain_pem, "the certificate file"),
        (key_pem, "the key file"),
    )
}

/// [`server_config`] from the files at `chain` and `key`.
pub fn read_server_config(chain: &Path, key: &Path) -> Result<Arc<rustls::ServerConfig>, TlsError> {
    let read = |path: &Path| {
        std::fs::read(path).map_err(|source| TlsError::Io {
            path: path.to_path_buf(),
            source,
        })
    };
    let (chain_name, key_name) = (chain.display().to_string(), key.display().to_string());
    configure((&read(chain)?, &chain_name), (&read(key)?, &key_name))
}

/// The server configuration of a chain and a key, each PEM with the name errors give it.
fn configure(
    (chain_pem, chain_name): (&[u8], &str),
    (key_pem, key_name): (&[u8], &str),
) -> Result<Arc<rustls::ServerConfig>, TlsError> {
    let chain = certificates_from_pem(chain_pem, chain_name)?;
    let key = PrivateKeyDer::from_pem_slice(key_pem).map_err(|e| TlsError::Pem {
        what: key_name.into(),
        item: "private key",
        source: Some(e),
    })?;
    let mut config = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()?
    .with_no_client_auth()
    .with_single_cert(chain, key)?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}
