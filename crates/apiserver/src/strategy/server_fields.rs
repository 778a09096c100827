//! The fields the server sets and keeps, kind by kind: which kinds count changes to their spec in
//! `metadata.generation` and what a write cannot change of the stored metadata.

use apimachinery::{meta, resource::ResourceType};
use serde_json::{Value, json};

/// Whether `metadata.generation` counts changes to the spec of `rt`'s objects. The real server keeps it
/// for custom resources, CRDs, the workload kinds and the policies whose status says which generation
/// it observed, and leaves it unset on the others (ConfigMaps, Secrets, Services, Namespaces, Leases,
/// Events, RBAC objects, volumes, quotas, controller revisions).
pub fn tracks_generation(rt: &ResourceType) -> bool {
    if !rt.is_builtin() {
        return true;
    }
    match rt.group.as_str() {
        "apps" => rt.plural != "controllerrevisions",
        "apiextensions.k8s.io" | "flowcontrol.apiserver.k8s.io" => true,
        "" => matches!(
            rt.plural.as_str(),
            "pods" | "podtemplates" | "replicationcontrollers"
        ),
        "batch" => rt.plural == "cronjobs",
        "networking.k8s.io" => matches!(
            rt.plural.as_str(),
            "ingresses" | "ingressclasses" | "networkpolicies"
        ),
        "policy" | "scheduling.k8s.io" => true,
        "admissionregistration.k8s.io" => matches!(
            rt.plural.as_str(),
            "validatingadmissionpolicies" | "validatingadmissionpolicybindings"
        ),
        _ => false,
    }
}

/// Sets `metadata.generation` to `generation` where `rt` keeps one.
pub fn set_generation(rt: &ResourceType, object: &mut Value, generation: i64) {
    if tracks_generation(rt) {
        meta::metadata_mut(object).insert("generation".into(), json!(generation));
    }
}

/// Fields of `metadata` only the server sets; a client's values are replaced by the stored ones.
pub fn keep_server_fields(new: &mut Value, old: &Value) {
    let metadata = meta::metadata_mut(new);
    for field in [
        "uid",
        "creationTimestamp",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "generation",
    ] {
        match old.pointer(&format!("/metadata/{field}")) {
            Some(value) => {
                metadata.insert(field.to_owned(), value.clone());
            }
            None => {
                metadata.remove(field);
            }
        }
    }
}
