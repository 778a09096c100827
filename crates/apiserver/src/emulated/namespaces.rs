//! Namespaces (L3, L4): their server-set fields, and teardown: Terminating, every object inside
//! deleted (honouring finalizers), then the namespace itself.

use apimachinery::resource::ResourceType;
use serde_json::{Value, json};

use crate::store::{DeletePropagation, State, Store, meta};

/// The fields the namespace registry sets after the write's managedFields are recorded (its name
/// label is a default: see `apimachinery::defaults`).
pub(super) fn admit(object: &mut Value) {
    object["spec"] = json!({"finalizers": ["kubernetes"]});
    if object.pointer("/status/phase").is_none() {
        object["status"] = json!({"phase": "Active"});
    }
}

pub(super) fn terminate(store: &Store, state: &mut State, rt: &ResourceType, namespace: &Value) -> Value {
    let name = meta::name(namespace).to_owned();
    let mut current = namespace.clone();
    if !meta::is_deleting(namespace) {
        let mut next = namespace.clone();
        let metadata = meta::metadata_mut(&mut next);
        metadata.insert("deletionTimestamp".into(), json!(meta::now_rfc3339()));
        metadata.insert("deletionGracePeriodSeconds".into(), json!(0));
        next["status"] = json!({"phase": "Terminating"});
        current = store.put(state, rt, "", &name, next, Some(namespace.clone()));
    }
    for (rt, object_name) in contents(state, &name) {
        // Objects with finalizers stay until their controllers release them; the rest go now.
        let _ = store.delete_locked(state, &rt, &name, &object_name, DeletePropagation::Background);
    }
    finish_if_empty(store, state, &name);
    store.stored(state, rt, "", &name).unwrap_or(current)
}

/// Removes a Terminating namespace once nothing is left in it.
pub(super) fn finish_if_empty(store: &Store, state: &mut State, namespace: &str) {
    let Some(rt) = state.registry.resolve("", "v1", "namespaces") else {
        return;
    };
    // Asked after every removal of a namespaced object: answered without decoding the namespace.
    if !Store::stored_object(state, &rt, "", namespace).is_some_and(|ns| ns.is_deleting())
        || !contents(state, namespace).is_empty()
    {
        return;
    }
    let Some(object) = store.stored(state, &rt, "", namespace) else {
        return;
    };
    store.remove(state, &rt, "", namespace, object);
}

fn contents(state: &State, namespace: &str) -> Vec<(std::sync::Arc<ResourceType>, String)> {
    let registry = state.registry.clone();
    let mut found = Vec::new();
    for (key, objects) in &state.objects {
        let Some((group, plural)) = key.split_once('/') else {
            continue;
        };
        let Some(rt) = registry
            .all()
            .into_iter()
            .find(|rt| rt.group == group && rt.plural == plural && rt.namespaced)
        else {
            continue;
        };
        let rt = std::sync::Arc::new(rt);
        for ((ns, name), _) in objects.range((namespace.to_owned(), String::new())..) {
            if ns != namespace {
                break;
            }
            found.push((rt.clone(), name.clone()));
        }
    }
    found
}
