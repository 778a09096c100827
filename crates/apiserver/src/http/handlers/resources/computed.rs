//! Kinds answered from what the server knows of itself rather than from stored objects: component
//! statuses (B7). Get and list only.

use apimachinery::resource::ResourceType;
use serde_json::{Value, json};

use crate::{
    error::{Error, Result},
    store::subject,
};

pub fn is_computed(rt: &ResourceType) -> bool {
    rt.is_builtin() && rt.group.is_empty() && rt.plural == "componentstatuses"
}

/// Every object, by name.
pub fn list() -> Vec<Value> {
    component_statuses()
}

pub fn get(rt: &ResourceType, name: &str) -> Result<Value> {
    list()
        .into_iter()
        .find(|o| o.pointer("/metadata/name").and_then(Value::as_str) == Some(name))
        .ok_or_else(|| Error::NotFound(subject(rt, name)))
}

/// The embedded server's components: its controllers run in-process with it, its storage is its own
/// memory (and data dir), and no scheduler runs, so pods stay unscheduled.
fn component_statuses() -> Vec<Value> {
    let status = |name: &str, healthy: bool, message: &str| {
        json!({"apiVersion": "v1", "kind": "ComponentStatus",
            "metadata": {"name": name, "creationTimestamp": null},
            "conditions": [{"type": "Healthy", "status": if healthy { "True" } else { "False" }, "message": message}]})
    };
    vec![
        status("controller-manager", true, "ok"),
        status(
            "scheduler",
            false,
            "no scheduler runs in the embedded server: pods stay unscheduled",
        ),
        status("storage", true, "ok"),
    ]
}
