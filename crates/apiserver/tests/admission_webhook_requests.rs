//! What admission webhooks are sent and when (A2-A8): the review's fields as a webhook author reads
//! them, namespace and object selectors, `timeoutSeconds`, `matchPolicy`, reinvocation, subresource
//! rules, dry runs and deletecollection. Each test runs on the embedded server and on the real
//! kube-apiserver, whose behaviour is the expected one; webhooks record the reviews they receive.

mod common;

use std::time::Duration;

use axum::{Json, Router, routing::post};
use common::{
    Answer, request,
    webhook_server::{Recorder, WebhookServer},
};
use serde_json::{Value, json};
use testenv::{Backend, ControlPlane};

const CONFIG_MAPS: &str = "/api/v1/namespaces/default/configmaps";
const GROUP: &str = "requests.example.com";

fn allow(_: &Value) -> Value {
    json!({"allowed": true})
}

fn deny(_: &Value) -> Value {
    json!({"allowed": false, "status": {"code": 403, "message": "no"}})
}

/// Labels the object `second: "yes"`.
fn label_second(_: &Value) -> Value {
    let patch = json!([{"op": "add", "path": "/metadata/labels/second", "value": "yes"}]);
    let patch = base64::Engine::encode(&base64::engine::general_purpose::STANDARD, patch.to_string());
    json!({"allowed": true, "patchType": "JSONPatch", "patch": patch})
}

fn webhook(name: &str, client_config: Value, rules: Value) -> Value {
    json!({"name": name, "clientConfig": client_config, "rules": rules, "sideEffects": "None",
        "admissionReviewVersions": ["v1"], "timeoutSeconds": 5})
}

fn config_map_rules() -> Value {
    json!([{"operations": ["*"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["configmaps"]}])
}

/// Only ConfigMaps labelled `admission-test` go to the webhook, so that the control plane's own
/// writes never reach it.
fn labelled_only(mut webhook: Value) -> Value {
    webhook["objectSelector"] =
        json!({"matchExpressions": [{"key": "admission-test", "operator": "Exists"}]});
    webhook
}

async fn configure(client: &kube::Client, kind: &str, webhooks: Vec<Value>) {
    let plural = format!("{}s", kind.to_lowercase());
    let path = format!("/apis/admissionregistration.k8s.io/v1/{plural}");
    let body = json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": kind,
        "metadata": {"name": format!("test-{plural}")}, "webhooks": webhooks});
    let created = request(client, "POST", &path, "application/json", body).await;
    assert_eq!(created.status, 201, "{}", created.body);
}

fn config_map(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": name, "labels": {"admission-test": "true"}}, "data": {"a": "1"}})
}

/// Sends `write(attempt)` until `done` says its answer shows the webhooks at work: kube-apiserver
/// starts calling a new webhook configuration a moment after it is stored (its informer's delay,
/// well under the 20 s allowed here).
async fn until_webhooks_answer<F, Fut>(mut write: F, done: impl Fn(&Answer) -> bool) -> Answer
where
    F: FnMut(usize) -> Fut,
    Fut: std::future::Future<Output = Answer>,
{
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    let mut attempt = 0;
    loop {
        let answer = write(attempt).await;
        if done(&answer) || tokio::time::Instant::now() > deadline {
            return answer;
        }
        attempt += 1;
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Creates labelled ConfigMaps until `recorder` has seen one, then forgets what it saw.
async fn until_recorded(client: &kube::Client, recorder: &Recorder) {
    until_webhooks_answer(
        |attempt| async move {
            request(
                client,
                "POST",
                CONFIG_MAPS,
                "application/json",
                config_map(&format!("warm-up-{attempt}")),
            )
            .await
        },
        |_| !recorder.requests().is_empty(),
    )
    .await;
    recorder.clear();
}

/// Sends one request with the recorder emptied first, asserts the answer's status, and returns the
/// answer with the reviews the webhook received for that request alone.
async fn send_recorded(
    client: &kube::Client,
    recorder: &Recorder,
    method: &str,
    path: &str,
    content_type: &str,
    body: Value,
    status: u16,
) -> (common::Answer, Vec<Value>) {
    recorder.clear();
    let answer = request(client, method, path, content_type, body).await;
    assert_eq!(answer.status, status, "{method} {path}: {}", answer.body);
    (answer, recorder.requests())
}

fn only(requests: Vec<Value>, operation: &str) -> Vec<Value> {
    requests
        .into_iter()
        .filter(|r| r["operation"] == operation)
        .collect()
}

async fn a_webhook_reads_what_each_request_asked(backend: Backend) {
    let plane = ControlPlane::start(backend).await.expect("control plane starts");
    let client = plane.client();
    let recorder = Recorder::default();
    let server = WebhookServer::start(Router::new().route("/record", recorder.route(allow))).await;
    let hook = webhook(
        "record.example.com",
        server.client_config("/record"),
        config_map_rules(),
    );
    configure(
        &client,
        "ValidatingWebhookConfiguration",
        vec![labelled_only(hook)],
    )
    .await;
    until_recorded(&client, &recorder).await;

    let created = request(
        &client,
        "POST",
        &format!("{CONFIG_MAPS}?fieldManager=reader"),
        "application/json",
        config_map("read"),
    )
    .await;
    assert_eq!(created.status, 201, "{}", created.body);
    let review = recorder.requests().pop().expect("the create reviewed");
    let config_map_kind = json!({"group": "", "version": "v1", "kind": "ConfigMap"});
    let config_map_resource = json!({"group": "", "version": "v1", "resource": "configmaps"});
    assert!(!review["uid"].as_str().unwrap_or_default().is_empty());
    assert_eq!(review["kind"], config_map_kind);
    assert_eq!(review["requestKind"], config_map_kind);
    assert_eq!(review["resource"], config_map_resource);
    assert_eq!(review["requestResource"], config_map_resource);
    assert!(review.get("subResource").is_none(), "{review}");
    assert_eq!(review["name"], "read");
    assert_eq!(review["namespace"], "default");
    assert_eq!(review["operation"], "CREATE");
    assert_eq!(review["userInfo"]["username"], "admin");
    assert!(
        review["userInfo"]["groups"]
            .as_array()
            .is_some_and(|g| g.contains(&json!("system:masters")))
    );
    assert_eq!(review["object"]["data"], json!({"a": "1"}));
    assert_eq!(review["oldObject"], Value::Null);
    assert_eq!(review["dryRun"], false);
    assert_eq!(
        review["options"],
        json!({"apiVersion": "meta.k8s.io/v1", "kind": "CreateOptions", "fieldManager": "reader"})
    );

    let (_, reviews) = send_recorded(
        &client,
        &recorder,
        "PATCH",
        &format!("{CONFIG_MAPS}/read"),
        "application/merge-patch+json",
        json!({"data": {"b": "2"}}),
        200,
    )
    .await;
    let review = reviews.last().expect("the patch reviewed");
    assert_eq!(review["operation"], "UPDATE");
    assert_eq!(review["object"]["data"], json!({"a": "1", "b": "2"}));
    assert_eq!(review["oldObject"]["data"], json!({"a": "1"}));
    assert_eq!(
        review["options"],
        json!({"apiVersion": "meta.k8s.io/v1", "kind": "UpdateOptions"})
    );

    let (_, reviews) = send_recorded(
        &client,
        &recorder,
        "POST",
        &format!("{CONFIG_MAPS}?dryRun=All"),
        "application/json",
        config_map("dry"),
        201,
    )
    .await;
    let review = reviews.last().expect("the dry run reviewed");
    assert_eq!(review["dryRun"], true);
    assert_eq!(review["options"]["dryRun"], json!(["All"]));
    let stored = request(&client, "GET", &format!("{CONFIG_MAPS}/dry"), "", Value::Null).await;
    assert_eq!(stored.status, 404, "a dry run stores nothing");

    let (_, reviews) = send_recorded(
        &client,
        &recorder,
        "DELETE",
        &format!("{CONFIG_MAPS}/read"),
        "application/json",
        json!({"propagationPolicy": "Background"}),
        200,
    )
    .await;
    let review = only(reviews, "DELETE").pop().expect("the delete reviewed");
    assert_eq!(review["name"], "read");
    assert_eq!(review["object"], Value::Null);
    assert_eq!(review["oldObject"]["data"], json!({"a": "1", "b": "2"}));
    assert_eq!(
        review["options"],
        json!({"apiVersion": "meta.k8s.io/v1", "kind": "DeleteOptions", "propagationPolicy": "Background"})
    );

    // deletecollection: one review per object, as `oldObject`, none naming it.
    let (collection, reviews) = send_recorded(
        &client,
        &recorder,
        "DELETE",
        &format!("{CONFIG_MAPS}?labelSelector=admission-test"),
        "",
        Value::Null,
        200,
    )
    .await;
    let reviews = only(reviews, "DELETE");
    let mut reviewed: Vec<&str> = reviews
        .iter()
        .filter_map(|r| r["oldObject"]["metadata"]["name"].as_str())
        .collect();
    reviewed.sort_unstable();
    let mut answered: Vec<&str> = collection.body["items"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|o| o["metadata"]["name"].as_str())
        .collect();
    answered.sort_unstable();
    assert!(!reviewed.is_empty());
    assert_eq!(reviewed, answered);
    assert!(
        reviews
            .iter()
            .all(|r| r.get("name").is_none() && r["object"].is_null()),
        "{reviews:?}"
    );
}

async fn a_deletecollection_a_webhook_refuses_stops_at_that_object(backend: Backend) {
    let plane = ControlPlane::start(backend).await.expect("control plane starts");
    let client = plane.client();
    let created = request(
        &client,
        "POST",
        CONFIG_MAPS,
        "application/json",
        config_map("kept"),
    )
    .await;
    assert_eq!(created.status, 201, "{}", created.body);
    let server = WebhookServer::start(Router::new().route(
        "/deny",
        post(|Json(review): Json<Value>| async move {
            let mut response = deny(&review);
            response["uid"] = review["request"]["uid"].clone();
            Json(
                json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": response}),
            )
        }),
    ))
    .await;
    let rules = json!([{"operations": ["DELETE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["configmaps"]}]);
    let hook = webhook("deny-deletes.example.com", server.client_config("/deny"), rules);
    configure(
        &client,
        "ValidatingWebhookConfiguration",
        vec![labelled_only(hook)],
    )
    .await;
    let refused = until_webhooks_answer(
        |_| {
            let client = client.clone();
            async move {
                let path = format!("{CONFIG_MAPS}?labelSelector=admission-test");
                request(&client, "DELETE", &path, "", Value::Null).await
            }
        },
        |answer| answer.status != 200,
    )
    .await;
    assert_eq!(refused.status, 403, "{}", refused.body);
    assert_eq!(
        refused.body["message"],
        "admission webhook \"deny-deletes.example.com\" denied the request: no"
    );
    let kept = request(&client, "GET", &format!("{CONFIG_MAPS}/kept"), "", Value::Null).await;
    assert_eq!(kept.status, 200, "the refused object is still there");
}

/// Creates the Namespace `selected`, labelled `webhooks: on`, and `left_out`, unlabelled.
async fn labelled_namespaces(client: &kube::Client, selected: &str, left_out: &str) {
    for (name, labels) in [(selected, json!({"webhooks": "on"})), (left_out, json!({}))] {
        let namespace = json!({"apiVersion": "v1", "kind": "Namespace",
            "metadata": {"name": name, "labels": labels}});
        let created = request(
            client,
            "POST",
            "/api/v1/namespaces",
            "application/json",
            namespace,
        )
        .await;
        assert_eq!(created.status, 201, "{}", created.body);
    }
}

async fn selectors_choose_the_namespaces_and_objects_a_webhook_sees(backend: Backend) {
    let plane = ControlPlane::start(backend).await.expect("control plane starts");
    let client = plane.client();
    labelled_namespaces(&client, "watched", "unwatched").await;
    let recorder = Recorder::default();
    let server = WebhookServer::start(Router::new().route("/deny", recorder.route(deny))).await;
    let mut hook = labelled_only(webhook(
        "deny.example.com",
        server.client_config("/deny"),
        config_map_rules(),
    ));
    hook["namespaceSelector"] = json!({"matchLabels": {"webhooks": "on"}});
    configure(&client, "ValidatingWebhookConfiguration", vec![hook]).await;
    let in_namespace = |namespace: &str| format!("/api/v1/namespaces/{namespace}/configmaps");

    let denied = until_webhooks_answer(
        |attempt| {
            let path = in_namespace("watched");
            let client = client.clone();
            async move {
                request(
                    &client,
                    "POST",
                    &path,
                    "application/json",
                    config_map(&format!("labelled-{attempt}")),
                )
                .await
            }
        },
        |answer| answer.status != 201,
    )
    .await;
    assert_eq!(denied.status, 403, "{}", denied.body);

    let unlabelled = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "unlabelled"}});
    let created = request(
        &client,
        "POST",
        &in_namespace("watched"),
        "application/json",
        unlabelled,
    )
    .await;
    assert_eq!(
        created.status, 201,
        "an object the objectSelector leaves out: {}",
        created.body
    );
    let created = request(
        &client,
        "POST",
        &in_namespace("unwatched"),
        "application/json",
        config_map("labelled"),
    )
    .await;
    assert_eq!(
        created.status, 201,
        "a namespace the namespaceSelector leaves out: {}",
        created.body
    );

    // The new object matching is enough: labelling an object sends its update to the webhook.
    let labelled = request(
        &client,
        "PATCH",
        &format!("{}/unlabelled", in_namespace("watched")),
        "application/merge-patch+json",
        json!({"metadata": {"labels": {"admission-test": "true"}}}),
    )
    .await;
    assert_eq!(labelled.status, 403, "{}", labelled.body);
}

/// A Namespace is in itself: a webhook's namespaceSelector is matched against the labels of the
/// Namespace being written, not against a namespace it would live in.
async fn a_namespace_selector_matches_a_namespace_by_its_own_labels(backend: Backend) {
    let plane = ControlPlane::start(backend).await.expect("control plane starts");
    let client = plane.client();
    labelled_namespaces(&client, "selected", "left-out").await;
    let recorder = Recorder::default();
    let server = WebhookServer::start(Router::new().route("/deny", recorder.route(deny))).await;
    let mut hook = webhook(
        "deny-namespaces.example.com",
        server.client_config("/deny"),
        json!([{"operations": ["UPDATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["namespaces"]}]),
    );
    hook["namespaceSelector"] = json!({"matchLabels": {"webhooks": "on"}});
    configure(&client, "ValidatingWebhookConfiguration", vec![hook]).await;
    let annotate = |name: &'static str, attempt: usize| {
        let client = client.clone();
        async move {
            request(
                &client,
                "PATCH",
                &format!("/api/v1/namespaces/{name}"),
                "application/merge-patch+json",
                json!({"metadata": {"annotations": {"attempt": attempt.to_string()}}}),
            )
            .await
        }
    };

    let denied = until_webhooks_answer(
        |attempt| annotate("selected", attempt),
        |answer| answer.status != 200,
    )
    .await;
    assert_eq!(
        denied.status, 403,
        "the Namespace whose own labels match: {}",
        denied.body
    );
    let updated = annotate("left-out", 0).await;
    assert_eq!(
        updated.status, 200,
        "a Namespace whose own labels the selector leaves out: {}",
        updated.body
    );
}

async fn a_webhook_slower_than_its_timeout_fails_the_request(backend: Backend) {
    let plane = ControlPlane::start(backend).await.expect("control plane starts");
    let client = plane.client();
    let slow = post(|Json(review): Json<Value>| async move {
        tokio::time::sleep(Duration::from_secs(3)).await;
        Json(
            json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
            "response": {"uid": review["request"]["uid"], "allowed": true}}),
        )
    });
    let server = WebhookServer::start(Router::new().route("/slow", slow)).await;
    let mut failing = labelled_only(webhook(
        "slow.example.com",
        server.client_config("/slow"),
        config_map_rules(),
    ));
    failing["timeoutSeconds"] = json!(1);
    configure(&client, "ValidatingWebhookConfiguration", vec![failing]).await;
    let failed = until_webhooks_answer(
        |attempt| {
            let client = client.clone();
            async move {
                request(
                    &client,
                    "POST",
                    CONFIG_MAPS,
                    "application/json",
                    config_map(&format!("slow-{attempt}")),
                )
                .await
            }
        },
        |answer| answer.status != 201,
    )
    .await;
    assert_eq!(failed.status, 500, "{}", failed.body);
    let url = format!("{}/slow?timeout=1s", server.base_url);
    assert_eq!(
        failed.body["message"],
        json!(format!(
            "Internal error occurred: failed calling webhook \"slow.example.com\": failed to call webhook: Post \"{url}\": context deadline exceeded"
        ))
    );
}

async fn mutating_webhooks_are_called_again_if_a_later_one_changed_the_object(backend: Backend) {
    let plane = ControlPlane::start(backend).await.expect("control plane starts");
    let client = plane.client();
    let (first, second) = (Recorder::default(), Recorder::default());
    let server = WebhookServer::start(
        Router::new()
            .route("/first", first.route(allow))
            .route("/second", second.route(label_second)),
    )
    .await;
    let mut reinvoked = labelled_only(webhook(
        "first.example.com",
        server.client_config("/first"),
        config_map_rules(),
    ));
    reinvoked["reinvocationPolicy"] = json!("IfNeeded");
    let labeller = labelled_only(webhook(
        "second.example.com",
        server.client_config("/second"),
        config_map_rules(),
    ));
    configure(&client, "MutatingWebhookConfiguration", vec![reinvoked, labeller]).await;
    until_recorded(&client, &second).await;
    first.clear();

    let created = request(
        &client,
        "POST",
        CONFIG_MAPS,
        "application/json",
        config_map("twice"),
    )
    .await;
    assert_eq!(created.status, 201, "{}", created.body);
    assert_eq!(created.body["metadata"]["labels"]["second"], "yes");
    let seen: Vec<Value> = first
        .requests()
        .iter()
        .map(|r| r["object"]["metadata"]["labels"]["second"].clone())
        .collect();
    assert_eq!(
        seen,
        vec![Value::Null, json!("yes")],
        "called before and after the label"
    );
    assert_eq!(
        second.requests().len(),
        1,
        "reinvocationPolicy Never: called once"
    );
}

/// A custom resource served at v1 (stored) and v2, with a status subresource.
fn two_version_crd() -> Value {
    let version = |name: &str, storage: bool| {
        json!({"name": name, "served": true, "storage": storage, "subresources": {"status": {}},
            "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}})
    };
    json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("gauges.{GROUP}")},
        "spec": {"group": GROUP, "scope": "Namespaced",
            "names": {"plural": "gauges", "singular": "gauge", "kind": "Gauge", "listKind": "GaugeList"},
            "versions": [version("v1", true), version("v2", false)]}})
}

fn gauges(version: &str) -> String {
    format!("/apis/{GROUP}/{version}/namespaces/default/gauges")
}

fn gauge(version: &str, name: &str) -> Value {
    json!({"apiVersion": format!("{GROUP}/{version}"), "kind": "Gauge", "metadata": {"name": name},
        "spec": {"level": 1}})
}

async fn match_policy_equivalent_sees_other_versions_exact_does_not(backend: Backend) {
    let plane = ControlPlane::start(backend).await.expect("control plane starts");
    let client = plane.client();
    common::install_crd(&client, two_version_crd()).await;
    common::discovered(&client, GROUP, "v2", "gauges").await;
    let (equivalent, exact) = (Recorder::default(), Recorder::default());
    let server = WebhookServer::start(
        Router::new()
            .route("/equivalent", equivalent.route(allow))
            .route("/exact", exact.route(allow)),
    )
    .await;
    let rules = json!([{"operations": ["CREATE"], "apiGroups": [GROUP], "apiVersions": ["v1"], "resources": ["gauges"]}]);
    let mut exact_hook = webhook("exact.example.com", server.client_config("/exact"), rules.clone());
    exact_hook["matchPolicy"] = json!("Exact");
    let equivalent_hook = webhook(
        "equivalent.example.com",
        server.client_config("/equivalent"),
        rules,
    );
    configure(
        &client,
        "ValidatingWebhookConfiguration",
        vec![equivalent_hook, exact_hook],
    )
    .await;

    until_webhooks_answer(
        |attempt| {
            let client = client.clone();
            async move {
                request(
                    &client,
                    "POST",
                    &gauges("v2"),
                    "application/json",
                    gauge("v2", &format!("g-{attempt}")),
                )
                .await
            }
        },
        |_| !equivalent.requests().is_empty(),
    )
    .await;
    let review = equivalent.requests().pop().expect("reviewed");
    assert_eq!(
        review["kind"],
        json!({"group": GROUP, "version": "v1", "kind": "Gauge"})
    );
    assert_eq!(
        review["resource"],
        json!({"group": GROUP, "version": "v1", "resource": "gauges"})
    );
    assert_eq!(
        review["requestKind"],
        json!({"group": GROUP, "version": "v2", "kind": "Gauge"})
    );
    assert_eq!(
        review["requestResource"],
        json!({"group": GROUP, "version": "v2", "resource": "gauges"})
    );
    assert_eq!(review["object"]["apiVersion"], format!("{GROUP}/v1"));
    assert!(exact.requests().is_empty(), "Exact does not match v2");

    let created = request(
        &client,
        "POST",
        &gauges("v1"),
        "application/json",
        gauge("v1", "at-v1"),
    )
    .await;
    assert_eq!(created.status, 201, "{}", created.body);
    assert_eq!(exact.requests().len(), 1, "Exact matches v1");
}

async fn subresource_rules_match_status_writes_only(backend: Backend) {
    let plane = ControlPlane::start(backend).await.expect("control plane starts");
    let client = plane.client();
    common::install_crd(&client, two_version_crd()).await;
    let created = request(
        &client,
        "POST",
        &gauges("v1"),
        "application/json",
        gauge("v1", "g"),
    )
    .await;
    assert_eq!(created.status, 201, "{}", created.body);
    let recorder = Recorder::default();
    let server = WebhookServer::start(Router::new().route("/status", recorder.route(allow))).await;
    let rules =
        json!([{"operations": ["*"], "apiGroups": [GROUP], "apiVersions": ["*"], "resources": ["*/status"]}]);
    configure(
        &client,
        "ValidatingWebhookConfiguration",
        vec![webhook(
            "status.example.com",
            server.client_config("/status"),
            rules,
        )],
    )
    .await;

    until_webhooks_answer(
        |attempt| {
            let client = client.clone();
            async move {
                request(
                    &client,
                    "PATCH",
                    &format!("{}/g/status", gauges("v1")),
                    "application/merge-patch+json",
                    json!({"status": {"reading": attempt}}),
                )
                .await
            }
        },
        |_| !recorder.requests().is_empty(),
    )
    .await;
    let review = recorder.requests().pop().expect("reviewed");
    assert_eq!(review["subResource"], "status");
    assert_eq!(review["requestSubResource"], "status");
    assert_eq!(review["operation"], "UPDATE");
    assert_eq!(
        review["kind"],
        json!({"group": GROUP, "version": "v1", "kind": "Gauge"})
    );

    let (_, reviews) = send_recorded(
        &client,
        &recorder,
        "PATCH",
        &format!("{}/g", gauges("v1")),
        "application/merge-patch+json",
        json!({"spec": {"level": 2}}),
        200,
    )
    .await;
    assert!(reviews.is_empty(), "the main resource is not */status");
}

testenv::each_control_plane!(
    a_webhook_reads_what_each_request_asked,
    a_deletecollection_a_webhook_refuses_stops_at_that_object,
    selectors_choose_the_namespaces_and_objects_a_webhook_sees,
    a_namespace_selector_matches_a_namespace_by_its_own_labels,
    a_webhook_slower_than_its_timeout_fails_the_request,
    mutating_webhooks_are_called_again_if_a_later_one_changed_the_object,
    match_policy_equivalent_sees_other_versions_exact_does_not,
    subresource_rules_match_status_writes_only,
);
