//! TLS for a server that requires a bearer token . client-go (kubectl) reads a
//! kubeconfig's credentials only when the server URL is `https`, so a token over plain HTTP would lock
//! kubectl out. The server presents a certificate for 127.0.0.1, ::1 and localhost signed by a CA of its
//! own; the CA goes into the kubeconfig (`certificate-authority-data`) and into
//! [`crate::ApiServer::client`].
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
//! or the new one, never half of either.

use std::{net::SocketAddr, path::Path, sync::Arc, time::Duration};

use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose,
};
use tokio::{
    net::{TcpListener, TcpStream},
    task::JoinSet,
};
use tokio_rustls::{
    TlsAcceptor,
    rustls::{
        self,
        client::danger::ServerCertVerifier,
        crypto::CryptoProvider,
        pki_types::{
            CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer, ServerName, UnixTime, pem::PemObject,
        },
    },
    server::TlsStream,
};

/// A client that connects but never finishes its handshake is dropped after this long.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// The names the serving certificate is valid for: the loopback addresses the server listens on.
const SERVING_NAMES: [&str; 3] = ["127.0.0.1", "::1", "localhost"];

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
    ca_der: CertificateDer<'static>,
    acceptor: TlsAcceptor,
}

fn tls_error(what: &str, error: impl std::fmt::Display) -> std::io::Error {
    std::io::Error::other(format!("{what}: {error}"))
}

fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// A CA that can sign serving certificates.
struct Ca {
    cert_pem: String,
    cert_der: CertificateDer<'static>,
    issuer: Issuer<'static, KeyPair>,
}

/// What the CA's certificate says about it. Also what signing needs to name it as the issuer, so a kept
/// CA is rebuilt from its key and these rather than parsed back from its certificate.
fn ca_params() -> CertificateParams {
    let mut params = CertificateParams::default();
    params.distinguished_name = rcgen::DistinguishedName::new();
    params
        .distinguished_name
        .push(DnType::CommonName, "embedded-apiserver-ca");
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::DigitalSignature,
        KeyUsagePurpose::CrlSign,
    ];
    params
}

impl Ca {
    /// A fresh CA with a P-256 key.
    fn generate() -> std::io::Result<Ca> {
        let key = KeyPair::generate().map_err(|e| tls_error("CA key", e))?;
        let cert = ca_params()
            .self_signed(&key)
            .map_err(|e| tls_error("CA certificate", e))?;
        Ok(Ca {
            cert_pem: cert.pem(),
            cert_der: cert.der().clone(),
            issuer: Issuer::new(ca_params(), key),
        })
    }

    /// The CA in `text` (a certificate and its key, PEM), as [`Ca::to_pem`] wrote it.
    fn from_pem(text: &str) -> Result<Ca, String> {
        let cert_der =
            CertificateDer::from_pem_slice(text.as_bytes()).map_err(|e| format!("no CA certificate: {e}"))?;
        let key_der =
            PrivateKeyDer::from_pem_slice(text.as_bytes()).map_err(|e| format!("no CA key: {e}"))?;
        let key = KeyPair::try_from(&key_der).map_err(|e| format!("unusable CA key: {e}"))?;
        let cert_pem = pem_block("CERTIFICATE", &cert_der);
        Ok(Ca {
            cert_pem,
            cert_der,
            issuer: Issuer::new(ca_params(), key),
        })
    }

    fn to_pem(&self) -> String {
        format!("{}{}", self.cert_pem, self.issuer.key().serialize_pem())
    }

    /// A serving certificate for the loopback names, with a fresh P-256 key, signed by this CA.
    fn sign_serving(&self) -> std::io::Result<Serving> {
        let names = SERVING_NAMES.map(str::to_owned).to_vec();
        let mut params = CertificateParams::new(names).map_err(|e| tls_error("serving names", e))?;
        params.distinguished_name = rcgen::DistinguishedName::new();
        params
            .distinguished_name
            .push(DnType::CommonName, "embedded-apiserver");
        // Python's ssl and Go's x509 both want the usual leaf extensions, AKI included.
        params.use_authority_key_identifier_extension = true;
        params.key_usages = vec![
            KeyUsagePurpose::DigitalSignature,
            KeyUsagePurpose::KeyEncipherment,
        ];
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        let key = KeyPair::generate().map_err(|e| tls_error("serving key", e))?;
        let cert = params
            .signed_by(&key, &self.issuer)
            .map_err(|e| tls_error("serving certificate", e))?;
        Ok(Serving {
            cert: cert.der().clone(),
            key: PrivatePkcs8KeyDer::from(key.serialize_der()).into(),
        })
    }

    /// Whether `serving` is what a client trusting this CA accepts for every loopback name, now.
    fn verify(&self, serving: &Serving) -> Result<(), String> {
        let mut roots = rustls::RootCertStore::empty();
        roots
            .add(self.cert_der.clone())
            .map_err(|e| format!("the CA certificate is unusable: {e}"))?;
        let verifier =
            rustls::client::WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider())
                .build()
                .map_err(|e| format!("the CA certificate is unusable: {e}"))?;
        for name in SERVING_NAMES {
            let server_name = ServerName::try_from(name).map_err(|e| format!("{name}: {e}"))?;
            verifier
                .verify_server_cert(&serving.cert, &[], &server_name, &[], UnixTime::now())
                .map_err(|e| format!("not valid for {name}: {e}"))?;
        }
        Ok(())
    }
}

/// The certificate the server presents, and its key.
struct Serving {
    cert: CertificateDer<'static>,
    key: PrivateKeyDer<'static>,
}

impl Serving {
    fn from_pem(text: &str) -> Result<Serving, String> {
        let cert =
            CertificateDer::from_pem_slice(text.as_bytes()).map_err(|e| format!("no certificate: {e}"))?;
        let key = PrivateKeyDer::from_pem_slice(text.as_bytes()).map_err(|e| format!("no key: {e}"))?;
        Ok(Serving { cert, key })
    }

    fn to_pem(&self) -> String {
        let key = pem_block("PRIVATE KEY", self.key.secret_der());
        format!("{}{key}", pem_block("CERTIFICATE", &self.cert))
    }
}

/// `der` as a PEM block labelled `label`, 64 base64 characters a line.
fn pem_block(label: &str, der: &[u8]) -> String {
    let encoded = base64::Engine::encode(&base64::engine::general_purpose::STANDARD, der);
    let mut text = format!("-----BEGIN {label}-----\n");
    for line in encoded.as_bytes().chunks(64) {
        // Base64 output is ASCII, so every chunk is valid UTF-8.
        text.push_str(&String::from_utf8_lossy(line));
        text.push('\n');
    }
    text.push_str(&format!("-----END {label}-----\n"));
    text
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
        let ca = Ca::generate()?;
        let serving = ca.sign_serving()?;
        Identity::new(&ca, serving)
    }

    /// The CA and serving certificate kept in `dir`, made there the first time (see the module doc).
    pub fn kept_in(dir: &Path) -> std::io::Result<Identity> {
        let ca_path = dir.join(CA_FILE);
        let ca = match read_if_present(&ca_path)? {
            Some(text) => Ca::from_pem(&text).map_err(|why| {
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
                let ca = Ca::generate()?;
                save(&ca_path, &ca.to_pem())?;
                ca
            }
        };
        let serving_path = dir.join(SERVING_FILE);
        let kept = read_if_present(&serving_path)?.map(|text| {
            let serving = Serving::from_pem(&text)?;
            ca.verify(&serving)?;
            // Also refuses a key that is not the certificate's.
            Identity::new(&ca, serving).map_err(|e| e.to_string())
        });
        match kept {
            Some(Ok(identity)) => return Ok(identity),
            Some(Err(why)) => {
                tracing::warn!(file = %serving_path.display(), %why, "replacing the serving certificate")
            }
            None => {}
        }
        let serving = ca.sign_serving()?;
        // A CA whose key does not sign what its certificate vouches for cannot serve anyone.
        ca.verify(&serving).map_err(|why| {
            std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!(
                    "{}: its key does not belong to its certificate ({why}); remove it to have a new CA made",
                    ca_path.display()
                ),
            )
        })?;
        save(&serving_path, &serving.to_pem())?;
        Identity::new(&ca, serving)
    }

    fn new(ca: &Ca, serving: Serving) -> std::io::Result<Identity> {
        let mut config = rustls::ServerConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()
            .map_err(|e| tls_error("TLS versions", e))?
            .with_no_client_auth()
            .with_single_cert(vec![serving.cert, ca.cert_der.clone()], serving.key)
            .map_err(|e| tls_error("TLS configuration", e))?;
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        Ok(Identity {
            ca_pem: ca.cert_pem.clone(),
            ca_der: ca.cert_der.clone(),
            acceptor: TlsAcceptor::from(Arc::new(config)),
        })
    }

    /// The CA certificate, PEM-encoded, for a kubeconfig's `certificate-authority-data`.
    pub fn ca_pem(&self) -> &str {
        &self.ca_pem
    }

    /// The CA certificate, DER-encoded, for kube-rs' `Config::root_cert`.
    pub fn ca_der(&self) -> Vec<u8> {
        self.ca_der.to_vec()
    }

    /// Serves TLS on `listener`. Handshakes run in their own tasks, so a slow client delays no other.
    pub fn listener(&self, listener: TcpListener) -> TlsListener {
        TlsListener {
            tcp: listener,
            acceptor: self.acceptor.clone(),
            handshakes: JoinSet::new(),
        }
    }
}

/// Connections that finished their TLS handshake, for `axum::serve`. Owns the TCP listener and the
/// handshakes in flight, so dropping it closes the port at once and cancels them.
pub struct TlsListener {
    tcp: TcpListener,
    acceptor: TlsAcceptor,
    handshakes: JoinSet<Option<(TlsStream<TcpStream>, SocketAddr)>>,
}

impl axum::serve::Listener for TlsListener {
    type Io = TlsStream<TcpStream>;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        loop {
            // Both branches are cancel-safe: nothing accepted or handshaken is lost between calls.
            tokio::select! {
                accepted = self.tcp.accept() => match accepted {
                    Ok((mut tcp, peer)) => {
                        crate::no_delay(&mut tcp);
                        let acceptor = self.acceptor.clone();
                        self.handshakes.spawn(async move {
                            match tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(tcp)).await {
                                Ok(Ok(stream)) => Some((stream, peer)),
                                Ok(Err(error)) => {
                                    tracing::debug!(%peer, %error, "TLS handshake failed");
                                    None
                                }
                                Err(_) => {
                                    tracing::debug!(%peer, "TLS handshake timed out");
                                    None
                                }
                            }
                        });
                    }
                    Err(error) => {
                        // Out of file descriptors and the like: pause rather than spin.
                        tracing::warn!(%error, "accepting a connection failed");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                    }
                },
                Some(done) = self.handshakes.join_next(), if !self.handshakes.is_empty() => {
                    if let Ok(Some(connection)) = done {
                        return connection;
                    }
                }
            }
        }
    }

    fn local_addr(&self) -> std::io::Result<Self::Addr> {
        self.tcp.local_addr()
    }
}
