//! Events as kube-controller-manager's controllers record them: core Events named after the object
//! and the time in nanoseconds, from a source component, counted once (client-go's recorder).

use apimachinery::meta;
use serde_json::{Value, json};

use super::objects::{self, Component, Kind};
use crate::store::{State, Store};

/// The components that report, as their Events' `source.component` and `reportingComponent` say.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Source {
    DeploymentController,
    ReplicaSetController,
    ReplicationManager,
    Scheduler,
}

impl Source {
    fn component(self) -> &'static str {
        match self {
            Source::DeploymentController => "deployment-controller",
            Source::ReplicaSetController => "replicaset-controller",
            Source::ReplicationManager => "replication-controller",
            Source::Scheduler => "default-scheduler",
        }
    }

    fn writer(self) -> Component {
        match self {
            Source::Scheduler => Component::Scheduler,
            _ => Component::ControllerManager,
        }
    }
}

/// Records a Normal Event about `object` (of `api_version` and `kind`).
pub(crate) fn normal(
    store: &Store,
    state: &mut State,
    source: Source,
    (api_version, kind): (&str, &str),
    object: &Value,
    reason: &str,
    message: String,
) {
    record(
        store,
        state,
        source,
        (api_version, kind),
        object,
        "Normal",
        reason,
        message,
    );
}

/// Records a Warning Event about `object`.
pub(crate) fn warning(
    store: &Store,
    state: &mut State,
    source: Source,
    (api_version, kind): (&str, &str),
    object: &Value,
    reason: &str,
    message: String,
) {
    record(
        store,
        state,
        source,
        (api_version, kind),
        object,
        "Warning",
        reason,
        message,
    );
}

#[allow(clippy::too_many_arguments)]
fn record(
    store: &Store,
    state: &mut State,
    source: Source,
    (api_version, kind): (&str, &str),
    object: &Value,
    event_type: &str,
    reason: &str,
    message: String,
) {
    let now = jiff::Timestamp::now();
    let time = meta::now_rfc3339();
    let namespace = match meta::namespace(object) {
        "" => "default",
        namespace => namespace,
    };
    let event = json!({
        "apiVersion": "v1", "kind": "Event",
        "metadata": {
            "name": format!("{}.{:x}", meta::name(object), now.as_nanosecond()),
            "namespace": namespace,
        },
        "involvedObject": {
            "apiVersion": api_version, "kind": kind,
            "name": meta::name(object), "namespace": meta::namespace(object),
            "uid": meta::uid(object),
            "resourceVersion": meta::resource_version(object).unwrap_or_default(),
        },
        "reason": reason, "message": message, "type": event_type,
        "source": {"component": source.component()},
        "firstTimestamp": time, "lastTimestamp": time, "count": 1,
        "reportingComponent": source.component(), "reportingInstance": "",
    });
    // An Event that cannot be stored (its namespace is going) is lost, as the recorder drops it.
    let _ = objects::create(store, state, Kind::Event, namespace, event, source.writer());
}
