//! The operator binary the benches measure, and what they read of its process: its readiness and its
//! resident memory. Declared by the benches that run the binary (`#[path]`), not by every bench.

use std::{
    path::{Path, PathBuf},
    process::{Command, Stdio},
};

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

/// Whether the probe server on `port` answers `/readyz` with 200.
pub async fn readyz(port: u16) -> bool {
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
