//! The `/scale` subresource as `kubectl scale` and autoscalers use it, on Deployments and on a custom
//! resource whose CRD declares one; each test runs on the embedded server and on the real
//! kube-apiserver.

mod common;

use std::process::Command;

use common::request;
use serde_json::{Value, json};
use testenv::{Backend, ControlPlane};

const DEPLOYMENTS: &str = "/apis/apps/v1/namespaces/default/deployments";
const WIDGETS: &str = "/apis/scale.example.com/v1/namespaces/default/widgets";

fn kubectl(kubeconfig: &std::path::Path, args: &[&str]) -> std::process::Output {
    Command::new("kubectl")
        .args(args)
        .arg("--request-timeout=20s")
        .env("KUBECONFIG", kubeconfig)
        .env("HOME", kubeconfig.parent().unwrap_or(std::path::Path::new(".")))
        .output()
        .expect("kubectl runs")
}

fn succeeded(output: &std::process::Output) -> bool {
    output.status.success()
}

async fn deployments_scale_through_the_subresource(backend: Backend) {
    let plane = ControlPlane::start(backend).await.expect("control plane starts");
    let client = plane.client();
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    plane.write_kubeconfig(&kubeconfig).unwrap();
    let deployment = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
        "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "web", "image": "nginx"}]}}}});
    let created = request(&client, "POST", DEPLOYMENTS, "application/json", deployment).await;
    assert_eq!(created.status, 201, "{}", created.body);

    let scale = request(
        &client,
        "GET",
        &format!("{DEPLOYMENTS}/web/scale"),
        "",
        Value::Null,
    )
    .await;
    assert_eq!(scale.status, 200, "{}", scale.body);
    assert_eq!(
        (&scale.body["kind"], &scale.body["apiVersion"]),
        (&json!("Scale"), &json!("autoscaling/v1"))
    );
    assert_eq!(scale.body["spec"], json!({"replicas": 2}));
    assert_eq!(scale.body["status"]["selector"], "app=web");
    assert_eq!(scale.body["metadata"]["name"], "web");

    let scaled = kubectl(&kubeconfig, &["scale", "deployment/web", "--replicas=3"]);
    assert!(succeeded(&scaled), "{}", String::from_utf8_lossy(&scaled.stderr));
    let stored = request(&client, "GET", &format!("{DEPLOYMENTS}/web"), "", Value::Null).await;
    assert_eq!(stored.body["spec"]["replicas"], 3);

    // A whole Scale, as an autoscaler writes it, with a stale resourceVersion: 409.
    let mut stale = scale.body.clone();
    stale["spec"]["replicas"] = json!(5);
    let conflict = request(
        &client,
        "PUT",
        &format!("{DEPLOYMENTS}/web/scale"),
        "application/json",
        stale,
    )
    .await;
    assert_eq!(conflict.status, 409, "{}", conflict.body);

    let negative = request(
        &client,
        "PATCH",
        &format!("{DEPLOYMENTS}/web/scale"),
        "application/merge-patch+json",
        json!({"spec": {"replicas": -1}}),
    )
    .await;
    assert_eq!(
        (negative.status, &negative.body["reason"]),
        (422, &json!("Invalid")),
        "{}",
        negative.body
    );
    assert_eq!(negative.body["details"]["causes"][0]["field"], "spec.replicas");
}

async fn a_custom_resource_scales_where_its_crd_says(backend: Backend) {
    let plane = ControlPlane::start(backend).await.expect("control plane starts");
    let client = plane.client();
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    plane.write_kubeconfig(&kubeconfig).unwrap();
    let crd = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.scale.example.com"},
        "spec": {"group": "scale.example.com", "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "subresources": {"status": {}, "scale": {"specReplicasPath": ".spec.replicas",
                    "statusReplicasPath": ".status.readyReplicas", "labelSelectorPath": ".status.selector"}},
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                    "spec": {"type": "object", "properties": {"replicas": {"type": "integer"}}},
                    "status": {"type": "object", "properties": {
                        "readyReplicas": {"type": "integer"}, "selector": {"type": "string"}}}}}}}]}});
    common::install_crd(&client, crd).await;
    let widget = json!({"apiVersion": "scale.example.com/v1", "kind": "Widget", "metadata": {"name": "w"},
        "spec": {"replicas": 1}});
    assert_eq!(
        request(&client, "POST", WIDGETS, "application/json", widget)
            .await
            .status,
        201
    );
    let status = json!({"status": {"readyReplicas": 1, "selector": "app=w"}});
    let patched = request(
        &client,
        "PATCH",
        &format!("{WIDGETS}/w/status"),
        "application/merge-patch+json",
        status,
    )
    .await;
    assert_eq!(patched.status, 200, "{}", patched.body);

    let scale = request(&client, "GET", &format!("{WIDGETS}/w/scale"), "", Value::Null).await;
    assert_eq!(scale.status, 200, "{}", scale.body);
    assert_eq!(scale.body["spec"], json!({"replicas": 1}));
    assert_eq!(scale.body["status"], json!({"replicas": 1, "selector": "app=w"}));

    // Discovery names the subresource, so that kubectl finds it.
    let resources = request(&client, "GET", "/apis/scale.example.com/v1", "", Value::Null).await;
    assert!(
        resources.body["resources"].as_array().is_some_and(|r| r
            .iter()
            .any(|r| r["name"] == "widgets/scale" && r["kind"] == "Scale")),
        "{}",
        resources.body
    );
    let scaled = kubectl(&kubeconfig, &["scale", "widget/w", "--replicas=4"]);
    assert!(succeeded(&scaled), "{}", String::from_utf8_lossy(&scaled.stderr));
    let stored = request(&client, "GET", &format!("{WIDGETS}/w"), "", Value::Null).await;
    assert_eq!(stored.body["spec"]["replicas"], 4);
}

testenv::each_control_plane!(
    deployments_scale_through_the_subresource,
    a_custom_resource_scales_where_its_crd_says,
);
