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

#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[kube(
    group = "example.com",
    version = "v1",
    kind = "WebApp",
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
    #[schemars(length(min = 1))]
    pub image: String,
    #[serde(default = "one")]
    #[schemars(range(min = 0))]
    pub replicas: i32,
    #[serde(default = "eighty")]
    #[schemars(range(min = 1, max = 65535))]
    pub port: i32,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WebAppStatus {
    /// Pending (no Deployment yet), Deploying (fewer ready replicas than asked), Running, or Failed (a
    /// container cannot start: the Ready condition says which and why).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ready_replicas: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// The label selector of the pods, as a string (`app=web`): the scale subresource reports it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selector: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
}
