//! The ReplicaSet controller: as many active Pods as `spec.replicas` asks, made from the template
//! (Event `SuccessfulCreate`) or deleted by the controller's preference (Event `SuccessfulDelete`),
//! and the status counted from them: replicas, fully labeled, ready and available replicas, the
//! generation observed, and a `ReplicaFailure` condition while Pods cannot be made.

use apimachinery::meta;
use serde_json::{Map, Value, json};

use super::{
    events::{self, Source},
    node,
    objects::{self, Component, Kind, int_at},
    readiness::{self, Availability},
    templates,
};
use crate::store::{State, Store};

/// The kind's type, and who records its Events: a ReplicationController is kept by the replication
/// manager, the ReplicaSet controller under another name.
fn controller_of(kind: Kind) -> ((&'static str, &'static str), Source) {
    match kind {
        Kind::ReplicationController => (("v1", "ReplicationController"), Source::ReplicationManager),
        _ => (("apps/v1", "ReplicaSet"), Source::ReplicaSetController),
    }
}

/// Syncs the ReplicaSet or ReplicationController (`kind`) `namespace`/`name`.
pub(crate) fn sync(store: &Store, state: &mut State, kind: Kind, namespace: &str, name: &str) {
    let Some(replica_set) = objects::get(store, state, kind, namespace, name) else {
        return;
    };
    let mut failure = None;
    if !meta::is_deleting(&replica_set) {
        failure = manage_replicas(store, state, kind, &replica_set);
    }
    let pods = active_pods(state, &replica_set);
    // The node reports again the Pods whose readiness the ReplicaSet's annotations changed.
    let simulated = state.extensions.get::<Option<node::SimulatedNode>>().is_some();
    for pod in pods.iter().filter(|_| simulated) {
        if node::reports_ready(pod) != Some(node::expected_ready(store, state, pod)) {
            state.extensions.get::<super::queue::Queue>().now.push((
                Kind::Pod,
                namespace.to_owned(),
                meta::name(pod).to_owned(),
            ));
        }
    }
    update_status(store, state, kind, &replica_set, &pods, failure);
}

fn active_pods(state: &State, replica_set: &Value) -> Vec<Value> {
    objects::controlled_by(state, Kind::Pod, meta::uid(replica_set))
        .into_iter()
        .filter(readiness::is_active)
        .collect()
}

/// Makes or deletes Pods until as many are active as asked. Returns why Pods could not be made.
fn manage_replicas(store: &Store, state: &mut State, kind: Kind, replica_set: &Value) -> Option<String> {
    let (type_meta, source) = controller_of(kind);
    let pods = active_pods(state, replica_set);
    let wanted = usize::try_from(int_at(replica_set, "/spec/replicas", 1)).unwrap_or(0);
    if pods.len() < wanted {
        for _ in pods.len()..wanted {
            let pod = templates::pod_from(replica_set, type_meta);
            match objects::create(
                store,
                state,
                Kind::Pod,
                meta::namespace(replica_set),
                pod,
                Component::ControllerManager,
            ) {
                Ok(pod) => {
                    let message = format!("Created pod: {}", meta::name(&pod));
                    events::normal(
                        store,
                        state,
                        source,
                        type_meta,
                        replica_set,
                        "SuccessfulCreate",
                        message,
                    );
                }
                Err(error) => {
                    let message = format!("Error creating: {error}");
                    events::warning(
                        store,
                        state,
                        source,
                        type_meta,
                        replica_set,
                        "FailedCreate",
                        message,
                    );
                    return Some(error);
                }
            }
        }
    } else if pods.len() > wanted {
        let mut ranked = pods;
        ranked.sort_by_cached_key(deletion_rank);
        for pod in ranked.iter().take(ranked.len() - wanted) {
            objects::delete(store, state, Kind::Pod, pod);
            let message = format!("Deleted pod: {}", meta::name(pod));
            events::normal(
                store,
                state,
                source,
                type_meta,
                replica_set,
                "SuccessfulDelete",
                message,
            );
        }
    }
    None
}

type DeletionRank = (
    bool,
    u8,
    bool,
    i64,
    std::cmp::Reverse<Option<i64>>,
    std::cmp::Reverse<i64>,
    std::cmp::Reverse<String>,
);

/// Which Pods go first when scaling down, as the controller ranks them: not yet on a node, then
/// Pending before Unknown before Running, not ready before ready, a lower `pod-deletion-cost`, ready
/// for less time, restarted more, and the newest.
fn deletion_rank(pod: &Value) -> DeletionRank {
    let scheduled = meta::str_at(pod, "/spec/nodeName").is_some_and(|n| !n.is_empty());
    let phase = match readiness::phase(pod) {
        "Pending" => 0,
        "Unknown" => 1,
        "Running" => 2,
        _ => 3,
    };
    let cost: i64 = meta::str_at(
        pod,
        "/metadata/annotations/controller.kubernetes.io~1pod-deletion-cost",
    )
    .and_then(|c| c.parse().ok())
    .unwrap_or(0);
    let ready_since = readiness::ready_since(pod);
    let restarts: i64 = pod
        .pointer("/status/containerStatuses")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|c| c.get("restartCount")?.as_i64())
        .sum();
    let created = meta::str_at(pod, "/metadata/creationTimestamp")
        .unwrap_or_default()
        .to_owned();
    (
        scheduled,
        phase,
        readiness::is_ready(pod),
        cost,
        std::cmp::Reverse(ready_since),
        std::cmp::Reverse(restarts),
        std::cmp::Reverse(created),
    )
}

fn update_status(
    store: &Store,
    state: &mut State,
    kind: Kind,
    replica_set: &Value,
    pods: &[Value],
    failure: Option<String>,
) {
    let now = jiff::Timestamp::now().as_second();
    let min_ready = int_at(replica_set, "/spec/minReadySeconds", 0);
    let template_labels = replica_set
        .pointer("/spec/template/metadata/labels")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let fully_labeled = pods
        .iter()
        .filter(|pod| {
            let labels = pod.pointer("/metadata/labels").and_then(Value::as_object);
            template_labels
                .iter()
                .all(|(key, value)| labels.and_then(|l| l.get(key)) == Some(value))
        })
        .count();
    let ready = pods.iter().filter(|pod| readiness::is_ready(pod)).count();
    let mut available = 0;
    let mut next_available = None;
    for pod in pods {
        match readiness::availability(pod, min_ready, now) {
            Availability::Available => available += 1,
            Availability::At(at) => next_available = Some(next_available.map_or(at, |n: i64| n.min(at))),
            Availability::Unready => {}
        }
    }
    if let Some(at) = next_available {
        state.extensions.get::<super::queue::Queue>().after(
            at,
            kind,
            meta::namespace(replica_set),
            meta::name(replica_set),
        );
    }
    let mut status = Map::new();
    status.insert("replicas".into(), json!(pods.len()));
    for (field, count) in [
        ("fullyLabeledReplicas", fully_labeled),
        ("readyReplicas", ready),
        ("availableReplicas", available),
    ] {
        if count > 0 {
            status.insert(field.into(), json!(count));
        }
    }
    status.insert("observedGeneration".into(), json!(meta::generation(replica_set)));
    if let Some(conditions) = conditions(replica_set, failure) {
        status.insert("conditions".into(), conditions);
    }
    let status = Value::Object(status);
    if replica_set.get("status") == Some(&status) {
        return;
    }
    let mut next = replica_set.clone();
    next["status"] = status;
    objects::update(
        store,
        state,
        kind,
        replica_set,
        next,
        Component::ControllerManager,
        true,
    );
}

/// The `ReplicaFailure` condition: set while Pods cannot be made, gone once they can.
fn conditions(replica_set: &Value, failure: Option<String>) -> Option<Value> {
    let mut conditions: Vec<Value> = replica_set
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    conditions.retain(|c| c["type"] != "ReplicaFailure" || failure.is_some());
    if let Some(message) = failure {
        let kept = conditions
            .iter()
            .any(|c| c["type"] == "ReplicaFailure" && c["message"] == message.as_str());
        if !kept {
            conditions.retain(|c| c["type"] != "ReplicaFailure");
            conditions.push(
                json!({"type": "ReplicaFailure", "status": "True", "reason": "FailedCreate",
                "message": message, "lastTransitionTime": meta::now_rfc3339()}),
            );
        }
    }
    (!conditions.is_empty()).then_some(Value::Array(conditions))
}
