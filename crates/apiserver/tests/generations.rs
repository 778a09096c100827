//! `metadata.generation` of the built-in kinds, on both control planes: 1 on a create, one more on
//! each update that changes what the kind's registry counts (a Job's spec, a webhook configuration's
//! webhooks, an EndpointSlice's endpoints, ports and labels, a Deployment's spec and annotations),
//! and unchanged by the other updates of the metadata; a PriorityClass's stays 1, and a CSIDriver's
//! starts with the first change of its spec.

mod common;

use serde_json::{Value, json};
use testenv::{Backend, ControlPlane};

const JSON: &str = "application/json";
const MERGE: &str = "application/merge-patch+json";

/// Creates `object` in `collection` and answers it as created.
async fn create(client: &kube::Client, collection: &str, object: Value) -> Value {
    let (status, created) = common::send(client, "POST", collection, JSON, object).await;
    assert_eq!(status, 201, "POST {collection}: {created}");
    created
}

/// Merge-patches the object at `path` with `patch` and answers it as updated.
async fn patch(client: &kube::Client, path: &str, patch: Value) -> Value {
    let (status, updated) = common::send(client, "PATCH", path, MERGE, patch).await;
    assert_eq!(status, 200, "PATCH {path}: {updated}");
    updated
}

fn generation(object: &Value) -> Option<i64> {
    object["metadata"]["generation"].as_i64()
}

/// Creates `object` in `collection`, then patches it with each of `updates` in turn: each a patch and
/// the generation the object has after it (the first, the created object's with no patch).
async fn follow_generations(
    client: &kube::Client,
    collection: &str,
    object: Value,
    updates: &[(Value, Option<i64>)],
) {
    let name = object["metadata"]["name"].as_str().unwrap_or_default().to_owned();
    let path = format!("{collection}/{name}");
    let mut current = create(client, collection, object).await;
    for (step, (change, expected)) in updates.iter().enumerate() {
        if !change.is_null() {
            current = patch(client, &path, change.clone()).await;
        }
        assert_eq!(
            generation(&current),
            *expected,
            "{path} after step {step} ({change}): {current}"
        );
    }
    let (_, read) = common::send(client, "GET", &path, JSON, Value::Null).await;
    assert_eq!(
        generation(&read),
        updates.last().and_then(|(_, expected)| *expected),
        "{path} read back: {read}"
    );
}

fn labelled(value: &str) -> Value {
    json!({"metadata": {"labels": {"step": value}}})
}

fn annotated(value: &str) -> Value {
    json!({"metadata": {"annotations": {"step": value}}})
}

/// A webhook that asks an address nothing listens on about a resource no one serves, ignored when
/// it fails: its configuration changes nothing else of the test.
fn webhook(timeout_seconds: u8) -> Value {
    json!({"name": "generations.example.com",
        "clientConfig": {"url": "https://127.0.0.1:1/hook"},
        "rules": [{"apiGroups": ["generations.example.com"], "apiVersions": ["v1"],
            "operations": ["CREATE"], "resources": ["widgets"]}],
        "failurePolicy": "Ignore", "sideEffects": "None", "admissionReviewVersions": ["v1"],
        "timeoutSeconds": timeout_seconds})
}

async fn jobs_webhook_configurations_and_endpoint_slices_count_generations(backend: Backend) {
    let plane = ControlPlane::start(backend).await.expect("control plane starts");
    let client = plane.client();

    // A suspended Job: its controller runs no Pods and writes only its status.
    let job = json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "counted"},
        "spec": {"suspend": true, "parallelism": 1, "template": {"spec": {"restartPolicy": "Never",
            "containers": [{"name": "main", "image": "busybox"}]}}}});
    follow_generations(
        &client,
        "/apis/batch/v1/namespaces/default/jobs",
        job,
        &[
            (Value::Null, Some(1)),
            (labelled("one"), Some(1)),
            (annotated("one"), Some(1)),
            (json!({"spec": {"parallelism": 2}}), Some(2)),
        ],
    )
    .await;

    for (kind, plural) in [
        ("MutatingWebhookConfiguration", "mutatingwebhookconfigurations"),
        (
            "ValidatingWebhookConfiguration",
            "validatingwebhookconfigurations",
        ),
    ] {
        let configuration = json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": kind,
            "metadata": {"name": "counted"}, "webhooks": [webhook(5)]});
        follow_generations(
            &client,
            &format!("/apis/admissionregistration.k8s.io/v1/{plural}"),
            configuration,
            &[
                (Value::Null, Some(1)),
                (labelled("one"), Some(1)),
                (annotated("one"), Some(1)),
                (json!({"webhooks": [webhook(7)]}), Some(2)),
            ],
        )
        .await;
    }

    // An EndpointSlice's labels count too; its annotations do not.
    let slice = json!({"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
        "metadata": {"name": "counted"}, "addressType": "IPv4",
        "endpoints": [{"addresses": ["10.0.0.1"]}],
        "ports": [{"name": "http", "port": 80, "protocol": "TCP"}]});
    follow_generations(
        &client,
        "/apis/discovery.k8s.io/v1/namespaces/default/endpointslices",
        slice,
        &[
            (Value::Null, Some(1)),
            (annotated("one"), Some(1)),
            (labelled("one"), Some(2)),
            (
                json!({"ports": [{"name": "http", "port": 81, "protocol": "TCP"}]}),
                Some(3),
            ),
            (json!({"endpoints": [{"addresses": ["10.0.0.2"]}]}), Some(4)),
        ],
    )
    .await;
}

testenv::each_control_plane!(jobs_webhook_configurations_and_endpoint_slices_count_generations);

async fn deployments_priority_classes_and_csi_drivers_count_as_their_registries_do(backend: Backend) {
    let plane = ControlPlane::start(backend).await.expect("control plane starts");
    let client = plane.client();

    // A Deployment's annotations count as its spec does; its labels do not.
    let deployment = json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "counted"},
        "spec": {"replicas": 0, "selector": {"matchLabels": {"app": "counted"}},
            "template": {"metadata": {"labels": {"app": "counted"}},
                "spec": {"containers": [{"name": "main", "image": "nginx"}]}}}});
    follow_generations(
        &client,
        "/apis/apps/v1/namespaces/default/deployments",
        deployment,
        &[
            (Value::Null, Some(1)),
            (labelled("one"), Some(1)),
            (annotated("one"), Some(2)),
            (json!({"spec": {"minReadySeconds": 3}}), Some(3)),
        ],
    )
    .await;

    // A PriorityClass's generation is set on a create and counts nothing after.
    let class = json!({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
        "metadata": {"name": "generations-counted"}, "value": 1000, "description": "first"});
    follow_generations(
        &client,
        "/apis/scheduling.k8s.io/v1/priorityclasses",
        class,
        &[
            (Value::Null, Some(1)),
            (labelled("one"), Some(1)),
            (json!({"description": "second"}), Some(1)),
        ],
    )
    .await;

    // A CSIDriver has none until its spec first changes.
    let driver = json!({"apiVersion": "storage.k8s.io/v1", "kind": "CSIDriver",
        "metadata": {"name": "generations.example.com"},
        "spec": {"attachRequired": true, "podInfoOnMount": false}});
    follow_generations(
        &client,
        "/apis/storage.k8s.io/v1/csidrivers",
        driver,
        &[
            (Value::Null, None),
            (labelled("one"), None),
            (json!({"spec": {"podInfoOnMount": true}}), Some(1)),
            (annotated("one"), Some(1)),
            (json!({"spec": {"podInfoOnMount": false}}), Some(2)),
        ],
    )
    .await;
}

testenv::each_control_plane!(deployments_priority_classes_and_csi_drivers_count_as_their_registries_do);
