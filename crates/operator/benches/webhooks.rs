//! The webhook server's throughput and latency: the real `operator` binary serves its webhooks on a
//! loopback port (`operator run --webhook-bind-address ... --webhook-cert-dir ...`, a certificate
//! from a throwaway CA), and this process sends it reviews over HTTPS as the API server would, from
//! concurrent clients, each on its own keep-alive connection:
//! - defaulting: an AdmissionReview of a VoteConfig v1 with three options, two without a color (the
//!   answer is a JSON patch);
//! - validation: an AdmissionReview of a PostgresWriter naming a table that exists, whose columns the
//!   webhook reads from a throwaway PostgreSQL at every request (the answer allows it);
//! - conversion: a ConversionReview of one VoteConfig from v1 to v1alpha1 (a question to carry in an
//!   annotation, an option's color to fill in), as the API server sends for a GET in the other version.
//!
//! For each, requests/s over the run and the latency percentiles each request saw (client side:
//! HTTP exchange, TLS and the webhook). The clients share the machine with the operator, as the API
//! server does with webhooks on a small node.
//!
//! `cargo bench -p operator --bench webhooks`. Knobs: `BENCH_SECONDS` per webhook (default 5),
//! `BENCH_CLIENTS` (default 16).

mod support;

use std::{
    process::{Command, Stdio},
    sync::Arc,
    time::{Duration, Instant},
};

use axum::{
    body::Body,
    http::{Request, header},
};
use hyper_util::rt::TokioIo;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::{Api, api::PostParams};
use operator::{
    db::throwaway::ThrowawayPostgres,
    webhook::{
        CONVERSION_PATH, MUTATE_VOTE_CONFIG_PATH, VALIDATE_POSTGRES_WRITER_PATH,
        configurations::{self, Endpoint},
        tls::ThrowawayCa,
    },
};
use serde_json::{Value, json};
use support::{Operator, free_port};
use tokio::net::TcpStream;
use tokio_rustls::{
    TlsConnector,
    rustls::{
        self, RootCertStore,
        pki_types::{CertificateDer, ServerName, pem::PemObject},
    },
};

fn knob(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
        .max(1)
}

/// One keep-alive HTTPS connection to the webhook server.
struct Connection {
    sender: hyper::client::conn::http1::SendRequest<Body>,
}

impl Connection {
    async fn open(port: u16, tls: &TlsConnector) -> Option<Self> {
        let tcp = TcpStream::connect(("127.0.0.1", port)).await.ok()?;
        tcp.set_nodelay(true).ok()?;
        let name = ServerName::try_from("127.0.0.1").ok()?;
        let stream = tls.connect(name, tcp).await.ok()?;
        let (sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
            .await
            .ok()?;
        tokio::spawn(connection);
        Some(Self { sender })
    }

    /// POSTs `body` to `path`; the status and the response body.
    async fn post(&mut self, path: &str, body: &[u8]) -> (u16, axum::body::Bytes) {
        self.sender.ready().await.expect("connection open");
        let request = Request::post(path)
            .header(header::HOST, "127.0.0.1")
            .header(header::CONTENT_TYPE, "application/json")
            .body(Body::from(body.to_vec()))
            .expect("request");
        let response = self.sender.send_request(request).await.expect("an answer");
        let status = response.status().as_u16();
        let bytes = axum::body::to_bytes(Body::new(response.into_body()), 1 << 20)
            .await
            .expect("the body");
        (status, bytes)
    }
}

fn client_tls(ca_pem: &str) -> TlsConnector {
    let mut roots = RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(ca_pem.as_bytes()) {
        roots.add(cert.expect("CA PEM")).expect("CA certificate");
    }
    let config =
        rustls::ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
            .with_safe_default_protocol_versions()
            .expect("TLS versions")
            .with_root_certificates(roots)
            .with_no_client_auth();
    TlsConnector::from(Arc::new(config))
}

fn admission_review(resource: (&str, &str, &str, &str), object: Value) -> Value {
    let (group, version, kind, plural) = resource;
    json!({
        "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
        "request": {
            "uid": "bench", "operation": "CREATE", "userInfo": {"username": "bench"},
            "kind": {"group": group, "version": version, "kind": kind},
            "resource": {"group": group, "version": version, "resource": plural},
            "namespace": "default", "name": object["metadata"]["name"], "object": object
        }
    })
}

/// One webhook's load: its name, its path, the review it is sent, and a check of its first answer (so
/// that the figures are of the work meant, not of a refusal).
struct Workload {
    name: &'static str,
    path: &'static str,
    review: Value,
    answers_right: fn(&Value) -> bool,
}

fn workloads() -> Vec<Workload> {
    let vote_config = json!({
        "apiVersion": "voting.schoolofdevops.com/v1", "kind": "VoteConfig",
        "metadata": {"name": "pets", "namespace": "default"},
        "spec": {"question": "Which pet?", "options": [
            {"id": "a", "label": "Cats"}, {"id": "b", "label": "Dogs", "color": "#E6194B"},
            {"id": "c", "label": "Birds"}]}
    });
    let writer = json!({
        "apiVersion": "demo.yash.com/v1", "kind": "PostgresWriter",
        "metadata": {"name": "ada", "namespace": "default"},
        "spec": {"table": "students", "name": "Ada", "age": 36, "country": "UK"}
    });
    let conversion = json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
        "request": {"uid": "bench", "desiredAPIVersion": "voting.schoolofdevops.com/v1alpha1",
            "objects": [vote_config.clone()]}
    });
    vec![
        Workload {
            name: "defaulting",
            path: MUTATE_VOTE_CONFIG_PATH,
            review: admission_review(
                ("voting.schoolofdevops.com", "v1", "VoteConfig", "voteconfigs"),
                vote_config,
            ),
            answers_right: |r| r["response"]["allowed"] == true && r["response"]["patchType"] == "JSONPatch",
        },
        Workload {
            name: "validation",
            path: VALIDATE_POSTGRES_WRITER_PATH,
            review: admission_review(
                ("demo.yash.com", "v1", "PostgresWriter", "postgreswriters"),
                writer,
            ),
            answers_right: |r| r["response"]["allowed"] == true && r["response"].get("warnings").is_none(),
        },
        Workload {
            name: "conversion",
            path: CONVERSION_PATH,
            review: conversion,
            answers_right: |r| {
                r["response"]["result"]["status"] == "Success"
                    && r["response"]["convertedObjects"][0]["apiVersion"]
                        == "voting.schoolofdevops.com/v1alpha1"
            },
        },
    ]
}

/// `clients` tasks each sending `body` to `path` on their own connection for `run`; every latency.
async fn load(
    port: u16,
    tls: &TlsConnector,
    path: &'static str,
    body: Arc<Vec<u8>>,
    clients: u64,
    run: Duration,
) -> (Vec<Duration>, Duration) {
    let started = Instant::now();
    let deadline = started + run;
    let mut tasks = Vec::new();
    for _ in 0..clients {
        let tls = tls.clone();
        let body = body.clone();
        tasks.push(tokio::spawn(async move {
            let mut connection = Connection::open(port, &tls).await.expect("a connection");
            let mut latencies = Vec::new();
            while Instant::now() < deadline {
                let sent = Instant::now();
                let (status, _) = connection.post(path, &body).await;
                latencies.push(sent.elapsed());
                assert_eq!(status, 200, "{path} answered {status}");
            }
            latencies
        }));
    }
    let mut latencies = Vec::new();
    for task in tasks {
        latencies.extend(task.await.expect("a client"));
    }
    (latencies, started.elapsed())
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let index = ((sorted.len() as f64 * p).ceil() as usize).clamp(1, sorted.len()) - 1;
    sorted[index]
}

fn millis(d: Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1000.0)
}

#[tokio::main]
async fn main() {
    let seconds = knob("BENCH_SECONDS", 5);
    let clients = knob("BENCH_CLIENTS", 16);

    let pg = ThrowawayPostgres::start().await.expect("throwaway PostgreSQL");
    let (sql, connection) = tokio_postgres::connect(&pg.url(), tokio_postgres::NoTls)
        .await
        .expect("psql");
    tokio::spawn(connection);
    sql.batch_execute(
        "CREATE TABLE students (id text PRIMARY KEY, name text NOT NULL, age integer NOT NULL, \
         country text NOT NULL, owner_uid text NOT NULL)",
    )
    .await
    .expect("a table");

    // `operator run` needs a cluster: the embedded API server, with our CRDs.
    let server = apiserver::ApiServer::start(apiserver::Config::default())
        .await
        .expect("API server");
    let client = server.client();
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    for crd in configurations::crds(&Endpoint::InCluster) {
        crds.create(&PostParams::default(), &crd).await.expect("CRD");
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let kubeconfig = dir.path().join("kubeconfig");
    server.write_kubeconfig(&kubeconfig).expect("kubeconfig");
    let certs = dir.path().join("certs");
    let ca = ThrowawayCa::generate(&["127.0.0.1"]).expect("a throwaway CA");
    ca.write_to(&certs).expect("certificate written");

    let port = free_port();
    let probes = free_port();
    let child = Command::new(env!("CARGO_BIN_EXE_operator"))
        .args([
            "run",
            "--controllers",
            "postgres-writer",
            "--metrics-bind-address",
            "0",
        ])
        .arg(format!("--health-probe-bind-address=127.0.0.1:{probes}"))
        .arg(format!("--webhook-bind-address=127.0.0.1:{port}"))
        .arg("--webhook-cert-dir")
        .arg(&certs)
        .env("KUBECONFIG", &kubeconfig)
        .env("DATABASE_URL", pg.url())
        .env("LOG_LEVEL", "warn")
        .stdout(Stdio::null())
        .spawn()
        .expect("operator starts");
    let _operator = Operator(child);
    let tls = client_tls(&ca.ca_pem);
    let ready = Instant::now();
    let mut probe = loop {
        if let Some(connection) = Connection::open(port, &tls).await {
            break connection;
        }
        assert!(
            ready.elapsed() < Duration::from_secs(30),
            "the webhook server did not start"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };

    println!(
        "Webhook server: {clients} concurrent clients, one keep-alive HTTPS connection each, {seconds} s per webhook"
    );
    println!(
        "{:<11} {:>10} {:>10} {:>10} {:>10}",
        "webhook", "requests/s", "p50", "p99", "max"
    );
    for Workload {
        name,
        path,
        review,
        answers_right,
    } in workloads()
    {
        let body = Arc::new(serde_json::to_vec(&review).expect("JSON"));
        let (status, answer) = probe.post(path, &body).await;
        let answer: Value = serde_json::from_slice(&answer).expect("a JSON review");
        assert!(
            status == 200 && answers_right(&answer),
            "{name}: {status} {answer}"
        );
        // A short warm-up: connections opened, the pool's database connections made.
        load(
            port,
            &tls,
            path,
            body.clone(),
            clients,
            Duration::from_millis(500),
        )
        .await;
        let (mut latencies, elapsed) =
            load(port, &tls, path, body, clients, Duration::from_secs(seconds)).await;
        latencies.sort();
        println!(
            "{:<11} {:>10.0} {:>10} {:>10} {:>10}",
            name,
            latencies.len() as f64 / elapsed.as_secs_f64(),
            millis(percentile(&latencies, 0.50)),
            millis(percentile(&latencies, 0.99)),
            millis(*latencies.last().expect("requests")),
        );
    }
}
