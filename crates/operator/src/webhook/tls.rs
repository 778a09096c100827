//! The webhook server's certificate: `tls.crt` and `tls.key` in `--webhook-cert-dir`, as
//! controller-runtime reads them (and as cert-manager's Secret mounts them), read again when they
//! change so that a renewed certificate is served without a restart; or the one the operator issues
//! itself ([`super::issuer`]), swapped in memory. [`ThrowawayCa`] makes a CA and a serving certificate
//! for dev mode and tests, whose webhook configurations carry the CA. The pieces are the `serving`
//! crate's, which the embedded API server shares.
//!
//! HTTP/1.1 only, as controller-runtime's webhook server offers by default since HTTP/2's rapid-reset
//! attacks (CVE-2023-44487): a webhook answers one small review per request, so multiplexing saves
//! little, and kube-apiserver's connections per request spread its calls over every replica behind the
//! Service rather than pinning them all to the replica one HTTP/2 connection reached.

use std::{path::Path, sync::Arc};

pub use serving::{
    authority::ThrowawayCa,
    certificates::{CERT_FILE, CertificateSlot, KEY_FILE},
};
use serving::{
    certificates::CertificateFiles,
    rustls::{self, server::ResolvesServerCert},
};

use crate::Result;

/// Whether `dir` holds a certificate and a key to serve.
pub fn present_in(dir: &Path) -> bool {
    CertificateFiles::present_in(dir)
}

/// A TLS configuration serving the certificate in `dir`; fails now if it cannot be read.
pub fn server_config(dir: &Path) -> Result<rustls::ServerConfig> {
    server_config_with(Arc::new(CertificateFiles::new(dir)?))
}

/// A TLS configuration serving whatever certificate `resolver` holds at each handshake.
pub fn server_config_with(resolver: Arc<dyn ResolvesServerCert>) -> Result<rustls::ServerConfig> {
    Ok(serving::listener::server_config(resolver)?)
}
