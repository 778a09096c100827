//! Workloads as kube-controller-manager and a node make them (K1): the Deployment controller keeps
//! ReplicaSets ([`deployments`]), the ReplicaSet controller keeps Pods ([`replica_sets`]), and so
//! does the replication manager for ReplicationControllers (the same controller upstream), and, when
//! switched on, one simulated node schedules and runs those Pods ([`node`]), as kwok's nodes do for a
//! control plane without kubelets. Each records the Events its upstream counterpart records and
//! writes the status it would write, computed from the objects below it.
//!
//! Like the other emulations, this runs under the store lock as a consequence of the write that set it
//! in motion: each write queues the objects it concerns (the Deployment of a changed ReplicaSet, the
//! ReplicaSet of a changed Pod...), and one loop syncs them in turn until nothing changes, so a
//! client that wrote a Deployment sees its ReplicaSets and Pods the moment the request returns. What
//! waits for time (a Pod available once ready for `minReadySeconds`, a rollout past its progress
//! deadline) is queued again when that time comes ([`tick`]).
//!
//! Not emulated: adoption of orphaned ReplicaSets and Pods by selector (only objects a controller made
//! are its own), rollbacks through the deprecated `rollbackTo`, ReplicaSets without a Deployment
//! beyond their own Pods, StatefulSets, DaemonSets and Jobs (they get no Pods).

pub(crate) mod deployments;
pub(crate) mod events;
pub(crate) mod node;
pub(crate) mod objects;
pub(crate) mod queue;
pub(crate) mod readiness;
pub(crate) mod replica_sets;
pub(crate) mod templates;

use apimachinery::{meta, resource::ResourceType};
use serde_json::Value;

use crate::store::{State, Store};
use objects::Kind;
pub(crate) use queue::Queue;

/// How many syncs one drain may make: far more than any rollout takes, so reaching it means two
/// syncs keep undoing each other; the drain stops rather than hold the lock for ever.
const SYNCS_PER_DRAIN: usize = 100_000;

/// After a write of `rt`'s object `namespace`/`name` (now `stored`).
pub(crate) fn after_write(store: &Store, state: &mut State, rt: &ResourceType, stored: &Value) {
    if let Some(kind) = Kind::of(rt) {
        enqueue(store, state, kind, stored);
        drain(store, state);
    }
}

/// After `object` of `rt` is gone for good.
pub(crate) fn after_remove(store: &Store, state: &mut State, rt: &ResourceType, object: &Value) {
    if let Some(kind) = Kind::of(rt) {
        enqueue(store, state, kind, object);
        drain(store, state);
    }
}

/// Queues `object` and the controller above it, whose status counts it.
fn enqueue(store: &Store, state: &mut State, kind: Kind, object: &Value) {
    let (namespace, name) = (meta::namespace(object).to_owned(), meta::name(object).to_owned());
    let above: &[Kind] = match kind {
        Kind::Pod => &[Kind::ReplicaSet, Kind::ReplicationController],
        Kind::ReplicaSet => &[Kind::Deployment],
        _ => &[],
    };
    for above in above {
        if let Some(owner) = objects::controller(store, state, *above, object) {
            state.extensions.get::<Queue>().now.push((
                *above,
                namespace.clone(),
                meta::name(&owner).to_owned(),
            ));
        }
    }
    state.extensions.get::<Queue>().now.push((kind, namespace, name));
}

/// Syncs what the timers say is due.
pub(crate) fn tick(store: &Store, state: &mut State) {
    let now = jiff::Timestamp::now().as_second();
    let queue = state.extensions.get::<Queue>();
    while let Some(first) = queue.timers.first().cloned() {
        if first.0 > now {
            break;
        }
        queue.timers.remove(&first);
        queue.now.push(first.1);
    }
    drain(store, state);
}

fn drain(store: &Store, state: &mut State) {
    if !state.extensions.get::<Queue>().now.start_draining() {
        return;
    }
    let mut syncs = 0;
    while let Some((kind, namespace, name)) = state.extensions.get::<Queue>().now.pop() {
        syncs += 1;
        if syncs > SYNCS_PER_DRAIN {
            tracing::warn!(
                ?kind,
                namespace,
                name,
                "workload controllers did not settle; stopped"
            );
            state.extensions.get::<Queue>().now.reset();
            break;
        }
        match kind {
            Kind::Deployment => deployments::sync(store, state, &namespace, &name),
            Kind::ReplicaSet | Kind::ReplicationController => {
                replica_sets::sync(store, state, kind, &namespace, &name)
            }
            Kind::Pod => node::sync(store, state, &namespace, &name),
            Kind::Node | Kind::Event => {}
        }
    }
    state.extensions.get::<Queue>().now.stop_draining();
}
