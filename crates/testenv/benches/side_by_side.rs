//! `cargo bench -p testenv --bench side_by_side`: the embedded API server and the upstream
//! kube-apiserver v1.33.13 (etcd and kube-controller-manager beside it, from this crate; build them with
//! `make control-plane`) measured the same way, in the same run, on the same machine. Both serve HTTPS
//! with a bearer token; the embedded one runs as the `apiserver` binary, so that its memory is its own.
//! The bench lives here rather than beside the server because it needs both: this crate depends on
//! the `apiserver` crate, so a bench of that crate that imported this one would go round in a loop.
//!
//! Figures, per server: start-up to the first served request; writes/s of small ConfigMaps with 10
//! watchers attached; create-to-watch-event latency; resident memory idle and holding 100,000 ConfigMaps
//! of about 1 KiB (for the real server: etcd + kube-apiserver + kube-controller-manager).
//! `BENCH_STARTS`, `BENCH_WRITES`, `BENCH_OBJECTS` change the counts.

// The helpers the apiserver crate's memory bench uses too, from one file.
#[path = "../../apiserver/benches/support/mod.rs"]
mod support;

use std::{
    path::{Path, PathBuf},
    process::Command,
    time::{Duration, Instant},
};

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::{
    Api,
    api::PostParams,
    runtime::{WatchStreamExt, watcher},
};
use support::{client_from, config_map, rss_bytes, spawn_embedded};
use testenv::{Backend, ControlPlane};

const WRITERS: usize = 8;
const WATCHERS: usize = 10;
const LATENCY_SAMPLES: usize = 200;
const CREATORS: usize = 16;

fn count(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(default)
}

/// The `apiserver` binary of this bench's build profile. Cargo builds a package's binaries for its own
/// benches only, so it is built here, by the cargo running this bench (a no-op when up to date); or
/// taken from `APISERVER_BIN`.
fn apiserver_binary() -> PathBuf {
    if let Some(binary) = std::env::var_os("APISERVER_BIN") {
        return binary.into();
    }
    // This bench is target/<profile directory>/deps/side_by_side-<hash>.
    let bench = std::env::current_exe().expect("the bench's own path");
    let profile_dir = bench
        .parent()
        .and_then(Path::parent)
        .expect("the bench runs from target/<profile>/deps");
    let target_dir = profile_dir.parent().expect("target/<profile>");
    let profile = match profile_dir.file_name().and_then(|n| n.to_str()) {
        Some("debug") => "dev",
        Some(name) => name,
        None => panic!("no profile directory above {}", bench.display()),
    };
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let built = Command::new(cargo)
        .args([
            "build",
            "--quiet",
            "-p",
            "kube-embedded-apiserver",
            "--bin",
            "apiserver",
            "--profile",
            profile,
        ])
        .arg("--target-dir")
        .arg(target_dir)
        .status()
        .expect("cargo runs");
    assert!(built.success(), "building the apiserver binary failed");
    profile_dir.join("apiserver")
}

/// A running server under measurement and what keeps it alive.
struct Server {
    client: kube::Client,
    pids: Vec<u32>,
    _keep: Keep,
}

/// Held only to be dropped with the server: the embedded process and its kubeconfig's directory, or
/// the real control plane.
enum Keep {
    Embedded(std::process::Child, #[allow(dead_code)] tempfile::TempDir),
    Real(#[allow(dead_code)] Box<ControlPlane>),
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Keep::Embedded(child, _) = &mut self._keep {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Server {
    fn rss(&self) -> u64 {
        self.pids.iter().map(|pid| rss_bytes(*pid)).sum()
    }
}

/// Starts `backend` and returns it with the time to its first answered list.
async fn start(backend: Backend) -> (Server, Duration) {
    let started = Instant::now();
    let server = match backend {
        Backend::Embedded => {
            let dir = tempfile::tempdir().expect("temp dir");
            let kubeconfig = dir.path().join("kubeconfig");
            let child = spawn_embedded(&apiserver_binary(), &kubeconfig, &[]);
            let client = client_from(&kubeconfig).await;
            Server {
                client,
                pids: vec![child.id()],
                _keep: Keep::Embedded(child, dir),
            }
        }
        Backend::Real => {
            let plane = ControlPlane::start(Backend::Real)
                .await
                .expect("the real control plane starts");
            let pids = plane.as_real().expect("real").pids();
            Server {
                client: plane.client(),
                pids,
                _keep: Keep::Real(Box::new(plane)),
            }
        }
        Backend::Cluster => panic!("the side-by-side bench compares the two API servers"),
    };
    let api: Api<ConfigMap> = Api::namespaced(server.client.clone(), "default");
    api.list(&Default::default()).await.expect("first request");
    (server, started.elapsed())
}

/// Writes/s of `writes` small ConfigMaps by 8 writers while 10 watchers follow the namespace, and how
/// long until every watcher has seen every write.
async fn writes_with_watchers(client: &kube::Client, writes: usize) -> (f64, Duration) {
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let watchers: Vec<_> = (0..WATCHERS)
        .map(|_| {
            let stream =
                watcher(api.clone(), watcher::Config::default().labels("bench=writes")).applied_objects();
            tokio::spawn(async move { stream.take(writes).try_collect::<Vec<_>>().await.map(|v| v.len()) })
        })
        .collect();
    // A watcher that starts after some writes still sees them (in its initial list): every watcher
    // counts every write whenever it is established.
    let started = Instant::now();
    futures::stream::iter(0..writes)
        .map(|i| {
            let api = api.clone();
            async move {
                let mut cm = ConfigMap::default();
                cm.metadata.name = Some(format!("w-{i:06}"));
                cm.metadata.labels = Some([("bench".to_owned(), "writes".to_owned())].into());
                cm.data = Some([("k".to_owned(), "v".to_owned())].into());
                api.create(&PostParams::default(), &cm).await.expect("create");
            }
        })
        .buffer_unordered(WRITERS)
        .collect::<()>()
        .await;
    let written = started.elapsed();
    for handle in watchers {
        let seen = handle.await.expect("watcher task").expect("watch");
        assert_eq!(seen, writes, "a watcher missed events");
    }
    (writes as f64 / written.as_secs_f64(), started.elapsed())
}

/// Create-to-event latency, one create at a time, p50 and p99.
async fn watch_latency(client: &kube::Client) -> (Duration, Duration) {
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let mut events = watcher(api.clone(), watcher::Config::default().labels("bench=latency"))
        .applied_objects()
        .boxed();
    let mut samples = Vec::with_capacity(LATENCY_SAMPLES);
    for i in 0..LATENCY_SAMPLES {
        let mut cm = ConfigMap::default();
        cm.metadata.name = Some(format!("l-{i:04}"));
        cm.metadata.labels = Some([("bench".to_owned(), "latency".to_owned())].into());
        let sent = Instant::now();
        api.create(&PostParams::default(), &cm).await.expect("create");
        loop {
            let seen = events.try_next().await.expect("watch").expect("watch continues");
            if seen.metadata.name == cm.metadata.name {
                break;
            }
        }
        samples.push(sent.elapsed());
    }
    samples.sort();
    (samples[samples.len() / 2], samples[samples.len() * 99 / 100])
}

/// RSS after storing `objects` ConfigMaps of about 1 KiB.
async fn memory_with_objects(server: &Server, objects: usize) -> u64 {
    let api: Api<ConfigMap> = Api::namespaced(server.client.clone(), "default");
    futures::stream::iter(0..objects)
        .map(|i| {
            let api = api.clone();
            async move {
                api.create(&PostParams::default(), &config_map(i))
                    .await
                    .expect("create");
            }
        })
        .buffer_unordered(CREATORS)
        .collect::<()>()
        .await;
    server.rss()
}

struct Figures {
    start_p50: Duration,
    writes_per_s: f64,
    all_seen: Duration,
    latency: (Duration, Duration),
    rss_idle: u64,
    rss_full: u64,
}

async fn measure(backend: Backend) -> Figures {
    let starts = count("BENCH_STARTS", 3);
    let mut durations = Vec::new();
    for _ in 0..starts.saturating_sub(1) {
        durations.push(start(backend).await.1);
    }
    let (server, last) = start(backend).await;
    durations.push(last);
    durations.sort();
    let rss_idle = server.rss();
    let (writes_per_s, all_seen) = writes_with_watchers(&server.client, count("BENCH_WRITES", 2_000)).await;
    let latency = watch_latency(&server.client).await;
    let rss_full = memory_with_objects(&server, count("BENCH_OBJECTS", 100_000)).await;
    Figures {
        start_p50: durations[durations.len() / 2],
        writes_per_s,
        all_seen,
        latency,
        rss_idle,
        rss_full,
    }
}

#[tokio::main]
async fn main() {
    let embedded = measure(Backend::Embedded).await;
    let real = measure(Backend::Real).await;
    let mib = |bytes: u64| bytes as f64 / (1024.0 * 1024.0);
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    println!("| Figure | Embedded | Real (etcd + kube-apiserver) | Real / embedded |");
    println!("|---|---:|---:|---:|");
    let row = |name: &str, e: f64, r: f64, unit: &str| {
        println!("| {name} | {e:.2} {unit} | {r:.2} {unit} | {:.2}x |", r / e);
    };
    row(
        "start-up to first served request (p50)",
        ms(embedded.start_p50),
        ms(real.start_p50),
        "ms",
    );
    row(
        "writes/s, 8 writers, 10 watchers",
        embedded.writes_per_s,
        real.writes_per_s,
        "/s",
    );
    row(
        "all 10 watchers have every write",
        ms(embedded.all_seen),
        ms(real.all_seen),
        "ms",
    );
    row(
        "create -> watch event p50",
        ms(embedded.latency.0),
        ms(real.latency.0),
        "ms",
    );
    row(
        "create -> watch event p99",
        ms(embedded.latency.1),
        ms(real.latency.1),
        "ms",
    );
    row("RSS idle", mib(embedded.rss_idle), mib(real.rss_idle), "MiB");
    row(
        "RSS with the ConfigMaps",
        mib(embedded.rss_full),
        mib(real.rss_full),
        "MiB",
    );
}
