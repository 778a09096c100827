//! Discovery and OpenAPI documents (D3-D8), computed from the served resource types.

use std::{
    collections::BTreeMap,
    hash::{DefaultHasher, Hash, Hasher},
};

use serde_json::{Value, json};

use crate::resource::ResourceType;

/// `GET /api`: `APIVersions`.
pub fn core_api_versions() -> Value {
    json!({
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": "127.0.0.1"}],
    })
}

/// Group name -> its versions, in the order served (first is preferred).
fn groups(resources: &[ResourceType]) -> BTreeMap<String, Vec<String>> {
    let mut groups: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for rt in resources.iter().filter(|rt| !rt.group.is_empty()) {
        let versions = groups.entry(rt.group.clone()).or_default();
        if !versions.contains(&rt.version) {
            versions.push(rt.version.clone());
        }
    }
    groups
}

/// `GET /apis`: `APIGroupList` of every non-core group.
pub fn api_group_list(resources: &[ResourceType]) -> Value {
    let groups: Vec<Value> = groups(resources)
        .into_iter()
        .map(|(group, versions)| {
            let listed: Vec<Value> = versions
                .iter()
                .map(|v| json!({"groupVersion": format!("{group}/{v}"), "version": v}))
                .collect();
            json!({"name": group, "versions": listed, "preferredVersion": listed[0]})
        })
        .collect();
    json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})
}

fn served_in<'a>(resources: &'a [ResourceType], group: &str, version: &str) -> Vec<&'a ResourceType> {
    resources
        .iter()
        .filter(|rt| rt.group == group && rt.version == version)
        .collect()
}

/// `GET /api/v1` or `GET /apis/<group>/<version>`: `APIResourceList`, or `None` if nothing is served there.
pub fn api_resource_list(resources: &[ResourceType], group: &str, version: &str) -> Option<Value> {
    let served = served_in(resources, group, version);
    if served.is_empty() {
        return None;
    }
    let mut entries = Vec::new();
    for rt in served {
        entries.push(json!({
            "name": rt.plural, "singularName": rt.singular, "namespaced": rt.namespaced, "kind": rt.kind,
            "verbs": rt.verbs, "shortNames": rt.short_names, "categories": rt.categories,
        }));
        if rt.status_subresource {
            entries.push(json!({
                "name": format!("{}/status", rt.plural), "singularName": "", "namespaced": rt.namespaced,
                "kind": rt.kind, "verbs": ["get", "patch", "update"],
            }));
        }
        if rt.scale.is_some() {
            entries.push(json!({
                "name": format!("{}/scale", rt.plural), "singularName": "", "namespaced": rt.namespaced,
                "group": "autoscaling", "version": "v1", "kind": "Scale", "verbs": ["get", "patch", "update"],
            }));
        }
    }
    let group_version = if group.is_empty() {
        version.to_owned()
    } else {
        format!("{group}/{version}")
    };
    Some(
        json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": group_version, "resources": entries}),
    )
}

/// Aggregated discovery v2 (D6): `APIGroupDiscoveryList` for `/api` (core = true) or `/apis`.
pub fn aggregated_discovery(resources: &[ResourceType], core: bool) -> Value {
    let group_names: Vec<String> = if core {
        vec![String::new()]
    } else {
        groups(resources).into_keys().collect()
    };
    let items: Vec<Value> = group_names
        .iter()
        .map(|group| {
            let mut versions: Vec<String> = Vec::new();
            for rt in resources.iter().filter(|rt| &rt.group == group) {
                if !versions.contains(&rt.version) {
                    versions.push(rt.version.clone());
                }
            }
            let versions: Vec<Value> = versions
                .iter()
                .map(|version| {
                    let resources: Vec<Value> = served_in(resources, group, version)
                        .into_iter()
                        .map(|rt| {
                            let kind = json!({"group": rt.group, "version": rt.version, "kind": rt.kind});
                            let mut entry = json!({
                                "resource": rt.plural, "responseKind": kind,
                                "scope": if rt.namespaced { "Namespaced" } else { "Cluster" },
                                "singularResource": rt.singular, "verbs": rt.verbs,
                                "shortNames": rt.short_names, "categories": rt.categories,
                            });
                            let mut subresources = Vec::new();
                            if rt.status_subresource {
                                subresources.push(json!({"subresource": "status", "responseKind": kind, "verbs": ["get", "patch", "update"]}));
                            }
                            if rt.scale.is_some() {
                                let scale = json!({"group": "autoscaling", "version": "v1", "kind": "Scale"});
                                subresources.push(json!({"subresource": "scale", "responseKind": scale, "verbs": ["get", "patch", "update"]}));
                            }
                            if !subresources.is_empty() {
                                entry["subresources"] = Value::Array(subresources);
                            }
                            entry
                        })
                        .collect();
                    json!({"version": version, "resources": resources, "freshness": "Current"})
                })
                .collect();
            json!({"metadata": {"name": group}, "versions": versions})
        })
        .collect();
    json!({"kind": "APIGroupDiscoveryList", "apiVersion": "apidiscovery.k8s.io/v2", "metadata": {}, "items": items})
}

/// `GET /openapi/v3`: the paths index (D7). The hash of each entry changes whenever that group
/// version's documents change.
pub fn openapi_v3_index(resources: &[ResourceType]) -> Value {
    let mut paths = serde_json::Map::new();
    let mut group_versions: Vec<(String, String)> = Vec::new();
    for rt in resources {
        let gv = (rt.group.clone(), rt.version.clone());
        if !group_versions.contains(&gv) {
            group_versions.push(gv);
        }
    }
    for (group, version) in group_versions {
        let Some(document) = openapi_v3_document(resources, &group, &version) else {
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

/// `io.k8s.api.core.v1.ConfigMap` for built-ins, `com.example.v1.PostgresWriter` (reversed group) for CRDs.
fn schema_name(rt: &ResourceType) -> String {
    if rt.is_builtin() {
        let group = if rt.group.is_empty() {
            "core"
        } else {
            rt.group.split('.').next().unwrap_or("core")
        };
        return format!("io.k8s.api.{group}.{}.{}", rt.version, rt.kind);
    }
    let reversed: Vec<&str> = rt.group.split('.').rev().collect();
    format!("{}.{}.{}", reversed.join("."), rt.version, rt.kind)
}

fn query_parameter(name: &str) -> Value {
    json!({"name": name, "in": "query", "schema": {"type": "string", "uniqueItems": true}})
}

/// `GET /openapi/v3/api/v1` or `/openapi/v3/apis/<group>/<version>` (D7, D8), or `None` if unknown.
pub fn openapi_v3_document(resources: &[ResourceType], group: &str, version: &str) -> Option<Value> {
    let served = served_in(resources, group, version);
    if served.is_empty() {
        return None;
    }
    let mut paths = serde_json::Map::new();
    let mut schemas = serde_json::Map::new();
    for rt in served {
        let gvk = json!({"group": rt.group, "version": rt.version, "kind": rt.kind});
        let name = schema_name(rt);
        let reference = json!({"$ref": format!("#/components/schemas/{name}")});
        let body = json!({"content": {"application/json": {"schema": reference}}});
        let ok =
            json!({"200": {"description": "OK", "content": {"application/json": {"schema": reference}}}});
        let write_params = ["dryRun", "fieldManager", "fieldValidation"].map(query_parameter);
        let patch_params = ["dryRun", "fieldManager", "fieldValidation", "force"].map(query_parameter);
        let prefix = if group.is_empty() {
            format!("/api/{version}")
        } else {
            format!("/apis/{group}/{version}")
        };
        let collection = if rt.namespaced {
            format!("{prefix}/namespaces/{{namespace}}/{}", rt.plural)
        } else {
            format!("{prefix}/{}", rt.plural)
        };
        let operation = |verb: &str, params: &[Value], with_body: bool| {
            let mut op = json!({
                "operationId": format!("{verb}{}", rt.kind), "responses": ok,
                "x-kubernetes-action": verb, "x-kubernetes-group-version-kind": gvk, "parameters": params,
            });
            if with_body {
                op["requestBody"] = body.clone();
            }
            op
        };
        paths.insert(
            collection.clone(),
            json!({"get": operation("list", &[], false), "post": operation("post", &write_params, true)}),
        );
        paths.insert(
            format!("{collection}/{{name}}"),
            json!({
                "get": operation("get", &[], false),
                "put": operation("put", &write_params, true),
                "patch": operation("patch", &patch_params, true),
                "delete": operation("delete", &[query_parameter("dryRun")], false),
            }),
        );
        let mut schema = rt
            .openapi_schema
            .clone()
            .unwrap_or_else(|| json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true}));
        if let Some(properties) = schema.get_mut("properties").and_then(Value::as_object_mut) {
            properties
                .entry("apiVersion")
                .or_insert(json!({"type": "string"}));
            properties.entry("kind").or_insert(json!({"type": "string"}));
            properties.entry("metadata").or_insert(json!({"type": "object"}));
        }
        schema["x-kubernetes-group-version-kind"] = json!([gvk]);
        schemas.insert(name, schema);
    }
    Some(json!({
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": "v1.33.13"},
        "paths": paths,
        "components": {"schemas": schemas},
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resource::builtins;

    #[test]
    fn d4_resource_list_has_status_subresources_and_short_names() {
        let list = api_resource_list(&builtins(), "apps", "v1").unwrap();
        let names: Vec<&str> = list["resources"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["name"].as_str().unwrap())
            .collect();
        assert!(
            names.contains(&"deployments") && names.contains(&"deployments/status"),
            "{names:?}"
        );
        assert!(api_resource_list(&builtins(), "nope", "v1").is_none());
    }

    #[test]
    fn d7_every_kind_has_a_patch_operation_with_field_validation() {
        let document = openapi_v3_document(&builtins(), "", "v1").unwrap();
        let patch = &document["paths"]["/api/v1/namespaces/{namespace}/configmaps/{name}"]["patch"];
        assert_eq!(patch["x-kubernetes-group-version-kind"]["kind"], "ConfigMap");
        assert!(
            patch["parameters"]
                .as_array()
                .unwrap()
                .iter()
                .any(|p| p["name"] == "fieldValidation")
        );
        let index = openapi_v3_index(&builtins());
        assert!(
            index["paths"]["apis/apps/v1"]["serverRelativeURL"]
                .as_str()
                .unwrap()
                .starts_with("/openapi/v3/apis/apps/v1?hash=")
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
        types.extend(crate::resource::from_crd(&crd).unwrap());
        types
    }

    #[test]
    fn d6_aggregated_discovery_lists_scope_response_kind_and_status() {
        let list = aggregated_discovery(&builtins(), true);
        assert_eq!(list["kind"], "APIGroupDiscoveryList");
        let core = &list["items"][0];
        assert_eq!(core["metadata"]["name"], "");
        let v1 = &core["versions"][0];
        assert_eq!(v1["freshness"], "Current");
        let namespaces = v1["resources"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["resource"] == "namespaces")
            .unwrap();
        assert_eq!(namespaces["scope"], "Cluster");
        assert_eq!(namespaces["responseKind"]["kind"], "Namespace");
        assert_eq!(namespaces["subresources"][0]["subresource"], "status");
        let groups = aggregated_discovery(&builtins(), false);
        assert!(
            groups["items"]
                .as_array()
                .unwrap()
                .iter()
                .all(|g| g["metadata"]["name"] != "")
        );
    }

    #[test]
    fn d3_group_list_prefers_the_first_served_version() {
        let list = api_group_list(&builtins());
        let apps = list["groups"]
            .as_array()
            .unwrap()
            .iter()
            .find(|g| g["name"] == "apps")
            .unwrap();
        assert_eq!(apps["preferredVersion"]["groupVersion"], "apps/v1");
        assert!(list["groups"].as_array().unwrap().iter().all(|g| g["name"] != ""));
    }

    #[test]
    fn d7_openapi_hash_changes_when_a_crd_schema_changes() {
        let url = |types: &[ResourceType]| {
            openapi_v3_index(types)["paths"]["apis/demo.yash.com/v1"]["serverRelativeURL"].clone()
        };
        assert_eq!(url(&crd_types("string")), url(&crd_types("string")));
        assert_ne!(url(&crd_types("string")), url(&crd_types("integer")));
        let document = openapi_v3_document(&crd_types("string"), "demo.yash.com", "v1").unwrap();
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
