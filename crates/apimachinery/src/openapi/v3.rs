//! `GET /openapi/v3` and its group-version documents (D7, D8): what kubectl explains fields from and
//! checks `fieldValidation` against, the built-in kinds' schemas as k8s-openapi generates them.

use std::hash::{DefaultHasher, Hash, Hasher};

use serde_json::{Map, Value, json};

use super::{
    operations::{self, PATCH_TYPES},
    schemas,
};
use crate::resource::ResourceType;

fn served_in<'a>(resources: &'a [ResourceType], group: &str, version: &str) -> Vec<&'a ResourceType> {
    resources
        .iter()
        .filter(|rt| rt.group == group && rt.version == version)
        .collect()
}

/// `GET /openapi/v3`: the paths index. The hash of each entry changes whenever that group version's
/// document changes.
pub fn index(resources: &[ResourceType]) -> Value {
    let mut group_versions: Vec<(&str, &str)> = Vec::new();
    for rt in resources {
        let gv = (rt.group.as_str(), rt.version.as_str());
        if !group_versions.contains(&gv) {
            group_versions.push(gv);
        }
    }
    let mut paths = Map::new();
    for (group, version) in group_versions {
        let Some(document) = document(resources, group, version) else {
            continue;
        };
        let mut hasher = DefaultHasher::new();
        document.to_string().hash(&mut hasher);
        let path = if group.is_empty() {
            format!("api/{version}")
        } else {
            format!("apis/{group}/{version}")
        };
        paths.insert(
            path.clone(),
            json!({"serverRelativeURL": format!("/openapi/v3/{path}?hash={:016X}", hasher.finish())}),
        );
    }
    json!({"paths": paths})
}

fn query_parameter(name: &str) -> Value {
    json!({"name": name, "in": "query", "schema": {"type": "string", "uniqueItems": true}})
}

fn path_parameter(name: &str) -> Value {
    json!({"name": name, "in": "path", "required": true, "schema": {"type": "string", "uniqueItems": true}})
}

/// `parameters` unless there are none: Go's OpenAPI types leave an empty list out (`omitempty`), so
/// a document with one would not survive a client's decoding and encoding unchanged.
pub(super) fn insert_parameters(entry: &mut Map<String, Value>, parameters: Vec<Value>) {
    if !parameters.is_empty() {
        entry.insert("parameters".into(), Value::Array(parameters));
    }
}

/// `GET /openapi/v3/api/v1` or `/openapi/v3/apis/<group>/<version>`, or `None` if nothing is served
/// there.
pub fn document(resources: &[ResourceType], group: &str, version: &str) -> Option<Value> {
    let served = served_in(resources, group, version);
    if served.is_empty() {
        return None;
    }
    let mut paths = Map::new();
    for rt in &served {
        let gvk = json!({"group": rt.group, "version": rt.version, "kind": rt.kind});
        let reference = json!({"$ref": format!("#/components/schemas/{}", schemas::definition_name(rt))});
        for item in operations::paths(rt) {
            let mut entry = Map::new();
            let parameters: Vec<Value> = item.parameters.iter().map(|p| path_parameter(p)).collect();
            insert_parameters(&mut entry, parameters);
            for op in &item.operations {
                let mut operation = json!({
                    "operationId": format!("{}{}", op.action, rt.kind),
                    "responses": {"200": {"description": "OK",
                        "content": {"application/json": {"schema": reference}}}},
                    "x-kubernetes-action": op.action,
                    "x-kubernetes-group-version-kind": gvk,
                });
                if let Some(operation) = operation.as_object_mut() {
                    insert_parameters(operation, op.query.iter().map(|q| query_parameter(q)).collect());
                }
                if op.body {
                    let media_types: &[&str] = if op.method == "patch" {
                        PATCH_TYPES
                    } else {
                        &["application/json", "application/yaml"]
                    };
                    let content: Map<String, Value> = media_types
                        .iter()
                        .map(|media| ((*media).to_owned(), json!({"schema": reference})))
                        .collect();
                    operation["requestBody"] = json!({"content": content, "required": true});
                }
                entry.insert(op.method.into(), operation);
            }
            paths.insert(item.path, Value::Object(entry));
        }
    }
    Some(json!({
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": "v1.33.13"},
        "paths": paths,
        "components": {"schemas": schemas::definitions_for(&served)},
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resource::{builtins, from_crd};

    #[test]
    fn d7_every_kind_has_a_patch_operation_with_field_validation() {
        let document = document(&builtins(), "", "v1").unwrap();
        let patch = &document["paths"]["/api/v1/namespaces/{namespace}/configmaps/{name}"]["patch"];
        assert_eq!(patch["x-kubernetes-group-version-kind"]["kind"], "ConfigMap");
        assert!(
            patch["parameters"]
                .as_array()
                .unwrap()
                .iter()
                .any(|p| p["name"] == "fieldValidation")
        );
        // kubectl computes strategic merge patches from its own types only when this is absent.
        assert!(
            patch["requestBody"]["content"]
                .get("application/strategic-merge-patch+json")
                .is_none()
        );
        let index = index(&builtins());
        assert!(
            index["paths"]["apis/apps/v1"]["serverRelativeURL"]
                .as_str()
                .unwrap()
                .starts_with("/openapi/v3/apis/apps/v1?hash=")
        );
    }

    #[test]
    fn d8_built_in_schemas_are_the_apis_field_by_field() {
        let document = document(&builtins(), "apps", "v1").unwrap();
        let schemas = &document["components"]["schemas"];
        let deployment = &schemas["io.k8s.api.apps.v1.Deployment"];
        assert_eq!(
            deployment["x-kubernetes-group-version-kind"][0]["kind"],
            "Deployment"
        );
        let spec = deployment["properties"]["spec"]["allOf"][0]["$ref"]
            .as_str()
            .unwrap();
        let spec = &schemas[spec.trim_start_matches("#/components/schemas/")];
        assert_eq!(spec["properties"]["replicas"]["type"], "integer");
        assert!(
            spec["properties"]["replicas"]["description"]
                .as_str()
                .unwrap()
                .starts_with("Number of desired pods.")
        );
    }

    fn crd_types(table_type: &str) -> Vec<ResourceType> {
        let crd = json!({
            "metadata": {"name": "postgreswriters.demo.yash.com"},
            "spec": {"group": "demo.yash.com", "scope": "Namespaced",
                "names": {"kind": "PostgresWriter", "plural": "postgreswriters"},
                "versions": [{"name": "v1", "served": true, "storage": true, "subresources": {"status": {}},
                    "schema": {"openAPIV3Schema": {"type": "object", "properties": {"spec": {"type": "object",
                        "properties": {"table": {"type": table_type}}}}}}}]}
        });
        let mut types = builtins();
        types.extend(from_crd(&crd).unwrap());
        types
    }

    #[test]
    fn d7_openapi_hash_changes_when_a_crd_schema_changes() {
        let url = |types: &[ResourceType]| {
            index(types)["paths"]["apis/demo.yash.com/v1"]["serverRelativeURL"].clone()
        };
        assert_eq!(url(&crd_types("string")), url(&crd_types("string")));
        assert_ne!(url(&crd_types("string")), url(&crd_types("integer")));
        let document = document(&crd_types("string"), "demo.yash.com", "v1").unwrap();
        let schema = &document["components"]["schemas"]["com.yash.demo.v1.PostgresWriter"];
        assert_eq!(
            schema["properties"]["spec"]["properties"]["table"]["type"],
            "string"
        );
        assert_eq!(
            schema["x-kubernetes-group-version-kind"][0]["kind"],
            "PostgresWriter"
        );
        let patch = &document["paths"]["/apis/demo.yash.com/v1/namespaces/{namespace}/postgreswriters/{name}"]
            ["patch"];
        assert_eq!(patch["x-kubernetes-group-version-kind"]["group"], "demo.yash.com");
    }
}
