//! What the benchmarks share: the objects they write, resident memory from /proc, and the embedded
//! server started as its own process (so that its RSS is only its own). Also the side-by-side bench's,
//! in the testenv crate (`#[path]`), which runs the same binary.

#![allow(dead_code)] // each bench uses its own part

use std::{
    io::{BufRead, BufReader},
    path::Path,
    process::{Child, Command, Stdio},
};

use k8s_openapi::api::core::v1::ConfigMap;

/// Resident set size of `pid` in bytes, from /proc.
pub fn rss_bytes(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("/proc status");
    let kib: u64 = status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmRSS line");
    kib * 1024
}

/// A ConfigMap whose stored JSON is about 1 KiB: four data keys of 200 characters plus metadata.
pub fn config_map(i: usize) -> ConfigMap {
    let mut cm = ConfigMap::default();
    cm.metadata.name = Some(format!("cm-{i:06}"));
    cm.metadata.labels = Some([("app".to_owned(), "memory-bench".to_owned())].into());
    cm.data = Some(
        (0..4)
            .map(|k| (format!("key-{k}"), format!("{i:06}").repeat(34)[..200].to_owned()))
            .collect(),
    );
    cm
}

/// The `apiserver` binary at `binary` serving on a free loopback port, its kubeconfig written to
/// `kubeconfig`; returns once it says it serves. `extra` adds flags (`--insecure-no-auth`).
pub fn spawn_embedded(binary: &Path, kubeconfig: &Path, extra: &[&str]) -> Child {
    let mut server = Command::new(binary)
        .args(["--addr", "127.0.0.1:0", "--log", "warn"])
        .args(extra)
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("apiserver starts");
    let mut first_line = String::new();
    BufReader::new(server.stdout.take().expect("stdout"))
        .read_line(&mut first_line)
        .expect("serving line");
    assert!(first_line.starts_with("serving on"), "{first_line}");
    server
}

/// A client from the kubeconfig at `path`.
pub async fn client_from(path: &Path) -> kube::Client {
    let config = kube::Config::from_custom_kubeconfig(
        kube::config::Kubeconfig::read_from(path).expect("kubeconfig"),
        &Default::default(),
    )
    .await
    .expect("kube config");
    kube::Client::try_from(config).expect("client")
}
