//! CustomResourceDefinitions' strategy: the versions their objects are stored at, validation, and
//! their custom resources served from the moment they are admitted. Establishing them and tearing
//! them down is the CRD controllers' (`emulated::crds`).

use apimachinery::{FieldCause, meta, schema::validate_crd};
use serde_json::{Value, json};

use super::Kind;
use crate::store::Preparing;
use crate::store::{State, Store};

/// The CustomResourceDefinition `name`, when it exists: what a conversion webhook is configured by.
pub(crate) fn stored(store: &Store, name: &str) -> Option<Value> {
    store.find(
        "apiextensions.k8s.io",
        "v1",
        "customresourcedefinitions",
        "",
        name,
    )
}

/// CustomResourceDefinitions: prepared, validated and served.
pub(super) struct CustomResourceDefinitions;

impl Kind for CustomResourceDefinitions {
    fn prepare(&self, write: Preparing<'_>) -> Result<(), Vec<FieldCause>> {
        prepare(write.state, write.old, write.object)
    }

    fn tracks_generation(&self) -> bool {
        true
    }
}

/// Prepares and validates a CRD create (`old` = None) or update.
fn prepare(state: &mut State, old: Option<&Value>, object: &mut Value) -> Result<(), Vec<FieldCause>> {
    // The versions objects are stored at are set before validation, which checks them against the
    // versions served (as kube-apiserver's strategy prepares a CRD before validating it).
    let storage = stored_versions(old, object);
    match old {
        None => {
            // As Go prints a new CRD's status: `conditions` has no omitempty, so it is null. Accepting
            // the names is the naming controller's, in a write of its own (see `establish`).
            object["status"] = json!({
                "acceptedNames": {"kind": "", "plural": ""},
                "conditions": null,
                "storedVersions": storage,
            })
        }
        Some(_) => {
            if !object.get("status").is_some_and(Value::is_object) {
                object["status"] = json!({});
            }
            object["status"]["storedVersions"] = json!(storage);
        }
    }
    let causes = validate_crd(object);
    if !causes.is_empty() {
        return Err(causes);
    }
    let types = apimachinery::resource::from_crd(object)?;
    let name = meta::name(object).to_owned();
    if !meta::is_deleting(object) {
        state.registry.set_crd(&name, types);
    }
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
    // Only the first version marked storage counts: a CRD marking two is invalid, and told so
    // by the stored versions missing the second.
    let storage = object
        .pointer("/spec/versions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .find(|v| v.get("storage").and_then(Value::as_bool) == Some(true))
        .and_then(|v| v.get("name").cloned());
    if let Some(version) = storage
        && !stored.contains(&version)
    {
        stored.push(version);
    }
    stored
}
