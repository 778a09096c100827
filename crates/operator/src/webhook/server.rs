//! The HTTPS listener the API server calls: one port, every webhook on its own path. It runs on every
//! replica, leader or standby: admission must not wait for an election, and the Service spreads the
//! API server's calls over all of them.

use std::{net::SocketAddr, sync::Arc, time::Duration};

use axum::{
    Router,
    body::Bytes,
    extract::State,
    http::StatusCode,
    response::{IntoResponse, Response},
    routing::post,
};
use tokio::{
    net::{TcpListener, TcpStream},
    task::JoinSet,
};
use tokio_rustls::{TlsAcceptor, rustls, server::TlsStream};

use super::{
    CONVERSION_PATH, MUTATE_VOTE_CONFIG_PATH, VALIDATE_POSTGRES_WRITER_PATH, conversion, defaulting,
    validation,
};
use crate::runtime::{metrics::Metrics, readiness::Readiness};

/// A client that connects but never finishes its handshake is dropped after this long.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// What the webhooks need beyond the request.
#[derive(Clone)]
pub struct WebhookState {
    pub metrics: Arc<Metrics>,
    /// Where PostgresWriter tables are checked; without it (postgres-writer not running here) the
    /// validating webhook admits every table and leaves the check to the controller.
    pub tables: Option<validation::TableCheck>,
}

/// The listener, bound and serving in the background until the process ends or [`Self::stop`].
pub struct WebhookServer {
    pub bound: SocketAddr,
    task: tokio::task::AbortHandle,
}

impl WebhookServer {
    /// Closes the port at once: the API server's calls then fail as with the operator down.
    pub fn stop(&self) {
        self.task.abort();
    }
}

/// Binds `addr` now (a taken port fails start-up), serves TLS with `tls` in the background, and makes
/// `/readyz` fail while the listener is not accepting.
pub async fn serve(
    addr: SocketAddr,
    tls: rustls::ServerConfig,
    state: WebhookState,
    readiness: &Readiness,
) -> std::io::Result<WebhookServer> {
    let tcp = TcpListener::bind(addr).await?;
    let bound = tcp.local_addr()?;
    let listener = TlsListener {
        tcp,
        acceptor: TlsAcceptor::from(Arc::new(tls)),
        handshakes: JoinSet::new(),
    };
    let app = Router::new()
        .route(CONVERSION_PATH, post(convert))
        .route(MUTATE_VOTE_CONFIG_PATH, post(mutate_vote_config))
        .route(VALIDATE_POSTGRES_WRITER_PATH, post(validate_postgres_writer))
        .with_state(state);
    let task = tokio::spawn(async move {
        if let Err(error) = axum::serve(listener, app).await {
            tracing::error!(%error, "webhook server stopped");
        }
    });
    let abort = task.abort_handle();
    let task = Arc::new(task);
    // Ready while the server task runs and its port takes connections, as controller-runtime's
    // webhook readiness check dials it.
    readiness.add_check(
        "webhook",
        Arc::new(move || {
            let task = task.clone();
            Box::pin(async move {
                !task.is_finished()
                    && tokio::time::timeout(Duration::from_secs(1), TcpStream::connect(bound))
                        .await
                        .is_ok_and(|c| c.is_ok())
            })
        }),
    );
    Ok(WebhookServer { bound, task: abort })
}

/// Answers one review with `answer`, counting it under `webhook` (the path) with the HTTP status.
async fn instrumented<F>(state: &WebhookState, webhook: &str, answer: F) -> Response
where
    F: Future<Output = Result<serde_json::Value, String>>,
{
    let started = std::time::Instant::now();
    let (code, response) = match answer.await {
        Ok(review) => (StatusCode::OK, axum::Json(review).into_response()),
        // Not a review at all: the API server treats this as the webhook failing.
        Err(why) => (
            StatusCode::BAD_REQUEST,
            (StatusCode::BAD_REQUEST, why).into_response(),
        ),
    };
    state
        .metrics
        .observe_webhook(webhook, code.as_u16(), started.elapsed());
    response
}

async fn convert(State(state): State<WebhookState>, body: Bytes) -> Response {
    instrumented(&state, CONVERSION_PATH, async { conversion::review(&body) }).await
}

async fn mutate_vote_config(State(state): State<WebhookState>, body: Bytes) -> Response {
    instrumented(&state, MUTATE_VOTE_CONFIG_PATH, async {
        defaulting::review(&body)
    })
    .await
}

async fn validate_postgres_writer(State(state): State<WebhookState>, body: Bytes) -> Response {
    let tables = state.tables.clone();
    instrumented(&state, VALIDATE_POSTGRES_WRITER_PATH, async move {
        validation::review(&body, tables.as_ref()).await
    })
    .await
}

/// Connections that finished their TLS handshake, for `axum::serve`. Each handshake runs in its own
/// task, so a slow client delays no other.
struct TlsListener {
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
                                    tracing::debug!(%peer, %error, "webhook TLS handshake failed");
                                    None
                                }
                                Err(_) => None,
                            }
                        });
                    }
                    Err(error) => {
                        // Out of file descriptors and the like: pause rather than spin.
                        tracing::warn!(%error, "accepting a webhook connection failed");
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
