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
    objects_where(state, |object| {
        meta::owner_uids(object).iter().any(|uid| uid == owner_uid)
    })
}

/// Every stored object that `wanted` accepts, with its type: (type, namespace, name, object).
fn objects_where(
    state: &State,
    wanted: impl Fn(&Value) -> bool,
) -> Vec<(Arc<ResourceType>, String, String, Value)> {
    let mut found = Vec::new();
    for (key, objects) in &state.objects {
        let mut resource_type = None;
        for ((namespace, name), object) in objects {
            if !wanted(object) {
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

/// The finalizer that keeps an owner in foreground deletion until its blocking dependents are gone.
const FOREGROUND_DELETION: &str = "foregroundDeletion";

/// Foreground propagation: dependents go first (and theirs, recursively). Returns the owner marked
/// deleting with the `foregroundDeletion` finalizer while a dependent with `blockOwnerDeletion` is
/// still there (held by its own finalizers), `None` when the owner may go at once.
pub(super) fn delete_dependents(
    store: &Store,
    state: &mut State,
    rt: &ResourceType,
    namespace: &str,
    owner: &Value,
) -> Option<Value> {
    let owner_uid = meta::uid(owner).to_owned();
    for (rt, namespace, name, _) in dependents_of(state, &owner_uid) {
        let _ = store.delete_locked(state, &rt, &namespace, &name, DeletePropagation::Foreground);
    }
    if !has_blocking_dependents(state, &owner_uid) {
        return None;
    }
    let mut waiting = owner.clone();
    let mut finalizers = meta::finalizers(owner);
    if !finalizers.iter().any(|f| f == FOREGROUND_DELETION) {
        finalizers.push(FOREGROUND_DELETION.to_owned());
    }
    meta::set_finalizers(&mut waiting, &finalizers);
    if !meta::is_deleting(owner) {
        let metadata = meta::metadata_mut(&mut waiting);
        metadata.insert("deletionTimestamp".into(), serde_json::json!(meta::now_rfc3339()));
        metadata.insert("deletionGracePeriodSeconds".into(), serde_json::json!(0));
        metadata.insert(
            "generation".into(),
            serde_json::json!(meta::generation(owner) + 1),
        );
    }
    Some(store.put(
        state,
        rt,
        namespace,
        meta::name(owner),
        waiting,
        Some(owner.clone()),
    ))
}

fn has_blocking_dependents(state: &State, owner_uid: &str) -> bool {
    !objects_where(state, |object| {
        object
            .pointer("/metadata/ownerReferences")
            .and_then(Value::as_array)
            .is_some_and(|refs| {
                refs.iter().any(|r| {
                    r.get("uid").and_then(Value::as_str) == Some(owner_uid)
                        && r.get("blockOwnerDeletion") == Some(&Value::Bool(true))
                })
            })
    })
    .is_empty()
}

/// After `removed` is gone: each owner waiting in foreground deletion for its last blocking dependent
/// loses the `foregroundDeletion` finalizer, and goes if that was its last.
pub(super) fn release_waiting_owners(store: &Store, state: &mut State, removed: &Value) {
    for owner_uid in meta::owner_uids(removed) {
        let waiting = objects_where(state, |object| {
            meta::uid(object) == owner_uid
                && meta::is_deleting(object)
                && meta::finalizers(object).iter().any(|f| f == FOREGROUND_DELETION)
        });
        for (rt, namespace, name, owner) in waiting {
            if has_blocking_dependents(state, &owner_uid) {
                continue;
            }
            let mut finalizers = meta::finalizers(&owner);
            finalizers.retain(|f| f != FOREGROUND_DELETION);
            if finalizers.is_empty() {
                store.remove(state, &rt, &namespace, &name, owner);
            } else {
                let mut next = owner.clone();
                meta::set_finalizers(&mut next, &finalizers);
                store.put(state, &rt, &namespace, &name, next, Some(owner));
            }
        }
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
