//! CRD conversion webhooks (X1-X4): a CRD with `conversion.strategy: Webhook` serves two versions of
//! one object, converted by the webhook on every read and write at the version it is not stored at.
//! Each test runs on the embedded server and on the real kube-apiserver, whose answers are the
//! expected ones.

mod common;

use axum::{Json, Router, routing::post};
use common::{request, webhook_server::WebhookServer};
use kube::core::conversion::{ConversionResponse, ConversionReview};
use serde_json::{Value, json};
use testenv::{Backend, ControlPlane};

const V1: &str = "/apis/conversion.example.com/v1/namespaces/default/paints";
const V2: &str = "/apis/conversion.example.com/v2/namespaces/default/paints";

/// v1 keeps the color at `spec.color`, v2 at `spec.coat.color`.
async fn convert(Json(review): Json<ConversionReview>) -> Json<ConversionReview> {
    let Some(request) = review.request else {
        return Json(ConversionResponse::invalid(Default::default()).into_review());
    };
    let desired = request.desired_api_version.clone();
    let converted = request
        .objects
        .iter()
        .map(|object| {
            let mut object = object.clone();
            let color = object["spec"]["color"]
                .as_str()
                .or(object["spec"]["coat"]["color"].as_str())
                .unwrap_or_default()
                .to_owned();
            object["spec"] = if desired.ends_with("/v1") {
                json!({"color": color})
            } else {
                json!({"coat": {"color": color}})
            };
            object["apiVersion"] = json!(desired);
            object
        })
        .collect();
    Json(
        ConversionResponse::for_request(request)
            .success(converted)
            .into_review(),
    )
}

fn crd(webhook: &WebhookServer) -> Value {
    let version = |name: &str, storage: bool, spec: Value| {
        json!({"name": name, "served": true, "storage": storage, "schema": {"openAPIV3Schema": {
            "type": "object", "properties": {"spec": {"type": "object", "properties": spec}}}}})
    };
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "paints.conversion.example.com"},
        "spec": {
            "group": "conversion.example.com",
            "scope": "Namespaced",
            "names": {"plural": "paints", "singular": "paint", "kind": "Paint", "listKind": "PaintList"},
            "versions": [
                version("v1", true, json!({"color": {"type": "string"}})),
                version("v2", false, json!({"coat": {"type": "object", "properties": {"color": {"type": "string"}}}})),
            ],
            "conversion": {"strategy": "Webhook", "webhook": {
                "conversionReviewVersions": ["v1"],
                "clientConfig": webhook.client_config("/convert"),
            }},
        }
    })
}

/// A control plane serving the CRD, converted by a webhook server that is up.
async fn start(backend: Backend) -> (ControlPlane, kube::Client, WebhookServer) {
    let plane = ControlPlane::start(backend).await.expect("control plane starts");
    let client = plane.client();
    let webhook = WebhookServer::start(Router::new().route("/convert", post(convert))).await;
    common::install_crd(&client, crd(&webhook)).await;
    common::discovered(&client, "conversion.example.com", "v2", "paints").await;
    (plane, client, webhook)
}

/// The events of a watch that ends after a second, as (type, object).
async fn watch_events(client: &kube::Client, path: &str) -> Vec<(String, Value)> {
    let request = axum::http::Request::get(format!("{path}?watch=true&timeoutSeconds=1"))
        .body(Vec::new())
        .expect("request");
    let text = client.request_text(request).await.expect("the watch runs");
    text.lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .map(|event| {
            (
                event["type"].as_str().unwrap_or_default().to_owned(),
                event["object"].clone(),
            )
        })
        .collect()
}

fn paint(api_version: &str, name: &str, spec: Value) -> Value {
    json!({"apiVersion": api_version, "kind": "Paint", "metadata": {"name": name}, "spec": spec})
}

async fn objects_read_and_written_at_either_version_are_converted(backend: Backend) {
    let (_plane, client, _webhook) = start(backend).await;

    // Written at v2 (not the storage version), read at both.
    let created = request(
        &client,
        "POST",
        V2,
        "application/json",
        paint(
            "conversion.example.com/v2",
            "red",
            json!({"coat": {"color": "red"}}),
        ),
    )
    .await;
    assert_eq!(created.status, 201, "{}", created.body);
    assert_eq!(created.body["spec"], json!({"coat": {"color": "red"}}));
    let as_v1 = request(&client, "GET", &format!("{V1}/red"), "", Value::Null).await;
    assert_eq!(
        (as_v1.status, &as_v1.body["apiVersion"]),
        (200, &json!("conversion.example.com/v1"))
    );
    assert_eq!(as_v1.body["spec"], json!({"color": "red"}));

    // Written at v1 (the storage version), read at v2, alone and in a list.
    let created = request(
        &client,
        "POST",
        V1,
        "application/json",
        paint("conversion.example.com/v1", "blue", json!({"color": "blue"})),
    )
    .await;
    assert_eq!(created.status, 201, "{}", created.body);
    let as_v2 = request(&client, "GET", &format!("{V2}/blue"), "", Value::Null).await;
    assert_eq!(
        as_v2.body["spec"],
        json!({"coat": {"color": "blue"}}),
        "{}",
        as_v2.body
    );
    let list = request(&client, "GET", V2, "", Value::Null).await;
    let colors: Vec<&Value> = list.body["items"]
        .as_array()
        .expect("items")
        .iter()
        .map(|item| &item["spec"]["coat"]["color"])
        .collect();
    assert_eq!(colors, [&json!("blue"), &json!("red")]);

    // A merge patch at v2 applies to the v2 view of the stored v1 object.
    let patched = request(
        &client,
        "PATCH",
        &format!("{V2}/blue"),
        "application/merge-patch+json",
        json!({"spec": {"coat": {"color": "green"}}}),
    )
    .await;
    assert_eq!(
        patched.body["spec"],
        json!({"coat": {"color": "green"}}),
        "{}",
        patched.body
    );
    let as_v1 = request(&client, "GET", &format!("{V1}/blue"), "", Value::Null).await;
    assert_eq!(as_v1.body["spec"], json!({"color": "green"}));

    // A watch at v2 sees the objects converted.
    let events = watch_events(&client, V2).await;
    let seen: Vec<(&str, &Value)> = events
        .iter()
        .map(|(kind, object)| (kind.as_str(), &object["spec"]["coat"]["color"]))
        .collect();
    assert_eq!(seen, [("ADDED", &json!("green")), ("ADDED", &json!("red"))]);

    // A deletecollection at v2 answers with the deleted objects at v2.
    let deleted = request(&client, "DELETE", V2, "", Value::Null).await;
    assert_eq!(deleted.status, 200, "{}", deleted.body);
    let mut gone: Vec<(&Value, &Value)> = deleted.body["items"]
        .as_array()
        .expect("items")
        .iter()
        .map(|item| (&item["apiVersion"], &item["spec"]["coat"]["color"]))
        .collect();
    gone.sort_by_key(|(_, color)| color.as_str());
    let v2 = json!("conversion.example.com/v2");
    assert_eq!(gone, [(&v2, &json!("green")), (&v2, &json!("red"))]);
    let left = request(&client, "GET", V1, "", Value::Null).await;
    assert_eq!(left.body["items"], json!([]));
}

async fn a_conversion_webhook_that_is_down_fails_reads_and_writes_at_the_other_version(backend: Backend) {
    let (_plane, client, webhook) = start(backend).await;
    let created = request(
        &client,
        "POST",
        V1,
        "application/json",
        paint("conversion.example.com/v1", "red", json!({"color": "red"})),
    )
    .await;
    assert_eq!(created.status, 201, "{}", created.body);
    let port = webhook.base_url.rsplit(':').next().unwrap_or_default().to_owned();
    webhook.stop().await;
    let refused = format!(
        "Post \"https://127.0.0.1:{port}/convert?timeout=30s\": dial tcp 127.0.0.1:{port}: connect: connection refused"
    );

    // The storage version needs no webhook.
    let as_v1 = request(&client, "GET", &format!("{V1}/red"), "", Value::Null).await;
    assert_eq!(as_v1.status, 200, "{}", as_v1.body);

    let got = request(&client, "GET", &format!("{V2}/red"), "", Value::Null).await;
    assert_eq!(got.status, 500, "{}", got.body);
    let failed = |from: &str| {
        json!(format!(
            "conversion webhook for conversion.example.com/{from}, Kind=Paint failed: {refused}"
        ))
    };
    assert_eq!(got.body["message"], failed("v1"), "{}", got.body);
    let listed = request(&client, "GET", V2, "", Value::Null).await;
    match (backend, listed.status) {
        (_, 500) => assert_eq!(listed.body["message"], failed("v1"), "{}", listed.body),
        // kube-apiserver keeps a watch cache per served version of a custom resource, converting each
        // object as it arrives; when that happened before the webhook went down, a list is answered
        // from it, converted, with no call to the webhook.
        (Backend::Real, 200) => assert_eq!(
            listed.body["items"][0]["spec"],
            json!({"coat": {"color": "red"}}),
            "{}",
            listed.body
        ),
        (_, status) => panic!("a list at v2 answered {status}: {}", listed.body),
    }
    let created = request(
        &client,
        "POST",
        V2,
        "application/json",
        paint(
            "conversion.example.com/v2",
            "blue",
            json!({"coat": {"color": "blue"}}),
        ),
    )
    .await;
    assert_eq!(created.status, 500, "{}", created.body);
    assert_eq!(created.body["message"], failed("v2"), "{}", created.body);
}

testenv::each_control_plane!(
    objects_read_and_written_at_either_version_are_converted,
    a_conversion_webhook_that_is_down_fails_reads_and_writes_at_the_other_version,
);
