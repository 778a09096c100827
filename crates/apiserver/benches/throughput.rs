//! `cargo bench -p apiserver`: start-up time, write throughput with watchers attached, and watch
//! delivery latency of the embedded API server, over real HTTP on loopback. Figures go in BENCHMARKS.md.

use std::time::{Duration, Instant};

/// The server runs in this process under jemalloc, the allocator of the binaries that host it
/// (`apiserver`, and `operator` in dev mode), with their options (the `serving` crate's).
#[global_allocator]
static ALLOCATOR: serving::allocator::Jemalloc = serving::allocator::Jemalloc;

use apiserver::{ApiServer, Config};
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::{
    Api,
    api::{PostParams, WatchEvent, WatchParams},
};

const WRITES: usize = 5_000;
const WATCHERS: usize = 10;
const WRITERS: usize = 8;

fn config_map(name: String) -> ConfigMap {
    let mut cm = ConfigMap::default();
    cm.metadata.name = Some(name);
    cm.data = Some([("k".to_owned(), "v".repeat(64))].into());
    cm
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() as f64 * p) as usize).min(sorted.len() - 1)]
}

#[tokio::main]
async fn main() {
    // Start-up to first served request.
    let mut startups = Vec::new();
    // The server's resourceVersion counts its writes: those of start-up, when first asked.
    let mut startup_writes = String::new();
    for _ in 0..20 {
        let started = Instant::now();
        let server = ApiServer::start(Config::default()).await.expect("start");
        let api: Api<ConfigMap> = Api::namespaced(server.client(), "default");
        let first = api.list(&Default::default()).await.expect("first request");
        startups.push(started.elapsed());
        startup_writes = first.metadata.resource_version.unwrap_or_default();
    }
    startups.sort();
    println!(
        "startup_to_first_request p50={:?} max={:?} (the server's own writes: {startup_writes})",
        percentile(&startups, 0.5),
        startups[startups.len() - 1]
    );

    let server = ApiServer::start(Config::default()).await.expect("start");
    let client = server.client();
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    // Watchers record when each object's ADDED arrives.
    let mut watchers = Vec::new();
    for _ in 0..WATCHERS {
        let api = api.clone();
        let stream = api
            .watch(&WatchParams::default().timeout(290), "0")
            .await
            .expect("watch")
            .boxed();
        watchers.push(tokio::spawn(async move {
            let mut arrivals = Vec::with_capacity(WRITES);
            let mut stream = stream;
            while let Ok(Some(event)) = stream.try_next().await {
                if let WatchEvent::Added(_) = event {
                    arrivals.push(Instant::now());
                    if arrivals.len() == WRITES {
                        break;
                    }
                }
            }
            arrivals
        }));
    }
    let started = Instant::now();
    let mut writers = Vec::new();
    for w in 0..WRITERS {
        let api = api.clone();
        writers.push(tokio::spawn(async move {
            let mut sent = Vec::new();
            for i in (w..WRITES).step_by(WRITERS) {
                let before = Instant::now();
                api.create(&PostParams::default(), &config_map(format!("cm-{i:05}")))
                    .await
                    .expect("create");
                sent.push((before, Instant::now()));
            }
            sent
        }));
    }
    let mut acknowledged = Vec::new();
    for writer in writers {
        acknowledged.extend(writer.await.expect("writer"));
    }
    let write_time = started.elapsed();
    println!(
        "writes: {WRITES} ConfigMaps by {WRITERS} writers with {WATCHERS} watchers in {write_time:?} = {:.0}/s",
        WRITES as f64 / write_time.as_secs_f64()
    );
    let mut latest_arrival = started;
    for watcher in watchers {
        let arrivals = tokio::time::timeout(Duration::from_secs(60), watcher)
            .await
            .expect("watchers finish")
            .expect("join");
        assert_eq!(arrivals.len(), WRITES, "every watcher saw every write");
        latest_arrival = latest_arrival.max(*arrivals.last().expect("arrivals"));
    }
    println!(
        "all events delivered to all watchers {:?} after the first write",
        latest_arrival - started
    );

    // Watch delivery latency: one write at a time, time from the write's acknowledgement to the event.
    let mut stream = api
        .watch(
            &WatchParams::default().timeout(290),
            &server.store().current_resource_version().to_string(),
        )
        .await
        .expect("watch")
        .boxed();
    let mut latencies = Vec::new();
    for i in 0..1000 {
        let before = Instant::now();
        api.create(&PostParams::default(), &config_map(format!("lat-{i:04}")))
            .await
            .expect("create");
        loop {
            match stream.try_next().await.expect("event") {
                Some(WatchEvent::Added(_)) => break,
                Some(_) => continue,
                None => panic!("watch ended"),
            }
        }
        latencies.push(before.elapsed());
    }
    latencies.sort();
    println!(
        "create-to-watch-event latency p50={:?} p99={:?} (includes the create round trip)",
        percentile(&latencies, 0.5),
        percentile(&latencies, 0.99)
    );
    let _ = acknowledged;
}
