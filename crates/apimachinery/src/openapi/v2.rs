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

pub fn document(resources: &[ResourceType]) -> Value {
    let served: Vec<&ResourceType> = resources.iter().collect();
    let definitions: Map<String, Value> = schemas::definitions_for(&served)
        .into_iter()
        .map(|(name, schema)| (name, schema_v2(&schema)))
        .collect();
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
            entry.insert("parameters".into(), json!(parameters));
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
                entry.insert(
                    op.method.into(),
                    json!({
                        "operationId": format!("{}{}", op.action, rt.kind),
                        "consumes": consumes,
                        "produces": ["application/json", "application/yaml"],
                        "schemes": ["https"],
                        "parameters": parameters,
                        "responses": {"200": {"description": "OK", "schema": reference}},
                        "x-kubernetes-action": op.action,
                        "x-kubernetes-group-version-kind": gvk,
                    }),
                );
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
