//! The owner graph as the collector reads it: dependents through the store's owner index, owners from
//! the references themselves (apiVersion, kind, name, and the dependent's namespace unless the owner is
//! cluster-scoped), an owner being the owner only if its uid matches, as in the real collector.

use std::sync::Arc;

use apimachinery::{meta, resource::ResourceType};
use serde_json::Value;

use super::FOREGROUND_DELETION;
use crate::store::{State, storage_key};

/// An object where the store keeps it: (type, namespace, name, object).
pub(super) type Located = (Arc<ResourceType>, String, String, Value);

/// The type that stores objects under `storage_key` (any served version: they share the storage).
pub(super) fn stored_type(state: &State, storage_key: &str) -> Option<Arc<ResourceType>> {
    let (group, plural) = storage_key.split_once('/')?;
    state.registry.versions_of(group, plural).into_iter().next()
}

pub(super) fn locate(state: &State, key: &str, namespace: &str, name: &str) -> Option<Located> {
    let object = state
        .objects
        .get(key)?
        .get(&(namespace.to_owned(), name.to_owned()))?
        .decode();
    let rt = stored_type(state, key)?;
    Some((rt, namespace.to_owned(), name.to_owned(), object))
}

/// Every other object naming `owner_uid` among its owners. An object is never its own dependent: a
/// self-reference neither holds up its deletion nor is collected along with it.
pub(super) fn dependents_of(state: &State, owner_uid: &str) -> Vec<Located> {
    if owner_uid.is_empty() {
        return Vec::new();
    }
    state
        .owners
        .dependents(owner_uid)
        .into_iter()
        .filter_map(|(key, namespace, name)| locate(state, &key, &namespace, &name))
        .filter(|(_, _, _, object)| meta::uid(object) != owner_uid)
        .collect()
}

/// The dependents whose reference to `owner_uid` has `blockOwnerDeletion: true`.
pub(super) fn blocking_dependents(state: &State, owner_uid: &str) -> Vec<Located> {
    dependents_of(state, owner_uid)
        .into_iter()
        .filter(|(_, _, _, dependent)| {
            meta::owner_references(dependent)
                .iter()
                .any(|reference| reference_uid(reference) == Some(owner_uid) && is_blocking(reference))
        })
        .collect()
}

pub(super) enum Owner {
    Live(Located),
    /// Its type is served and no object of that name has that uid.
    Gone,
    /// The reference names a type that is not served (or lacks a field): nothing can be said.
    Unknown,
}

/// What the reference of a dependent in `namespace` points at.
pub(super) fn find_owner(state: &State, reference: &Value, namespace: &str) -> Owner {
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
            Owner::Live((rt, namespace.to_owned(), name.to_owned(), object))
        }
        _ => Owner::Gone,
    }
}

pub(super) fn reference_uid(reference: &Value) -> Option<&str> {
    reference.get("uid").and_then(Value::as_str)
}

pub(super) fn is_blocking(reference: &Value) -> bool {
    reference.get("blockOwnerDeletion") == Some(&Value::Bool(true))
}

/// Deleting, and held by the `foregroundDeletion` finalizer until its blocking dependents are gone.
pub(super) fn waits_for_dependents(object: &Value) -> bool {
    meta::is_deleting(object) && has_finalizer(object, FOREGROUND_DELETION)
}

pub(super) fn has_finalizer(object: &Value, finalizer: &str) -> bool {
    meta::finalizers(object).iter().any(|f| f == finalizer)
}
