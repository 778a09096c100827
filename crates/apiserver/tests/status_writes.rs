//! Writes through `/status`: the status is written and the spec is not, and the metadata the request
//! carries is written or not as each kind's status strategy in kube-apiserver decides: a namespace's
//! is, a Deployment's but its labels, a custom resource's not at all.

mod common;

use common::{Answer, install_crd, request};
use serde_json::{Value, json};
use testenv::{Backend, ControlPlane};

async fn send(client: &kube::Client, method: &str, path: &str, body: Value) -> Answer {
    let content_type = if method == "PATCH" {
        "application/merge-patch+json"
    } else {
        "application/json"
    };
    let answer = request(client, method, path, content_type, body).await;
    assert!(
        matches!(answer.status, 200 | 201),
        "{method} {path}: {}",
        answer.text
    );
    answer
}

/// What a status patch of `path` sends besides its status: a label and an annotation.
fn with_metadata(status: Value) -> Value {
    json!({"metadata": {"labels": {"patched": "yes"}, "annotations": {"note": "from a status patch"}},
        "status": status})
}

async fn status_writes_keep_the_metadata_each_kind_keeps(backend: Backend) {
    let plane = ControlPlane::start(backend).await.expect("control plane starts");
    let client = plane.client();

    // A namespace's status strategy resets its spec alone.
    let namespace = json!({"apiVersion": "v1", "kind": "Namespace",
        "metadata": {"name": "status-writes", "labels": {"team": "a"}}});
    send(&client, "POST", "/api/v1/namespaces", namespace).await;
    let mut patch = with_metadata(json!({"conditions": [{"type": "StatusPatched", "status": "True",
        "reason": "Test", "message": "set through the status"}]}));
    patch["spec"] = json!({"finalizers": ["example.com/kept-out"]});
    let patched = send(&client, "PATCH", "/api/v1/namespaces/status-writes/status", patch).await;
    let stored = send(&client, "GET", "/api/v1/namespaces/status-writes", Value::Null).await;
    for answer in [&patched, &stored] {
        let metadata = &answer.body["metadata"];
        assert_eq!(
            metadata["annotations"],
            json!({"note": "from a status patch"}),
            "{}",
            answer.text
        );
        assert_eq!(
            (&metadata["labels"]["team"], &metadata["labels"]["patched"]),
            (&json!("a"), &json!("yes"))
        );
        assert_eq!(answer.body["spec"], json!({"finalizers": ["kubernetes"]}));
        assert_eq!(answer.body["status"]["conditions"][0]["type"], "StatusPatched");
    }

    // A Deployment's keeps its labels as stored.
    let deployment = json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "labels": {"app": "web"}},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "web", "image": "nginx"}]}}}});
    let deployments = "/apis/apps/v1/namespaces/default/deployments";
    send(&client, "POST", deployments, deployment).await;
    let patched = send(
        &client,
        "PATCH",
        &format!("{deployments}/web/status"),
        with_metadata(json!({"observedGeneration": 1})),
    )
    .await;
    let metadata = &patched.body["metadata"];
    assert_eq!(metadata["labels"], json!({"app": "web"}), "{}", patched.text);
    assert_eq!(metadata["annotations"]["note"], "from a status patch");

    // A custom resource's keeps all of its metadata.
    let crd = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.status.example.com"},
        "spec": {"group": "status.example.com", "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
            "versions": [{"name": "v1", "served": true, "storage": true, "subresources": {"status": {}},
                "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}]}});
    install_crd(&client, crd).await;
    common::discovered(&client, "status.example.com", "v1", "widgets").await;
    let widgets = "/apis/status.example.com/v1/namespaces/default/widgets";
    let widget = json!({"apiVersion": "status.example.com/v1", "kind": "Widget",
        "metadata": {"name": "w", "labels": {"app": "w"}}});
    send(&client, "POST", widgets, widget).await;
    let patched = send(
        &client,
        "PATCH",
        &format!("{widgets}/w/status"),
        with_metadata(json!({"ready": true})),
    )
    .await;
    let metadata = &patched.body["metadata"];
    assert_eq!(metadata["labels"], json!({"app": "w"}), "{}", patched.text);
    assert_eq!(metadata.get("annotations"), None, "{}", patched.text);
    assert_eq!(patched.body["status"], json!({"ready": true}));
}

testenv::each_control_plane!(status_writes_keep_the_metadata_each_kind_keeps);
