//! The `options` of an AdmissionReview: what the request said, as kube-apiserver passes it to webhooks
//! and policies.

use serde_json::{Value, json};

use crate::store::{DeleteOptions, DeletePropagation, WriteOptions};

/// `CreateOptions` or `UpdateOptions`, as a review's `options` carries them.
pub(super) fn write_options_object(created: bool, options: &WriteOptions) -> Value {
    let kind = if created { "CreateOptions" } else { "UpdateOptions" };
    let mut object = json!({"kind": kind, "apiVersion": "meta.k8s.io/v1"});
    if let Some(manager) = options
        .field_manager
        .as_ref()
        .filter(|_| options.field_manager_named)
    {
        object["fieldManager"] = json!(manager);
    }
    if options.dry_run {
        object["dryRun"] = json!(["All"]);
    }
    object
}

/// `DeleteOptions`, as a review's `options` carries them: what the request said.
pub(super) fn delete_options_object(options: &DeleteOptions) -> Value {
    let mut object = json!({"kind": "DeleteOptions", "apiVersion": "meta.k8s.io/v1"});
    if options.dry_run {
        object["dryRun"] = json!(["All"]);
    }
    if options.propagation_named {
        let policy = match options.propagation {
            DeletePropagation::Background => "Background",
            DeletePropagation::Foreground => "Foreground",
            DeletePropagation::Orphan => "Orphan",
        };
        object["propagationPolicy"] = json!(policy);
    }
    let preconditions = [
        ("uid", &options.precondition_uid),
        ("resourceVersion", &options.precondition_resource_version),
    ];
    for (key, value) in preconditions {
        if let Some(value) = value {
            object["preconditions"][key] = json!(value);
        }
    }
    object
}
