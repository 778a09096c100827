//! Kinds answered from what the server knows of itself rather than from stored objects: component
//! statuses (B7) and the APIServices of the served group versions (B9). Get and list only.

use apimachinery::resource::{Origin, ResourceType};
use serde_json::{Value, json};

use crate::{
    error::{Error, Result},
    store::{Store, subject},
};

pub fn is_computed(rt: &ResourceType) -> bool {
    rt.is_builtin()
        && matches!(
            (rt.group.as_str(), rt.plural.as_str()),
            ("", "componentstatuses") | ("apiregistration.k8s.io", "apiservices")
        )
}

/// Every object of `rt`, by name.
pub fn list(store: &Store, rt: &ResourceType, started: &str) -> Vec<Value> {
    match rt.plural.as_str() {
        "componentstatuses" => component_statuses(),
        _ => api_services(&store.registry().all(), started),
    }
}

pub fn get(store: &Store, rt: &ResourceType, started: &str, name: &str) -> Result<Value> {
    list(store, rt, started)
        .into_iter()
        .find(|o| o.pointer("/metadata/name").and_then(Value::as_str) == Some(name))
        .ok_or_else(|| Error::NotFound(subject(rt, name)))
}

/// The embedded server's components: its controllers run in-process with it, its storage is its own
/// memory (and data dir), and no scheduler runs, so pods stay unscheduled.
fn component_statuses() -> Vec<Value> {
    let status = |name: &str, healthy: bool, message: &str| {
        json!({"apiVersion": "v1", "kind": "ComponentStatus",
            "metadata": {"name": name, "creationTimestamp": null},
            "conditions": [{"type": "Healthy", "status": if healthy { "True" } else { "False" }, "message": message}]})
    };
    vec![
        status("controller-manager", true, "ok"),
        status(
            "scheduler",
            false,
            "no scheduler runs in the embedded server: pods stay unscheduled",
        ),
        status("storage", true, "ok"),
    ]
}

/// kube-apiserver's priorities of the built-in groups, so clients order groups as they do there.
fn priorities(group: &str) -> (i64, i64) {
    let minimum = match group {
        "" => return (18000, 1),
        "apps" => 17800,
        "events.k8s.io" => 17750,
        "authentication.k8s.io" => 17700,
        "authorization.k8s.io" => 17600,
        "autoscaling" => 17500,
        "batch" => 17400,
        "certificates.k8s.io" => 17300,
        "networking.k8s.io" => 17200,
        "policy" => 17100,
        "rbac.authorization.k8s.io" => 17000,
        "storage.k8s.io" => 16800,
        "apiextensions.k8s.io" | "admissionregistration.k8s.io" => 16700,
        "scheduling.k8s.io" => 16600,
        "coordination.k8s.io" => 16500,
        "node.k8s.io" => 16300,
        "discovery.k8s.io" => 16200,
        _ => 16000,
    };
    (minimum, 15)
}

/// One APIService per served group version but the aggregator's own, as kube-apiserver registers them:
/// the built-in ones at start-up, a CRD's when it is served.
fn api_services(served: &[ResourceType], started: &str) -> Vec<Value> {
    let mut seen = std::collections::BTreeMap::new();
    for rt in served.iter().filter(|rt| rt.group != "apiregistration.k8s.io") {
        seen.entry(format!("{}.{}", rt.version, rt.group))
            .or_insert_with(|| (rt.group.clone(), rt.version.clone(), rt.origin.clone()));
    }
    seen.into_iter()
        .map(|(name, (group, version, origin))| {
            let (minimum, priority, managed) = match origin {
                Origin::BuiltIn => {
                    let (minimum, priority) = priorities(&group);
                    (minimum, priority, "onstart")
                }
                Origin::Crd { .. } => (1000, 100, "true"),
            };
            let mut spec =
                json!({"version": version, "groupPriorityMinimum": minimum, "versionPriority": priority});
            if !group.is_empty() {
                spec["group"] = json!(group);
            }
            json!({"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
                "metadata": {"name": name, "creationTimestamp": started,
                    "labels": {"kube-aggregator.kubernetes.io/automanaged": managed}},
                "spec": spec,
                "status": {"conditions": [{"type": "Available", "status": "True", "reason": "Local",
                    "message": "Local APIServices are always available", "lastTransitionTime": started}]}})
        })
        .collect()
}
