//! Namespaces' strategy: the namespace controller's finalizer in `spec`, kept by every write but
//! `finalize`; the phase; a namespace goes only once its `spec.finalizers` are gone too; and the
//! namespaces NamespaceLifecycle never lets go. Their teardown is the namespace controller's
//! (`emulated::namespaces`).

use apimachinery::FieldCause;
use apimachinery::{meta, resource::ResourceType, validation::NameRule};
use serde_json::{Value, json};

use super::Kind;
use crate::error::Error;
use crate::store::{Preparing, Store};

/// The Namespace `name`, when it exists: what admission matches a `namespaceSelector` against and
/// shows a policy as `namespaceObject`.
pub(crate) fn stored(store: &Store, name: &str) -> Option<Value> {
    store.find("", "v1", "namespaces", "", name)
}

/// Namespaces: their finalizers, phase and the ones that may not be deleted.
pub(super) struct Namespaces;

impl Kind for Namespaces {
    fn prepare(&self, write: Preparing<'_>) -> Result<(), Vec<FieldCause>> {
        if write.old.is_none() {
            record_server_create(write.rt, write.object);
        }
        prepare(write.old, write.object, write.subresource == Some("finalize"));
        Ok(())
    }

    /// A namespace waits for its `spec.finalizers` too, as kube-apiserver's namespace registry does.
    fn may_go(&self, object: &Value) -> bool {
        spec_finalizers(object).is_empty()
    }

    fn name_rule(&self) -> NameRule {
        NameRule::Label
    }

    fn returns_deleted_object(&self) -> bool {
        true
    }

    fn is_its_own_namespace(&self) -> bool {
        true
    }

    /// The namespaces kube-apiserver's NamespaceLifecycle admission never lets go: deleting one
    /// (directly, by deletecollection or by garbage collection) is 403.
    fn check_deletable(&self, name: &str) -> Result<(), Error> {
        if IMMORTAL.contains(&name) {
            return Err(Error::Forbidden(format!(
                "namespaces \"{name}\" is forbidden: this namespace may not be deleted"
            )));
        }
        Ok(())
    }
}

/// The namespace controller's finalizer, which it takes away once the namespace is empty.
pub(crate) const KUBERNETES_FINALIZER: &str = "kubernetes";

/// The namespaces kube-apiserver's NamespaceLifecycle admission never lets go.
const IMMORTAL: &[&str] = &["default", "kube-system", "kube-public"];

/// The fields the namespace registry sets after the write's managedFields are recorded (its name
/// label is a default: see `apimachinery::defaults`). A new namespace gets the namespace controller's
/// finalizer; an update keeps the stored `spec.finalizers`, which only `finalize` changes.
fn prepare(old: Option<&Value>, object: &mut Value, finalizing: bool) {
    match old {
        None => object["spec"] = json!({"finalizers": [KUBERNETES_FINALIZER]}),
        Some(_) if finalizing => {
            let finalizers = spec_finalizers(object);
            object["spec"] = spec_with(&finalizers);
        }
        Some(old) => object["spec"] = spec_with(&spec_finalizers(old)),
    }
    if object.pointer("/status/phase").is_none() {
        object["status"] = json!({"phase": "Active"});
    }
}

/// A namespace's `spec` as Go prints it: without `finalizers` when there are none.
pub(crate) fn spec_with(finalizers: &[String]) -> Value {
    if finalizers.is_empty() {
        json!({})
    } else {
        json!({ "finalizers": finalizers })
    }
}

/// The finalizers a namespace waits for before it goes, besides its metadata's.
pub(crate) fn spec_finalizers(namespace: &Value) -> Vec<String> {
    meta::strings_at(namespace, "/spec/finalizers")
}

/// The namespaces every cluster has are created by kube-apiserver itself, which records its create
/// (the name label) in their managedFields as any writer's: without that entry, no later update of
/// them would be recorded either. A client's create has been recorded by now, so a namespace without
/// managedFields is one of the server's.
fn record_server_create(rt: &ResourceType, object: &mut Value) {
    if object.pointer("/metadata/managedFields").is_none() {
        crate::strategy::record_update(rt, None, object, "kube-apiserver", None);
    }
}
