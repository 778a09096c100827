//! TLS for a server that requires a bearer token (issue 3 point 4). client-go (kubectl) reads a
//! kubeconfig's credentials only when the server URL is `https`, so a token over plain HTTP would lock
//! kubectl out. At start-up the server makes a throwaway CA and a certificate it signs for 127.0.0.1,
//! ::1 and localhost; the CA goes into the kubeconfig (`certificate-authority-data`) and into
//! [`crate::ApiServer::client`]. Nothing is written to disk but the kubeconfig.

use std::{net::SocketAddr, sync::Arc, time::Duration};

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
        pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer},
    },
    server::TlsStream,
};

/// A client that connects but never finishes its handshake is dropped after this long.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

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

impl Identity {
    /// A fresh CA and a serving certificate for the loopback names, both with P-256 keys.
    pub fn generate() -> std::io::Result<Identity> {
        let ca_key = KeyPair::generate().map_err(|e| tls_error("CA key", e))?;
        let mut ca_params = CertificateParams::default();
        ca_params.distinguished_name = rcgen::DistinguishedName::new();
        ca_params
            .distinguished_name
            .push(DnType::CommonName, "embedded-apiserver-ca");
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca_params.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::DigitalSignature,
            KeyUsagePurpose::CrlSign,
        ];
        let ca_cert = ca_params
            .self_signed(&ca_key)
            .map_err(|e| tls_error("CA certificate", e))?;
        let issuer = Issuer::new(ca_params, ca_key);

        let names = ["127.0.0.1", "::1", "localhost"].map(str::to_owned).to_vec();
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
            .signed_by(&key, &issuer)
            .map_err(|e| tls_error("serving certificate", e))?;

        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| tls_error("TLS versions", e))?
            .with_no_client_auth()
            .with_single_cert(
                vec![cert.der().clone(), ca_cert.der().clone()],
                PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der())),
            )
            .map_err(|e| tls_error("TLS configuration", e))?;
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        Ok(Identity {
            ca_pem: ca_cert.pem(),
            ca_der: ca_cert.der().clone(),
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
                    Ok((tcp, peer)) => {
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
