//! Each stage of a write runs once per request: decoding, mutating admission, validation, validating
//! admission and the store's commit, counted by the embedded server on `/metrics`
//! (`embedded_apiserver_write_stages_total`) and, for the webhooks, by the webhook server itself. A
//! write no webhook is configured for runs no admission stage. Writes through subresources (a Scale,
//! an Eviction) count as requests' too; the server's own writes (its emulated controllers', the
//! garbage collector's) run the same stages but admission, counted apart
//! (`embedded_apiserver_server_write_stages_total`). The counts are the embedded server's own, so
//! these tests run on it alone.

mod common;

use std::collections::BTreeMap;

use axum::Router;
use base64::Engine;
use common::{
    request,
    webhook_server::{Recorder, WebhookServer},
};
use serde_json::{Value, json};
use testenv::{Backend, ControlPlane};

const CONFIG_MAPS: &str = "/api/v1/namespaces/default/configmaps";

/// Each stage's count of requests' writes, as `/metrics` reports it.
async fn stage_counts(client: &kube::Client) -> BTreeMap<String, u64> {
    counts_of(client, "embedded_apiserver_write_stages_total").await
}

/// Each stage's count in metric `family`.
async fn counts_of(client: &kube::Client, family: &str) -> BTreeMap<String, u64> {
    let answer = common::request(client, "GET", "/metrics", "application/json", Value::Null).await;
    assert_eq!(answer.status, 200, "{}", answer.text);
    let prefix = format!("{family}{{stage=\"");
    answer
        .text
        .lines()
        .filter_map(|line| line.strip_prefix(prefix.as_str()))
        .filter_map(|rest| rest.split_once("\"} "))
        .map(|(stage, count)| (stage.to_owned(), count.parse().expect("a count")))
        .collect()
}

/// How many times each stage ran during `write`.
async fn stages_of<F: std::future::Future<Output = ()>>(
    client: &kube::Client,
    write: F,
) -> BTreeMap<String, u64> {
    let before = stage_counts(client).await;
    write.await;
    let after = stage_counts(client).await;
    after
        .into_iter()
        .map(|(stage, count)| {
            let ran = count - before.get(&stage).copied().unwrap_or_default();
            (stage, ran)
        })
        .collect()
}

fn expected(stages: &[(&str, u64)]) -> BTreeMap<String, u64> {
    let mut all: BTreeMap<String, u64> = [
        "decode",
        "mutating_admission",
        "validate",
        "validating_admission",
        "conversion",
        "commit",
    ]
    .into_iter()
    .map(|stage| (stage.to_owned(), 0))
    .collect();
    for (stage, count) in stages {
        all.insert((*stage).to_owned(), *count);
    }
    all
}

fn config_map(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": name, "labels": {"stages": "counted"}}, "data": {"k": "v"}})
}

/// Labels the object `mutated: "yes"`.
fn label(_: &Value) -> Value {
    let patch = json!([{"op": "add", "path": "/metadata/labels/mutated", "value": "yes"}]);
    let patch = base64::engine::general_purpose::STANDARD.encode(patch.to_string());
    json!({"allowed": true, "patchType": "JSONPatch", "patch": patch})
}

fn allow(_: &Value) -> Value {
    json!({"allowed": true})
}

async fn configure(client: &kube::Client, kind: &str, client_config: Value) {
    let plural = format!("{}s", kind.to_lowercase());
    let body = json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": kind,
    "metadata": {"name": format!("stages-{plural}")},
    "webhooks": [{
        "name": format!("{plural}.example.com"),
        "clientConfig": client_config,
        "rules": [{"operations": ["CREATE", "UPDATE"], "apiGroups": [""], "apiVersions": ["v1"],
                   "resources": ["configmaps"]}],
        "objectSelector": {"matchLabels": {"stages": "counted"}},
        "failurePolicy": "Fail",
        "sideEffects": "None",
        "admissionReviewVersions": ["v1"],
    }]});
    let path = format!("/apis/admissionregistration.k8s.io/v1/{plural}");
    let created = request(client, "POST", &path, "application/json", body).await;
    assert_eq!(created.status, 201, "{}", created.body);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_write_without_webhooks_decodes_validates_and_commits_once() {
    let plane = ControlPlane::start(Backend::Embedded)
        .await
        .expect("server starts");
    let client = plane.client();
    let once = expected(&[("decode", 1), ("validate", 1), ("commit", 1)]);
    let ran = stages_of(&client, async {
        let created = request(
            &client,
            "POST",
            CONFIG_MAPS,
            "application/json",
            config_map("plain"),
        )
        .await;
        assert_eq!(created.status, 201, "{}", created.body);
    })
    .await;
    assert_eq!(ran, once, "a create");
    let ran = stages_of(&client, async {
        let patched = request(
            &client,
            "PATCH",
            &format!("{CONFIG_MAPS}/plain"),
            "application/merge-patch+json",
            json!({"data": {"k": "w"}}),
        )
        .await;
        assert_eq!(patched.status, 200, "{}", patched.body);
    })
    .await;
    assert_eq!(ran, once, "a patch");
}

#[tokio::test(flavor = "multi_thread")]
async fn each_stage_of_a_write_through_webhooks_runs_once() {
    let plane = ControlPlane::start(Backend::Embedded)
        .await
        .expect("server starts");
    let client = plane.client();
    let (mutating, validating) = (Recorder::default(), Recorder::default());
    let server = WebhookServer::start(
        Router::new()
            .route("/label", mutating.route(label))
            .route("/allow", validating.route(allow)),
    )
    .await;
    configure(
        &client,
        "MutatingWebhookConfiguration",
        server.client_config("/label"),
    )
    .await;
    configure(
        &client,
        "ValidatingWebhookConfiguration",
        server.client_config("/allow"),
    )
    .await;
    let once = expected(&[
        ("decode", 1),
        ("mutating_admission", 1),
        ("validate", 1),
        ("validating_admission", 1),
        ("commit", 1),
    ]);
    let path = format!("{CONFIG_MAPS}/counted");
    let writes: [(&str, &str, &str, Value); 4] = [
        ("create", "POST", "application/json", config_map("counted")),
        ("update", "PUT", "application/json", Value::Null),
        (
            "merge patch",
            "PATCH",
            "application/merge-patch+json",
            json!({"data": {"k": "patched"}}),
        ),
        (
            "server-side apply",
            "PATCH",
            "application/apply-patch+yaml",
            json!({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "counted", "labels": {"stages": "counted"}}, "data": {"applied": "yes"}}),
        ),
    ];
    for (what, method, content_type, body) in writes {
        let (target, body) = match what {
            "create" => (CONFIG_MAPS.to_owned(), body),
            "update" => {
                let current = request(&client, "GET", &path, "application/json", Value::Null).await;
                let mut object = current.body;
                object["data"]["k"] = json!("updated");
                (path.clone(), object)
            }
            "server-side apply" => (format!("{path}?fieldManager=stages"), body),
            _ => (path.clone(), body),
        };
        mutating.clear();
        validating.clear();
        let ran = stages_of(&client, async {
            let answer = request(&client, method, &target, content_type, body).await;
            assert!(answer.status < 300, "{what}: {} {}", answer.status, answer.body);
            assert_eq!(answer.body["metadata"]["labels"]["mutated"], "yes", "{what}");
        })
        .await;
        assert_eq!(ran, once, "{what}");
        assert_eq!(
            mutating.requests().len(),
            1,
            "{what}: calls of the mutating webhook"
        );
        assert_eq!(
            validating.requests().len(),
            1,
            "{what}: calls of the validating webhook"
        );
        let seen = &validating.requests()[0]["object"];
        assert_eq!(
            seen["metadata"]["labels"]["mutated"], "yes",
            "{what}: the validating webhook sees what the mutating one made"
        );
    }
}

/// A webhook on nothing in particular: every write then goes through the admission stages.
async fn any_webhook(client: &kube::Client, server: &WebhookServer) {
    configure(
        client,
        "ValidatingWebhookConfiguration",
        server.client_config("/allow"),
    )
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn subresource_writes_run_the_admission_stages_once() {
    let plane = common::without_a_node(Backend::Embedded).await;
    let client = plane.client();
    let recorder = Recorder::default();
    let server = WebhookServer::start(Router::new().route("/allow", recorder.route(allow))).await;
    any_webhook(&client, &server).await;
    let deployments = "/apis/apps/v1/namespaces/default/deployments";
    let deployment = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "c", "image": "busybox"}]}}}});
    let created = request(&client, "POST", deployments, "application/json", deployment).await;
    assert_eq!(created.status, 201, "{}", created.body);
    let ran = stages_of(&client, async {
        let scaled = request(
            &client,
            "PATCH",
            &format!("{deployments}/web/scale"),
            "application/merge-patch+json",
            json!({"spec": {"replicas": 2}}),
        )
        .await;
        assert_eq!(scaled.status, 200, "{}", scaled.body);
    })
    .await;
    let once = expected(&[
        ("decode", 1),
        ("mutating_admission", 1),
        ("validate", 1),
        ("validating_admission", 1),
        ("commit", 1),
    ]);
    assert_eq!(ran, once, "a scale");

    let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "evictee"},
        "spec": {"containers": [{"name": "c", "image": "busybox"}]}});
    let pods = "/api/v1/namespaces/default/pods";
    let created = request(&client, "POST", pods, "application/json", pod).await;
    assert_eq!(created.status, 201, "{}", created.body);
    let ran = stages_of(&client, async {
        let eviction =
            json!({"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": "evictee"}});
        let path = format!("{pods}/evictee/eviction");
        let evicted = request(&client, "POST", &path, "application/json", eviction).await;
        assert_eq!(evicted.status, 201, "{}", evicted.body);
    })
    .await;
    // An Eviction is admitted and never stored: the pod it deletes is no write of its own.
    let admitted = expected(&[("mutating_admission", 1), ("validating_admission", 1)]);
    assert_eq!(ran, admitted, "an eviction");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_controllers_writes_run_the_strategy_stages_without_admission() {
    let plane = ControlPlane::start(Backend::Embedded)
        .await
        .expect("server starts");
    let client = plane.client();
    let recorder = Recorder::default();
    let server = WebhookServer::start(Router::new().route("/allow", recorder.route(allow))).await;
    any_webhook(&client, &server).await;
    let server_counts = || counts_of(&client, "embedded_apiserver_server_write_stages_total");
    let before = server_counts().await;
    let deployment = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
        "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "c", "image": "busybox"}]}}}});
    let path = "/apis/apps/v1/namespaces/default/deployments";
    let created = request(&client, "POST", path, "application/json", deployment).await;
    assert_eq!(created.status, 201, "{}", created.body);
    // The deployment controller's ReplicaSet, its pods, the statuses: each a write of the server's.
    let after = server_counts().await;
    let ran = |stage: &str| after[stage] - before.get(stage).copied().unwrap_or_default();
    for stage in ["decode", "validate", "commit"] {
        assert!(ran(stage) >= 3, "{stage} ran {} times", ran(stage));
    }
    for stage in ["mutating_admission", "validating_admission", "conversion"] {
        assert_eq!(ran(stage), 0, "{stage}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn the_garbage_collectors_writes_run_the_strategy_stages_without_admission() {
    let plane = ControlPlane::start(Backend::Embedded)
        .await
        .expect("server starts");
    let client = plane.client();
    let created = request(
        &client,
        "POST",
        CONFIG_MAPS,
        "application/json",
        config_map("owner"),
    )
    .await;
    assert_eq!(created.status, 201, "{}", created.body);
    let mut dependent = config_map("dependent");
    dependent["metadata"]["ownerReferences"] = json!([{"apiVersion": "v1", "kind": "ConfigMap",
        "name": "owner", "uid": created.body["metadata"]["uid"]}]);
    let dependent = request(&client, "POST", CONFIG_MAPS, "application/json", dependent).await;
    assert_eq!(dependent.status, 201, "{}", dependent.body);
    let server_counts = || counts_of(&client, "embedded_apiserver_server_write_stages_total");
    let before = server_counts().await;
    let path = format!("{CONFIG_MAPS}/owner");
    let options = json!({"propagationPolicy": "Orphan"});
    let deleted = request(&client, "DELETE", &path, "application/json", options).await;
    assert_eq!(deleted.status, 200, "{}", deleted.body);
    // The dependent released by an update of the server's: its reference dropped.
    let after = server_counts().await;
    let ran = |stage: &str| after[stage] - before.get(stage).copied().unwrap_or_default();
    for stage in ["decode", "validate", "commit"] {
        assert_eq!(ran(stage), 1, "{stage}");
    }
    for stage in ["mutating_admission", "validating_admission", "conversion"] {
        assert_eq!(ran(stage), 0, "{stage}");
    }
}
