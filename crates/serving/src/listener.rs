//! The HTTPS listener for `axum::serve`: it owns the TCP listener and the handshakes in flight, each in
//! a task of its own so that a slow client delays no other, and dropped after a deadline so that one
//! that never finishes holds nothing. HTTP/1.1 only: [`server_config`] offers nothing else in the
//! handshake.

use std::{net::SocketAddr, sync::Arc, time::Duration};

use tokio::{
    net::{TcpListener, TcpStream},
    task::JoinSet,
};
use tokio_rustls::{
    TlsAcceptor,
    rustls::{self, server::ResolvesServerCert},
    server::TlsStream,
};

use crate::{Error, Result, provider};

/// A client that connects but never finishes its handshake is dropped after this long.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// A TLS configuration presenting, at each handshake, whatever certificate `certificates` holds then,
/// and offering HTTP/1.1 (ALPN). No client certificates are asked for.
pub fn server_config(certificates: Arc<dyn ResolvesServerCert>) -> Result<rustls::ServerConfig> {
    let mut config = rustls::ServerConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(Error::Tls)?
        .with_no_client_auth()
        .with_cert_resolver(certificates);
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(config)
}

/// Turns Nagle's algorithm off on a connection, as Go's net package (and so kube-apiserver) does by
/// default. With it on, a watch event written while the previous one is unacknowledged waits for the
/// client's delayed ACK: up to 40 ms on Linux, since a watching client sends nothing to carry the ACK.
pub fn no_delay(tcp: &mut TcpStream) {
    if let Err(error) = tcp.set_nodelay(true) {
        tracing::debug!(%error, "could not set TCP_NODELAY");
    }
}

/// Connections that finished their TLS handshake, for `axum::serve`. Dropping it closes the port at
/// once and cancels the handshakes in flight.
pub struct TlsListener {
    tcp: TcpListener,
    acceptor: TlsAcceptor,
    handshakes: JoinSet<Option<(TlsStream<TcpStream>, SocketAddr)>>,
}

impl TlsListener {
    /// Serves TLS configured by `config` on the connections `tcp` accepts.
    pub fn new(tcp: TcpListener, config: Arc<rustls::ServerConfig>) -> Self {
        TlsListener {
            tcp,
            acceptor: TlsAcceptor::from(config),
            handshakes: JoinSet::new(),
        }
    }

    /// Binds `addr` now, so that a taken port fails the caller's start-up rather than a later accept.
    pub async fn bind(addr: SocketAddr, config: Arc<rustls::ServerConfig>) -> std::io::Result<Self> {
        Ok(TlsListener::new(TcpListener::bind(addr).await?, config))
    }
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
                        no_delay(&mut tcp);
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
