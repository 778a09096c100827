//! `cargo bench --profile dev -p kube-envtest --bench versus_envtest`: what a test suite pays for its
//! API server under kube-envtest, beside etcd + kube-apiserver v1.33 started as controller-runtime's
//! envtest starts them (benches/support/envtest_plane.rs), in the same run on the same machine.
//! `--profile dev` is the build `cargo test` makes, so kube-envtest's server runs unoptimized, as in a
//! user's tests; the upstream binaries are optimized Go either way.
//!
//! 1. Start: from the call to a server with one CRD Established and a first list answered: kube-envtest's
//!    first server in the process, its later ones, and envtest's control plane (`BENCH_REAL_STARTS`
//!    runs, 3).
//! 2. Per test, `BENCH_TESTS` (20) tests of the same body (a namespace of its own, a custom resource and
//!    a ConfigMap created in it, a list): with a fresh kube-envtest server per test, and in a namespace
//!    of its own on one shared server, kube-envtest's or envtest's (how envtest suites share theirs).
//! 3. Webhooks: from `WebhookInstallOptions` to the first create the API server sent through the test's
//!    validating webhook (certificate, port, configuration installed, then the API server noticing it).
//! 4. Memory: the bench process's RSS before and with one kube-envtest server; etcd + kube-apiserver's.
//!
//! Medians, with the range: the machine is shared, so single runs say little.

#[path = "support/envtest_plane.rs"]
mod envtest_plane;
#[path = "support/proc_status.rs"]
mod proc_status;

use proc_status::status_kib;

use std::{
    sync::{
        Arc,
        atomic::{AtomicUsize, Ordering},
    },
    time::{Duration, Instant},
};

use axum::{Json, Router, extract::State, routing::post};
use envtest_plane::EnvtestPlane;
use k8s_openapi::{
    api::{
        admissionregistration::v1::{
            RuleWithOperations, ValidatingWebhook, ValidatingWebhookConfiguration, WebhookClientConfig,
        },
        core::v1::{ConfigMap, Namespace},
    },
    apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition,
};
use kube::{
    Api, Client, CustomResource, CustomResourceExt,
    api::{ListParams, ObjectMeta, PostParams},
    runtime::wait::{await_condition, conditions},
};
use kube_envtest::{Environment, WebhookInstallOptions, WebhookServing};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

#[derive(CustomResource, Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[kube(group = "bench.example.com", version = "v1", kind = "Widget", namespaced)]
pub struct WidgetSpec {
    pub size: u32,
}

fn env_number(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn own_rss_kib() -> u64 {
    status_kib("/proc/self/status", "VmRSS")
}

fn mib(kib: u64) -> f64 {
    kib as f64 / 1024.0
}

/// Median, minimum, maximum.
fn summary(values: &mut [Duration]) -> String {
    values.sort();
    format!(
        "{:?} ({:?}-{:?})",
        values[values.len() / 2],
        values[0],
        values[values.len() - 1]
    )
}

/// A kube-envtest server with the Widget CRD Established and a first list answered.
async fn kube_envtest_ready() -> Environment {
    let env = Environment::builder()
        .crd_for::<Widget>()
        .start()
        .await
        .expect("kube-envtest starts");
    first_list(&env.client()).await;
    env
}

async fn first_list(client: &Client) {
    Api::<Widget>::default_namespaced(client.clone())
        .list(&ListParams::default())
        .await
        .expect("first list");
}

/// envtest's control plane with the Widget CRD installed as envtest installs it (created, then
/// waited for), and a first list answered.
async fn envtest_ready() -> EnvtestPlane {
    let plane = EnvtestPlane::start().await;
    let crds: Api<CustomResourceDefinition> = Api::all(plane.client.clone());
    crds.create(&PostParams::default(), &Widget::crd())
        .await
        .expect("CRD created");
    tokio::time::timeout(
        Duration::from_secs(30),
        await_condition(crds, Widget::crd_name(), conditions::is_crd_established()),
    )
    .await
    .expect("Established in time")
    .expect("watch");
    // Established and served can be a moment apart on kube-apiserver: envtest polls discovery.
    let started = Instant::now();
    while Api::<Widget>::default_namespaced(plane.client.clone())
        .list(&ListParams::default())
        .await
        .is_err()
    {
        assert!(started.elapsed() < Duration::from_secs(30), "Widgets served");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    plane
}

/// A test's body: a namespace of its own, a Widget and a ConfigMap in it, a list.
async fn test_body(client: &Client, test: usize) {
    let namespace = format!("test-{test}");
    Api::<Namespace>::all(client.clone())
        .create(
            &PostParams::default(),
            &Namespace {
                metadata: ObjectMeta {
                    name: Some(namespace.clone()),
                    ..Default::default()
                },
                ..Default::default()
            },
        )
        .await
        .expect("namespace");
    let widgets: Api<Widget> = Api::namespaced(client.clone(), &namespace);
    widgets
        .create(
            &PostParams::default(),
            &Widget::new("one", WidgetSpec { size: 1 }),
        )
        .await
        .expect("widget");
    let config_map = ConfigMap {
        metadata: ObjectMeta {
            name: Some("one".into()),
            ..Default::default()
        },
        ..Default::default()
    };
    Api::<ConfigMap>::namespaced(client.clone(), &namespace)
        .create(&PostParams::default(), &config_map)
        .await
        .expect("config map");
    assert_eq!(
        widgets
            .list(&ListParams::default())
            .await
            .expect("list")
            .items
            .len(),
        1
    );
}

/// A validating webhook on ConfigMaps that admits all and counts its calls.
fn counting_webhook() -> ValidatingWebhookConfiguration {
    ValidatingWebhookConfiguration {
        metadata: ObjectMeta {
            name: Some("count-config-maps".into()),
            ..Default::default()
        },
        webhooks: Some(vec![ValidatingWebhook {
            name: "count.bench.example.com".into(),
            admission_review_versions: vec!["v1".into()],
            side_effects: "None".into(),
            // A round's configuration outlives its server: the next round's creates are not refused
            // while kube-apiserver still calls the old port.
            failure_policy: Some("Ignore".into()),
            client_config: WebhookClientConfig {
                service: Some(k8s_openapi::api::admissionregistration::v1::ServiceReference {
                    name: "webhook-service".into(),
                    namespace: "system".into(),
                    path: Some("/validate".into()),
                    port: None,
                }),
                ..Default::default()
            },
            rules: Some(vec![RuleWithOperations {
                api_groups: Some(vec!["".into()]),
                api_versions: Some(vec!["v1".into()]),
                operations: Some(vec!["CREATE".into()]),
                resources: Some(vec!["configmaps".into()]),
                scope: None,
            }]),
            ..Default::default()
        }]),
    }
}

async fn admit(State(calls): State<Arc<AtomicUsize>>, Json(review): Json<Value>) -> Json<Value> {
    calls.fetch_add(1, Ordering::SeqCst);
    Json(json!({
        "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
        "response": {"uid": review["request"]["uid"], "allowed": true}
    }))
}

/// Serves [`admit`] on `serving`'s address with its certificate; the count of calls.
async fn serve_counting(serving: &WebhookServing) -> (Arc<AtomicUsize>, tokio::task::JoinHandle<()>) {
    let calls = Arc::new(AtomicUsize::new(0));
    let router = Router::new()
        .route("/validate", post(admit))
        .with_state(calls.clone());
    let tls = Arc::new(serving.server_config().expect("TLS configuration"));
    let listener = serving::listener::TlsListener::bind(serving.addr(), tls)
        .await
        .expect("webhook port");
    let task = tokio::spawn(async move {
        let _ = axum::serve(listener, router).await;
    });
    (calls, task)
}

/// Creates ConfigMaps until one went through the webhook; the time it took.
async fn until_called(client: &Client, calls: &AtomicUsize, namespace: &str) {
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), namespace);
    let started = Instant::now();
    for attempt in 0.. {
        let config_map = ConfigMap {
            metadata: ObjectMeta {
                name: Some(format!("probe-{attempt}")),
                ..Default::default()
            },
            ..Default::default()
        };
        api.create(&PostParams::default(), &config_map)
            .await
            .expect("created");
        if calls.load(Ordering::SeqCst) > 0 {
            return;
        }
        assert!(started.elapsed() < Duration::from_secs(60), "the webhook called");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let real_starts = env_number("BENCH_REAL_STARTS", 3);
    let tests = env_number("BENCH_TESTS", 20);

    // 1. Start.
    let before = own_rss_kib();
    let started = Instant::now();
    let first = kube_envtest_ready().await;
    let first_start = started.elapsed();
    let with_one = own_rss_kib();
    drop(first);
    let mut later = Vec::new();
    for _ in 0..tests {
        let started = Instant::now();
        let env = kube_envtest_ready().await;
        later.push(started.elapsed());
        drop(env);
    }
    let mut real = Vec::new();
    let mut real_rss = Vec::new();
    for _ in 0..real_starts {
        let started = Instant::now();
        let plane = envtest_ready().await;
        real.push(started.elapsed());
        real_rss.push(plane.rss_kib());
    }
    real_rss.sort();
    println!("start to ready (one CRD Established, first list), median (range):");
    println!("  kube-envtest, first server of the process: {first_start:?}");
    println!(
        "  kube-envtest, later servers ({tests}):        {}",
        summary(&mut later)
    );
    println!(
        "  envtest's etcd + kube-apiserver ({real_starts}):     {}",
        summary(&mut real)
    );

    // 2. Per test.
    let mut fresh = Vec::new();
    for test in 0..tests {
        let started = Instant::now();
        let env = kube_envtest_ready().await;
        test_body(&env.client(), test).await;
        fresh.push(started.elapsed());
    }
    let shared_embedded = kube_envtest_ready().await;
    let mut shared = Vec::new();
    for test in 0..tests {
        let started = Instant::now();
        test_body(&shared_embedded.client(), test).await;
        shared.push(started.elapsed());
    }
    let plane = envtest_ready().await;
    let mut shared_real = Vec::new();
    for test in 0..tests {
        let started = Instant::now();
        test_body(&plane.client, test).await;
        shared_real.push(started.elapsed());
    }
    println!("per test ({tests} tests: a namespace, a Widget, a ConfigMap, a list), median (range):");
    println!(
        "  kube-envtest, a fresh server per test:    {}",
        summary(&mut fresh)
    );
    println!(
        "  kube-envtest, one shared server:          {}",
        summary(&mut shared)
    );
    println!(
        "  envtest's control plane, shared:          {}",
        summary(&mut shared_real)
    );

    // 3. Webhooks: install to the first call, on each.
    let mut embedded_hooks = Vec::new();
    for _ in 0..tests.min(10) {
        let started = Instant::now();
        let env = Environment::builder()
            .webhook_install_options(
                WebhookInstallOptions::default().validating_webhooks([counting_webhook()]),
            )
            .start()
            .await
            .expect("start with webhooks");
        let (calls, server) = serve_counting(env.webhook_serving().expect("serving")).await;
        until_called(&env.client(), &calls, "default").await;
        embedded_hooks.push(started.elapsed());
        server.abort();
    }
    let mut real_hooks = Vec::new();
    for round in 0..real_starts {
        // A namespace of its own for the round's probes.
        test_body(&plane.client, 1000 + round).await;
        let started = Instant::now();
        let serving = WebhookInstallOptions::default()
            .validating_webhooks([counting_webhook()])
            .install(&plane.client)
            .await
            .expect("install");
        let (calls, server) = serve_counting(&serving).await;
        until_called(&plane.client, &calls, &format!("test-{}", 1000 + round)).await;
        real_hooks.push(started.elapsed());
        server.abort();
    }
    println!("webhooks: options to the first create through the test's webhook, median (range):");
    println!(
        "  kube-envtest, server start included:      {}",
        summary(&mut embedded_hooks)
    );
    println!(
        "  envtest's control plane (install only):   {}",
        summary(&mut real_hooks)
    );

    // 4. Memory.
    println!("memory:");
    println!(
        "  bench process RSS: {:.1} MiB before kube-envtest, {:.1} MiB with its first server",
        mib(before),
        mib(with_one)
    );
    println!(
        "  etcd + kube-apiserver RSS, ready with one CRD: {:.1} MiB (median of {real_starts})",
        mib(real_rss[real_rss.len() / 2])
    );
}
