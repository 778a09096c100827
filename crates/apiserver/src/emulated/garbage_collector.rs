//! The garbage collector (L5): owners and dependents by `metadata.ownerReferences[].uid`. Dependents
//! are found through the store's owner index; an owner is found from the reference itself (apiVersion,
//! kind, name, and the dependent's namespace unless the owner is cluster-scoped), as the real
//! collector does, and is the owner only if its uid matches.

use std::sync::Arc;

use apimachinery::resource::ResourceType;
use serde_json::{Value, json};

use crate::store::{DeletePropagation, State, Store, meta, storage_key};

/// The finalizer that keeps an owner in foreground deletion until its blocking dependents are gone.
const FOREGROUND_DELETION: &str = "foregroundDeletion";

type Located = (Arc<ResourceType>, String, String, Value);

/// Every object naming `owner_uid` among its owners: (type, namespace, name, object).
fn dependents_of(state: &State, owner_uid: &str) -> Vec<Located> {
    if owner_uid.is_empty() {
        return Vec::new();
    }
    state
        .owners
        .dependents(owner_uid)
        .into_iter()
        .filter_map(|(key, namespace, name)| {
            let object = state
                .objects
                .get(&key)?
                .get(&(namespace.clone(), name.clone()))?
                .decode();
            let (group, plural) = key.split_once('/')?;
            let rt = state.registry.versions_of(group, plural).into_iter().next()?;
            Some((rt, namespace, name, object))
        })
        .collect()
}

/// The live object an owner reference of a dependent in `namespace` points at, if its uid matches.
fn owner_of(state: &State, reference: &Value, namespace: &str) -> Option<Located> {
    match find_owner(state, reference, namespace) {
        Owner::Live(owner) => Some(owner),
        Owner::Gone | Owner::Unknown => None,
    }
}

enum Owner {
    Live(Located),
    /// Its type is served and no object of that name has that uid.
    Gone,
    /// The reference names a type that is not served: nothing can be said.
    Unknown,
}

fn find_owner(state: &State, reference: &Value, namespace: &str) -> Owner {
    let field = |key: &str| reference.get(key).and_then(Value::as_str);
    let (Some(api_version), Some(kind), Some(name), Some(uid)) =
        (field("apiVersion"), field("kind"), field("name"), field("uid"))
    else {
        return Owner::Unknown;
    };
    let rt = state.registry.by_kind(api_version, kind).or_else(|| {
        // Another version of the same group shares the storage.
        let group = api_version.rsplit_once('/').map_or("", |(group, _)| group);
        state
            .registry
            .all()
            .into_iter()
            .find(|rt| rt.group == group && rt.kind == kind)
            .map(Arc::new)
    });
    let Some(rt) = rt else {
        return Owner::Unknown;
    };
    let namespace = if rt.namespaced { namespace } else { "" };
    let object = state
        .objects
        .get(&storage_key(&rt))
        .and_then(|objects| objects.get(&(namespace.to_owned(), name.to_owned())))
        .map(|stored| stored.decode());
    match object {
        Some(object) if meta::uid(&object) == uid => {
            Owner::Live((rt.clone(), namespace.to_owned(), name.to_owned(), object))
        }
        _ => Owner::Gone,
    }
}

fn owner_references(object: &Value) -> Vec<Value> {
    object
        .pointer("/metadata/ownerReferences")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
}

/// Background propagation: after `owner` is gone, delete dependents with no live owner left, and drop
/// the dead reference from those that still have one.
pub(super) fn collect(store: &Store, state: &mut State, owner: &Value) {
    let owner_uid = meta::uid(owner).to_owned();
    for (rt, namespace, name, object) in dependents_of(state, &owner_uid) {
        let has_live_owner = owner_references(&object).iter().any(|reference| {
            reference.get("uid").and_then(Value::as_str) != Some(owner_uid.as_str())
                && owner_of(state, reference, &namespace).is_some()
        });
        if has_live_owner {
            strip_owner(store, state, &rt, &namespace, &name, object, &owner_uid);
        } else {
            let _ = store.delete_locked(state, &rt, &namespace, &name, DeletePropagation::Background);
        }
    }
}

/// A dependent written when none of its owners exists any more (say by a controller acting on a
/// stale cache right after its owner was deleted) is collected, as the real collector collects an
/// object whose owners it cannot find. Returns whether it was.
pub(super) fn collect_if_orphaned(
    store: &Store,
    state: &mut State,
    rt: &ResourceType,
    namespace: &str,
    name: &str,
    stored: &Value,
) -> bool {
    let references = owner_references(stored);
    if references.is_empty() || meta::is_deleting(stored) {
        return false;
    }
    let every_owner_gone = references
        .iter()
        .all(|reference| matches!(find_owner(state, reference, namespace), Owner::Gone));
    if !every_owner_gone {
        return false;
    }
    let Some(rt) = state
        .registry
        .versions_of(&rt.group, &rt.plural)
        .into_iter()
        .next()
    else {
        return false;
    };
    let _ = store.delete_locked(state, &rt, namespace, name, DeletePropagation::Background);
    true
}

/// Orphan propagation: dependents survive without their reference to `owner`.
pub(super) fn orphan_dependents(store: &Store, state: &mut State, owner: &Value) {
    let owner_uid = meta::uid(owner).to_owned();
    for (rt, namespace, name, object) in dependents_of(state, &owner_uid) {
        strip_owner(store, state, &rt, &namespace, &name, object, &owner_uid);
    }
}

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
        metadata.insert("deletionTimestamp".into(), json!(meta::now_rfc3339()));
        metadata.insert("deletionGracePeriodSeconds".into(), json!(0));
        metadata.insert("generation".into(), json!(meta::generation(owner) + 1));
    }
    let name = meta::name(owner).to_owned();
    Some(store.put(state, rt, namespace, &name, waiting, Some(owner.clone())))
}

fn has_blocking_dependents(state: &State, owner_uid: &str) -> bool {
    dependents_of(state, owner_uid)
        .iter()
        .any(|(_, _, _, dependent)| {
            owner_references(dependent).iter().any(|reference| {
                reference.get("uid").and_then(Value::as_str) == Some(owner_uid)
                    && reference.get("blockOwnerDeletion") == Some(&Value::Bool(true))
            })
        })
}

/// After `removed` is gone: each owner waiting in foreground deletion for its last blocking dependent
/// loses the `foregroundDeletion` finalizer, and goes if that was its last.
pub(super) fn release_waiting_owners(store: &Store, state: &mut State, removed: &Value) {
    let namespace = meta::namespace(removed).to_owned();
    for reference in owner_references(removed) {
        let Some((rt, namespace, name, owner)) = owner_of(state, &reference, &namespace) else {
            continue;
        };
        let waiting =
            meta::is_deleting(&owner) && meta::finalizers(&owner).iter().any(|f| f == FOREGROUND_DELETION);
        if !waiting || has_blocking_dependents(state, meta::uid(&owner)) {
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
