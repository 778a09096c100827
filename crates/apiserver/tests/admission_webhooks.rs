//! Admission webhooks (A1-A9): validating webhooks allow, warn and deny, mutating webhooks patch,
//! and a webhook that is down fails the request or is skipped as its `failurePolicy` says. Each test
//! runs on the embedded server and on the real kube-apiserver, whose answers are the expected ones;
//! webhooks only see ConfigMaps labelled `admission-test`, so that the real control plane's own
//! writes never reach them.

mod common;

use axum::{Json, Router, routing::post};
use base64::Engine;
use common::{request, webhook_server::WebhookServer};
use serde_json::{Value, json};
use testenv::{Backend, ControlPlane};

const CONFIG_MAPS: &str = "/api/v1/namespaces/default/configmaps";

fn answer(review: &Value, response: Value) -> Json<Value> {
    let mut response = response;
    response["uid"] = review["request"]["uid"].clone();
    Json(json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": response}))
}

/// Denies red ConfigMaps; allows the others with a warning.
async fn deny_red(Json(review): Json<Value>) -> Json<Value> {
    if review["request"]["object"]["data"]["color"] == "red" {
        return answer(
            &review,
            json!({"allowed": false,
            "status": {"code": 403, "reason": "Forbidden", "message": "red is not allowed here"}}),
        );
    }
    answer(
        &review,
        json!({"allowed": true, "warnings": ["checked by deny-red"]}),
    )
}

/// Labels every ConfigMap `mutated: "yes"`.
async fn label(Json(review): Json<Value>) -> Json<Value> {
    let patch = json!([{"op": "add", "path": "/metadata/labels/mutated", "value": "yes"}]);
    let patch = base64::engine::general_purpose::STANDARD.encode(patch.to_string());
    answer(
        &review,
        json!({"allowed": true, "patchType": "JSONPatch", "patch": patch}),
    )
}

fn webhook(name: &str, client_config: Value, failure_policy: &str) -> Value {
    json!({
        "name": name,
        "clientConfig": client_config,
        "rules": [{"operations": ["CREATE", "UPDATE"], "apiGroups": [""], "apiVersions": ["v1"],
                   "resources": ["configmaps"]}],
        "objectSelector": {"matchLabels": {"admission-test": "true"}},
        "failurePolicy": failure_policy,
        "sideEffects": "None",
        "admissionReviewVersions": ["v1"],
        "timeoutSeconds": 5,
    })
}

async fn configure(client: &kube::Client, plural: &str, kind: &str, webhooks: Vec<Value>) {
    let path = format!("/apis/admissionregistration.k8s.io/v1/{plural}");
    let body = json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": kind,
        "metadata": {"name": format!("test-{plural}")}, "webhooks": webhooks});
    let created = request(client, "POST", &path, "application/json", body).await;
    assert_eq!(created.status, 201, "{}", created.body);
}

fn config_map(name: &str, color: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": name, "labels": {"admission-test": "true"}}, "data": {"color": color}})
}

/// Creates ConfigMaps (a new name each time) until the answer is not a plain 201: kube-apiserver
/// starts calling a new webhook configuration a moment after it is stored.
async fn first_answer_from_webhooks(
    client: &kube::Client,
    color: &str,
    until: impl Fn(&common::Answer) -> bool,
) -> common::Answer {
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(20);
    for attempt in 0.. {
        let created = request(
            client,
            "POST",
            CONFIG_MAPS,
            "application/json",
            config_map(&format!("{color}-{attempt}"), color),
        )
        .await;
        if until(&created) || tokio::time::Instant::now() > deadline {
            return created;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    unreachable!("the loop returns")
}

async fn webhooks_deny_warn_and_mutate(backend: Backend) {
    let plane = ControlPlane::start(backend).await.expect("control plane starts");
    let client = plane.client();
    let server = WebhookServer::start(
        Router::new()
            .route("/deny", post(deny_red))
            .route("/label", post(label)),
    )
    .await;
    configure(
        &client,
        "mutatingwebhookconfigurations",
        "MutatingWebhookConfiguration",
        vec![webhook(
            "label.example.com",
            server.client_config("/label"),
            "Fail",
        )],
    )
    .await;
    configure(
        &client,
        "validatingwebhookconfigurations",
        "ValidatingWebhookConfiguration",
        vec![webhook(
            "deny-red.example.com",
            server.client_config("/deny"),
            "Fail",
        )],
    )
    .await;

    let denied = first_answer_from_webhooks(&client, "red", |a| a.status != 201).await;
    assert_eq!(denied.status, 403, "{}", denied.body);
    assert_eq!(denied.body["reason"], "Forbidden");
    assert_eq!(
        denied.body["message"],
        "admission webhook \"deny-red.example.com\" denied the request: red is not allowed here"
    );

    let allowed = first_answer_from_webhooks(&client, "blue", |a| {
        a.status == 201 && a.body["metadata"]["labels"]["mutated"] == "yes"
    })
    .await;
    assert_eq!(allowed.status, 201, "{}", allowed.body);
    assert_eq!(
        allowed.body["metadata"]["labels"]["mutated"], "yes",
        "{}",
        allowed.body
    );
    assert!(
        allowed
            .warnings
            .iter()
            .any(|w| w == "299 - \"checked by deny-red\""),
        "{:?}",
        allowed.warnings
    );
}

async fn a_webhook_that_is_down_fails_the_request_or_is_ignored(backend: Backend) {
    let plane = ControlPlane::start(backend).await.expect("control plane starts");
    let client = plane.client();
    let server = WebhookServer::start(Router::new().route("/deny", post(deny_red))).await;
    let port = server.base_url.rsplit(':').next().unwrap_or_default().to_owned();
    let client_config = server.client_config("/deny");
    server.stop().await;
    configure(
        &client,
        "validatingwebhookconfigurations",
        "ValidatingWebhookConfiguration",
        vec![
            webhook("ignored.example.com", client_config.clone(), "Ignore"),
            webhook("failing.example.com", client_config, "Fail"),
        ],
    )
    .await;

    let failed = first_answer_from_webhooks(&client, "blue", |a| a.status != 201).await;
    assert_eq!(failed.status, 500, "{}", failed.body);
    assert_eq!(failed.body["reason"], "InternalError");
    assert_eq!(
        failed.body["message"],
        json!(format!(
            "Internal error occurred: failed calling webhook \"failing.example.com\": failed to call webhook: \
             Post \"https://127.0.0.1:{port}/deny?timeout=5s\": dial tcp 127.0.0.1:{port}: connect: connection refused"
        ))
    );
}

testenv::each_control_plane!(
    webhooks_deny_warn_and_mutate,
    a_webhook_that_is_down_fails_the_request_or_is_ignored,
);
