//! The two PostgresWriter operators the bench compares, each its own process: ours (the `operator`
//! binary as the image holds it) and the controller-runtime peer built from `testenv/go-peer`.

use std::{
    path::{Path, PathBuf},
    process::{Command, Stdio},
    time::Duration,
};

use crate::support::{Operator, free_port};

/// Which operator a run measures.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kind {
    /// The `operator` binary of this crate.
    Ours,
    /// The controller-runtime PostgresWriter of `testenv/go-peer`.
    Go,
}

impl Kind {
    /// The operators `BENCH_OPERATORS` names (`ours,go` unless set), in its order.
    pub fn from_env() -> Vec<Kind> {
        let kinds: Vec<Kind> = std::env::var("BENCH_OPERATORS")
            .unwrap_or_else(|_| "ours,go".into())
            .split(',')
            .map(|name| match name.trim() {
                "ours" => Kind::Ours,
                "go" => Kind::Go,
                other => panic!("BENCH_OPERATORS: unknown operator {other:?} (ours or go)"),
            })
            .collect();
        assert!(!kinds.is_empty(), "BENCH_OPERATORS names no operator");
        assert!(
            kinds
                .iter()
                .enumerate()
                .all(|(i, kind)| !kinds[..i].contains(kind)),
            "BENCH_OPERATORS names an operator twice"
        );
        kinds
    }

    /// How the report names it.
    pub fn label(self) -> &'static str {
        match self {
            Kind::Ours => "the operator",
            Kind::Go => "the controller-runtime peer",
        }
    }

    /// What goes before a round's lines about it: nothing for ours, whose lines read as before the
    /// peer existed.
    pub fn prefix(self) -> &'static str {
        match self {
            Kind::Ours => "",
            Kind::Go => "go peer: ",
        }
    }

    /// Its PostgreSQL role, and the schema of that name its tables and ledger live in.
    pub fn role(self) -> &'static str {
        match self {
            Kind::Ours => "ours",
            Kind::Go => "go_peer",
        }
    }
}

/// Our binary as a user deploys it: the static build without dev mode that the image holds
/// (`make static-binary`, which returns at once when it is up to date), unless `BENCH_OPERATOR_BIN`
/// names another build to measure. The bench's own `operator` carries dev mode (the embedded API
/// server, linked in for the tests), whose code, mapped and partly paged in, is not what runs deployed.
pub fn build_ours() -> PathBuf {
    if let Some(binary) = std::env::var_os("BENCH_OPERATOR_BIN") {
        return binary.into();
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let output = Command::new("make")
        .args(["-s", "-C"])
        .arg(&root)
        .arg("static-binary")
        .stderr(Stdio::inherit())
        .output()
        .expect("make static-binary runs");
    assert!(
        output.status.success(),
        "make static-binary failed (the musl target: `rustup target add x86_64-unknown-linux-musl`)"
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    PathBuf::from(
        stdout
            .lines()
            .last()
            .expect("make static-binary prints the path")
            .trim(),
    )
}

/// The peer's binary, built by `testenv/go-peer/build.sh` (which returns at once when it is up to
/// date).
pub fn build_go_peer() -> PathBuf {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testenv/go-peer/build.sh");
    let output = Command::new("bash")
        .arg(&script)
        .stderr(Stdio::inherit())
        .output()
        .expect("testenv/go-peer/build.sh runs (it needs `go` on the PATH)");
    assert!(output.status.success(), "testenv/go-peer/build.sh failed");
    PathBuf::from(String::from_utf8_lossy(&output.stdout).trim()).join("postgres-writer")
}

/// A running operator, its probe port and its metrics port.
pub struct Running {
    pub process: Operator,
    pub metrics: u16,
}

/// Starts operator `kind`, the binary at `binary`, against the server of `kubeconfig` and the
/// database of `database_url` with its defaults (64 concurrent reconciles, a pool of 8), and waits
/// until it is ready.
pub async fn start(kind: Kind, binary: &Path, kubeconfig: &Path, database_url: &str) -> Running {
    let probes = free_port();
    let metrics = free_port();
    let mut command = Command::new(binary);
    match kind {
        Kind::Ours => {
            command.args(["run", "--controllers", "postgres-writer"]).env(
                "LOG_LEVEL",
                std::env::var("BENCH_OPERATOR_LOG").unwrap_or_else(|_| "warn".into()),
            );
        }
        Kind::Go => {
            command
                .arg(format!("--kubeconfig={}", kubeconfig.display()))
                .arg(format!(
                    "--zap-log-level={}",
                    std::env::var("BENCH_GO_PEER_LOG").unwrap_or_else(|_| "error".into())
                ));
        }
    }
    let child = command
        .arg(format!("--metrics-bind-address=127.0.0.1:{metrics}"))
        .arg(format!("--health-probe-bind-address=127.0.0.1:{probes}"))
        .env("KUBECONFIG", kubeconfig)
        // The URL holds the password: in the environment, never on the command line.
        .env("DATABASE_URL", database_url)
        .stdout(Stdio::null())
        .spawn()
        .expect("operator starts");
    let process = Operator(child);
    crate::until("operator ready", Duration::from_secs(60), async || {
        readyz(probes).await
    })
    .await;
    Running { process, metrics }
}

async fn readyz(port: u16) -> bool {
    http_get(port, "/readyz")
        .await
        .is_some_and(|r| r.starts_with("HTTP/1.1 200"))
}

/// The whole response to `GET path` on a loopback port, or `None` when nothing answers.
pub async fn http_get(port: u16, path: &str) -> Option<String> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = tokio::net::TcpStream::connect(("127.0.0.1", port)).await.ok()?;
    let request = format!("GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await.ok()?;
    let mut response = String::new();
    let _ = stream.read_to_string(&mut response).await;
    Some(response)
}

/// A line of `/proc/<pid>/status` in KiB (`VmRSS`, `VmHWM`), 0 once the process is gone.
fn status_kib(pid: u32, field: &str) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with(field))
                .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        })
        .unwrap_or(0)
}

/// The resident set now.
pub fn rss_kib(pid: u32) -> u64 {
    status_kib(pid, "VmRSS:")
}

/// The highest resident set since the process started.
pub fn peak_rss_kib(pid: u32) -> u64 {
    status_kib(pid, "VmHWM:")
}
