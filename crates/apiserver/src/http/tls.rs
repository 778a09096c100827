//! TLS for a server that requires a bearer token. client-go (kubectl) reads a kubeconfig's credentials
//! only when the server URL is `https`, so a token over plain HTTP would lock kubectl out. The server
//! presents a certificate for 127.0.0.1, ::1 and localhost signed by a CA of its own; the CA goes into
//! the kubeconfig (`certificate-authority-data`) and into [`crate::ApiServer::client`].
//!
//! Without a data dir the CA and the certificate are made at start-up and forgotten at exit: each
//! kubeconfig is good for one run. With one ([`crate::Config::data_dir`]) both are kept there,
//! owner-only, so that a kubeconfig written before a restart still trusts the server after it (the
//! token is kept there too, see `lib.rs`):
//! - `ca.pem`: the CA certificate and its key. Made when missing, otherwise used as found; an
//!   unreadable one stops the start-up with a message rather than being replaced, because a new CA
//!   would silently lock out every kubeconfig handed out.
//! - `tls.pem`: the serving certificate and its key. Made, signed by the kept CA, when missing or when
//!   it no longer verifies for the loopback names under that CA (expired, damaged, another CA's);
//!   clients trust the CA, so a new serving certificate changes nothing for them.
//!
//! Each file is replaced atomically (written aside, synced, renamed), so a crash leaves the old one
//! or the new one, never half of either. The certificates, the handshakes and the listener are the
//! `serving` crate's, which the operator's webhook server shares.

use std::{path::Path, sync::Arc};

use serving::{
    authority::{Authority, Serving},
    certificates::CertificateSlot,
    listener::{TlsListener, server_config},
    rustls,
};
use tokio::net::TcpListener;

/// The names the serving certificate is valid for: the loopback addresses the server listens on.
const SERVING_NAMES: [&str; 3] = ["127.0.0.1", "::1", "localhost"];
/// The CA's name, by which a kept CA is rebuilt from its key (and test harnesses sign with it).
pub const CA_NAME: &str = "embedded-apiserver-ca";
const SERVING_NAME: &str = "embedded-apiserver";

/// In a data dir: the CA certificate and key, one PEM file. Public because other programs can sign
/// with the same CA (kube-controller-manager's CSR signer reads both from it).
pub const CA_FILE: &str = "ca.pem";
/// In a data dir: the serving certificate and its key, one PEM file. Public because other servers
/// can present the same identity: Go's TLS reads a certificate and a key from one combined file.
pub const SERVING_FILE: &str = "tls.pem";

/// The server's certificate chain and the CA clients must trust.
#[derive(Clone)]
pub struct Identity {
    ca_pem: String,
    ca_der: Vec<u8>,
    config: Arc<rustls::ServerConfig>,
}

fn serving_names() -> Vec<String> {
    SERVING_NAMES.map(str::to_owned).to_vec()
}

/// The text of `path`, or `None` when there is no such file.
fn read_if_present(path: &Path) -> std::io::Result<Option<String>> {
    match std::fs::read_to_string(path) {
        Ok(text) => Ok(Some(text)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(std::io::Error::new(e.kind(), format!("{}: {e}", path.display()))),
    }
}

fn save(path: &Path, text: &str) -> std::io::Result<()> {
    crate::replace_private(path, text.as_bytes())
        .map_err(|e| std::io::Error::new(e.kind(), format!("{}: {e}", path.display())))
}

impl Identity {
    /// A fresh CA and a serving certificate for the loopback names, both with P-256 keys.
    pub fn generate() -> std::io::Result<Identity> {
        let ca = Authority::generate(CA_NAME, None)?;
        let serving = ca.sign_serving(&serving_names(), SERVING_NAME, None)?;
        Identity::new(&ca, &serving)
    }

    /// The CA and serving certificate kept in `dir`, made there the first time (see the module doc).
    pub fn kept_in(dir: &Path) -> std::io::Result<Identity> {
        let ca_path = dir.join(CA_FILE);
        let ca = match read_if_present(&ca_path)? {
            Some(text) => Authority::from_pem(&text, CA_NAME).map_err(|why| {
                std::io::Error::new(
                    std::io::ErrorKind::InvalidData,
                    format!(
                        "{}: {why}; remove it to have a new CA made (kubeconfigs written before then \
                         must be written again)",
                        ca_path.display()
                    ),
                )
            })?,
            None => {
                let ca = Authority::generate(CA_NAME, None)?;
                save(&ca_path, &ca.to_pem())?;
                ca
            }
        };
        let serving_path = dir.join(SERVING_FILE);
        let kept = read_if_present(&serving_path)?.map(|text| {
            let serving = Serving::from_pem(&text)?;
            ca.verify(&serving, &serving_names())?;
            // Also refuses a key that is not the certificate's.
            Identity::new(&ca, &serving).map_err(|e| e.to_string())
        });
        match kept {
            Some(Ok(identity)) => return Ok(identity),
            Some(Err(why)) => {
                tracing::warn!(file = %serving_path.display(), %why, "replacing the serving certificate")
            }
            None => {}
        }
        let serving = ca.sign_serving(&serving_names(), SERVING_NAME, None)?;
        // A CA whose key does not sign what its certificate vouches for cannot serve anyone.
        ca.verify(&serving, &serving_names()).map_err(|why| {
            std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!(
                    "{}: its key does not belong to its certificate ({why}); remove it to have a new CA made",
                    ca_path.display()
                ),
            )
        })?;
        save(&serving_path, &serving.to_pem())?;
        Identity::new(&ca, &serving)
    }

    fn new(ca: &Authority, serving: &Serving) -> std::io::Result<Identity> {
        let presented = serving.certified(std::slice::from_ref(ca.cert_der()))?;
        let config = server_config(Arc::new(CertificateSlot::new(presented)))?;
        Ok(Identity {
            ca_pem: ca.cert_pem().to_owned(),
            ca_der: ca.cert_der().to_vec(),
            config: Arc::new(config),
        })
    }

    /// The CA certificate, PEM-encoded, for a kubeconfig's `certificate-authority-data`.
    pub fn ca_pem(&self) -> &str {
        &self.ca_pem
    }

    /// The CA certificate, DER-encoded, for kube-rs' `Config::root_cert`.
    pub fn ca_der(&self) -> Vec<u8> {
        self.ca_der.clone()
    }

    /// Serves TLS on `listener`. Handshakes run in their own tasks, so a slow client delays no other.
    pub fn listener(&self, listener: TcpListener) -> TlsListener {
        TlsListener::new(listener, self.config.clone())
    }
}
