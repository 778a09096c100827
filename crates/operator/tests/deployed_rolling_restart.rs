//! An upgrade of the deployed operator as its users live through it, on the cluster tier's real node:
//! `kubectl rollout restart` of the manager's Deployment (two replicas) while VoteConfigs are created
//! twice a second, alternately as v1 (through the defaulting webhook, failurePolicy Fail) and as
//! v1alpha1 (through the conversion webhook), from before the rollout starts until every old pod is
//! gone. Not one write may be refused: each replica that is replaced fails its readiness at SIGTERM,
//! serves its webhooks through the drain period while the Service stops sending to it, and only then
//! stops. The counts are printed for BENCHMARKS.md.
//!
//! Runs alone, after the rest of the tier (the `cluster-deployed` nextest profile).

mod support;

use std::{
    collections::BTreeSet,
    time::{Duration, Instant},
};

use k8s_openapi::api::{coordination::v1::Lease, core::v1::Pod};
use kube::{
    Api, ResourceExt,
    api::{ListParams, PostParams},
};
use operator::api::vote_config::{VoteConfig, v1alpha1};
use serde_json::json;
use support::{
    Backend,
    deployment::{self, Deployed, INJECTED_WITHIN, LEASE, MANAGER, MANAGER_SELECTOR, NAMESPACE},
    eventually,
};
use tokio::sync::watch;

/// Where the test's own resources live.
const WORKLOADS: &str = "deployed-rolling-restart";
/// Twice a second.
const WRITE_EVERY: Duration = Duration::from_millis(500);
/// A rollout of two replicas, each new pod Ready (probe after 5 s) before an old one goes, each old
/// one taking up to its grace period (45 s) to stop.
const ROLLED_OUT_WITHIN: Duration = Duration::from_secs(300);

/// A VoteConfig whose options have no color: stored only through the defaulting webhook.
fn current(name: &str) -> VoteConfig {
    serde_json::from_value(json!({
        "apiVersion": "voting.schoolofdevops.com/v1", "kind": "VoteConfig",
        "metadata": {"name": name},
        "spec": {"options": [{"id": "a", "label": "Cats"}, {"id": "b", "label": "Dogs"}]}
    }))
    .unwrap()
}

/// A v1alpha1 VoteConfig: stored as v1 only through the conversion webhook.
fn old(name: &str) -> v1alpha1::VoteConfig {
    serde_json::from_value(json!({
        "apiVersion": "voting.schoolofdevops.com/v1alpha1", "kind": "VoteConfig",
        "metadata": {"name": name},
        "spec": {"options": [
            {"id": "a", "label": "Tabs", "color": "#FF6B6B"}, {"id": "b", "label": "Spaces", "color": "#4ECDC4"}
        ]}
    }))
    .unwrap()
}

/// Creates VoteConfigs every [`WRITE_EVERY`] until `stop`, alternating the versions; returns how many
/// were sent and each refusal.
fn send_writes(
    client: kube::Client,
    mut stop: watch::Receiver<bool>,
) -> tokio::task::JoinHandle<(usize, Vec<String>)> {
    tokio::spawn(async move {
        let current_api: Api<VoteConfig> = Api::namespaced(client.clone(), WORKLOADS);
        let old_api: Api<v1alpha1::VoteConfig> = Api::namespaced(client, WORKLOADS);
        let pp = PostParams::default();
        let mut sent = 0;
        let mut refused = Vec::new();
        while !*stop.borrow() {
            let name = format!("rollout-{sent:04}");
            let started = Instant::now();
            let outcome = if sent % 2 == 0 {
                current_api.create(&pp, &current(&name)).await.map(|_| ())
            } else {
                old_api.create(&pp, &old(&name)).await.map(|_| ())
            };
            if let Err(error) = outcome {
                refused.push(format!("{name} ({:?}): {error}", started.elapsed()));
            }
            sent += 1;
            let _ = tokio::time::timeout(WRITE_EVERY, stop.changed()).await;
        }
        (sent, refused)
    })
}

/// Every manager pod, those going away included.
async fn all_manager_pods(client: &kube::Client) -> Vec<Pod> {
    let pods: Api<Pod> = Api::namespaced(client.clone(), NAMESPACE);
    pods.list(&ListParams::default().labels(MANAGER_SELECTOR))
        .await
        .map(|l| l.items)
        .unwrap_or_default()
}

/// Waits until at least `count` VoteConfigs are stored: the writes go on at their pace.
async fn stored_at_least(api: &Api<VoteConfig>, count: usize) {
    eventually(
        &format!("{count} VoteConfigs stored"),
        WRITE_EVERY * (count as u32 + 20),
        || async { (api.list(&ListParams::default()).await.ok()?.items.len() >= count).then_some(()) },
    )
    .await;
}

async fn a_rolling_restart_refuses_no_webhook_call(backend: Backend) {
    let deployed = Deployed::up(backend, WORKLOADS).await;
    let client = deployed.client.clone();
    let before: BTreeSet<String> = deployed
        .replicas_ready(2)
        .await
        .iter()
        .map(ResourceExt::name_any)
        .collect();
    // The webhooks answer (the CA injected) before the measure starts.
    let probe: Api<VoteConfig> = Api::namespaced(client.clone(), WORKLOADS);
    eventually("the webhooks to answer", INJECTED_WITHIN, || async {
        probe
            .create(
                &PostParams {
                    dry_run: true,
                    ..Default::default()
                },
                &current("probe"),
            )
            .await
            .ok()
    })
    .await;
    let leases: Api<Lease> = Api::namespaced(client.clone(), NAMESPACE);
    let transitions_before = leases
        .get(LEASE)
        .await
        .ok()
        .and_then(|l| l.spec?.lease_transitions)
        .unwrap_or(0);

    let (stop_writing, stop) = watch::channel(false);
    let writes = send_writes(client.clone(), stop);
    // A few writes before the rollout, so that the measure covers its start.
    stored_at_least(&probe, 4).await;
    let started = Instant::now();
    support::kubectl(
        &deployed.kubeconfig,
        &["-n", NAMESPACE, "rollout", "restart", "deployment", MANAGER],
    );
    // Until no pod of before the rollout is left, terminating ones included.
    let after = eventually("the rollout to replace both pods", ROLLED_OUT_WITHIN, || async {
        let pods = all_manager_pods(&client).await;
        let names: BTreeSet<String> = pods.iter().map(ResourceExt::name_any).collect();
        (names.is_disjoint(&before) && pods.len() == 2 && pods.iter().all(deployment::is_ready))
            .then_some(names)
    })
    .await;
    let rolled_out = started.elapsed();
    // A few writes after, against the new pods alone.
    let stored = probe.list(&ListParams::default()).await.unwrap().items.len();
    stored_at_least(&probe, stored + 4).await;
    let _ = stop_writing.send(true);
    let (sent, refused) = writes.await.expect("the writer ends");
    let transitions_after = leases
        .get(LEASE)
        .await
        .ok()
        .and_then(|l| l.spec?.lease_transitions)
        .unwrap_or(0);
    println!(
        "rolling restart of 2 replicas ({before:?} -> {after:?}) took {rolled_out:?}; {sent} VoteConfig creates \
         through the webhooks, {} refused; the Lease changed hands {} time(s)",
        refused.len(),
        transitions_after - transitions_before
    );
    assert!(
        sent as f64 >= rolled_out.as_secs_f64(),
        "writes were sent throughout the rollout: {sent} in {rolled_out:?}"
    );
    assert!(
        refused.is_empty(),
        "writes refused during the rollout: {refused:#?}"
    );
    let stored = probe.list(&ListParams::default()).await.unwrap().items.len();
    assert_eq!(stored, sent, "every write is stored");

    deployed.undeploy().await;
}

testenv::cluster_tier!(a_rolling_restart_refuses_no_webhook_call);
