//! etcd and kube-apiserver started as controller-runtime's envtest starts them (its `controlplane`
//! package's defaults), for the bench to set beside kube-envtest: etcd on loopback ports with
//! `--unsafe-no-fsync`, waited for on `/health`; then kube-apiserver with envtest's flags (RBAC,
//! `--disable-admission-plugins=ServiceAccount`, `--service-cluster-ip-range=10.0.0.0/24`,
//! `--allow-privileged`, a service-account key of its own), waited for on `/healthz` and until the
//! `default` namespace exists, each polled every 100 ms as envtest polls.
//!
//! One difference, which costs nothing measurable: the administrator authenticates with a bearer token
//! (`--token-auth-file`) where envtest provisions a client certificate. No kube-controller-manager
//! runs, as under envtest.
//!
//! The binaries come from `target/control-plane/bin` (`make control-plane`), or from the directory in
//! `CONTROL_PLANE_BIN_DIR`.

use std::{
    net::TcpListener,
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    time::{Duration, Instant},
};

use k8s_openapi::api::core::v1::Namespace;
use kube::Api;
use serving::{
    authority::ThrowawayCa,
    rustls::pki_types::{CertificateDer, pem::PemObject},
};

/// envtest's default start timeout per process.
const START_TIMEOUT: Duration = Duration::from_secs(60);
/// envtest's health-check poll interval.
const POLL: Duration = Duration::from_millis(100);

/// A running etcd and kube-apiserver; dropping it kills both and removes their files.
pub struct EnvtestPlane {
    // Field order is drop order: kube-apiserver before etcd, then the files.
    apiserver: Running,
    etcd: Running,
    pub client: kube::Client,
    _dir: tempfile::TempDir,
}

struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn bin_dir() -> PathBuf {
    match std::env::var_os("CONTROL_PLANE_BIN_DIR") {
        Some(dir) => PathBuf::from(dir),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/control-plane/bin"),
    }
}

fn free_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("a free port");
    listener.local_addr().expect("its address").port()
}

fn spawn(program: &str, args: &[String], log: &Path) -> Running {
    let binary = bin_dir().join(program);
    assert!(
        binary.is_file(),
        "{} is missing: run `make control-plane`, or set CONTROL_PLANE_BIN_DIR",
        binary.display()
    );
    let out = std::fs::File::create(log).expect("a log file");
    let err = out.try_clone().expect("the log again");
    Running(
        Command::new(binary)
            .args(args)
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            .spawn()
            .unwrap_or_else(|e| panic!("{program} starts: {e}")),
    )
}

/// Polls `check` every [`POLL`] until it holds; panics with `program`'s log past [`START_TIMEOUT`].
async fn until<F, Fut>(program: &str, log: &Path, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let started = Instant::now();
    while !check().await {
        assert!(
            started.elapsed() < START_TIMEOUT,
            "{program} not ready within {START_TIMEOUT:?}:\n{}",
            std::fs::read_to_string(log).unwrap_or_default()
        );
        tokio::time::sleep(POLL).await;
    }
}

/// Whether `GET http://127.0.0.1:port/health` answers 200.
async fn etcd_healthy(port: u16) -> bool {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let Ok(mut tcp) = tokio::net::TcpStream::connect(("127.0.0.1", port)).await else {
        return false;
    };
    let request = "GET /health HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n";
    if tcp.write_all(request.as_bytes()).await.is_err() {
        return false;
    }
    let mut response = Vec::new();
    let _ = tcp.read_to_end(&mut response).await;
    response.starts_with(b"HTTP/1.0 200") || response.starts_with(b"HTTP/1.1 200")
}

fn write(path: &Path, text: &str) -> String {
    std::fs::write(path, text).expect("a file of the control plane");
    path.display().to_string()
}

impl EnvtestPlane {
    /// etcd, then kube-apiserver, each waited for as envtest waits, then the `default` namespace.
    pub async fn start() -> EnvtestPlane {
        let dir = tempfile::Builder::new()
            .prefix("envtest-plane-")
            .tempdir()
            .expect("a directory");
        let path = |name: &str| dir.path().join(name);

        let (client_port, peer_port) = (free_port(), free_port());
        let etcd_url = format!("http://127.0.0.1:{client_port}");
        let etcd_log = path("etcd.log");
        let etcd = spawn(
            "etcd",
            &[
                format!("--listen-peer-urls=http://127.0.0.1:{peer_port}"),
                format!("--data-dir={}", path("etcd").display()),
                format!("--advertise-client-urls={etcd_url}"),
                format!("--listen-client-urls={etcd_url}"),
                "--unsafe-no-fsync=true".to_owned(),
            ],
            &etcd_log,
        );
        until("etcd", &etcd_log, || etcd_healthy(client_port)).await;

        // The serving certificate and the service-account key, made as envtest makes them: a CA of
        // its own for each.
        let tls = ThrowawayCa::generate(&["127.0.0.1", "localhost"]).expect("serving certificate");
        let service_accounts = ThrowawayCa::generate(&["service-accounts"]).expect("service-account key");
        let token = "envtest-bench-admin-token";
        let port = free_port();
        let url = format!("https://127.0.0.1:{port}");
        let apiserver_log = path("kube-apiserver.log");
        let apiserver = spawn(
            "kube-apiserver",
            &[
                "--advertise-address=127.0.0.1".to_owned(),
                format!("--etcd-servers={etcd_url}"),
                format!("--cert-dir={}", dir.path().display()),
                format!("--tls-cert-file={}", write(&path("apiserver.crt"), &tls.cert_pem)),
                format!(
                    "--tls-private-key-file={}",
                    write(&path("apiserver.key"), &tls.key_pem)
                ),
                format!("--secure-port={port}"),
                "--bind-address=127.0.0.1".to_owned(),
                "--disable-admission-plugins=ServiceAccount".to_owned(),
                "--service-cluster-ip-range=10.0.0.0/24".to_owned(),
                "--allow-privileged=true".to_owned(),
                "--authorization-mode=RBAC".to_owned(),
                format!("--service-account-issuer={url}/"),
                format!(
                    "--service-account-key-file={}",
                    write(&path("sa-signer.crt"), &service_accounts.cert_pem)
                ),
                format!(
                    "--service-account-signing-key-file={}",
                    write(&path("sa-signer.key"), &service_accounts.key_pem)
                ),
                format!(
                    "--token-auth-file={}",
                    write(
                        &path("tokens.csv"),
                        &format!("{token},admin,admin,\"system:masters\"\n")
                    )
                ),
            ],
            &apiserver_log,
        );
        let mut config = kube::Config::new(url.parse().expect("a URL"));
        config.root_cert = Some(vec![
            CertificateDer::from_pem_slice(tls.ca_pem.as_bytes())
                .expect("the CA")
                .to_vec(),
        ]);
        config.auth_info.token = Some(token.to_owned().into());
        let client = kube::Client::try_from(config).expect("a client");
        until("kube-apiserver", &apiserver_log, || async {
            let request = http::Request::get("/healthz").body(Vec::new());
            match request {
                Ok(request) => client.request_text(request).await.is_ok_and(|body| body == "ok"),
                Err(_) => false,
            }
        })
        .await;
        let namespaces: Api<Namespace> = Api::all(client.clone());
        until("kube-apiserver", &apiserver_log, || async {
            matches!(namespaces.get_opt("default").await, Ok(Some(_)))
        })
        .await;
        EnvtestPlane {
            apiserver,
            etcd,
            client,
            _dir: dir,
        }
    }

    /// The resident memory of etcd and kube-apiserver together, in KiB.
    pub fn rss_kib(&self) -> u64 {
        [&self.etcd, &self.apiserver]
            .iter()
            .map(|process| super::status_kib(&format!("/proc/{}/status", process.0.id()), "VmRSS"))
            .sum()
    }
}
