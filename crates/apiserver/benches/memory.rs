//! `cargo bench -p apiserver --bench memory`: resident memory of the `apiserver` binary holding
//! 100,000 ConfigMaps of about 1 KiB each (goal: under 2x the raw JSON size). The server runs
//! as its own process so that its RSS is only its own; the objects are created over HTTP and the raw
//! size is the JSON the server answers with, summed. `BENCH_OBJECTS=...` changes the count.
//!
//! Then a relist storm: 50 clients list the whole collection at once in pages of 500 (each page a
//! snapshot the server keeps for the next), while the server's RSS is sampled; the peak is reported
//! against the same raw size (goal: within 2x). `BENCH_RELISTERS=...` changes the number of clients.

mod support;

use std::time::Instant;

use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::{
    Api,
    api::{ListParams, PostParams},
};
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
    let binary = std::path::Path::new(env!("CARGO_BIN_EXE_apiserver"));
    let mut server = spawn_embedded(binary, &kubeconfig, &["--insecure-no-auth"]);
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

    let relisters: usize = std::env::var("BENCH_RELISTERS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(50);
    let storm = async { futures::future::join_all((0..relisters).map(|_| relist(&api))).await };
    let sampler = async {
        let mut peak = rss_bytes(pid);
        loop {
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
            peak = peak.max(rss_bytes(pid));
            if STORM_DONE.load(std::sync::atomic::Ordering::Relaxed) {
                return peak;
            }
        }
    };
    let started = Instant::now();
    let (counts, peak) = tokio::join!(
        async {
            let counts = storm.await;
            STORM_DONE.store(true, std::sync::atomic::Ordering::Relaxed);
            counts
        },
        sampler
    );
    assert!(
        counts.iter().all(|n| *n == objects),
        "every relist saw every object"
    );
    println!(
        "relist storm: {relisters} clients listed {objects} objects in pages of {PAGE} in {:?}; peak RSS {:.1} MiB = {:.2}x the raw JSON",
        started.elapsed(),
        mib(peak),
        peak as f64 / raw as f64
    );
    let _ = server.kill();
    let _ = server.wait();
}

/// Items per page of the relist storm, as kube-runtime's watcher pages its initial list.
const PAGE: u32 = 500;

static STORM_DONE: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Lists the whole collection page by page; returns how many objects it saw.
async fn relist(api: &Api<ConfigMap>) -> usize {
    let mut seen = 0;
    let mut token: Option<String> = None;
    loop {
        let mut params = ListParams::default().limit(PAGE);
        if let Some(token) = &token {
            params = params.continue_token(token);
        }
        let page = api.list(&params).await.expect("a page");
        seen += page.items.len();
        token = page.metadata.continue_.filter(|t| !t.is_empty());
        if token.is_none() {
            return seen;
        }
    }
}
