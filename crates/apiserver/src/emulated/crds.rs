//! CustomResourceDefinitions: accepted and served the moment they are written (V1, D5), and torn down
//! with every custom resource they serve (L6).

use apimachinery::{FieldCause, resource::ResourceType, schema::validate_crd};
use serde_json::{Value, json};

use crate::store::{DeletePropagation, State, Store, meta, storage_key};

const CLEANUP_FINALIZER: &str = "customresourcecleanup.apiextensions.k8s.io";

pub(super) fn admit(
    state: &mut State,
    old: Option<&Value>,
    object: &mut Value,
) -> Result<(), Vec<FieldCause>> {
    let causes = validate_crd(object);
    if !causes.is_empty() {
        return Err(causes);
    }
    let types = apimachinery::resource::from_crd(object)?;
    let name = meta::name(object).to_owned();
    if !meta::is_deleting(object) {
        state.registry.set_crd(&name, types);
        let mut finalizers = meta::finalizers(object);
        if !finalizers.iter().any(|f| f == CLEANUP_FINALIZER) {
            finalizers.push(CLEANUP_FINALIZER.to_owned());
            meta::set_finalizers(object, &finalizers);
        }
    }
    let now = meta::now_rfc3339();
    let storage = stored_versions(old, object);
    let names = object.pointer("/spec/names").cloned().unwrap_or(json!({}));
    let condition = |kind: &str, reason: &str, message: &str| json!({"type": kind, "status": "True", "lastTransitionTime": now, "reason": reason, "message": message});
    object["status"] = json!({
        "conditions": [
            condition("NamesAccepted", "NoConflicts", "no conflicts found"),
            condition("Established", "InitialNamesAccepted", "the initial names have been accepted"),
        ],
        "acceptedNames": names,
        "storedVersions": storage,
    });
    Ok(())
}

/// `status.storedVersions`: every version objects may still be stored at. A new CRD has its storage
/// version; a changed one keeps the list (as the write carries it, or as it was) and gains the new
/// storage version, which only a status write that migrated the objects may drop older ones from.
fn stored_versions(old: Option<&Value>, object: &Value) -> Vec<Value> {
    let listed = |crd: &Value| {
        crd.pointer("/status/storedVersions")
            .and_then(Value::as_array)
            .cloned()
    };
    let mut stored = match old {
        None => Vec::new(),
        Some(old) => listed(object).or_else(|| listed(old)).unwrap_or_default(),
    };
    let storage = object
        .pointer("/spec/versions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|v| v.get("storage").and_then(Value::as_bool) == Some(true))
        .filter_map(|v| v.get("name").cloned());
    for version in storage {
        if !stored.contains(&version) {
            stored.push(version);
        }
    }
    stored
}

/// Marks the CRD deleting, deletes every custom resource it serves, and removes it once none is left.
pub(super) fn terminate(store: &Store, state: &mut State, rt: &ResourceType, crd: &Value) -> Value {
    let name = meta::name(crd).to_owned();
    if !meta::is_deleting(crd) {
        let mut next = crd.clone();
        meta::metadata_mut(&mut next).insert("deletionTimestamp".into(), json!(meta::now_rfc3339()));
        store.put(state, rt, "", &name, next, Some(crd.clone()));
    }
    if let Some(served) = served_type(state, crd) {
        let key = storage_key(&served);
        let members: Vec<(String, String)> = state
            .objects
            .get(&key)
            .map(|objects| objects.keys().cloned().collect())
            .unwrap_or_default();
        let served = std::sync::Arc::new(served);
        for (namespace, member) in members {
            let _ = store.delete_locked(state, &served, &namespace, &member, DeletePropagation::Background);
        }
    }
    finish(store, state, &name);
    store.stored(state, rt, "", &name).unwrap_or_else(|| crd.clone())
}

/// Called after a custom resource of `rt` is removed: finishes its CRD's teardown if that was the last.
pub(super) fn finish_if_empty(store: &Store, state: &mut State, rt: &ResourceType) {
    if let apimachinery::resource::Origin::Crd { name } = &rt.origin {
        finish(store, state, &name.clone());
    }
}

fn finish(store: &Store, state: &mut State, crd_name: &str) {
    let Some(crd_type) = state
        .registry
        .resolve("apiextensions.k8s.io", "v1", "customresourcedefinitions")
    else {
        return;
    };
    // Asked after every removal of a custom resource: answered without decoding the CRD's schema.
    if !Store::stored_object(state, &crd_type, "", crd_name).is_some_and(|crd| crd.is_deleting()) {
        return;
    }
    let Some(crd) = store.stored(state, &crd_type, "", crd_name) else {
        return;
    };
    if let Some(served) = served_type(state, &crd)
        && state
            .objects
            .get(&storage_key(&served))
            .is_some_and(|objects| !objects.is_empty())
    {
        return;
    }
    state.registry.remove_crd(crd_name);
    store.remove(state, &crd_type, "", crd_name, crd);
}

fn served_type(state: &State, crd: &Value) -> Option<ResourceType> {
    let group = meta::str_at(crd, "/spec/group")?;
    let plural = meta::str_at(crd, "/spec/names/plural")?;
    state
        .registry
        .versions_of(group, plural)
        .first()
        .map(|rt| (**rt).clone())
}
