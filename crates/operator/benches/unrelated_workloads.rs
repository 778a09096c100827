//! The manager's resident memory beside workloads that are not its own: `operator run` with the
//! VoteConfig and WebApp controllers (the ones that watch Deployments, Services, Pods and ConfigMaps;
//! PostgresWriter watches only its own kind), no resource of ours at first, on the embedded API
//! server, beside N Deployments (each with its ReplicaSet and a running Pod, made by the server's
//! emulated controllers and node) and N Services, every one labelled `app`, the label most workloads
//! carry. A manager whose caches hold only its own children stays where it was; one that watched
//! everything labelled `app` grew with them.
//!
//! Each round starts a fresh, empty server and the manager, and reads the manager three times, each
//! once it is ready and its resident set has settled (no growth for [`SETTLED_FOR`]): idle; after
//! the N workloads were made while it ran (what its watches were sent); and a second manager started
//! beside them (what its first lists brought, as on a cluster it is deployed into). Each reading is
//! `VmRSS` and `VmHWM` (the peak since that process started). The medians over the rounds are the
//! figures.
//!
//! With `BENCH_OURS=M`, each round then makes M WebApps (one replica each) and M VoteConfigs of ours
//! beside the N workloads, and reads the second manager again once every WebApp is Running and every
//! VoteConfig Ready: what the memory limit is sized from.
//!
//! `cargo bench -p operator --bench unrelated_workloads` (N=10000, 3 rounds). Knobs:
//! `BENCH_UNRELATED` (N), `BENCH_OURS` (M, 0 unless set), `BENCH_ROUNDS`, `BENCH_OPERATOR_BIN` (the
//! build to measure; by default the image's static build, `make static-binary`, as the convergence
//! bench), `BENCH_OPERATOR_LOG`.

#[path = "support/process.rs"]
mod process;
mod support;

/// The embedded API server runs in this process under jemalloc, as the binaries that host it do.
#[global_allocator]
static ALLOCATOR: serving::allocator::Jemalloc = serving::allocator::Jemalloc;

use std::{
    path::Path,
    process::{Command, Stdio},
    sync::atomic::{AtomicUsize, Ordering},
    time::{Duration, Instant},
};

use futures::StreamExt;
use k8s_openapi::api::{
    apps::v1::Deployment,
    core::v1::{Namespace, Pod, Service},
};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::{
    Api, ResourceExt,
    api::{ListParams, PostParams},
};
use operator::api::{vote_config::VoteConfig, web_app::WebApp};
use process::{peak_rss_kib, readyz, rss_kib};
use serde_json::json;
use support::{Operator, free_port};
use testenv::ControlPlane;

/// Concurrent client tasks making the workloads.
const CREATORS: usize = 32;
/// Where the workloads live: a namespace of their own, as a team's would be.
const NAMESPACE: &str = "shop";
/// The resident set is read once it has not grown for this long.
const SETTLED_FOR: Duration = Duration::from_secs(10);

#[tokio::main]
async fn main() {
    let n: usize = env_or("BENCH_UNRELATED", 10_000);
    let ours: usize = env_or("BENCH_OURS", 0);
    let rounds: usize = env_or("BENCH_ROUNDS", 3).max(1);
    let binary = process::build_ours();
    println!(
        "the manager (VoteConfig and WebApp controllers) idle, then beside {n} Deployments, their Pods \
         and {n} Services labelled `app`; {rounds} rounds; {}",
        binary.display()
    );
    let mut readings: Vec<Vec<(Reading, Figures)>> = Vec::new();
    for round in 1..=rounds {
        let figures = measure_round(&binary, n, ours).await;
        for (reading, figures) in &figures {
            println!(
                "round {round}, {:<52} RSS {:.1} MiB settled, peak {:.1} MiB; settled {:.1} s after {}",
                reading.describe(n, ours),
                mib(figures.rss_kib),
                mib(figures.peak_kib),
                figures.settled.as_secs_f64(),
                reading.settled_since()
            );
        }
        readings.push(figures);
    }
    let median = |reading: Reading, field: fn(&Figures) -> u64| {
        let mut values: Vec<u64> = readings
            .iter()
            .flatten()
            .filter(|(r, _)| *r == reading)
            .map(|(_, f)| field(f))
            .collect();
        values.sort_unstable();
        mib(values[values.len() / 2])
    };
    println!("medians over {rounds} rounds:");
    for reading in Reading::ALL {
        if reading == Reading::WithOurs && ours == 0 {
            continue;
        }
        println!(
            "  {:<52} RSS {:.1} MiB, peak {:.1} MiB",
            reading.describe(n, ours),
            median(reading, |f| f.rss_kib),
            median(reading, |f| f.peak_kib)
        );
    }
    println!(
        "  creates made again after a transport failure: {}",
        RETRIED.load(Ordering::Relaxed)
    );
    let idle = median(Reading::Idle, |f| f.rss_kib);
    println!(
        "  growth of the resident set over idle: {:+.1} MiB after they were made, {:+.1} MiB started beside them",
        median(Reading::AfterMaking, |f| f.rss_kib) - idle,
        median(Reading::StartedBeside, |f| f.rss_kib) - idle
    );
}

/// Which of a round's readings.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Reading {
    /// The first manager, ready on the empty server.
    Idle,
    /// The first manager, after the workloads were made while it ran.
    AfterMaking,
    /// A second manager, started beside the workloads.
    StartedBeside,
    /// The second manager, after our own resources were made and converged.
    WithOurs,
}

impl Reading {
    const ALL: [Reading; 4] = [
        Reading::Idle,
        Reading::AfterMaking,
        Reading::StartedBeside,
        Reading::WithOurs,
    ];

    fn describe(self, n: usize, ours: usize) -> String {
        match self {
            Reading::Idle => "idle, nothing in the cluster:".into(),
            Reading::AfterMaking => format!("after {n} of each were made while it ran:"),
            Reading::StartedBeside => format!("started beside {n} of each:"),
            Reading::WithOurs => format!("with {ours} WebApps and {ours} VoteConfigs of ours too:"),
        }
    }

    fn settled_since(self) -> &'static str {
        match self {
            Reading::Idle | Reading::StartedBeside => "its start",
            Reading::AfterMaking => "they were made",
            Reading::WithOurs => "ours converged",
        }
    }
}

fn env_or(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn mib(kib: u64) -> f64 {
    kib as f64 / 1024.0
}

/// What one reading takes of the manager.
struct Figures {
    rss_kib: u64,
    peak_kib: u64,
    /// From the manager's start, or from the moment the objects were made, until its resident set
    /// settled.
    settled: Duration,
}

/// One round on a fresh server: the readings of [`Reading`], in order.
async fn measure_round(binary: &Path, n: usize, ours: usize) -> Vec<(Reading, Figures)> {
    let server = ControlPlane::embedded(apiserver::Config::default())
        .await
        .expect("the embedded API server starts");
    let client = server.client();
    install_crds(&client).await;
    let dir = tempfile::tempdir().expect("a temporary directory");
    let kubeconfig = dir.path().join("kubeconfig");
    server.write_kubeconfig(&kubeconfig).expect("kubeconfig");
    let mut figures = Vec::new();

    // Each phase takes a client of its own: connections left idle while the manager settles may have
    // been closed by the server, and a request written into one fails.
    let (first, started) = start_manager(binary, &kubeconfig).await;
    figures.push((Reading::Idle, settle(&first, started).await));
    make_workloads(&server.client(), n).await;
    figures.push((Reading::AfterMaking, settle(&first, Instant::now()).await));
    drop(first);

    let (second, started) = start_manager(binary, &kubeconfig).await;
    figures.push((Reading::StartedBeside, settle(&second, started).await));
    if ours > 0 {
        let client = server.client();
        make_ours(&client, ours).await;
        until_converged(&client, ours).await;
        figures.push((Reading::WithOurs, settle(&second, Instant::now()).await));
    }
    figures
}

/// `operator run` against the server of `kubeconfig`, once it is ready; and when it started.
async fn start_manager(binary: &Path, kubeconfig: &Path) -> (Operator, Instant) {
    let probes = free_port();
    let started = Instant::now();
    let child = Command::new(binary)
        .args(["run", "--controllers", "vote-config,web-app"])
        .arg(format!("--metrics-bind-address=127.0.0.1:{}", free_port()))
        .arg(format!("--health-probe-bind-address=127.0.0.1:{probes}"))
        .arg(format!("--webhook-bind-address=127.0.0.1:{}", free_port()))
        .env("KUBECONFIG", kubeconfig)
        .env(
            "LOG_LEVEL",
            std::env::var("BENCH_OPERATOR_LOG").unwrap_or_else(|_| "warn".into()),
        )
        .stdout(Stdio::null())
        .spawn()
        .expect("operator starts");
    let operator = Operator(child);
    until("the manager ready", Duration::from_secs(120), async || {
        readyz(probes).await
    })
    .await;
    (operator, started)
}

/// The manager's resident set once it has not grown for [`SETTLED_FOR`]. Ready says the
/// controllers' own watches have listed; the caches of children fill beside them, and events from
/// the server may still be arriving.
async fn settle(operator: &Operator, since: Instant) -> Figures {
    let pid = operator.0.id();
    let mut highest = rss_kib(pid);
    let settling = Instant::now();
    let mut grown = Instant::now();
    while grown.elapsed() < SETTLED_FOR {
        assert!(
            settling.elapsed() < Duration::from_secs(300),
            "the manager's memory did not settle within 300 s"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
        let now = rss_kib(pid);
        if now > highest {
            highest = now;
            grown = Instant::now();
        }
    }
    Figures {
        rss_kib: rss_kib(pid),
        peak_kib: peak_rss_kib(pid),
        settled: since.elapsed(),
    }
}

/// Polls `done` every 100 ms until it holds.
async fn until(what: &str, limit: Duration, done: impl AsyncFnMut() -> bool) {
    support::until_every(what, limit, Duration::from_millis(100), done).await
}

async fn install_crds(client: &kube::Client) {
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    for crd in operator::api::crds() {
        crds.create(&PostParams::default(), &crd).await.expect("CRD");
        let name = crd.name_any();
        until("the CRD is Established", Duration::from_secs(60), async || {
            crds.get(&name)
                .await
                .ok()
                .and_then(|c| c.status?.conditions)
                .is_some_and(|c| c.iter().any(|c| c.type_ == "Established" && c.status == "True"))
        })
        .await;
    }
}

/// `n` Deployments of one replica and `n` Services in [`NAMESPACE`], each labelled `app=<its name>`
/// as a user's would be; returns once every Pod exists.
async fn make_workloads(client: &kube::Client, n: usize) {
    if n == 0 {
        return;
    }
    let namespace: Namespace =
        serde_json::from_value(json!({"metadata": {"name": NAMESPACE}})).expect("namespace");
    create(&Api::<Namespace>::all(client.clone()), &namespace).await;
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), NAMESPACE);
    let services: Api<Service> = Api::namespaced(client.clone(), NAMESPACE);
    let started = Instant::now();
    futures::stream::iter(0..n)
        .for_each_concurrent(CREATORS, |i| {
            let (deployments, services) = (deployments.clone(), services.clone());
            async move {
                let name = format!("shop-{i}");
                let labels = json!({"app": name});
                let deployment: Deployment = serde_json::from_value(json!({
                    "metadata": {"name": name, "labels": labels},
                    "spec": {
                        "replicas": 1,
                        "selector": {"matchLabels": labels},
                        "template": {
                            "metadata": {"labels": labels},
                            "spec": {"containers": [{
                                "name": "web", "image": "nginx:1.27",
                                "ports": [{"containerPort": 80}],
                            }]},
                        },
                    },
                }))
                .expect("deployment");
                create(&deployments, &deployment).await;
                let service: Service = serde_json::from_value(json!({
                    "metadata": {"name": name, "labels": labels},
                    "spec": {"selector": labels, "ports": [{"name": "http", "port": 80}]},
                }))
                .expect("service");
                create(&services, &service).await;
            }
        })
        .await;
    let pods: Api<Pod> = Api::namespaced(client.clone(), NAMESPACE);
    until("every Pod", Duration::from_secs(900), async || {
        let listed = pods.list_metadata(&ListParams::default().labels("app")).await;
        listed.is_ok_and(|list| list.items.len() >= n)
    })
    .await;
    println!(
        "  made {n} Deployments, their Pods and {n} Services in {:.1} s",
        started.elapsed().as_secs_f64()
    );
}

/// Creates made again after a transport failure: a request written on a connection the server had
/// just closed fails with a broken pipe, and one such failure would end a run of many minutes. They are
/// counted and printed, not hidden.
static RETRIED: AtomicUsize = AtomicUsize::new(0);

/// Creates `object`, again after a transport failure (at most twice); a conflict after such a
/// failure means the first attempt had reached the server.
async fn create<K>(api: &Api<K>, object: &K)
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + serde::Serialize + std::fmt::Debug,
{
    for attempt in 1..=3 {
        match api.create(&PostParams::default(), object).await {
            Ok(_) => return,
            Err(kube::Error::Api(status)) if status.code == 409 && attempt > 1 => return,
            Err(kube::Error::Service(_) | kube::Error::HyperError(_)) if attempt < 3 => {
                RETRIED.fetch_add(1, Ordering::Relaxed);
            }
            Err(error) => panic!(
                "{} not created: {error}",
                object.meta().name.as_deref().unwrap_or("?")
            ),
        }
    }
}

/// Where our resources live.
const OURS: &str = "ours";

/// `n` WebApps of one replica and `n` VoteConfigs in [`OURS`].
async fn make_ours(client: &kube::Client, n: usize) {
    if n == 0 {
        return;
    }
    let namespace: Namespace =
        serde_json::from_value(json!({"metadata": {"name": OURS}})).expect("namespace");
    create(&Api::<Namespace>::all(client.clone()), &namespace).await;
    let web_apps: Api<WebApp> = Api::namespaced(client.clone(), OURS);
    let vote_configs: Api<VoteConfig> = Api::namespaced(client.clone(), OURS);
    futures::stream::iter(0..n)
        .for_each_concurrent(CREATORS, |i| {
            let (web_apps, vote_configs) = (web_apps.clone(), vote_configs.clone());
            async move {
                let web_app: WebApp = serde_json::from_value(json!({
                    "apiVersion": "example.com/v1", "kind": "WebApp",
                    "metadata": {"name": format!("web-{i}")},
                    "spec": {"image": "nginx:1.27", "replicas": 1, "port": 80},
                }))
                .expect("web app");
                create(&web_apps, &web_app).await;
                let vote_config: VoteConfig = serde_json::from_value(json!({
                    "apiVersion": "voting.schoolofdevops.com/v1", "kind": "VoteConfig",
                    "metadata": {"name": format!("vote-{i}")},
                    "spec": {"options": [{"id": "a", "label": "Cats"}, {"id": "b", "label": "Dogs"}]},
                }))
                .expect("vote config");
                create(&vote_configs, &vote_config).await;
            }
        })
        .await;
}

/// Waits until every one of the `n` WebApps is Running and every VoteConfig Ready.
async fn until_converged(client: &kube::Client, n: usize) {
    if n == 0 {
        return;
    }
    let web_apps: Api<WebApp> = Api::namespaced(client.clone(), OURS);
    let vote_configs: Api<VoteConfig> = Api::namespaced(client.clone(), OURS);
    until(
        "every WebApp Running and VoteConfig Ready",
        Duration::from_secs(600),
        async || {
            tokio::time::sleep(Duration::from_secs(1)).await;
            let Ok(apps) = web_apps.list(&ListParams::default()).await else {
                return false;
            };
            let Ok(configs) = vote_configs.list(&ListParams::default()).await else {
                return false;
            };
            let running = apps
                .items
                .iter()
                .filter(|a| a.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running"))
                .count();
            let ready = configs
                .items
                .iter()
                .filter(|c| {
                    c.status
                        .as_ref()
                        .is_some_and(|s| s.conditions.iter().any(|c| c.is("Ready", "True")))
                })
                .count();
            running == n && ready == n
        },
    )
    .await;
}
