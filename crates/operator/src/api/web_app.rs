//! WebApp (`example.com/v1`): an image served by a Deployment and a Service.

use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::postgres_writer::Condition;

/// The finalizer earlier versions put on every WebApp. It only recorded an Event, yet held deletion
/// whenever no operator ran; the controller now removes it wherever it finds it, so that upgraded
/// clusters are left with no WebApp it can hold.
pub const LEGACY_FINALIZER: &str = "webapp.example.com/finalizer";

fn one() -> i32 {
    1
}

fn eighty() -> i32 {
    80
}

/// The application a WebApp runs.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[kube(
    group = "example.com",
    version = "v1",
    kind = "WebApp",
    doc = "A WebApp runs a container image as a Deployment and a Service, both named like the WebApp, whose pods are labelled app=<name>. The operator keeps them as the spec says and repairs what is changed by hand; deleting the WebApp deletes both. A Deployment or Service of that name made by someone else is never taken over: the WebApp reports it and waits.",
    namespaced,
    status = "WebAppStatus",
    // `kubectl scale webapp web --replicas=3` and autoscalers: the replicas asked for, the ready ones,
    // and the pods' selector as a string (what an HPA counts pods by).
    scale(
        spec_replicas_path = ".spec.replicas",
        status_replicas_path = ".status.readyReplicas",
        label_selector_path = ".status.selector"
    ),
    printcolumn = r#"{"name":"Image","type":"string","jsonPath":".spec.image"}"#,
    printcolumn = r#"{"name":"Ready","type":"integer","jsonPath":".status.readyReplicas"}"#,
    printcolumn = r#"{"name":"Phase","type":"string","jsonPath":".status.phase"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
pub struct WebAppSpec {
    /// The container image to run, as a pod's container names it (nginx:1.27,
    /// registry.example.com/app@sha256:...). Required; changing it rolls the pods out again.
    #[schemars(length(min = 1))]
    pub image: String,
    /// How many pods to run: 0 or more, 1 when left out. `kubectl scale webapp` sets it.
    #[serde(default = "one")]
    #[schemars(range(min = 0))]
    pub replicas: i32,
    /// The port the container listens on, 1 to 65535; 80 when left out. The Service exposes the same
    /// port, named http.
    #[serde(default = "eighty")]
    #[schemars(range(min = 1, max = 65535))]
    pub port: i32,
}

/// How the WebApp's Deployment is doing.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WebAppStatus {
    /// Pending (no Deployment yet), Deploying (fewer pods ready than spec.replicas), Running, or
    /// Failed (a container cannot start: the Ready condition says which and why).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<String>,
    /// Pods ready to serve, as the Deployment reports them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ready_replicas: Option<i32>,
    /// The metadata.generation this status describes. Lower than the resource's generation: the
    /// latest change to the spec is not applied yet.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// The pods' label selector as a string (app=<name>), for `kubectl scale` and autoscalers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selector: Option<String>,
    /// One condition, Ready. True (reason Running) when every pod asked for is ready. False with
    /// reason Pending or Deploying while they come up; with the kubelet's reason (ErrImagePull,
    /// ImagePullBackOff, CrashLoopBackOff, ...) and message when a container cannot start: fix
    /// spec.image or the program; or DeploymentNotOwned or ServiceNotOwned when an object of the
    /// WebApp's name belongs to someone else: delete it, or create the WebApp under another name.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
}
