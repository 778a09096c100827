//! What kube-apiserver sets on a new Pod: status Pending and its quality-of-service class, whatever
//! status the client sent (a kubelet reports the rest), and what its default admission plugins add:
//! the priority of the pod's class (Priority) and tolerations of unready and unreachable nodes for
//! five minutes (DefaultTolerationSeconds).

pub(crate) mod qos;

use apimachinery::FieldCause;
use serde_json::{Value, json};

use super::Kind;
use crate::store::Preparing;

/// Pods: what a create sets.
pub(super) struct Pods;

impl Kind for Pods {
    fn prepare(&self, write: Preparing<'_>) -> Result<(), Vec<FieldCause>> {
        if write.old.is_none() {
            prepare_for_create(write.object);
        }
        Ok(())
    }

    fn tracks_generation(&self) -> bool {
        true
    }

    fn returns_deleted_object(&self) -> bool {
        true
    }

    fn status_skips_owner_reference_check(&self) -> bool {
        true
    }
}

/// Sets what kube-apiserver sets on a new Pod.
fn prepare_for_create(object: &mut Value) {
    let qos = qos::qos_class(object);
    object["status"] = json!({"phase": "Pending", "qosClass": qos});
    if let Some(spec) = object.get_mut("spec").and_then(Value::as_object_mut) {
        admit_priority(spec);
        tolerate_node_problems(spec);
    }
}

/// The Priority plugin: the priority of the pod's PriorityClass, 0 without one (no class here is the
/// global default), and the class's preemption policy. Only the two system classes every cluster
/// has are known.
fn admit_priority(spec: &mut serde_json::Map<String, Value>) {
    let priority = match spec.get("priorityClassName").and_then(Value::as_str) {
        None | Some("") => 0,
        Some("system-node-critical") => 2_000_001_000,
        Some("system-cluster-critical") => 2_000_000_000,
        Some(_) => return,
    };
    spec.entry("priority").or_insert(json!(priority));
    spec.entry("preemptionPolicy")
        .or_insert(json!("PreemptLowerPriority"));
}

/// The DefaultTolerationSeconds plugin: a pod that does not already tolerate the `NoExecute` taints
/// of a node that is not ready or unreachable tolerates them for 300 seconds.
fn tolerate_node_problems(spec: &mut serde_json::Map<String, Value>) {
    let mut tolerations = spec
        .get("tolerations")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let before = tolerations.len();
    for key in ["node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"] {
        let tolerated = tolerations.iter().any(|t| {
            let field = |name: &str| t.get(name).and_then(Value::as_str).unwrap_or_default();
            let key_matches =
                field("key") == key || (field("key").is_empty() && field("operator") == "Exists");
            key_matches && matches!(field("effect"), "" | "NoExecute")
        });
        if !tolerated {
            tolerations.push(json!({"key": key, "operator": "Exists", "effect": "NoExecute",
                "tolerationSeconds": 300}));
        }
    }
    if tolerations.len() != before {
        spec.insert("tolerations".into(), Value::Array(tolerations));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_pod_is_pending_with_its_quality_of_service() {
        let mut pod = json!({"spec": {"containers": [{"name": "a"}]}, "status": {"phase": "Running"}});
        prepare_for_create(&mut pod);
        assert_eq!(
            pod["status"],
            json!({"phase": "Pending", "qosClass": "BestEffort"})
        );
    }

    #[test]
    fn a_new_pod_gets_the_default_priority_and_tolerations() {
        let mut pod = json!({"spec": {"containers": [{"name": "a"}],
            "tolerations": [{"key": "node.kubernetes.io/unreachable", "operator": "Exists"}]}});
        prepare_for_create(&mut pod);
        assert_eq!(pod["spec"]["priority"], 0);
        assert_eq!(pod["spec"]["preemptionPolicy"], "PreemptLowerPriority");
        // The unreachable taint is tolerated already (any effect); only not-ready is added.
        assert_eq!(
            pod["spec"]["tolerations"],
            json!([{"key": "node.kubernetes.io/unreachable", "operator": "Exists"},
                {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute",
                    "tolerationSeconds": 300}])
        );
        let mut critical = json!({"spec": {"priorityClassName": "system-node-critical"}});
        prepare_for_create(&mut critical);
        assert_eq!(critical["spec"]["priority"], 2_000_001_000);
    }
}
