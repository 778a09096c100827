//! Discovery documents (D3-D6), computed from the served resource types.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use crate::resource::{ResourceType, subresources};

/// `GET /api`: `APIVersions`, with the server's address (`host:port`) for every client.
pub fn core_api_versions(server_address: &str) -> Value {
    json!({
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}],
    })
}

/// Group name -> its versions, by Kubernetes' version priority (first is preferred).
fn groups(resources: &[ResourceType]) -> BTreeMap<String, Vec<String>> {
    let mut groups: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for rt in resources.iter().filter(|rt| !rt.group.is_empty()) {
        let versions = groups.entry(rt.group.clone()).or_default();
        if !versions.contains(&rt.version) {
            versions.push(rt.version.clone());
        }
    }
    for versions in groups.values_mut() {
        versions.sort_by_key(|v| version_priority(v));
    }
    groups
}

/// How kube-apiserver orders a group's versions: GA before beta before alpha, higher numbers first
/// (`v2`, `v1`, `v1beta2`, `v1beta1`, `v1alpha1`), then versions of any other form by name.
fn version_priority(version: &str) -> (u8, std::cmp::Reverse<u64>, std::cmp::Reverse<u64>, String) {
    use std::cmp::Reverse;
    let parsed = version.strip_prefix('v').and_then(|rest| {
        let digits = rest.find(|c: char| !c.is_ascii_digit()).unwrap_or(rest.len());
        let major: u64 = rest[..digits].parse().ok()?;
        match &rest[digits..] {
            "" => Some((0, major, 0)),
            tail => {
                let (stage, minor) = tail
                    .strip_prefix("beta")
                    .map(|m| (1, m))
                    .or_else(|| tail.strip_prefix("alpha").map(|m| (2, m)))?;
                Some((stage, major, minor.parse().ok()?))
            }
        }
    });
    match parsed {
        Some((stage, major, minor)) => (stage, Reverse(major), Reverse(minor), String::new()),
        None => (3, Reverse(0), Reverse(0), version.to_owned()),
    }
}

/// One group as `/apis` lists it: its versions by priority, the first preferred.
fn group_entry(group: &str, versions: &[String]) -> Value {
    let listed: Vec<Value> = versions
        .iter()
        .map(|v| json!({"groupVersion": format!("{group}/{v}"), "version": v}))
        .collect();
    let preferred = listed.first().cloned().unwrap_or(Value::Null);
    json!({"name": group, "versions": listed, "preferredVersion": preferred})
}

/// `GET /apis`: `APIGroupList` of every non-core group.
pub fn api_group_list(resources: &[ResourceType]) -> Value {
    let groups: Vec<Value> = groups(resources)
        .iter()
        .map(|(group, versions)| group_entry(group, versions))
        .collect();
    json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})
}

/// `GET /apis/<group>`: the group's `APIGroup`, as `/apis` lists it, or `None` if no version of it
/// is served.
pub fn api_group(resources: &[ResourceType], group: &str) -> Option<Value> {
    let versions = groups(resources).remove(group)?;
    let mut entry = group_entry(group, &versions);
    let object = entry.as_object_mut()?;
    object.insert("kind".into(), json!("APIGroup"));
    object.insert("apiVersion".into(), json!("v1"));
    Some(entry)
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
        let mut entry = json!({
            "name": rt.plural, "singularName": rt.singular, "namespaced": rt.namespaced, "kind": rt.kind,
            "verbs": rt.verbs,
        });
        // Only what is stored has a storage version: not reviews, not component statuses.
        if rt.verbs.iter().any(|v| v == "watch") {
            entry["storageVersionHash"] = json!(storage_version_hash(rt));
        }
        names_and_categories(rt, &mut entry);
        entries.push(entry);
        for sub in subresources(rt) {
            let mut entry = json!({
                "name": format!("{}/{}", rt.plural, sub.name), "singularName": "", "namespaced": rt.namespaced,
                "kind": rt.kind, "verbs": sub.verbs,
            });
            if let Some((group, version, kind)) = sub.kind {
                entry["kind"] = json!(kind);
                if group != rt.group {
                    entry["group"] = json!(group);
                    entry["version"] = json!(version);
                }
            }
            entries.push(entry);
        }
    }
    let group_version = if group.is_empty() {
        version.to_owned()
    } else {
        format!("{group}/{version}")
    };
    let mut list = json!({"kind": "APIResourceList", "groupVersion": group_version, "resources": entries});
    // kube-apiserver's core list is written without an apiVersion; the groups' lists have one.
    if !group.is_empty() {
        list["apiVersion"] = json!("v1");
    }
    Some(list)
}

/// Short names and categories, left out when there are none (Go's `omitempty`).
fn names_and_categories(rt: &ResourceType, entry: &mut Value) {
    if !rt.short_names.is_empty() {
        entry["shortNames"] = json!(rt.short_names);
    }
    if !rt.categories.is_empty() {
        entry["categories"] = json!(rt.categories);
    }
}

/// What kube-apiserver publishes for the storage version migrator to notice a change of storage
/// version: the first 8 bytes of the SHA-256 of `group/version/kind` at the storage version, in base64.
pub fn storage_version_hash(rt: &ResourceType) -> String {
    use base64::Engine as _;
    use sha2::Digest as _;
    let storage = format!("{}/{}/{}", rt.group, rt.storage_version, rt.kind);
    let digest = sha2::Sha256::digest(storage.as_bytes());
    base64::engine::general_purpose::STANDARD.encode(&digest[..8])
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
            versions.sort_by_key(|v| version_priority(v));
            let versions: Vec<Value> = versions
                .iter()
                .map(|version| {
                    let resources: Vec<Value> = served_in(resources, group, version)
                        .into_iter()
                        .map(|rt| {
                            let kind = response_kind(&rt.group, &rt.version, &rt.kind);
                            let mut entry = json!({
                                "resource": rt.plural, "responseKind": kind,
                                "scope": if rt.namespaced { "Namespaced" } else { "Cluster" },
                                "singularResource": rt.singular, "verbs": rt.verbs,
                            });
                            names_and_categories(rt, &mut entry);
                            let subresources: Vec<Value> = subresources(rt)
                                .into_iter()
                                .map(|sub| {
                                    let answered = match sub.kind {
                                        Some((group, version, kind)) => response_kind(group, version, kind),
                                        None => kind.clone(),
                                    };
                                    json!({"subresource": sub.name, "responseKind": answered, "verbs": sub.verbs})
                                })
                                .collect();
                            if !subresources.is_empty() {
                                entry["subresources"] = Value::Array(subresources);
                            }
                            entry
                        })
                        .collect();
                    json!({"version": version, "resources": resources, "freshness": "Current"})
                })
                .collect();
            // Go prints the group's ObjectMeta with its zero creation time and no empty name.
            let mut metadata = json!({"creationTimestamp": null});
            if !group.is_empty() {
                metadata["name"] = json!(group);
            }
            json!({"metadata": metadata, "versions": versions})
        })
        .collect();
    json!({"kind": "APIGroupDiscoveryList", "apiVersion": "apidiscovery.k8s.io/v2", "metadata": {}, "items": items})
}

/// A kind as aggregated discovery names it. kube-apiserver leaves the version of a core-group kind
/// empty there (its legacy group is registered without one), and gives every other group's.
fn response_kind(group: &str, version: &str, kind: &str) -> Value {
    let version = if group.is_empty() { "" } else { version };
    json!({"group": group, "version": version, "kind": kind})
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
    fn d4_resources_carry_their_storage_version_hash_and_no_empty_lists() {
        let list = api_resource_list(&builtins(), "", "v1").unwrap();
        let resource = |name: &str| {
            list["resources"]
                .as_array()
                .unwrap()
                .iter()
                .find(|r| r["name"] == name)
                .unwrap()
                .clone()
        };
        // The value kube-apiserver publishes for v1 ConfigMaps.
        assert_eq!(resource("configmaps")["storageVersionHash"], "qFsyl6wFWjQ=");
        assert_eq!(resource("configmaps").get("categories"), None);
        assert_eq!(resource("pods")["categories"], json!(["all"]));
        assert_eq!(resource("pods/status").get("storageVersionHash"), None);
    }

    #[test]
    fn d6_aggregated_discovery_lists_scope_response_kind_and_status() {
        let list = aggregated_discovery(&builtins(), true);
        assert_eq!(list["kind"], "APIGroupDiscoveryList");
        let core = &list["items"][0];
        assert_eq!(core["metadata"], json!({"creationTimestamp": null}));
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
        // The core group's kinds carry no version there, as kube-apiserver registers its legacy group.
        assert_eq!(namespaces["responseKind"]["version"], "");
        assert_eq!(namespaces["subresources"][1]["subresource"], "status");
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
    fn b8_pod_subresources_are_listed_with_the_kinds_they_answer() {
        let list = api_resource_list(&builtins(), "", "v1").unwrap();
        let exec = list["resources"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["name"] == "pods/exec")
            .unwrap();
        assert_eq!(
            (&exec["kind"], &exec["verbs"]),
            (&json!("PodExecOptions"), &json!(["create", "get"]))
        );
        let aggregated = aggregated_discovery(&builtins(), true);
        let pods = aggregated["items"][0]["versions"][0]["resources"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["resource"] == "pods")
            .unwrap();
        let names: Vec<&str> = pods["subresources"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["subresource"].as_str().unwrap())
            .collect();
        assert_eq!(
            names,
            [
                "attach",
                "binding",
                "ephemeralcontainers",
                "eviction",
                "exec",
                "log",
                "portforward",
                "proxy",
                "resize",
                "status"
            ]
        );
        assert_eq!(pods["subresources"][7]["responseKind"]["kind"], "PodProxyOptions");
        let eviction = &pods["subresources"][3]["responseKind"];
        assert_eq!(
            (&eviction["group"], &eviction["version"], &eviction["kind"]),
            (&json!("policy"), &json!("v1"), &json!("Eviction"))
        );
    }

    #[test]
    fn d3_a_group_prefers_its_version_of_highest_priority() {
        let list = api_group_list(&builtins());
        let autoscaling = list["groups"]
            .as_array()
            .unwrap()
            .iter()
            .find(|g| g["name"] == "autoscaling")
            .unwrap();
        assert_eq!(autoscaling["preferredVersion"]["version"], "v2");
        assert_eq!(autoscaling["versions"][1]["version"], "v1");
        let mut versions = ["v1alpha1", "v1", "v2beta1", "v1beta2", "v2", "foo", "v1beta1"];
        versions.sort_by_key(|v| version_priority(v));
        assert_eq!(
            versions,
            ["v2", "v1", "v2beta1", "v1beta2", "v1beta1", "v1alpha1", "foo"]
        );
    }

    #[test]
    fn d3_each_group_answers_as_the_group_list_lists_it() {
        let list = api_group_list(&builtins());
        for listed in list["groups"].as_array().unwrap() {
            let name = listed["name"].as_str().unwrap();
            let group = api_group(&builtins(), name).unwrap();
            assert_eq!(
                (&group["kind"], &group["apiVersion"]),
                (&json!("APIGroup"), &json!("v1"))
            );
            assert_eq!(group["versions"], listed["versions"], "{name}");
            assert_eq!(group["preferredVersion"], listed["preferredVersion"], "{name}");
        }
        assert_eq!(api_group(&builtins(), "nope.example.com"), None);
        assert_eq!(api_group(&builtins(), ""), None, "the core group is /api");
        // The protobuf form clients ask for first carries the same.
        let autoscaling = api_group(&builtins(), "autoscaling").unwrap();
        let encoded = crate::protobuf::encode(&autoscaling).unwrap();
        let decoded = crate::protobuf::decode(&encoded, "v1", "APIGroup").unwrap();
        assert_eq!(decoded["preferredVersion"]["version"], "v2");
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
}
