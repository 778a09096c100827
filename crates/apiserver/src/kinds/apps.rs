//! The workload kinds of `apps`: their rules beyond a schema (replicas, selectors), their spec's
//! changes (and a Deployment's annotations') counted in `metadata.generation`, and what the status
//! strategies of Deployments and ReplicaSets let a `/status` write change.

use apimachinery::{FieldCause, meta, resource::ResourceType};
use serde_json::Value;

use super::{Kind, metadata_maps::metadata_map};

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
pub(super) struct RolledOut {
    /// Whether a change of the annotations counts a generation too, as it does for a Deployment
    /// (whose annotations say the revision to roll back to and its change cause).
    annotations_count: bool,
}

/// Deployments: their spec's and their annotations' changes counted.
pub(super) const DEPLOYMENTS: RolledOut = RolledOut {
    annotations_count: true,
};

/// ReplicaSets: their spec's changes counted.
pub(super) const REPLICA_SETS: RolledOut = RolledOut {
    annotations_count: false,
};

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

    fn counts_generation(&self, old: &Value, new: &Value) -> bool {
        meta::spec_part(old) != meta::spec_part(new)
            || (self.annotations_count
                && metadata_map(old, "annotations") != metadata_map(new, "annotations"))
    }
}

/// The workloads' rules, for the built-in kinds alone.
fn validate(rt: &ResourceType, object: &Value) -> Vec<FieldCause> {
    if !rt.is_builtin() {
        return Vec::new();
    }
    apimachinery::validation::workloads::validate(&rt.kind, object)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn annotated(note: &str) -> Value {
        json!({"metadata": {"annotations": {"note": note}, "labels": {"app": note}}, "spec": {}})
    }

    #[test]
    fn a_deployments_annotations_count_and_a_replica_sets_do_not() {
        let (old, new) = (annotated("a"), annotated("b"));
        assert!(DEPLOYMENTS.counts_generation(&old, &new));
        assert!(!REPLICA_SETS.counts_generation(&old, &new));
        let relabelled = json!({"metadata": {"annotations": {"note": "a"}, "labels": {"app": "b"}},
            "spec": {}});
        assert!(!DEPLOYMENTS.counts_generation(&old, &relabelled));
    }
}
