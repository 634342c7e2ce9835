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
    #[error("{what}: {reason}")]
    Pem {
        /// The file or item.
        what: String,
        /// What is wrong.
        reason: String,
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
    let certificates = CertificateDer::pem_slice_iter(pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| TlsError::Pem {
            what: what.into(),
            reason: e.to_string(),
        })?;
    if certificates.is_empty() {
        return Err(TlsError::Pem {
            what: what.into(),
            reason: "no PEM certificate (-----BEGIN CERTIFICATE-----) in it".into(),
        });
    }
    Ok(certificates)
}

/// The server configuration for a certificate chain and its private key, both PEM (PKCS#8,
/// PKCS#1 or SEC1 keys), speaking HTTP/1.1.
pub fn server_config(
    chain_pem: &[u8],
    key_pem: &[u8],
) -> Result<Arc<rustls::ServerConfig>, TlsError> {
    let chain = certificates_from_pem(chain_pem, "the certificate file")?;
    let key = PrivateKeyDer::from_pem_slice(key_pem).map_err(|e| TlsError::Pem {
        what: "the key file".into(),
        reason: format!("no usable PEM private key: {e}"),
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

/// [`server_config`] from the files at `chain` and `key`.
pub fn read_server_config(chain: &Path, key: &Path) -> Result<Arc<rustls::ServerConfig>, TlsError> {
    let read = |path: &Path| {
        std::fs::read(path).map_err(|source| TlsError::Io {
            path: path.to_path_buf(),
            source,
        })
    };
    server_config(&read(chain)?, &read(key)?).map_err(|error| match error {
        TlsError::Pem { what, reason } => TlsError::Pem {
            what: format!(
                "{} ({what})",
                if what.contains("key") { key } else { chain }.display()
            ),
            reason,
        },
        other => other,
    })
}
