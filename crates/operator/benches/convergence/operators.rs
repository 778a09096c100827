//! The two PostgresWriter operators the bench compares, each its own process: ours (the `operator`
//! binary as the image holds it) and the controller-runtime peer built from `testenv/go-peer`.

use std::{
    path::{Path, PathBuf},
    process::{Command, Stdio},
    time::Duration,
};

pub use crate::process::{build_ours, http_get, peak_rss_kib, rss_kib};
use crate::{
    process::readyz,
    support::{Operator, free_port},
};

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
