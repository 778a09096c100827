//! The fields the server sets and keeps, kind by kind: which kinds count changes to their spec in
//! `metadata.generation` and what a write cannot change of the stored metadata.

use apimachinery::{meta, resource::ResourceType};
use serde_json::{Value, json};

/// Whether a create of one of `rt`'s objects sets `metadata.generation` to 1: always for custom
/// resources; for a built-in, when its kind says so (the real server leaves it unset on ConfigMaps,
/// Secrets, Services, Namespaces, Leases, Events, RBAC objects, volumes, quotas, controller revisions).
pub fn tracks_generation(rt: &ResourceType) -> bool {
    !rt.is_builtin() || crate::kinds::of(rt).is_some_and(|kind| kind.tracks_generation())
}

/// Whether an update of one of `rt`'s objects from `old` to `new` counts one more generation: a
/// custom resource's spec changed, or what the built-in kind's registry compares.
pub fn counts_generation(rt: &ResourceType, old: &Value, new: &Value) -> bool {
    if rt.is_builtin() {
        crate::kinds::of(rt).is_some_and(|kind| kind.counts_generation(old, new))
    } else {
        meta::spec_part(old) != meta::spec_part(new)
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
