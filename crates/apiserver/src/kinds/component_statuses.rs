//! ComponentStatuses: deprecated since v1.19, and answered from what the server knows of itself
//! rather than from stored objects (B7).

use serde_json::{Value, json};

use super::Kind;

/// ComponentStatuses: computed, and deprecated.
pub(super) struct ComponentStatuses;

impl Kind for ComponentStatuses {
    fn deprecation(&self, version: &str) -> Option<&'static str> {
        (version == "v1").then_some("v1 ComponentStatus is deprecated in v1.19+")
    }

    fn computed_objects(&self) -> Option<Vec<Value>> {
        Some(component_statuses())
    }
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
