//! The OpenAPI documents as clients built on Go's OpenAPI types read them: every v3 document must
//! come back unchanged from their decoding and encoding (a client compares the two), a custom
//! resource's v2 definition is what kube-apiserver's CRD builder publishes for kubectl's validation,
//! and the v2 document's protobuf form decodes as gnostic's messages, which client-go reads it with.

mod common;

use std::time::Duration;

use apimachinery::openapi::protobuf::openapi_v2::{
    self, Document, NamedSchema, Operation, Schema, non_body_parameter, parameter, parameters_item,
};
use common::{Answer, exchange, install_crd, request};
use prost::Message;
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

/// The v2 document in protobuf, as client-go asks for it (kubectl 1.27 and 1.28 read no other form),
/// decoded with gnostic's messages.
async fn v2_protobuf(client: &kube::Client) -> Document {
    let answer = exchange(
        client,
        "GET",
        "/openapi/v2",
        "",
        "application/com.github.proto-openapi.spec.v2@v1.0+protobuf",
        Vec::new(),
    )
    .await;
    assert_eq!(answer.status, 200, "{}", answer.text);
    assert_eq!(
        answer.content_type,
        "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"
    );
    Document::decode(answer.bytes.as_slice()).expect("gnostic's openapi.v2 Document")
}

fn named<'a>(schemas: &'a [NamedSchema], name: &str) -> &'a Schema {
    schemas
        .iter()
        .find(|s| s.name == name)
        .and_then(|s| s.value.as_ref())
        .unwrap_or_else(|| {
            panic!(
                "no {name} among {:?}",
                schemas.iter().map(|s| &s.name).collect::<Vec<_>>()
            )
        })
}

fn properties(schema: &Schema) -> &[NamedSchema] {
    schema
        .properties
        .as_ref()
        .map(|p| p.additional_properties.as_slice())
        .unwrap_or_default()
}

fn types(schema: &Schema) -> Vec<&str> {
    schema
        .r#type
        .iter()
        .flat_map(|t| &t.value)
        .map(String::as_str)
        .collect()
}

/// The query parameters `operation` takes, as kubectl finds out whether a kind takes
/// `fieldValidation`: written in the operation, or a reference to the document's shared ones.
fn query_parameters<'a>(document: &'a Document, operation: &'a Operation) -> Vec<&'a str> {
    let shared = document.parameters.iter().flat_map(|p| &p.additional_properties);
    let query = |p: &'a openapi_v2::Parameter| match &p.oneof {
        Some(parameter::Oneof::NonBodyParameter(non_body)) => match &non_body.oneof {
            Some(non_body_parameter::Oneof::QueryParameterSubSchema(q)) => Some(q.name.as_str()),
            _ => None,
        },
        _ => None,
    };
    operation
        .parameters
        .iter()
        .filter_map(|item| match item.oneof.as_ref()? {
            parameters_item::Oneof::Parameter(p) => query(p),
            parameters_item::Oneof::JsonReference(reference) => {
                let name = reference.r#ref.strip_prefix("#/parameters/")?;
                query(shared.clone().find(|p| p.name == name)?.value.as_ref()?)
            }
        })
        .collect()
}

async fn the_v2_protobuf_document_decodes_as_gnostic_messages(backend: Backend) {
    let plane = ControlPlane::start(backend).await.expect("control plane starts");
    let client = plane.client();
    let schema = json!({"type": "object", "properties": {"spec": {"type": "object",
        "required": ["color"], "properties": {
            "color": {"type": "string"},
            "replicas": {"type": "integer", "minimum": 1},
            "labels": {"type": "object", "additionalProperties": {"type": "string"}}}}}});
    install_crd(&client, crd("proto.example.com", schema)).await;
    let definition = "com.example.proto.v1.Blob";
    v2_definition(&client, definition).await;
    let document = v2_protobuf(&client).await;
    assert_eq!(document.swagger, "2.0");

    let definitions = &document
        .definitions
        .as_ref()
        .expect("definitions")
        .additional_properties;
    let blob = named(definitions, definition);
    assert_eq!(types(blob), ["object"]);
    assert!(
        blob.vendor_extension
            .iter()
            .any(|e| e.name == "x-kubernetes-group-version-kind"),
        "{blob:?}"
    );
    assert_eq!(
        named(properties(blob), "metadata").r#ref,
        "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
    );
    let spec = named(properties(blob), "spec");
    assert_eq!(spec.required, ["color"]);
    assert_eq!(types(named(properties(spec), "color")), ["string"]);
    let replicas = named(properties(spec), "replicas");
    assert_eq!((types(replicas), replicas.minimum), (vec!["integer"], 1.0));
    let labels = named(properties(spec), "labels");
    let Some(openapi_v2::additional_properties_item::Oneof::Schema(values)) = labels
        .additional_properties
        .as_ref()
        .and_then(|a| a.oneof.as_ref())
    else {
        panic!("labels map strings: {labels:?}");
    };
    assert_eq!(types(values), ["string"]);

    // What kubectl reads of a path: the kinds whose PATCH takes `fieldValidation`, and the patch
    // types each accepts.
    let paths = &document.paths.as_ref().expect("paths").path;
    for path in [
        "/apis/apps/v1/namespaces/{namespace}/deployments/{name}",
        "/apis/proto.example.com/v1/namespaces/{namespace}/blobs/{name}",
    ] {
        let patch = paths
            .iter()
            .find(|p| p.name == path)
            .and_then(|p| p.value.as_ref()?.patch.as_ref())
            .unwrap_or_else(|| panic!("no PATCH of {path}"));
        assert!(
            query_parameters(&document, patch).contains(&"fieldValidation"),
            "{path}: {patch:?}"
        );
        assert!(
            patch.consumes.iter().any(|c| c == "application/apply-patch+yaml"),
            "{path}: {:?}",
            patch.consumes
        );
        assert!(
            patch
                .vendor_extension
                .iter()
                .any(|e| e.name == "x-kubernetes-group-version-kind"),
            "{path}"
        );
    }
}

testenv::each_control_plane!(
    v3_documents_survive_a_go_client_round_trip,
    crds_keeping_unknown_fields_at_the_root_are_bare_objects_in_v2,
    the_v2_protobuf_document_decodes_as_gnostic_messages,
);
