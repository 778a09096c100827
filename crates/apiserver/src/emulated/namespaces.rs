//! Namespaces (L3, L4): the ones every cluster has, and the namespace controller's teardown: Terminating, every object inside
//! deleted (honouring finalizers), then the namespace itself.

use apimachinery::{meta, resource::ResourceType};
use serde_json::{Value, json};

use crate::{
    store::{DeletePropagation, State, Store, WriteOptions},
    strategy::writes,
};

/// Where namespaces are stored.
pub(super) const STORAGE_KEY: &str = "/namespaces";

/// The namespaces every cluster has (L3).
const DEFAULTS: [&str; 4] = ["default", "kube-system", "kube-public", "kube-node-lease"];

/// Creates the namespaces every cluster has, when missing.
pub(super) fn create_defaults(store: &Store, state: &mut State) {
    let Some(rt) = state.registry.resolve("", "v1", "namespaces") else {
        return;
    };
    for name in DEFAULTS {
        if Store::stored_object(state, &rt, "", name).is_none() {
            let object = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}});
            // Creating a fresh, valid namespace cannot fail.
            let _ = crate::strategy::writes::create_locked(
                store,
                state,
                &rt,
                "",
                object,
                &WriteOptions::default(),
            );
        }
    }
}

pub(super) fn terminate(store: &Store, state: &mut State, rt: &ResourceType, namespace: &Value) -> Value {
    let name = meta::name(namespace).to_owned();
    let mut current = namespace.clone();
    if !meta::is_deleting(namespace) {
        let mut next = namespace.clone();
        let metadata = meta::metadata_mut(&mut next);
        // The namespace registry deletes by its own rules: a deletion time and no grace period.
        metadata.insert("deletionTimestamp".into(), json!(meta::now_rfc3339()));
        next["status"] = json!({"phase": "Terminating"});
        current = store.mark_deleting(state, rt, "", namespace, next);
    }
    for (rt, object_name) in contents(state, &name) {
        // Objects with finalizers stay until their controllers release them; the rest go now.
        let _ = store.delete_locked(state, &rt, &name, &object_name, DeletePropagation::Background);
    }
    finish_if_empty(store, state, &name);
    store.stored(state, rt, "", &name).unwrap_or(current)
}

/// Removes a Terminating namespace once nothing is left in it, as the namespace controller does by
/// taking its own finalizer away; a finalizer of anyone else's in `spec.finalizers` keeps it.
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
    let finalizers = crate::kinds::namespaces::spec_finalizers(&object);
    let others: Vec<String> = finalizers
        .iter()
        .filter(|f| *f != crate::kinds::namespaces::KUBERNETES_FINALIZER)
        .cloned()
        .collect();
    if others.is_empty() {
        store.remove_finished(state, &rt, "", object);
    } else if others.len() != finalizers.len() {
        // The controller's own finalizer goes, by its write through `finalize`; the namespace waits for
        // the others'.
        let mut next = object.clone();
        next["spec"] = crate::kinds::namespaces::spec_with(&others);
        let options = WriteOptions {
            subresource: Some("finalize"),
            ..WriteOptions::default()
        };
        let written = writes::update_locked(store, state, &rt, "", namespace, object, next, &options, false);
        if let Err(error) = written {
            tracing::warn!(%error, namespace, "the namespace controller's finalize was refused");
        }
    }
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
