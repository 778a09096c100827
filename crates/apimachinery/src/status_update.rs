//! What a write through `/status` takes of the object sent, and what it keeps of the stored one: the
//! status always comes from the request and the spec never does, but the metadata follows each
//! kind's status strategy in kube-apiserver, and they differ.

use serde_json::{Map, Value};

use crate::resource::{Origin, ResourceType};

/// What a kind's status strategy does with the metadata of a status write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MetadataRule {
    /// The request's metadata is written (labels, annotations, finalizers...), but for `reset`,
    /// kept as stored: most core and apps kinds, whose strategies reset the spec alone.
    Written {
        /// The `metadata` fields kept as stored (`labels`, `ownerReferences`).
        reset: &'static [&'static str],
    },
    /// Labels, annotations, finalizers and owner references stay as stored
    /// (`metav1.ResetObjectMetaForStatus`), the rest of the request's metadata is written.
    ResetForStatus,
    /// The stored metadata is kept whole: custom resources and the flow-control kinds.
    Kept,
}

/// What `metav1.ResetObjectMetaForStatus` keeps as stored, besides what no update changes.
const RESET_FOR_STATUS: &[&str] = &["labels", "annotations", "finalizers", "ownerReferences"];

/// The rule of `rt`'s status strategy. Built-in kinds not listed keep the stored metadata whole, the
/// safe side for a kind whose strategy is not known here.
pub fn metadata_rule(rt: &ResourceType) -> MetadataRule {
    if !matches!(rt.origin, Origin::BuiltIn) {
        return MetadataRule::Kept;
    }
    match (rt.group.as_str(), rt.plural.as_str()) {
        ("apps", "deployments") => MetadataRule::Written { reset: &["labels"] },
        // Old kubelets corrupt owner references in a way that breaks garbage collection.
        ("", "pods") => MetadataRule::Written {
            reset: &["ownerReferences"],
        },
        (
            "",
            "namespaces" | "nodes" | "services" | "replicationcontrollers" | "resourcequotas"
            | "persistentvolumes" | "persistentvolumeclaims",
        )
        | ("apps", "daemonsets" | "statefulsets" | "replicasets")
        | ("batch", "jobs" | "cronjobs")
        | ("autoscaling", "horizontalpodautoscalers")
        | ("policy", "poddisruptionbudgets")
        | ("networking.k8s.io", "ingresses")
        | ("certificates.k8s.io", "certificatesigningrequests")
        // Its strategy means to reset the metadata but resets the request's from itself.
        | ("apiextensions.k8s.io", "customresourcedefinitions") => MetadataRule::Written { reset: &[] },
        ("networking.k8s.io", "servicecidrs")
        | ("resource.k8s.io", "resourceclaims")
        | ("internal.apiserver.k8s.io", "storageversions")
        | ("storage.k8s.io", "volumeattachments")
        | ("admissionregistration.k8s.io", "validatingadmissionpolicies")
        | ("storagemigration.k8s.io", "storageversionmigrations")
        | ("apiregistration.k8s.io", "apiservices") => MetadataRule::ResetForStatus,
        _ => MetadataRule::Kept,
    }
}

/// The object a status write of `new` over `old` stores, before the fields no update changes (uid,
/// creation time, generation...) are restored and managedFields recorded: the request's status (none
/// removes it), the stored everything else but the metadata the kind's rule lets through.
pub fn status_update(rt: &ResourceType, old: &Value, new: &Value) -> Value {
    let mut next = old.clone();
    match new.get("status") {
        Some(status) => next["status"] = status.clone(),
        None => {
            if let Some(map) = next.as_object_mut() {
                map.remove("status");
            }
        }
    }
    let sent = new
        .get("metadata")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let stored = old
        .get("metadata")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let metadata = match metadata_rule(rt) {
        MetadataRule::Written { reset } => with_stored(sent, &stored, reset),
        MetadataRule::ResetForStatus => with_stored(sent, &stored, RESET_FOR_STATUS),
        MetadataRule::Kept => {
            let mut kept = stored;
            // The request's managedFields carry the status write's own entry.
            if let Some(managed) = sent.get("managedFields") {
                kept.insert("managedFields".into(), managed.clone());
            }
            kept
        }
    };
    next["metadata"] = Value::Object(metadata);
    next
}

/// `sent` with each of `fields` as `stored` has it (absent when it has none).
fn with_stored(
    mut sent: Map<String, Value>,
    stored: &Map<String, Value>,
    fields: &[&str],
) -> Map<String, Value> {
    for field in fields {
        match stored.get(*field) {
            Some(value) => sent.insert((*field).to_owned(), value.clone()),
            None => sent.remove(*field),
        };
    }
    sent
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::resource::builtins;

    fn builtin(group: &str, plural: &str) -> ResourceType {
        builtins()
            .into_iter()
            .find(|rt| rt.group == group && rt.plural == plural)
            .unwrap()
    }

    fn objects() -> (Value, Value) {
        let old = json!({"metadata": {"name": "a", "labels": {"l": "old"}, "annotations": {"a": "old"}},
            "spec": {"finalizers": ["kubernetes"]}, "status": {"phase": "Active"}});
        let new = json!({"metadata": {"name": "a", "labels": {"l": "new"}, "annotations": {"a": "new"},
            "managedFields": [{"manager": "m"}]},
            "spec": {"finalizers": []}, "status": {"phase": "Terminating"}});
        (old, new)
    }

    #[test]
    fn a_namespace_status_write_keeps_its_metadata_but_not_its_spec() {
        let (old, new) = objects();
        let next = status_update(&builtin("", "namespaces"), &old, &new);
        assert_eq!(next["metadata"], new["metadata"]);
        assert_eq!(next["spec"], old["spec"]);
        assert_eq!(next["status"], new["status"]);
    }

    #[test]
    fn each_kind_resets_what_its_strategy_resets() {
        let (old, new) = objects();
        let deployment = status_update(&builtin("apps", "deployments"), &old, &new);
        assert_eq!(
            (
                &deployment["metadata"]["labels"],
                &deployment["metadata"]["annotations"]
            ),
            (&json!({"l": "old"}), &json!({"a": "new"}))
        );
        let claim = status_update(
            &builtin("admissionregistration.k8s.io", "validatingadmissionpolicies"),
            &old,
            &new,
        );
        assert_eq!(
            (&claim["metadata"]["labels"], &claim["metadata"]["annotations"]),
            (&json!({"l": "old"}), &json!({"a": "old"}))
        );
        let flows = status_update(
            &builtin("flowcontrol.apiserver.k8s.io", "flowschemas"),
            &old,
            &new,
        );
        assert_eq!(
            flows["metadata"],
            json!({"name": "a", "labels": {"l": "old"}, "annotations": {"a": "old"},
                "managedFields": [{"manager": "m"}]})
        );
    }
}
