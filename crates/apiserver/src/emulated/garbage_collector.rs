//! The garbage collector (L5): owners and dependents by `metadata.ownerReferences[].uid`.

use std::{collections::HashSet, sync::Arc};

use apimachinery::resource::ResourceType;
use serde_json::Value;

use crate::store::{DeletePropagation, State, Store, meta};

/// Every object naming `owner_uid` among its owners: (type, namespace, name, object).
fn dependents_of(state: &State, owner_uid: &str) -> Vec<(Arc<ResourceType>, String, String, Value)> {
    if owner_uid.is_empty() {
        return Vec::new();
    }
    let mut found = Vec::new();
    for (key, objects) in &state.objects {
        let mut resource_type = None;
        for ((namespace, name), object) in objects {
            if !meta::owner_uids(object).iter().any(|uid| uid == owner_uid) {
                continue;
            }
            if resource_type.is_none() {
                let Some((group, plural)) = key.split_once('/') else {
                    break;
                };
                resource_type = state.registry.versions_of(group, plural).into_iter().next();
            }
            if let Some(rt) = &resource_type {
                found.push((rt.clone(), namespace.clone(), name.clone(), object.clone()));
            }
        }
    }
    found
}

fn live_uids(state: &State) -> HashSet<String> {
    state
        .objects
        .values()
        .flat_map(|objects| objects.values().map(|o| meta::uid(o).to_owned()))
        .collect()
}

/// Background propagation: after `owner` is gone, delete dependents with no live owner left, and drop
/// the dead reference from those that still have one.
pub(super) fn collect(store: &Store, state: &mut State, owner: &Value) {
    let owner_uid = meta::uid(owner).to_owned();
    let dependents = dependents_of(state, &owner_uid);
    if dependents.is_empty() {
        return;
    }
    let live = live_uids(state);
    for (rt, namespace, name, object) in dependents {
        let has_live_owner = meta::owner_uids(&object)
            .iter()
            .any(|uid| *uid != owner_uid && live.contains(uid));
        if has_live_owner {
            strip_owner(store, state, &rt, &namespace, &name, object, &owner_uid);
        } else {
            let _ = store.delete_locked(state, &rt, &namespace, &name, DeletePropagation::Background);
        }
    }
}

/// Orphan propagation: dependents survive without their reference to `owner`.
pub(super) fn orphan_dependents(store: &Store, state: &mut State, owner: &Value) {
    let owner_uid = meta::uid(owner).to_owned();
    for (rt, namespace, name, object) in dependents_of(state, &owner_uid) {
        strip_owner(store, state, &rt, &namespace, &name, object, &owner_uid);
    }
}

/// Foreground propagation: dependents go first (and theirs, recursively).
pub(super) fn delete_dependents(store: &Store, state: &mut State, owner: &Value) {
    for (rt, namespace, name, _) in dependents_of(state, meta::uid(owner)) {
        let _ = store.delete_locked(state, &rt, &namespace, &name, DeletePropagation::Foreground);
    }
}

fn strip_owner(
    store: &Store,
    state: &mut State,
    rt: &ResourceType,
    namespace: &str,
    name: &str,
    object: Value,
    owner_uid: &str,
) {
    let mut next = object.clone();
    let metadata = meta::metadata_mut(&mut next);
    if let Some(refs) = metadata.get_mut("ownerReferences").and_then(Value::as_array_mut) {
        refs.retain(|r| r.get("uid").and_then(Value::as_str) != Some(owner_uid));
        if refs.is_empty() {
            metadata.remove("ownerReferences");
        }
    }
    store.put(state, rt, namespace, name, next, Some(object));
}
