//! New Nodes (B7): kube-apiserver's NodeTaint admission keeps a new node from pods until its kubelet
//! reports it ready, and its status is written whole (Go's zero values) even when nothing reports.

use apimachinery::FieldCause;
use serde_json::{Value, json};

use super::Kind;
use crate::store::Preparing;

/// Nodes: what a create sets.
pub(super) struct Nodes;

impl Kind for Nodes {
    fn prepare(&self, write: Preparing<'_>) -> Result<(), Vec<FieldCause>> {
        if write.old.is_none() {
            prepare_for_create(write.object);
        }
        Ok(())
    }
}

const NOT_READY: &str = "node.kubernetes.io/not-ready";

/// Sets what kube-apiserver sets on a new Node.
fn prepare_for_create(object: &mut Value) {
    let Some(node) = object.as_object_mut() else {
        return;
    };
    let spec = node.entry("spec").or_insert_with(|| json!({}));
    if let Some(spec) = spec.as_object_mut() {
        let taints = spec.entry("taints").or_insert_with(|| json!([]));
        if let Some(taints) = taints.as_array_mut()
            && !taints.iter().any(|t| t["key"] == NOT_READY)
        {
            taints.push(json!({"key": NOT_READY, "effect": "NoSchedule"}));
        }
    }
    let status = node.entry("status").or_insert_with(|| json!({}));
    if let Some(status) = status.as_object_mut() {
        status
            .entry("daemonEndpoints")
            .or_insert_with(|| json!({"kubeletEndpoint": {"Port": 0}}));
        let info = status.entry("nodeInfo").or_insert_with(|| json!({}));
        if let Some(info) = info.as_object_mut() {
            for field in [
                "architecture",
                "bootID",
                "containerRuntimeVersion",
                "kernelVersion",
                "kubeProxyVersion",
                "kubeletVersion",
                "machineID",
                "operatingSystem",
                "osImage",
                "systemUUID",
            ] {
                info.entry(field).or_insert_with(|| json!(""));
            }
        }
    }
}
