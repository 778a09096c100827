//! `cargo bench -p apiserver --bench memory`: resident memory of the `apiserver` binary holding
//! 100,000 ConfigMaps of about 1 KiB each (goal: under 2x the raw JSON size). The server runs
//! as its own process so that its RSS is only its own; the objects are created over HTTP and the raw
//! size is the JSON the server answers with, summed. `BENCH_OBJECTS=...` changes the count.

use std::{
    io::{BufRead, BufReader},
    process::{Command, Stdio},
    time::Instant,
};

use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::{Api, api::PostParams};

/// Concurrent creates: enough to keep the server busy without the client dominating two cores.
const CREATORS: usize = 16;

/// Resident set size of `pid` in bytes, from /proc.
fn rss_bytes(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("/proc status");
    let kib: u64 = status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmRSS line");
    kib * 1024
}

/// A ConfigMap whose stored JSON is about 1 KiB: four data keys of 200 characters plus metadata.
fn config_map(i: usize) -> ConfigMap {
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

#[tokio::main]
async fn main() {
    let objects: usize = std::env::var("BENCH_OBJECTS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(100_000);
    let dir = tempfile::tempdir().expect("temp dir");
    let kubeconfig = dir.path().join("kubeconfig");
    let mut server = Command::new(env!("CARGO_BIN_EXE_apiserver"))
        .args([
            "--addr",
            "127.0.0.1:0",
            "--insecure-no-auth",
            "--log",
            "warn",
            "--kubeconfig",
        ])
        .arg(&kubeconfig)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("apiserver starts");
    let pid = server.id();
    let mut first_line = String::new();
    BufReader::new(server.stdout.take().expect("stdout"))
        .read_line(&mut first_line)
        .expect("serving line");
    assert!(first_line.starts_with("serving on"), "{first_line}");

    let config = kube::Config::from_custom_kubeconfig(
        kube::config::Kubeconfig::read_from(&kubeconfig).expect("kubeconfig"),
        &Default::default(),
    )
    .await
    .expect("kube config");
    let client = kube::Client::try_from(config).expect("client");
    let api: Api<ConfigMap> = Api::namespaced(client, "default");
    api.list(&Default::default()).await.expect("first request");
    let idle = rss_bytes(pid);

    let started = Instant::now();
    let raw: usize = futures::stream::iter(0..objects)
        .map(|i| {
            let api = api.clone();
            async move {
                let created = api
                    .create(&PostParams::default(), &config_map(i))
                    .await
                    .expect("create");
                serde_json::to_vec(&created).expect("serialize").len()
            }
        })
        .buffer_unordered(CREATORS)
        .fold(0, |sum, len| async move { sum + len })
        .await;
    let elapsed = started.elapsed();
    let full = rss_bytes(pid);
    let mib = |bytes: u64| bytes as f64 / (1024.0 * 1024.0);
    println!(
        "stored {objects} ConfigMaps in {elapsed:?} ({:.0}/s); raw JSON {:.1} MiB ({} B each)",
        objects as f64 / elapsed.as_secs_f64(),
        mib(raw as u64),
        raw / objects.max(1)
    );
    println!(
        "apiserver RSS: idle {:.1} MiB, with the objects {:.1} MiB = {:.2}x the raw JSON ({:.2}x counting only the growth)",
        mib(idle),
        mib(full),
        full as f64 / raw as f64,
        (full - idle) as f64 / raw as f64
    );
    let _ = server.kill();
    let _ = server.wait();
}
