//! Instantly-ready Deployments and StatefulSets (K1): after every spec change the status says all
//! replicas are updated, ready and available, as if kube-controller-manager and kubelets had run.

use apimachinery::resource::ResourceType;
use serde_json::{Value, json};

use crate::store::{State, Store, meta};

/// Set to `"true"` on a Deployment to keep it never ready (readyReplicas 0, Available=False), for tests
/// of rollouts that never finish.
pub const NEVER_READY_ANNOTATION: &str = "apiserver.dev/never-ready";

pub(super) fn mark_ready(store: &Store, state: &mut State, rt: &ResourceType, namespace: &str, name: &str) {
    let Some(object) = store.stored(state, rt, namespace, name) else {
        return;
    };
    if meta::is_deleting(&object) {
        return;
    }
    let desired = desired_status(&object);
    if object.get("status") == Some(&desired) {
        return;
    }
    let mut next = object.clone();
    next["status"] = desired;
    store.put(state, rt, namespace, name, next, Some(object));
}

fn desired_status(object: &Value) -> Value {
    let replicas = object
        .pointer("/spec/replicas")
        .and_then(Value::as_i64)
        .unwrap_or(1);
    let never_ready = meta::str_at(
        object,
        &format!(
            "/metadata/annotations/{}",
            NEVER_READY_ANNOTATION.replace('/', "~1")
        ),
    ) == Some("true");
    let ready = if never_ready { 0 } else { replicas };
    let now = object
        .pointer("/metadata/creationTimestamp")
        .cloned()
        .unwrap_or_else(|| json!(meta::now_rfc3339()));
    let condition = |kind: &str, status: bool, reason: &str, message: &str| {
        json!({
            "type": kind, "status": if status { "True" } else { "False" }, "reason": reason, "message": message,
            "lastUpdateTime": now, "lastTransitionTime": now,
        })
    };
    let mut status = json!({
        "observedGeneration": meta::generation(object),
        "replicas": replicas,
        "updatedReplicas": replicas,
        "readyReplicas": ready,
        "availableReplicas": ready,
        "conditions": [
            if never_ready {
                condition("Available", false, "MinimumReplicasUnavailable", "Deployment does not have minimum availability.")
            } else {
                condition("Available", true, "MinimumReplicasAvailable", "Deployment has minimum availability.")
            },
            if never_ready {
                condition("Progressing", true, "ReplicaSetUpdated", "ReplicaSet is progressing.")
            } else {
                condition("Progressing", true, "NewReplicaSetAvailable", "ReplicaSet has successfully progressed.")
            },
        ],
    });
    if ready < replicas {
        status["unavailableReplicas"] = json!(replicas - ready);
    }
    if replicas == 0 {
        // Kubernetes omits zero counts.
        for field in [
            "replicas",
            "updatedReplicas",
            "readyReplicas",
            "availableReplicas",
        ] {
            status.as_object_mut().map(|s| s.remove(field));
        }
    }
    status
}
