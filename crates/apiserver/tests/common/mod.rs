//! What the kube-rs tests of the API server share: a server with its client, Status errors, and
//! polling with a deadline, and owner graphs built over HTTP for the garbage collection tests.

#![allow(dead_code)]

pub mod kubectl;
pub mod owner_graph;
pub mod webhook_server;

use std::time::Duration;

use apiserver::{ApiServer, Config};
use kube::Client;
use serde_json::Value;

/// A server on a free loopback port (token and TLS, as by default) and a client for it.
pub async fn start() -> (ApiServer, Client) {
    let server = ApiServer::start(Config::default()).await.expect("server starts");
    let client = server.client();
    (server, client)
}

/// A server without authentication (so without TLS) and a client for it: for tests that send many
/// thousands of requests and are about something else than who may send them.
pub async fn start_plain() -> (ApiServer, Client) {
    let config = Config {
        auth: apiserver::Auth::None,
        ..Config::default()
    };
    let server = ApiServer::start(config).await.expect("server starts");
    let client = server.client();
    (server, client)
}

/// A control plane without nodes: the real one (which runs no kubelet), or the embedded server with
/// its simulated node switched off, for tests of what a cluster does with Pods no node runs.
pub async fn without_a_node(backend: testenv::Backend) -> testenv::ControlPlane {
    match backend {
        testenv::Backend::Real => testenv::ControlPlane::start(backend).await,
        // The cluster tier has a node by definition; the embedded server's tests never run there.
        testenv::Backend::Cluster => panic!("a control plane without nodes is not the cluster tier"),
        testenv::Backend::Embedded => {
            testenv::ControlPlane::embedded(Config {
                simulated_node: false,
                ..Config::default()
            })
            .await
        }
    }
    .expect("control plane starts")
}

/// The Status of a failed request.
pub fn api_error(error: kube::Error) -> kube::core::Status {
    match error {
        kube::Error::Api(response) => *response,
        other => panic!("expected a Status error, got {other:?}"),
    }
}

/// Polls `check` until it is true or ten seconds pass.
pub async fn eventually<F, Fut>(what: &str, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while !check().await {
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// What the server answered: status, `Warning` headers, and the body as JSON (`Null` if it is not)
/// and as text.
pub struct Answer {
    pub status: u16,
    pub content_type: String,
    pub warnings: Vec<String>,
    pub body: Value,
    pub text: String,
    pub bytes: Vec<u8>,
}

/// Sends one request as any client would, a `Null` body as none.
pub async fn request(client: &Client, method: &str, path: &str, content_type: &str, body: Value) -> Answer {
    let body = if body.is_null() {
        Vec::new()
    } else {
        serde_json::to_vec(&body).expect("a JSON body")
    };
    request_bytes(client, method, path, content_type, body).await
}

/// [`request`] with a body sent as it is, for bodies a `Value` cannot hold (a repeated key); an empty
/// `content_type` sends no Content-Type header.
pub async fn request_bytes(
    client: &Client,
    method: &str,
    path: &str,
    content_type: &str,
    body: Vec<u8>,
) -> Answer {
    exchange(client, method, path, content_type, "", body).await
}

/// [`request_bytes`] with an Accept header too (none when empty), for answers in other forms.
pub async fn exchange(
    client: &Client,
    method: &str,
    path: &str,
    content_type: &str,
    accept: &str,
    body: Vec<u8>,
) -> Answer {
    let mut request = axum::http::Request::builder().method(method).uri(path);
    if !content_type.is_empty() {
        request = request.header("content-type", content_type);
    }
    if !accept.is_empty() {
        request = request.header("accept", accept);
    }
    let request = request.body(kube::client::Body::from(body)).expect("a request");
    let response = client.send(request).await.expect("an answer");
    let status = response.status().as_u16();
    let content_type = response
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    let warnings = response
        .headers()
        .get_all("warning")
        .iter()
        .map(|value| String::from_utf8_lossy(value.as_bytes()).into_owned())
        .collect();
    let bytes = axum::body::to_bytes(axum::body::Body::new(response.into_body()), usize::MAX)
        .await
        .expect("a whole body");
    Answer {
        status,
        content_type,
        warnings,
        body: serde_json::from_slice(&bytes).unwrap_or(Value::Null),
        text: String::from_utf8_lossy(&bytes).into_owned(),
        bytes: bytes.to_vec(),
    }
}

/// A CertificateSigningRequest named `name` for a client certificate, with the fixture's request.
pub fn client_csr(name: &str) -> Value {
    let fixture = std::fs::read_to_string(kubectl::fixture("tables/objects.yaml")).expect("fixture");
    let request_pem = fixture
        .lines()
        .find_map(|line| line.trim().strip_prefix("request: "))
        .expect("the fixture's CSR");
    serde_json::json!({"apiVersion": "certificates.k8s.io/v1", "kind": "CertificateSigningRequest",
        "metadata": {"name": name},
        "spec": {"request": request_pem, "signerName": "kubernetes.io/kube-apiserver-client",
            "usages": ["client auth"]}})
}

/// A ConfigMap named `name` holding `data`.
pub fn config_map(name: &str, data: Value) -> k8s_openapi::api::core::v1::ConfigMap {
    serde_json::from_value(serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": name}, "data": data}))
    .expect("a valid ConfigMap")
}

/// [`request_bytes`], for the status and the JSON body alone.
pub async fn send_bytes(
    client: &Client,
    method: &str,
    path: &str,
    content_type: &str,
    body: Vec<u8>,
) -> (u16, Value) {
    let answer = request_bytes(client, method, path, content_type, body).await;
    (answer.status, answer.body)
}

/// [`request`], for the status and the body alone.
pub async fn send(
    client: &Client,
    method: &str,
    path: &str,
    content_type: &str,
    body: Value,
) -> (u16, Value) {
    let answer = request(client, method, path, content_type, body).await;
    (answer.status, answer.body)
}

pub use testenv::discovered;

/// Creates `crd` over HTTP and waits until it is Established, as a client of a real API server must
/// before it uses the new resource.
pub async fn install_crd(client: &Client, crd: Value) {
    let crds = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
    let name = crd["metadata"]["name"].as_str().unwrap_or_default().to_owned();
    let created = request(client, "POST", crds, "application/json", crd).await;
    assert_eq!(created.status, 201, "{}", created.body);
    eventually("the CRD established", || async {
        let crd = request(
            client,
            "GET",
            &format!("{crds}/{name}"),
            "application/json",
            Value::Null,
        )
        .await;
        crd.body["status"]["conditions"].as_array().is_some_and(|c| {
            c.iter()
                .any(|c| c["type"] == "Established" && c["status"] == "True")
        })
    })
    .await;
}
