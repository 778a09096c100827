//! [`WebhookServing`]: where the test serves its webhooks and with what certificate, as envtest's
//! `LocalServingHost`, `LocalServingPort`, `LocalServingCertDir` and `LocalServingCAData`.

use std::{
    net::{IpAddr, SocketAddr, TcpListener},
    path::Path,
    sync::Arc,
};

use serving::{
    authority::ThrowawayCa,
    certificates::{CertificateSlot, certified_key_from_pem},
    rustls,
};

use super::client_config::Target;
use crate::{Error, Result};

/// Where the test's webhook server is to listen, the certificate it is to present, and the CA the API
/// server was told to trust for it. kube-envtest serves nothing itself: the test starts its own
/// server (its operator's, or one written for the test) on [`WebhookServing::addr`], with
/// [`WebhookServing::server_config`] or the files in [`WebhookServing::cert_dir`].
///
/// Dropping it removes the certificate directory.
pub struct WebhookServing {
    addr: SocketAddr,
    ca_pem: String,
    cert_pem: String,
    key_pem: String,
    cert_dir: tempfile::TempDir,
}

/// Holds the port picked for the webhooks until the configurations naming it are installed, so that
/// nothing else started meanwhile (the embedded API server binding port 0) takes it.
pub(crate) struct Reservation(#[allow(dead_code)] Option<TcpListener>);

fn failed(what: &'static str) -> impl FnOnce(String) -> Error {
    move |reason| Error::WebhookServing { what, reason }
}

impl WebhookServing {
    /// A CA and a serving certificate for `host` (and `localhost`) written to a fresh directory, and
    /// `port`, or a free one picked now (held by the returned [`Reservation`] until it is dropped).
    pub(crate) fn prepare(host: IpAddr, port: Option<u16>) -> Result<(WebhookServing, Reservation)> {
        let (port, reservation) = match port {
            Some(port) => (port, None),
            None => {
                // envtest picks a port the same way; holding it until the start returns narrows the
                // window in which another program could bind it before the test's server does.
                let listener = TcpListener::bind((host, 0))
                    .map_err(|e| failed("picking a free port")(format!("{host}: {e}")))?;
                let port = listener
                    .local_addr()
                    .map_err(|e| failed("picking a free port")(e.to_string()))?
                    .port();
                (port, Some(listener))
            }
        };
        let host_name = host.to_string();
        let ca = ThrowawayCa::generate(&[host_name.as_str(), "localhost"])
            .map_err(|e| failed("making the webhook certificate")(e.to_string()))?;
        let cert_dir = tempfile::Builder::new()
            .prefix("kube-envtest-webhook-certs-")
            .tempdir()
            .map_err(|e| failed("making the certificate directory")(e.to_string()))?;
        ca.write_to(cert_dir.path())
            .map_err(|e| failed("writing the webhook certificate")(e.to_string()))?;
        let serving = WebhookServing {
            addr: SocketAddr::new(host, port),
            ca_pem: ca.ca_pem,
            cert_pem: ca.cert_pem,
            key_pem: ca.key_pem,
            cert_dir,
        };
        Ok((serving, Reservation(reservation)))
    }

    /// Where the test's webhook server is to listen: `127.0.0.1:PORT` (envtest's `LocalServingHost`
    /// and `LocalServingPort`).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The port of [`WebhookServing::addr`].
    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    /// `https://127.0.0.1:PORT`: what every webhook's `url` starts with.
    pub fn url(&self) -> String {
        match self.addr.ip() {
            IpAddr::V4(ip) => format!("https://{ip}:{}", self.addr.port()),
            IpAddr::V6(ip) => format!("https://[{ip}]:{}", self.addr.port()),
        }
    }

    /// The CA certificate (PEM) the webhooks' `caBundle` carries (envtest's `LocalServingCAData`): a
    /// client of the test's server trusts this one.
    pub fn ca_pem(&self) -> &str {
        &self.ca_pem
    }

    /// The serving certificate (PEM), signed by [`WebhookServing::ca_pem`], valid for the host and
    /// `localhost`.
    pub fn cert_pem(&self) -> &str {
        &self.cert_pem
    }

    /// The serving certificate's private key (PEM, PKCS#8). A secret: keep it out of logs.
    pub fn key_pem(&self) -> &str {
        &self.key_pem
    }

    /// A directory holding `tls.crt` and `tls.key` (the key readable by this user alone), as
    /// controller-runtime's webhook server and cert-manager's Secret lay them out (envtest's
    /// `LocalServingCertDir`): an operator's `--webhook-cert-dir`. Removed when this value is dropped.
    pub fn cert_dir(&self) -> &Path {
        self.cert_dir.path()
    }

    /// A rustls server configuration presenting the serving certificate (HTTP/1.1 offered through
    /// ALPN), for `tokio_rustls::TlsAcceptor` or any server built on rustls 0.23 ([`crate::rustls`]).
    pub fn server_config(&self) -> Result<rustls::ServerConfig> {
        let key = certified_key_from_pem(&self.cert_pem, &self.key_pem)
            .map_err(|e| failed("loading the webhook certificate")(e.to_string()))?;
        serving::listener::server_config(Arc::new(CertificateSlot::new(key)))
            .map_err(|e| failed("building the TLS configuration")(e.to_string()))
    }

    /// Where every `clientConfig` is to point: here.
    pub(crate) fn target(&self) -> Target {
        Target {
            base: self.url(),
            ca_pem: self.ca_pem.clone(),
        }
    }
}

// Hand-written: the key stays out of Debug output.
impl std::fmt::Debug for WebhookServing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WebhookServing")
            .field("addr", &self.addr)
            .field("cert_dir", &self.cert_dir.path())
            .finish_non_exhaustive()
    }
}
