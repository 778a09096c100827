//! `/metrics` (Prometheus text) and `/healthz`, `/readyz` servers.

use std::{net::SocketAddr, path::Path, sync::Arc};

use axum::{Router, extract::State, http::StatusCode, response::IntoResponse, routing::get};
use serving::{listener::TlsListener, rustls};

use super::metrics_access::{self, MetricsAccess};
use crate::{
    Result,
    runtime::{metrics::Metrics, readiness::Readiness},
    webhook::tls,
};

/// How `/metrics` is served.
pub enum MetricsSecurity {
    /// Plain HTTP, to anyone who reaches the port.
    Plain,
    /// HTTPS with `tls`, to clients `access` lets in.
    Secure {
        tls: Box<rustls::ServerConfig>,
        access: Arc<MetricsAccess>,
    },
}

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
pub async fn serve_metrics(
    addr: SocketAddr,
    metrics: Arc<Metrics>,
    security: MetricsSecurity,
) -> std::io::Result<SocketAddr> {
    let app = Router::new()
        .route("/metrics", get(self::metrics))
        .with_state(metrics);
    match security {
        MetricsSecurity::Plain => spawn(addr, app).await,
        MetricsSecurity::Secure { tls, access } => {
            let app = app.layer(axum::middleware::from_fn_with_state(
                access,
                metrics_access::require_access,
            ));
            let listener = TlsListener::bind(addr, Arc::from(tls)).await?;
            let bound = axum::serve::Listener::local_addr(&listener)?;
            tokio::spawn(async move {
                if let Err(error) = axum::serve(listener, app).await {
                    tracing::error!(%error, "metrics server stopped");
                }
            });
            Ok(bound)
        }
    }
}

/// The metrics server's TLS: the certificate in `cert_dir` (`tls.crt`, `tls.key`, read again when they
/// change), or without one a self-signed certificate made at start, as controller-runtime makes one.
/// A scraper then skips verification (the ServiceMonitor of config/prometheus does) and still
/// authenticates itself with its token.
pub fn metrics_tls(cert_dir: Option<&Path>) -> Result<rustls::ServerConfig> {
    if let Some(dir) = cert_dir {
        return tls::server_config(dir);
    }
    let made = tls::ThrowawayCa::generate(&["localhost", "127.0.0.1"])?;
    let chain = format!("{}{}", made.cert_pem, made.ca_pem);
    let key = serving::certificates::certified_key_from_pem(&chain, &made.key_pem)?;
    tls::server_config_with(Arc::new(tls::CertificateSlot::new(key)))
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
