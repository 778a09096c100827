//! CustomResourceDefinitions: served the moment they are written (V1, D5), established by a status
//! write of their own right after (as kube-apiserver's naming and establishing controllers do), and torn
//! down with every custom resource they serve (L6).

use std::collections::{BTreeMap, HashMap};

use apimachinery::{meta, resource::ResourceType};
use serde_json::{Value, json};

use crate::{
    store::{DeletePropagation, Registry, State, Store, WriteOptions, storage_key},
    strategy::writes,
};

/// Serves again the custom resources of every stored CRD, as admitting them did before a restart.
/// A CRD being deleted is served too, so that its teardown can finish.
pub(super) fn register_stored(
    registry: &mut Registry,
    objects: &HashMap<String, BTreeMap<(String, String), Value>>,
) {
    let Some(crds) = objects.get("apiextensions.k8s.io/customresourcedefinitions") else {
        return;
    };
    for crd in crds.values() {
        match apimachinery::resource::from_crd(crd) {
            Ok(types) => registry.set_crd(meta::name(crd), types),
            Err(causes) => tracing::warn!(
                crd = meta::name(crd),
                causes = %apimachinery::error::render_causes(&causes),
                "a stored CRD is no longer valid; its resources are not served"
            ),
        }
    }
}

const CLEANUP_FINALIZER: &str = "customresourcecleanup.apiextensions.k8s.io";
/// The field manager kube-apiserver's own CRD controllers write as.
const CONTROLLERS: &str = "kube-apiserver";

/// What kube-apiserver's CRD controllers write after a CRD is created or renamed, as a status write
/// of their own: the names accepted, the NamesAccepted and Established conditions. Done at once after the write that called for it, so a client that reads the CRD after
/// its write was answered finds it established, while the answer itself is the CRD as written, as
/// on a real server.
pub(super) fn establish(store: &Store, state: &mut State, rt: &ResourceType, stored: &Value) {
    if meta::is_deleting(stored) {
        return;
    }
    let mut next = stored.clone();
    let names = next.pointer("/spec/names").cloned().unwrap_or(json!({}));
    next["status"]["acceptedNames"] = names;
    let now = meta::now_rfc3339();
    let mut conditions = next
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    set_condition(
        &mut conditions,
        "NamesAccepted",
        "NoConflicts",
        "no conflicts found",
        &now,
    );
    set_condition(
        &mut conditions,
        "Established",
        "InitialNamesAccepted",
        "the initial names have been accepted",
        &now,
    );
    next["status"]["conditions"] = json!(conditions);
    if next == *stored {
        return;
    }
    let name = meta::name(stored).to_owned();
    let options = WriteOptions {
        field_manager: Some(CONTROLLERS.to_owned()),
        ..WriteOptions::default()
    };
    let rt = std::sync::Arc::new(rt.clone());
    let written = writes::update_locked(store, state, &rt, "", &name, stored.clone(), next, &options, true);
    if let Err(error) = written {
        tracing::warn!(%error, crd = name, "establishing a CRD was refused");
    }
}

/// Sets a True condition of `kind`, keeping its transition time when it was True already.
fn set_condition(conditions: &mut Vec<Value>, kind: &str, reason: &str, message: &str, now: &str) {
    let wanted = json!({"type": kind, "status": "True", "lastTransitionTime": now, "reason": reason, "message": message});
    match conditions
        .iter_mut()
        .find(|c| c.get("type").and_then(Value::as_str) == Some(kind))
    {
        Some(existing) if existing.get("status").and_then(Value::as_str) == Some("True") => {
            existing["reason"] = json!(reason);
            existing["message"] = json!(message);
        }
        Some(existing) => *existing = wanted,
        None => conditions.push(wanted),
    }
}

/// Marks the CRD deleting, deletes every custom resource it serves, and removes it once none is left.
/// The answer is the CRD as marked, before its teardown: on a real server the teardown runs behind
/// the cleanup finalizer, after the DELETE is answered.
pub(super) fn terminate(store: &Store, state: &mut State, rt: &ResourceType, crd: &Value) -> Value {
    let name = meta::name(crd).to_owned();
    let marked = if meta::is_deleting(crd) {
        crd.clone()
    } else {
        // The first DELETE adds the cleanup finalizer, behind which the custom resources go.
        let mut next = crd.clone();
        let mut finalizers = meta::finalizers(&next);
        if !finalizers.iter().any(|f| f == CLEANUP_FINALIZER) {
            finalizers.push(CLEANUP_FINALIZER.to_owned());
            meta::set_finalizers(&mut next, &finalizers);
        }
        meta::metadata_mut(&mut next).insert("deletionTimestamp".into(), json!(meta::now_rfc3339()));
        if next.get("status").is_some_and(Value::is_object) {
            let mut conditions = next
                .pointer("/status/conditions")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default();
            set_condition(
                &mut conditions,
                "Terminating",
                "InstanceDeletionPending",
                "CustomResourceDefinition marked for deletion; CustomResource deletion will begin soon",
                &meta::now_rfc3339(),
            );
            next["status"]["conditions"] = json!(conditions);
        }
        store.mark_deleting(state, rt, "", crd, next)
    };
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
    marked
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
    store.remove_finished(state, &crd_type, "", crd);
    super::api_services::reconcile(store, state);
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
