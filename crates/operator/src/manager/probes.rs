//! `/metrics` (Prometheus text) and `/healthz`, `/readyz` servers.

use std::{net::SocketAddr, sync::Arc};

use axum::{Router, extract::State, http::StatusCode, response::IntoResponse, routing::get};

use crate::runtime::{metrics::Metrics, readiness::Readiness};

async fn metrics(State(metrics): State<Arc<Metrics>>) -> impl IntoResponse {
    (
        [(
            "content-type",
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
        )],
        metrics.encode(),
    )
}

async fn ready(State(readiness): State<Arc<Readiness>>) -> impl IntoResponse {
    let failing = readiness.failing().await;
    if failing.is_empty() {
        (StatusCode::OK, "ok".to_owned())
    } else {
        // 503: not able to serve yet (or any more), which is what the kubelet and a reader are told.
        (StatusCode::SERVICE_UNAVAILABLE, failing.join("\n"))
    }
}

/// Binds now (so a taken port fails start-up) and serves in the background.
pub async fn serve_metrics(addr: SocketAddr, metrics: Arc<Metrics>) -> std::io::Result<SocketAddr> {
    let app = Router::new()
        .route("/metrics", get(self::metrics))
        .with_state(metrics);
    spawn(addr, app).await
}

pub async fn serve_probes(addr: SocketAddr, readiness: Arc<Readiness>) -> std::io::Result<SocketAddr> {
    let app = Router::new()
        .route("/healthz", get(|| async { "ok" }))
        .route("/readyz", get(ready))
        .with_state(readiness);
    spawn(addr, app).await
}

async fn spawn(addr: SocketAddr, app: Router) -> std::io::Result<SocketAddr> {
    let listener = tokio::net::TcpListener::bind(addr).await?;
    let bound = listener.local_addr()?;
    tokio::spawn(async move {
        if let Err(error) = axum::serve(listener, app).await {
            tracing::error!(%error, "probe server stopped");
        }
    });
    Ok(bound)
}
