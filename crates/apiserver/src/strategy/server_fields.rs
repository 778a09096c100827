//! The fields the server sets and keeps, kind by kind: which kinds count changes to their spec in
//! `metadata.generation` and what a write cannot change of the stored metadata.

use apimachinery::{meta, resource::ResourceType};
use serde_json::{Value, json};

/// Whether `metadata.generation` counts changes to the spec of `rt`'s objects: always for custom
/// resources; for a built-in, when its kind says so (the real server leaves it unset on ConfigMaps,
/// Secrets, Services, Namespaces, Leases, Events, RBAC objects, volumes, quotas, controller revisions).
pub fn tracks_generation(rt: &ResourceType) -> bool {
    !rt.is_builtin() || crate::kinds::of(rt).is_some_and(|kind| kind.tracks_generation())
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
