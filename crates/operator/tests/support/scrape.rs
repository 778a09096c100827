//! `/metrics` scraped as Prometheus scrapes it: over HTTPS with `insecureSkipVerify` (the manager's
//! metrics certificate is self-signed), presenting a bearer token if given; and the metric names the
//! README promises.

use std::{collections::BTreeSet, net::SocketAddr, sync::Arc, time::Duration};

use operator::db::AnyServerCertificate;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio_rustls::{
    TlsConnector,
    rustls::{self, ClientConfig, pki_types::ServerName},
};

use super::HttpResponse;

/// `GET path` over HTTPS to `addr`, with `Authorization: Bearer <bearer>` when given, within 10 s.
pub async fn https_get(addr: SocketAddr, path: &str, bearer: Option<&str>) -> std::io::Result<HttpResponse> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(std::io::Error::other)?
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(AnyServerCertificate(provider)))
        .with_no_client_auth();
    let connector = TlsConnector::from(Arc::new(config));
    let authorization = bearer
        .map(|token| format!("Authorization: Bearer {token}\r\n"))
        .unwrap_or_default();
    let exchange = async {
        let tcp = tokio::net::TcpStream::connect(addr).await?;
        let name = ServerName::IpAddress(addr.ip().into());
        let mut stream = connector.connect(name, tcp).await?;
        stream
            .write_all(format!("GET {path} HTTP/1.0\r\nHost: {addr}\r\n{authorization}\r\n").as_bytes())
            .await?;
        let mut raw = Vec::new();
        // A server may end TLS without close_notify once the body is sent; what was read is the answer.
        match stream.read_to_end(&mut raw).await {
            Ok(_) => {}
            Err(error) if error.kind() == std::io::ErrorKind::UnexpectedEof && !raw.is_empty() => {}
            Err(error) => return Err(error),
        }
        Ok::<_, std::io::Error>(raw)
    };
    let raw = tokio::time::timeout(Duration::from_secs(10), exchange)
        .await
        .map_err(|_| std::io::Error::new(std::io::ErrorKind::TimedOut, format!("GET {path}")))??;
    super::read_response(&raw, path)
}

/// Every metric name the README's "Metrics and probes" section lists.
pub fn readme_metric_names() -> BTreeSet<String> {
    let readme = std::fs::read_to_string(super::repository().join("README.md")).expect("README.md");
    let section = readme
        .split("## Metrics and probes")
        .nth(1)
        .expect("a metrics section");
    let section = section.split("\n## ").next().unwrap_or_default();
    section
        .split('`')
        .skip(1)
        .step_by(2)
        .map(|code| code.split('{').next().unwrap_or_default().to_owned())
        .filter(|name| name.contains('_') && name.chars().all(|c| c.is_ascii_lowercase() || c == '_'))
        .collect()
}

/// The names an exposition declares (`# TYPE name kind`): a counter's samples add `_total`, so both.
pub fn declared_names(body: &str) -> BTreeSet<String> {
    body.lines()
        .filter_map(|line| line.strip_prefix("# TYPE ")?.split(' ').next())
        .flat_map(|name| [name.to_owned(), format!("{name}_total")])
        .collect()
}
