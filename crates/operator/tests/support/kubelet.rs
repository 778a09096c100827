//! What the kubelets and the Deployment controller would report, on a control plane that has neither.
//!
//! The real control plane in these tests runs no kubelet (as with envtest), so no pod ever starts and a
//! Deployment's status stays empty. Where readiness matters, a test starts this stand-in: it writes
//! each Deployment's status as a healthy rollout would end, all replicas updated, ready and available,
//! except for Deployments annotated never-ready, which report none ready. The embedded server does the
//! same by itself, with the same annotation, so there the stand-in does nothing; nor on the cluster
//! tier, where the real kubelet and Deployment controller write the status (and would overwrite one
//! written by hand).

use futures::StreamExt;
use k8s_openapi::api::apps::v1::Deployment;
use kube::{
    Api,
    api::{Patch, PatchParams},
    runtime::{WatchStreamExt, watcher},
};
use serde_json::json;
use testenv::{Backend, ControlPlane};
use tokio::task::JoinHandle;

/// The annotation that keeps a Deployment unready, the embedded server's own.
const NEVER_READY: &str = apiserver::emulated::NEVER_READY_ANNOTATION;

/// Writes Deployment status while it lives.
pub struct KubeletStandIn(Option<JoinHandle<()>>);

impl KubeletStandIn {
    pub fn start(plane: &ControlPlane, client: &kube::Client) -> KubeletStandIn {
        if plane.backend() != Backend::Real {
            return KubeletStandIn(None);
        }
        let deployments: Api<Deployment> = Api::all(client.clone());
        let task = tokio::spawn(async move {
            let mut changes = watcher(deployments.clone(), watcher::Config::default())
                .default_backoff()
                .applied_objects()
                .boxed();
            while let Some(Ok(deployment)) = changes.next().await {
                let Some(status) = rolled_out(&deployment) else {
                    continue;
                };
                let namespaced: Api<Deployment> = Api::namespaced(
                    deployments.clone().into_client(),
                    deployment.metadata.namespace.as_deref().unwrap_or("default"),
                );
                let name = deployment.metadata.name.clone().unwrap_or_default();
                // A conflict or a deletion in between shows up as the next change; nothing to retry.
                let _ = namespaced
                    .patch_status(&name, &PatchParams::default(), &Patch::Merge(status))
                    .await;
            }
        });
        KubeletStandIn(Some(task))
    }
}

impl Drop for KubeletStandIn {
    fn drop(&mut self) {
        if let Some(task) = self.0.take() {
            task.abort();
        }
    }
}

/// The status a finished rollout of `deployment` reports, or `None` when it already says so.
fn rolled_out(deployment: &Deployment) -> Option<serde_json::Value> {
    if deployment.metadata.deletion_timestamp.is_some() {
        return None;
    }
    let generation = deployment.metadata.generation?;
    let replicas = deployment.spec.as_ref()?.replicas.unwrap_or(1);
    let never_ready = deployment
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(NEVER_READY))
        .is_some_and(|v| v == "true");
    let ready = if never_ready { 0 } else { replicas };
    let current = deployment.status.as_ref();
    let observed = current.and_then(|s| s.observed_generation) == Some(generation);
    if observed && current.and_then(|s| s.ready_replicas).unwrap_or(0) == ready {
        return None;
    }
    Some(json!({"status": {
        "observedGeneration": generation,
        "replicas": replicas,
        "updatedReplicas": replicas,
        "readyReplicas": ready,
        "availableReplicas": ready,
    }}))
}
