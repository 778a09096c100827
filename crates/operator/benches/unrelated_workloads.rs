//! The manager's resident memory beside workloads that are not its own: `operator run` with the
//! VoteConfig and WebApp controllers (the ones that watch Deployments, Services, Pods and ConfigMaps;
//! PostgresWriter watches only its own kind), no resource of ours at all, on the embedded API server,
//! once with nothing else in the cluster and once beside N Deployments (each with its ReplicaSet and a
//! running Pod, made by the server's emulated controllers and node) and N Services, every one labelled
//! `app`, the label most workloads carry. A manager whose caches hold only its own children stays
//! where it was; one that watched everything labelled `app` grew with them.
//!
//! Each round starts a fresh server (with or without the workloads, made before the manager starts, as
//! on a cluster it is deployed into), then the manager, waits for it to be ready and for its resident
//! set to settle (no growth for [`SETTLED_FOR`]), and reads `VmRSS` and `VmHWM` (the peak, which the
//! first list of every watch sets). The rounds alternate the two cases; the medians are the figures.
//!
//! With `BENCH_OURS=M`, each round also measures a third case, what the memory limit is sized from: M
//! WebApps (one replica each) and M VoteConfigs of ours beside the N unrelated workloads, measured once
//! every WebApp is Running and every VoteConfig Ready.
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
        "the manager (VoteConfig and WebApp controllers, no resource of ours) beside {n} Deployments, \
         their Pods and {n} Services labelled `app`, against none; {rounds} rounds; {}",
        binary.display()
    );
    let (mut alone, mut beside, mut with_ours) = (Vec::new(), Vec::new(), Vec::new());
    // (unrelated workloads, resources of ours): alone, beside them, and with ours too when asked.
    let cases = &[(0, 0), (n, 0), (n, ours)][..if ours > 0 { 3 } else { 2 }];
    for round in 1..=rounds {
        for &(workloads, ours) in cases {
            let figures = measure(&binary, workloads, ours).await;
            println!(
                "round {round}, {workloads:>6} unrelated of each kind, {ours} of ours: RSS {:.1} MiB settled, \
                 peak {:.1} MiB; {:.1} s from start to settled",
                mib(figures.rss_kib),
                mib(figures.peak_kib),
                figures.settled.as_secs_f64()
            );
            match (workloads, ours) {
                (0, _) => &mut alone,
                (_, 0) => &mut beside,
                _ => &mut with_ours,
            }
            .push(figures);
        }
    }
    let median = |figures: &[Figures], field: fn(&Figures) -> u64| {
        let mut values: Vec<u64> = figures.iter().map(field).collect();
        values.sort_unstable();
        mib(values[values.len() / 2])
    };
    let (rss_alone, rss_beside) = (median(&alone, |f| f.rss_kib), median(&beside, |f| f.rss_kib));
    let (peak_alone, peak_beside) = (median(&alone, |f| f.peak_kib), median(&beside, |f| f.peak_kib));
    println!(
        "medians: RSS {rss_alone:.1} MiB alone, {rss_beside:.1} MiB beside {n} of each ({:+.1} MiB); \
         peak {peak_alone:.1} / {peak_beside:.1} MiB ({:+.1} MiB)",
        rss_beside - rss_alone,
        peak_beside - peak_alone
    );
    if !with_ours.is_empty() {
        println!(
            "medians with {ours} WebApps and {ours} VoteConfigs of ours beside them: RSS {:.1} MiB, peak {:.1} MiB",
            median(&with_ours, |f| f.rss_kib),
            median(&with_ours, |f| f.peak_kib)
        );
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

/// What one round reads of the manager.
struct Figures {
    rss_kib: u64,
    peak_kib: u64,
    /// From the manager's start until its resident set settled.
    settled: Duration,
}

/// A fresh server holding `workloads` unrelated Deployments (with their Pods) and Services and `ours`
/// WebApps and VoteConfigs, then the manager against it, measured once it has converged and settled.
async fn measure(binary: &Path, workloads: usize, ours: usize) -> Figures {
    let server = ControlPlane::embedded(apiserver::Config::default())
        .await
        .expect("the embedded API server starts");
    let client = server.client();
    install_crds(&client).await;
    make_workloads(&client, workloads).await;
    make_ours(&client, ours).await;
    let dir = tempfile::tempdir().expect("a temporary directory");
    let kubeconfig = dir.path().join("kubeconfig");
    server.write_kubeconfig(&kubeconfig).expect("kubeconfig");

    let probes = free_port();
    let started = Instant::now();
    let child = Command::new(binary)
        .args(["run", "--controllers", "vote-config,web-app"])
        .arg(format!("--metrics-bind-address=127.0.0.1:{}", free_port()))
        .arg(format!("--health-probe-bind-address=127.0.0.1:{probes}"))
        .arg(format!("--webhook-bind-address=127.0.0.1:{}", free_port()))
        .env("KUBECONFIG", &kubeconfig)
        .env(
            "LOG_LEVEL",
            std::env::var("BENCH_OPERATOR_LOG").unwrap_or_else(|_| "warn".into()),
        )
        .stdout(Stdio::null())
        .spawn()
        .expect("operator starts");
    let operator = Operator(child);
    let pid = operator.0.id();
    until("the manager ready", Duration::from_secs(120), async || {
        readyz(probes).await
    })
    .await;
    until_converged(&client, ours).await;

    // Ready says the controllers' own watches have listed; the caches of children fill beside them.
    // The resident set stops growing once every watch has its list.
    let mut highest = rss_kib(pid);
    let settling = Instant::now();
    let mut since = Instant::now();
    while since.elapsed() < SETTLED_FOR {
        assert!(
            settling.elapsed() < Duration::from_secs(300),
            "the manager's memory did not settle within 300 s"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
        let now = rss_kib(pid);
        if now > highest {
            highest = now;
            since = Instant::now();
        }
    }
    let figures = Figures {
        rss_kib: rss_kib(pid),
        peak_kib: peak_rss_kib(pid),
        settled: started.elapsed(),
    };
    drop(operator);
    figures
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
    Api::<Namespace>::all(client.clone())
        .create(&PostParams::default(), &namespace)
        .await
        .expect("namespace created");
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
                deployments
                    .create(&PostParams::default(), &deployment)
                    .await
                    .expect("deployment created");
                let service: Service = serde_json::from_value(json!({
                    "metadata": {"name": name, "labels": labels},
                    "spec": {"selector": labels, "ports": [{"name": "http", "port": 80}]},
                }))
                .expect("service");
                services
                    .create(&PostParams::default(), &service)
                    .await
                    .expect("service created");
            }
        })
        .await;
    let pods: Api<Pod> = Api::namespaced(client.clone(), NAMESPACE);
    until("every Pod", Duration::from_secs(300), async || {
        let listed = pods.list_metadata(&ListParams::default().labels("app")).await;
        listed.is_ok_and(|list| list.items.len() >= n)
    })
    .await;
    println!(
        "  made {n} Deployments, their Pods and {n} Services in {:.1} s",
        started.elapsed().as_secs_f64()
    );
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
    Api::<Namespace>::all(client.clone())
        .create(&PostParams::default(), &namespace)
        .await
        .expect("namespace created");
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
                web_apps
                    .create(&PostParams::default(), &web_app)
                    .await
                    .expect("web app created");
                let vote_config: VoteConfig = serde_json::from_value(json!({
                    "apiVersion": "voting.schoolofdevops.com/v1", "kind": "VoteConfig",
                    "metadata": {"name": format!("vote-{i}")},
                    "spec": {"options": [{"id": "a", "label": "Cats"}, {"id": "b", "label": "Dogs"}]},
                }))
                .expect("vote config");
                vote_configs
                    .create(&PostParams::default(), &vote_config)
                    .await
                    .expect("vote config created");
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
