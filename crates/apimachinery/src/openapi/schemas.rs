//! The schema of each served kind under its definition name: the built-ins' generated from
//! k8s-openapi, a custom resource's taken from its CRD version with `apiVersion`, `kind` and
//! `metadata` added as kube-apiserver publishes them.

use serde_json::{Map, Value, json};

use super::definitions::{OBJECT_META, definitions};
use crate::resource::ResourceType;

/// `io.k8s.api.apps.v1.Deployment` for built-ins, `com.example.v1.PostgresWriter` (reversed group)
/// for custom resources.
pub fn definition_name(rt: &ResourceType) -> String {
    if rt.is_builtin()
        && let Some(known) = definitions().kind(&rt.group, &rt.version, &rt.kind)
    {
        return known.definition.clone();
    }
    let reversed: Vec<&str> = rt.group.split('.').rev().collect();
    format!("{}.{}.{}", reversed.join("."), rt.version, rt.kind)
}

fn group_version_kind(rt: &ResourceType) -> Value {
    json!([{"group": rt.group, "version": rt.version, "kind": rt.kind}])
}

/// The definitions the documents of `served` need (OpenAPI 3 form, `#/components/schemas/` refs):
/// each kind's own, and for the built-ins everything they refer to.
pub fn definitions_for(served: &[&ResourceType]) -> Map<String, Value> {
    let all = &definitions().schemas;
    let mut wanted: Map<String, Value> = Map::new();
    let mut pending: Vec<String> = Vec::new();
    for rt in served {
        let name = definition_name(rt);
        let schema = match (rt.is_builtin(), all.get(&name)) {
            (true, Some(schema)) => with_group_version_kind(schema.clone(), rt),
            _ => custom_resource_schema(rt, rt.openapi_schema.clone()),
        };
        collect_references(&schema, &mut pending);
        wanted.insert(name, schema);
    }
    // What every kind's metadata, and the server's answers, are made of.
    pending.extend([OBJECT_META, "io.k8s.apimachinery.pkg.apis.meta.v1.Status"].map(str::to_owned));
    while let Some(name) = pending.pop() {
        if wanted.contains_key(&name) {
            continue;
        }
        if let Some(schema) = all.get(&name) {
            collect_references(schema, &mut pending);
            wanted.insert(name, schema.clone());
        }
    }
    wanted
}

fn with_group_version_kind(mut schema: Value, rt: &ResourceType) -> Value {
    schema["x-kubernetes-group-version-kind"] = group_version_kind(rt);
    schema
}

/// A custom resource's definition: `schema` (its CRD version's, as the document's OpenAPI version
/// wants it; none is a schemaless CRD's) with the fields every kind has, its group-version-kind and
/// the fields it may be selected by.
pub(super) fn custom_resource_schema(rt: &ResourceType, schema: Option<Value>) -> Value {
    let schema =
        schema.unwrap_or_else(|| json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true}));
    with_selectable_fields(with_group_version_kind(with_standard_fields(schema), rt), rt)
}

/// The `x-kubernetes-selectable-fields` of a custom resource that declares some.
pub(super) fn with_selectable_fields(mut schema: Value, rt: &ResourceType) -> Value {
    if !rt.field_labels.is_empty() {
        let fields: Vec<Value> = rt.field_labels.iter().map(|f| json!({"fieldPath": f})).collect();
        schema["x-kubernetes-selectable-fields"] = Value::Array(fields);
    }
    schema
}

fn with_standard_fields(mut schema: Value) -> Value {
    // Every kind documents these three alike; a ConfigMap's say it as kube-apiserver says it for
    // custom resources.
    let standard = |field: &str| {
        definitions()
            .schemas
            .get("io.k8s.api.core.v1.ConfigMap")
            .and_then(|s| s.pointer(&format!("/properties/{field}")))
            .cloned()
            .unwrap_or_else(|| json!({"type": "string"}))
    };
    if let Some(object) = schema.as_object_mut()
        && let Some(properties) = object
            .entry("properties")
            .or_insert_with(|| json!({}))
            .as_object_mut()
    {
        for field in ["apiVersion", "kind", "metadata"] {
            properties.insert(field.into(), standard(field));
        }
    }
    schema
}

/// Adds the names of the definitions `schema` refers to.
fn collect_references(schema: &Value, names: &mut Vec<String>) {
    match schema {
        Value::Object(map) => {
            for (key, value) in map {
                if key == "$ref"
                    && let Some(name) = value
                        .as_str()
                        .and_then(|r| r.strip_prefix("#/components/schemas/"))
                {
                    names.push(name.to_owned());
                } else {
                    collect_references(value, names);
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|v| collect_references(v, names)),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resource::{builtins, from_crd};

    #[test]
    fn d8_definitions_hold_each_kind_and_what_it_refers_to() {
        let types = builtins();
        let deployment = types.iter().find(|rt| rt.kind == "Deployment").unwrap();
        let defined = definitions_for(&[deployment]);
        assert_eq!(
            defined["io.k8s.api.apps.v1.Deployment"]["x-kubernetes-group-version-kind"][0]["kind"],
            "Deployment"
        );
        assert!(defined.contains_key("io.k8s.api.core.v1.PodTemplateSpec"));
        assert!(defined.contains_key(OBJECT_META));
        assert!(!defined.contains_key("io.k8s.api.core.v1.ConfigMap"));

        let crd = json!({"metadata": {"name": "ws.example.com"}, "spec": {"group": "example.com",
            "scope": "Namespaced", "names": {"kind": "W", "plural": "ws"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {"spec": {"type": "object"}}}}}]}});
        let custom = from_crd(&crd).unwrap();
        let defined = definitions_for(&[&custom[0]]);
        let schema = &defined["com.example.v1.W"];
        assert_eq!(schema["properties"]["spec"]["type"], "object");
        assert_eq!(
            schema["properties"]["metadata"]["allOf"][0]["$ref"],
            format!("#/components/schemas/{OBJECT_META}")
        );
        assert!(defined.contains_key(OBJECT_META));
    }
}
