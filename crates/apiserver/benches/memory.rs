//! `cargo bench -p apiserver --bench memory`: resident memory of the `apiserver` binary holding
//! 100,000 ConfigMaps of about 1 KiB each (goal: under 2x the raw JSON size). The server runs
//! as its own process so that its RSS is only its own; the objects are created over HTTP and the raw
//! size is the JSON the server answers with, summed. `BENCH_OBJECTS=...` changes the count.

mod support;

use std::time::Instant;

use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::{Api, api::PostParams};
use support::{client_from, config_map, rss_bytes, spawn_embedded};

/// Concurrent creates: enough to keep the server busy without the client dominating two cores.
const CREATORS: usize = 16;

#[tokio::main]
async fn main() {
    let objects: usize = std::env::var("BENCH_OBJECTS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(100_000);
    let dir = tempfile::tempdir().expect("temp dir");
    let kubeconfig = dir.path().join("kubeconfig");
    let mut server = spawn_embedded(&kubeconfig, &["--insecure-no-auth"]);
    let pid = server.id();
    let client = client_from(&kubeconfig).await;
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
