//! The OpenAPI documents as clients built on Go's OpenAPI types read them: every v3 document must
//! come back unchanged from their decoding and encoding (a client compares the two), and a custom
//! resource's v2 definition is what kube-apiserver's CRD builder publishes for kubectl's validation.

mod common;

use std::time::Duration;

use common::{Answer, install_crd, request};
use serde_json::{Value, json};
use testenv::{Backend, ControlPlane};

async fn get(client: &kube::Client, path: &str) -> Answer {
    request(client, "GET", path, "application/json", Value::Null).await
}

/// A CRD of `group` whose one version, v1, has `schema`, and `.spec.color` as a selectable field
/// when the schema declares it.
fn crd(group: &str, schema: Value) -> Value {
    let mut version = json!({"name": "v1", "served": true, "storage": true,
        "schema": {"openAPIV3Schema": schema}});
    if schema.pointer("/properties/spec/properties/color").is_some() {
        version["selectableFields"] = json!([{"jsonPath": ".spec.color"}]);
    }
    json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("blobs.{group}")},
        "spec": {"group": group, "scope": "Namespaced",
            "names": {"plural": "blobs", "singular": "blob", "kind": "Blob", "listKind": "BlobList"},
            "versions": [version]}})
}

/// Where `document` holds an empty list or object that Go's OpenAPI types leave out when they
/// encode (`omitempty`), so that the document would not survive their round trip. Extension values,
/// defaults and examples are free JSON and keep what they hold.
fn lost_in_a_go_round_trip(document: &Value, path: &str, found: &mut Vec<String>) {
    match document {
        Value::Object(map) => {
            for (key, value) in map {
                if key.starts_with("x-") || key == "default" || key == "example" {
                    continue;
                }
                let at = format!("{path}/{key}");
                let empty = match value {
                    Value::Array(items) => items.is_empty(),
                    Value::Object(fields) => fields.is_empty(),
                    _ => false,
                };
                if empty {
                    found.push(at.clone());
                }
                lost_in_a_go_round_trip(value, &at, found);
            }
        }
        Value::Array(items) => {
            for (index, item) in items.iter().enumerate() {
                lost_in_a_go_round_trip(item, &format!("{path}/{index}"), found);
            }
        }
        _ => {}
    }
}

async fn v3_documents_survive_a_go_client_round_trip(backend: Backend) {
    let plane = ControlPlane::start(backend).await.expect("control plane starts");
    let client = plane.client();
    // As the e2e suite's CRD: no schema but an object keeping every field.
    let allow_all = json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true});
    install_crd(&client, crd("free.example.com", allow_all)).await;
    let wanted = "apis/free.example.com/v1";
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    let index = loop {
        let index = get(&client, "/openapi/v3").await;
        if index.body["paths"].get(wanted).is_some() {
            break index.body;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "{wanted} never in {}",
            index.text
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    let urls: Vec<String> = index["paths"]
        .as_object()
        .into_iter()
        .flatten()
        .filter_map(|(_, entry)| entry["serverRelativeURL"].as_str().map(str::to_owned))
        .collect();
    assert!(urls.len() > 10, "{index}");
    for url in urls {
        let document = get(&client, &url).await;
        assert_eq!(document.status, 200, "{url}: {}", document.text);
        let mut lost = Vec::new();
        lost_in_a_go_round_trip(&document.body, "", &mut lost);
        assert!(lost.is_empty(), "{url} changes in a round trip at {lost:?}");
    }
}

/// The definition of `name` in `/openapi/v2`, once it is there (the real server publishes a new
/// CRD's within seconds; the e2e suite allows a minute).
async fn v2_definition(client: &kube::Client, name: &str) -> Value {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    loop {
        let document = get(client, "/openapi/v2").await;
        if let Some(definition) = document.body["definitions"].get(name) {
            return definition.clone();
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "{name} never in /openapi/v2"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

async fn crds_keeping_unknown_fields_at_the_root_are_bare_objects_in_v2(backend: Backend) {
    let plane = ControlPlane::start(backend).await.expect("control plane starts");
    let client = plane.client();
    let schema = json!({"type": "object", "description": "anything",
        "x-kubernetes-preserve-unknown-fields": true,
        "properties": {"spec": {"type": "object", "properties": {"color": {"type": "string"}}}}});
    install_crd(&client, crd("root.example.com", schema)).await;
    assert_eq!(
        v2_definition(&client, "com.example.root.v1.Blob").await,
        json!({"type": "object",
            "x-kubernetes-group-version-kind": [{"group": "root.example.com", "kind": "Blob", "version": "v1"}],
            "x-kubernetes-selectable-fields": [{"fieldPath": "spec.color"}]})
    );

    // Below the root, what kubectl's validation cannot read is left out: the properties of an object
    // that keeps unknown fields, and the type of a nullable field.
    let nested = json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
        "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true,
            "properties": {"a": {"type": "string"}}},
        "color": {"type": "string"}, "note": {"type": "string", "nullable": true}}}}});
    install_crd(&client, crd("nested.example.com", nested)).await;
    let definition = v2_definition(&client, "com.example.nested.v1.Blob").await;
    assert_eq!(
        definition["properties"]["spec"],
        json!({"type": "object", "properties": {
            "color": {"type": "string"}, "free": {"x-kubernetes-preserve-unknown-fields": true},
            "note": {}}}),
        "{definition}"
    );
    assert_eq!(
        definition["x-kubernetes-selectable-fields"],
        json!([{"fieldPath": "spec.color"}])
    );
}

testenv::each_control_plane!(
    v3_documents_survive_a_go_client_round_trip,
    crds_keeping_unknown_fields_at_the_root_are_bare_objects_in_v2,
);
