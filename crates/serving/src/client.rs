//! One HTTPS POST of a review (JSON) to a webhook, trusting only the CA bundle its configuration
//! names, as kube-apiserver calls conversion and admission webhooks. Built on hyper's connection API
//! and tokio-rustls, which the servers already use, rather than a second HTTP client stack. One
//! connection a call, HTTP/1.1.
//!
//! Failures read as Go's HTTP client words them (`Post "<url>": dial tcp <addr>: connect: connection
//! refused`), since clients and people match on the messages kube-apiserver passes through.

use std::{sync::Arc, time::Duration};

use axum::{
    body::Body,
    http::{Request, Uri, header},
};
use base64::Engine;
use hyper_util::rt::TokioIo;
use serde_json::Value;
use tokio::net::TcpStream;
use tokio_rustls::{
    TlsConnector,
    rustls::{
        self, RootCertStore,
        pki_types::{CertificateDer, ServerName, pem::PemObject},
    },
};

/// Review responses larger than this are refused: a webhook answers one small review.
const MAX_RESPONSE_BYTES: usize = 64 * 1024 * 1024;

/// Where a webhook listens and whom to trust there.
#[derive(Debug, Clone)]
pub struct Endpoint {
    /// `https://host:port/path`, before the `timeout` query the call adds.
    pub url: String,
    /// The address to dial, when it is not the URL's host (a Service resolved to its endpoints).
    pub dial: Option<String>,
    /// The `caBundle` of the configuration: base64 of PEM certificates, possibly empty.
    pub ca_bundle: String,
}

/// A call that got no usable answer; the message is the whole of what kube-apiserver would say after
/// `failed to call webhook: `.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{0}")]
pub struct CallError(pub String);

/// What a webhook answered: its HTTP status and its body, as JSON.
pub struct Answer {
    /// The HTTP status code.
    pub status: u16,
    /// The body parsed as JSON; `Null` when it is empty or not JSON.
    pub body: Value,
}

/// POSTs `review` to `endpoint` and reads the answer, all within `timeout`.
pub async fn post(endpoint: &Endpoint, review: &Value, timeout: Duration) -> Result<Answer, CallError> {
    let url = with_timeout_query(&endpoint.url, timeout);
    let failed = |what: String| CallError(format!("Post \"{url}\": {what}"));
    match tokio::time::timeout(timeout, exchange(endpoint, &url, review)).await {
        Ok(Ok(answer)) => Ok(answer),
        Ok(Err(what)) => Err(failed(what)),
        Err(_) => Err(failed("context deadline exceeded".into())),
    }
}

/// `url` with the `timeout` query kube-apiserver adds to every webhook call (`?timeout=10s`).
fn with_timeout_query(url: &str, timeout: Duration) -> String {
    let separator = if url.contains('?') { '&' } else { '?' };
    format!("{url}{separator}timeout={}s", timeout.as_secs())
}

async fn exchange(endpoint: &Endpoint, url: &str, review: &Value) -> Result<Answer, String> {
    let uri: Uri = url.parse().map_err(|e| format!("invalid URL: {e}"))?;
    if uri.scheme_str() != Some("https") {
        return Err(format!(
            "unsupported protocol scheme {:?}",
            uri.scheme_str().unwrap_or("")
        ));
    }
    let host = uri
        .host()
        .ok_or("no host in the URL")?
        .trim_matches(['[', ']'])
        .to_owned();
    let port = uri.port_u16().unwrap_or(443);
    let address = endpoint.dial.clone().unwrap_or_else(|| authority(&host, port));
    let mut tcp = TcpStream::connect(&address)
        .await
        .map_err(|e| format!("dial tcp {address}: {}", go_dial_error(&e)))?;
    crate::listener::no_delay(&mut tcp);
    let server_name =
        ServerName::try_from(host.clone()).map_err(|e| format!("invalid server name {host:?}: {e}"))?;
    let tls = TlsConnector::from(Arc::new(client_config(&endpoint.ca_bundle)?))
        .connect(server_name, tcp)
        .await
        .map_err(|e| format!("tls: failed to verify certificate: {e}"))?;
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(tls))
        .await
        .map_err(|e| e.to_string())?;
    // The connection is driven until the one exchange ends; dropping the sender ends it.
    tokio::spawn(async move {
        if let Err(error) = connection.await {
            tracing::debug!(%error, "webhook connection ended");
        }
    });
    let path = uri.path_and_query().map_or("/", |p| p.as_str());
    let body = serde_json::to_vec(review).map_err(|e| e.to_string())?;
    let request = Request::post(path)
        .header(header::HOST, authority(&host, port))
        .header(header::CONTENT_TYPE, "application/json")
        .header(header::ACCEPT, "application/json, */*")
        .body(Body::from(body))
        .map_err(|e| e.to_string())?;
    let response = sender.send_request(request).await.map_err(|e| e.to_string())?;
    let status = response.status().as_u16();
    let bytes = axum::body::to_bytes(Body::new(response.into_body()), MAX_RESPONSE_BYTES)
        .await
        .map_err(|e| e.to_string())?;
    let body = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    Ok(Answer { status, body })
}

/// `host:port`, bracketing an IPv6 host.
fn authority(host: &str, port: u16) -> String {
    if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}

/// Go's words for a failed dial (`connect: connection refused`), so that messages match the real
/// server's; other failures keep the operating system's words.
fn go_dial_error(error: &std::io::Error) -> String {
    match error.kind() {
        std::io::ErrorKind::ConnectionRefused => "connect: connection refused".into(),
        _ => format!("connect: {error}"),
    }
}

/// TLS trusting exactly the certificates of `ca_bundle` (base64 of PEM, as configurations carry it).
fn client_config(ca_bundle: &str) -> Result<rustls::ClientConfig, String> {
    let pem = base64::engine::general_purpose::STANDARD
        .decode(ca_bundle.trim())
        .map_err(|e| format!("invalid caBundle: {e}"))?;
    let mut roots = RootCertStore::empty();
    for certificate in CertificateDer::pem_slice_iter(&pem) {
        let certificate = certificate.map_err(|e| format!("invalid caBundle: {e}"))?;
        roots
            .add(certificate)
            .map_err(|e| format!("invalid caBundle: {e}"))?;
    }
    Ok(rustls::ClientConfig::builder_with_provider(crate::provider())
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_root_certificates(roots)
        .with_no_client_auth())
}
