//! The workload kinds of `apps`: their rules beyond a schema (replicas, selectors), their spec's
//! changes counted in `metadata.generation`, and what the status strategies of Deployments and
//! ReplicaSets let a `/status` write change.

use apimachinery::{FieldCause, resource::ResourceType};
use serde_json::Value;

use super::Kind;

/// StatefulSets and DaemonSets: validated by the workloads' rules.
pub(super) struct Workloads;

impl Kind for Workloads {
    fn validate(&self, rt: &ResourceType, object: &Value) -> Vec<FieldCause> {
        validate(rt, object)
    }

    fn tracks_generation(&self) -> bool {
        true
    }
}

/// Deployments and ReplicaSets: validated as the other workloads, and their status strategies
/// reset only the spec (and a Deployment's labels), so the Deployment controller writes its
/// revision annotation with the status.
pub(super) struct RolledOut;

impl Kind for RolledOut {
    fn validate(&self, rt: &ResourceType, object: &Value) -> Vec<FieldCause> {
        validate(rt, object)
    }

    fn status_takes_annotations(&self) -> bool {
        true
    }

    fn tracks_generation(&self) -> bool {
        true
    }
}

/// The workloads' rules, for the built-in kinds alone.
fn validate(rt: &ResourceType, object: &Value) -> Vec<FieldCause> {
    if !rt.is_builtin() {
        return Vec::new();
    }
    apimachinery::validation::workloads::validate(&rt.kind, object)
}
