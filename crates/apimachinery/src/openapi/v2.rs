//! `GET /openapi/v2`: the Swagger 2.0 document of everything served (D7). kubectl up to 1.29 reads
//! it (as protobuf, see [`super::protobuf`]) to find which kinds take `fieldValidation` and which
//! patch types each accepts, and 1.27 also explains fields from it.

use serde_json::{Map, Value, json};

use super::{
    operations::{self, PATCH_TYPES},
    schemas,
};
use crate::resource::ResourceType;

const V3_PREFIX: &str = "#/components/schemas/";
const V2_PREFIX: &str = "#/definitions/";

/// The Swagger 2.0 document of `resources`: the definitions of their kinds (custom resources' from
/// their CRD's schema) and their paths, each with the operations the resource's verbs allow.
pub fn document(resources: &[ResourceType]) -> Value {
    let served: Vec<&ResourceType> = resources.iter().collect();
    let mut definitions: Map<String, Value> = schemas::definitions_for(&served)
        .into_iter()
        .map(|(name, schema)| (name, schema_v2(&schema)))
        .collect();
    for rt in served.iter().filter(|rt| !rt.is_builtin()) {
        definitions.insert(schemas::definition_name(rt), custom_resource_v2(rt));
    }
    let mut paths = Map::new();
    for rt in &served {
        let gvk = json!({"group": rt.group, "version": rt.version, "kind": rt.kind});
        let reference = json!({"$ref": format!("{V2_PREFIX}{}", schemas::definition_name(rt))});
        for item in operations::paths(rt) {
            let mut entry = Map::new();
            let parameters: Vec<Value> = item
                .parameters
                .iter()
                .map(|name| json!({"name": name, "in": "path", "required": true, "type": "string", "uniqueItems": true}))
                .collect();
            super::v3::insert_parameters(&mut entry, parameters);
            for op in &item.operations {
                let mut parameters: Vec<Value> = op
                    .query
                    .iter()
                    .map(|name| json!({"name": name, "in": "query", "type": "string", "uniqueItems": true}))
                    .collect();
                if op.body {
                    parameters
                        .push(json!({"name": "body", "in": "body", "required": true, "schema": reference}));
                }
                let consumes: &[&str] = if op.method == "patch" {
                    PATCH_TYPES
                } else {
                    &["*/*"]
                };
                let mut operation = json!({
                    "operationId": format!("{}{}", op.action, rt.kind),
                    "consumes": consumes,
                    "produces": ["application/json", "application/yaml"],
                    "schemes": ["https"],
                    "responses": {"200": {"description": "OK", "schema": reference}},
                    "x-kubernetes-action": op.action,
                    "x-kubernetes-group-version-kind": gvk,
                });
                if let Some(operation) = operation.as_object_mut() {
                    super::v3::insert_parameters(operation, parameters);
                }
                entry.insert(op.method.into(), operation);
            }
            paths.insert(item.path, Value::Object(entry));
        }
    }
    json!({
        "swagger": "2.0",
        "info": {"title": "Kubernetes", "version": "v1.33.13"},
        "paths": paths,
        "definitions": definitions,
    })
}

/// A custom resource's Swagger 2.0 definition, as kube-apiserver's CRD builder makes it for clients
/// that validate with it (kubectl up to 1.29): a CRD version whose root keeps unknown fields, or
/// that has no schema, is published as a bare object, since any property listed would make those
/// clients refuse the fields not listed.
fn custom_resource_v2(rt: &ResourceType) -> Value {
    let preserves_all = rt
        .openapi_schema
        .as_ref()
        .is_none_or(|schema| schema["x-kubernetes-preserve-unknown-fields"] == true);
    if preserves_all {
        let bare = json!({"type": "object", "x-kubernetes-group-version-kind":
            [{"group": rt.group, "version": rt.version, "kind": rt.kind}]});
        return schemas::with_selectable_fields(bare, rt);
    }
    let structural = rt.openapi_schema.as_ref().map(structural_v2);
    schema_v2(&schemas::custom_resource_schema(rt, structural))
}

/// A CRD schema reduced to what Swagger 2.0 clients cope with (the CRD builder's rules): a nullable
/// node loses its type, items and properties; a node keeping unknown fields loses its items and
/// properties, and its type when that is `object`; an array without items loses its type; and a
/// nullable property is no longer required.
fn structural_v2(schema: &Value) -> Value {
    let Some(map) = schema.as_object() else {
        return schema.clone();
    };
    let mut out = map.clone();
    let nullable = map.get("nullable") == Some(&json!(true));
    let preserves = map.get("x-kubernetes-preserve-unknown-fields") == Some(&json!(true));
    if nullable {
        for key in ["type", "nullable", "items", "properties"] {
            out.remove(key);
        }
    }
    if preserves {
        out.remove("items");
        out.remove("properties");
    }
    if !out.contains_key("items") && out.get("type") == Some(&json!("array")) {
        out.remove("type");
    }
    if preserves && out.get("type") == Some(&json!("object")) {
        out.remove("type");
    }
    let is_nullable = |s: &Value| s.get("nullable") == Some(&json!(true));
    if let Some(properties) = out.get("properties").and_then(Value::as_object) {
        let dropped: Vec<String> = properties
            .iter()
            .filter(|(_, s)| is_nullable(s))
            .map(|(name, _)| name.clone())
            .collect();
        if let Some(required) = out.get_mut("required").and_then(Value::as_array_mut) {
            required.retain(|name| !dropped.iter().any(|d| name == d));
        }
    }
    if out.get("additionalProperties").is_some_and(is_nullable) {
        out.remove("required");
    }
    if out
        .get("required")
        .and_then(Value::as_array)
        .is_some_and(Vec::is_empty)
    {
        out.remove("required");
    }
    for key in ["properties", "patternProperties"] {
        if let Some(children) = out.get_mut(key).and_then(Value::as_object_mut) {
            for child in children.values_mut() {
                *child = structural_v2(child);
            }
        }
    }
    for key in ["items", "additionalProperties"] {
        if let Some(child) = out.get_mut(key).filter(|c| c.is_object()) {
            *child = structural_v2(child);
        }
    }
    Value::Object(out)
}

/// An OpenAPI 3 schema as Swagger 2.0 says it: references under `#/definitions/`, a reference
/// wrapped in `allOf` (OpenAPI 3 allows no siblings beside `$ref`) unwrapped again, and what 2.0
/// lacks (`nullable`, `anyOf`, `oneOf`, `not`) left out, as kube-apiserver leaves it out.
pub fn schema_v2(schema: &Value) -> Value {
    let Some(map) = schema.as_object() else {
        return schema.clone();
    };
    let mut out = Map::new();
    for (key, value) in map {
        match key.as_str() {
            "nullable" | "anyOf" | "oneOf" | "not" => {}
            "$ref" => {
                let reference = value.as_str().unwrap_or_default().replace(V3_PREFIX, V2_PREFIX);
                out.insert(key.clone(), json!(reference));
            }
            "allOf" => match value.as_array().map(Vec::as_slice) {
                Some([only]) if only.get("$ref").is_some() => {
                    out.extend(schema_v2(only).as_object().cloned().unwrap_or_default());
                }
                _ => {
                    let all: Vec<Value> = value.as_array().into_iter().flatten().map(schema_v2).collect();
                    out.insert(key.clone(), json!(all));
                }
            },
            "properties" | "patternProperties" | "definitions" => {
                let converted: Map<String, Value> = value
                    .as_object()
                    .into_iter()
                    .flatten()
                    .map(|(name, s)| (name.clone(), schema_v2(s)))
                    .collect();
                out.insert(key.clone(), Value::Object(converted));
            }
            "items" | "additionalProperties" => {
                let converted = match value {
                    Value::Array(items) => json!(items.iter().map(schema_v2).collect::<Vec<_>>()),
                    other => schema_v2(other),
                };
                out.insert(key.clone(), converted);
            }
            _ => {
                out.insert(key.clone(), value.clone());
            }
        }
    }
    Value::Object(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resource::builtins;

    #[test]
    fn d7_v2_lists_kinds_with_field_validation_and_definitions_without_v3_forms() {
        let document = document(&builtins());
        let patch = &document["paths"]["/apis/apps/v1/namespaces/{namespace}/deployments/{name}"]["patch"];
        assert_eq!(patch["x-kubernetes-group-version-kind"]["kind"], "Deployment");
        assert!(
            patch["parameters"]
                .as_array()
                .unwrap()
                .iter()
                .any(|p| p["name"] == "fieldValidation" && p["in"] == "query")
        );
        let metadata = &document["definitions"]["io.k8s.api.apps.v1.Deployment"]["properties"]["metadata"];
        assert_eq!(
            metadata["$ref"],
            "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
        );
        assert!(metadata.get("allOf").is_none());
        assert!(!document.to_string().contains(V3_PREFIX));
    }

    fn crd_version(schema: Value) -> ResourceType {
        let crd = json!({"metadata": {"name": "ws.example.com"}, "spec": {"group": "example.com",
            "scope": "Namespaced", "names": {"kind": "W", "plural": "ws"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "selectableFields": [{"jsonPath": ".spec.color"}],
                "schema": {"openAPIV3Schema": schema}}]}});
        crate::resource::from_crd(&crd).unwrap().remove(0)
    }

    #[test]
    fn d7_a_crd_keeping_unknown_fields_at_its_root_is_a_bare_object_in_v2() {
        let rt = crd_version(json!({"type": "object", "description": "anything",
            "x-kubernetes-preserve-unknown-fields": true,
            "properties": {"spec": {"type": "object", "properties": {"color": {"type": "string"}}}}}));
        assert_eq!(
            custom_resource_v2(&rt),
            json!({"type": "object",
                "x-kubernetes-group-version-kind": [{"group": "example.com", "version": "v1", "kind": "W"}],
                "x-kubernetes-selectable-fields": [{"fieldPath": "spec.color"}]})
        );
    }

    #[test]
    fn d7_v2_drops_what_swagger_clients_cannot_read_below_the_root() {
        let rt = crd_version(
            json!({"type": "object", "required": ["spec", "note"], "properties": {
            "note": {"type": "string", "nullable": true},
            "spec": {"type": "object", "properties": {
                "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true,
                    "properties": {"a": {"type": "string"}}},
                "list": {"type": "array", "x-kubernetes-preserve-unknown-fields": true,
                    "items": {"type": "string"}}}}}}),
        );
        let v2 = custom_resource_v2(&rt);
        assert_eq!(v2["required"], json!(["spec"]));
        assert_eq!(v2["properties"]["note"], json!({}));
        assert_eq!(
            v2["properties"]["spec"]["properties"]["free"],
            json!({"x-kubernetes-preserve-unknown-fields": true})
        );
        assert_eq!(
            v2["properties"]["spec"]["properties"]["list"],
            json!({"x-kubernetes-preserve-unknown-fields": true})
        );
        assert_eq!(
            v2["properties"]["metadata"]["$ref"],
            "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
        );
    }

    #[test]
    fn d7_schema_keywords_are_converted_but_fields_of_the_same_name_are_kept() {
        let schema = json!({"type": "object", "nullable": true, "properties": {
            "not": {"type": "string", "nullable": true},
            "either": {"anyOf": [{"type": "string"}], "x-kubernetes-int-or-string": true}}});
        assert_eq!(
            schema_v2(&schema),
            json!({"type": "object", "properties": {"not": {"type": "string"},
                "either": {"x-kubernetes-int-or-string": true}}})
        );
    }
}
