//! The HTTPS listener the API server calls: one port, every webhook on its own path. It runs on every
//! replica, leader or standby: admission must not wait for an election, and the Service spreads the
//! API server's calls over all of them.

use std::{
    net::SocketAddr,
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
    time::Duration,
};

use axum::{
    Router,
    body::Bytes,
    extract::State,
    http::{HeaderValue, StatusCode, header},
    response::{IntoResponse, Response},
    routing::post,
};
use serving::{listener::TlsListener, rustls};
use tokio::{net::TcpStream, sync::Notify};

use super::{
    CONVERSION_PATH, MUTATE_VOTE_CONFIG_PATH, VALIDATE_POSTGRES_WRITER_PATH, conversion, defaulting,
    validation,
};
use crate::runtime::{metrics::Metrics, readiness::Readiness};

/// What the webhooks need beyond the request.
#[derive(Clone)]
pub struct WebhookState {
    pub metrics: Arc<Metrics>,
    /// Where PostgresWriter tables are checked; without it (postgres-writer not running here) the
    /// validating webhook admits every table and leaves the check to the controller.
    pub tables: Option<validation::TableCheck>,
}

/// The listener, bound and serving in the background until the process ends, [`Self::stop`] or
/// [`Self::shut_down`].
pub struct WebhookServer {
    pub bound: SocketAddr,
    task: tokio::task::JoinHandle<()>,
    /// Set while draining: every response then closes its connection.
    draining: Arc<AtomicBool>,
    /// Tells the server to stop accepting and finish what it has.
    stopping: Arc<Notify>,
}

impl WebhookServer {
    /// Closes the port at once and every idle connection with it, without a drain: the API server's
    /// calls then fail as with the operator down. (Aborting the server's task would close the port
    /// only: the API server keeps its connections open between calls, and each lives in a task of its
    /// own that would go on answering.)
    pub fn stop(&self) {
        self.draining.store(true, Ordering::SeqCst);
        self.stopping.notify_one();
    }

    /// What makes the server close each connection after its response, from when it is started.
    pub fn drain_handle(&self) -> ConnectionDrain {
        ConnectionDrain(self.draining.clone())
    }

    /// Stops accepting connections, closes the idle ones, lets the requests in flight finish (each
    /// bounded by the API server's webhook timeout), and returns once the last connection is closed.
    pub async fn shut_down(self) {
        self.draining.store(true, Ordering::SeqCst);
        self.stopping.notify_one();
        if let Err(error) = self.task.await
            && !error.is_cancelled()
        {
            tracing::error!(%error, "webhook server failed while stopping");
        }
    }
}

/// Keeps the server serving, but closes each connection after its response. kube-apiserver keeps its
/// connections to a webhook open between calls, and a connection made through the Service's ClusterIP
/// stays with the pod it reached however the endpoints change: closed, it is made again, through the
/// endpoints as they are by then, which no longer include a pod shutting down.
#[derive(Clone)]
pub struct ConnectionDrain(Arc<AtomicBool>);

impl ConnectionDrain {
    pub fn start(&self) {
        self.0.store(true, Ordering::SeqCst);
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
    let listener = TlsListener::bind(addr, Arc::new(tls)).await?;
    let bound = axum::serve::Listener::local_addr(&listener)?;
    let draining = Arc::new(AtomicBool::new(false));
    let stopping = Arc::new(Notify::new());
    let app = Router::new()
        .route(CONVERSION_PATH, post(convert))
        .route(MUTATE_VOTE_CONFIG_PATH, post(mutate_vote_config))
        .route(VALIDATE_POSTGRES_WRITER_PATH, post(validate_postgres_writer))
        .with_state(state)
        .layer(axum::middleware::map_response_with_state(
            draining.clone(),
            close_while_draining,
        ));
    let stop = stopping.clone();
    let task = tokio::spawn(async move {
        let stopped = async move { stop.notified().await };
        if let Err(error) = axum::serve(listener, app).with_graceful_shutdown(stopped).await {
            tracing::error!(%error, "webhook server stopped");
        }
    });
    let running = task.abort_handle();
    // Ready while the server task runs and its port takes connections, as controller-runtime's
    // webhook readiness check dials it.
    readiness.add_check(
        "webhook",
        Arc::new(move || {
            let running = running.clone();
            Box::pin(async move {
                !running.is_finished()
                    && tokio::time::timeout(Duration::from_secs(1), TcpStream::connect(bound))
                        .await
                        .is_ok_and(|c| c.is_ok())
            })
        }),
    );
    Ok(WebhookServer {
        bound,
        task,
        draining,
        stopping,
    })
}

/// While draining, `Connection: close` on every response: hyper closes the connection once it is
/// written (see [`ConnectionDrain`]).
async fn close_while_draining(State(draining): State<Arc<AtomicBool>>, mut response: Response) -> Response {
    if draining.load(Ordering::SeqCst) {
        response
            .headers_mut()
            .insert(header::CONNECTION, HeaderValue::from_static("close"));
    }
    response
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
