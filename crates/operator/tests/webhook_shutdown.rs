//! The webhook server's end, as the API server's connections see it: while draining, each response
//! closes its connection (so that the next call is made through the Service's endpoints as they are
//! then), and a graceful stop refuses new connections but finishes the request in flight.

mod support;

use std::{sync::Arc, time::Duration};

use operator::webhook::CONVERSION_PATH;
use tokio::{
    io::{AsyncReadExt, AsyncWriteExt},
    net::TcpStream,
};
use tokio_rustls::{
    TlsConnector,
    client::TlsStream,
    rustls::{
        ClientConfig, RootCertStore,
        pki_types::{CertificateDer, ServerName, pem::PemObject},
    },
};

use support::{eventually, webhooks};

/// A conversion review with nothing to convert: the smallest call the API server makes.
const REVIEW: &str = r#"{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview","request":{"uid":"7","desiredAPIVersion":"voting.schoolofdevops.com/v1","objects":[]}}"#;

/// A TLS connection to the webhook server that trusts only `ca_pem`.
async fn connect(ca_pem: &str, addr: std::net::SocketAddr) -> TlsStream<TcpStream> {
    let mut roots = RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(ca_pem.as_bytes()) {
        roots.add(cert.expect("a CA certificate")).expect("a root");
    }
    let config =
        ClientConfig::builder_with_provider(Arc::new(tokio_rustls::rustls::crypto::ring::default_provider()))
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_root_certificates(roots)
            .with_no_client_auth();
    let tcp = TcpStream::connect(addr)
        .await
        .expect("the port takes connections");
    TlsConnector::from(Arc::new(config))
        .connect(ServerName::IpAddress(addr.ip().into()), tcp)
        .await
        .expect("a TLS handshake")
}

fn request_head(body_length: usize) -> String {
    format!(
        "POST {CONVERSION_PATH} HTTP/1.1\r\nHost: webhook\r\nContent-Type: application/json\r\nContent-Length: {body_length}\r\n\r\n"
    )
}

/// The head of an HTTP/1.1 response read off `stream`, lowercased: (status, head).
async fn read_head(stream: &mut TlsStream<TcpStream>) -> (u16, String) {
    let mut raw = Vec::new();
    let mut byte = [0u8; 1];
    while !raw.ends_with(b"\r\n\r\n") {
        let read = stream.read(&mut byte).await.expect("the response's head");
        assert!(read > 0, "the connection closed before a response");
        raw.push(byte[0]);
    }
    let head = String::from_utf8_lossy(&raw).to_lowercase();
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .expect("a status");
    (status, head)
}

/// An interim HTTP/1.1 response (no body) read off `stream`: its status.
async fn read_interim(stream: &mut TlsStream<TcpStream>) -> u16 {
    read_head(stream).await.0
}

/// One HTTP/1.1 response read off `stream`, its body by Content-Length: (status, head, body).
async fn read_response(stream: &mut TlsStream<TcpStream>) -> (u16, String, String) {
    let (status, head) = read_head(stream).await;
    let length: usize = head
        .lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .and_then(|v| v.trim().parse().ok())
        .expect("a content-length");
    let mut body = vec![0u8; length];
    stream.read_exact(&mut body).await.expect("the body");
    (status, head, String::from_utf8_lossy(&body).into_owned())
}

#[tokio::test(flavor = "multi_thread")]
async fn a_draining_server_closes_each_connection_after_its_response() {
    let hooks = webhooks::serve_alone().await;
    let addr = hooks.server.bound;

    // Before the drain, a connection is kept for the next call.
    let mut kept = connect(&hooks.ca_pem, addr).await;
    kept.write_all(format!("{}{REVIEW}", request_head(REVIEW.len())).as_bytes())
        .await
        .unwrap();
    let (status, head, _) = read_response(&mut kept).await;
    assert_eq!(status, 200);
    assert!(!head.contains("connection: close"), "{head}");

    // Draining: the same connection is answered, then closed.
    hooks.server.drain_handle().start();
    kept.write_all(format!("{}{REVIEW}", request_head(REVIEW.len())).as_bytes())
        .await
        .unwrap();
    let (status, head, body) = read_response(&mut kept).await;
    assert_eq!(status, 200, "{body}");
    assert!(head.contains("connection: close"), "{head}");
    let mut rest = Vec::new();
    let closed = tokio::time::timeout(Duration::from_secs(5), kept.read_to_end(&mut rest)).await;
    assert!(
        matches!(closed, Ok(Ok(0)) | Ok(Err(_))),
        "the server closed the connection: {closed:?} {rest:?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_stopping_server_refuses_new_connections_and_answers_the_request_in_flight() {
    let hooks = webhooks::serve_alone().await;
    let addr = hooks.server.bound;
    // A connection the server already serves (one call answered, kept open), on which the next call
    // is half sent when the server is told to stop.
    let mut in_flight = connect(&hooks.ca_pem, addr).await;
    in_flight
        .write_all(format!("{}{REVIEW}", request_head(REVIEW.len())).as_bytes())
        .await
        .unwrap();
    assert_eq!(read_response(&mut in_flight).await.0, 200);
    // The next call asks to continue before its body (`Expect: 100-continue`): the server's interim
    // answer says that it has read the head and is reading the body, so the request is in flight when
    // the server is told to stop, whatever the scheduling of the two.
    let head = request_head(REVIEW.len()).replace("\r\n\r\n", "\r\nExpect: 100-continue\r\n\r\n");
    in_flight.write_all(head.as_bytes()).await.unwrap();
    in_flight.flush().await.unwrap();
    assert_eq!(
        read_interim(&mut in_flight).await,
        100,
        "the server reads the body"
    );
    let (first, second) = REVIEW.split_at(REVIEW.len() / 2);
    in_flight.write_all(first.as_bytes()).await.unwrap();
    in_flight.flush().await.unwrap();
    let webhooks::Webhooks { server, .. } = hooks;
    let stopping = tokio::spawn(server.shut_down());
    eventually(
        "the port to refuse new connections",
        Duration::from_secs(5),
        || async { TcpStream::connect(addr).await.is_err().then_some(()) },
    )
    .await;
    assert!(
        !stopping.is_finished(),
        "the server waits for the request in flight"
    );
    in_flight.write_all(second.as_bytes()).await.unwrap();
    let (status, head, body) = read_response(&mut in_flight).await;
    assert_eq!(status, 200, "the request in flight is answered: {body}");
    assert!(body.contains("ConversionReview"), "{body}");
    assert!(head.contains("connection: close"), "{head}");
    tokio::time::timeout(Duration::from_secs(10), stopping)
        .await
        .expect("the server stops once the last request is answered")
        .expect("the server's task ends");
}
