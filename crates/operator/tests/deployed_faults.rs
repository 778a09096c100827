//! What the deployed operator rides out on the cluster tier's real node, played as it happens to a
//! user, each with the figure a user would ask for (printed, and kept in BENCHMARKS.md):
//! - the leader's pod deleted gracefully (a drain, a rolling node upgrade): the Lease changes hands
//!   without waiting out its term, and a resource made meanwhile converges;
//! - kube-apiserver stopped for 20 s and started again (an upgrade of the control plane): the
//!   managers find it again by themselves, one leads, and resources converge, with nobody touching the
//!   pods.

mod support;

use std::time::{Duration, Instant};

use jiff::Timestamp;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{DeleteParams, ListParams};
use support::{
    Backend,
    deployment::{
        CONVERGED_WITHIN, Deployed, LEASE_DURATION, LEASE_RETRY, MANAGER_SELECTOR, READY_WITHIN, holds,
    },
    eventually,
};

const WORKLOADS: &str = "deployed-faults";
/// How long kube-apiserver stays away: longer than the Lease's renew deadline (10 s), so the leader
/// loses the Lease, as in the outage users report.
const API_SERVER_DOWN: Duration = Duration::from_secs(20);

async fn the_deployed_operator_rides_out_a_leader_drain_and_an_api_server_restart(backend: Backend) {
    let deployed = Deployed::up(backend, WORKLOADS).await;
    deployed.converges("ada", "Ada").await;
    the_lease_changes_hands_when_the_leader_is_deleted_gracefully(&deployed).await;
    the_managers_recover_after_the_api_server_restarts(&deployed).await;
    deployed.undeploy().await;
}

/// `kubectl delete pod <leader>` with its grace period: the leader releases the Lease on the way out,
/// so the standby takes it at once rather than after the Lease's term.
async fn the_lease_changes_hands_when_the_leader_is_deleted_gracefully(deployed: &Deployed) {
    let pods = deployed.replicas_ready(2).await;
    let leader = deployed.leader(&pods).await;
    let deleted_at = Timestamp::now();
    deployed
        .pods()
        .delete(&leader, &DeleteParams::default())
        .await
        .unwrap();
    // Made while the leadership moves: the new leader must pick it up.
    deployed.converges("grace", "Grace").await;
    let after = eventually("another manager to hold the Lease", READY_WITHIN, || async {
        let spec = deployed.lease().await?;
        let holder = spec.holder_identity.clone()?;
        (!holds(&holder, &leader)).then_some(spec)
    })
    .await;
    let acquired = after
        .acquire_time
        .map(|t| t.0)
        .expect("the new holder acquired it");
    let without_leader = Duration::try_from(acquired.duration_since(deleted_at)).unwrap_or_default();
    println!("figure: graceful leader deletion: the Lease changed hands {without_leader:?} after the delete");
    // Released, not expired: well inside the Lease's term (an expired Lease is taken no sooner than its
    // duration after the last renewal).
    assert!(
        without_leader < LEASE_DURATION,
        "the Lease changed hands {without_leader:?} after a graceful delete: it was waited out, not released"
    );
    deployed.replicas_ready(2).await;
}

/// kube-apiserver away for longer than the leader can renew, then back: without anyone restarting
/// them, the managers lead again, the webhooks answer and resources converge.
async fn the_managers_recover_after_the_api_server_restarts(deployed: &Deployed) {
    let restarts_before = container_restarts(&deployed.pods().list(&manager_pods()).await.unwrap().items);
    support::deployment::cluster_script(
        "restart.sh",
        &["kube-apiserver", &API_SERVER_DOWN.as_secs().to_string()],
    );
    let back = Instant::now();
    let back_at = Timestamp::now();

    // A leader renewing the Lease after the restart.
    let renewed = eventually(
        "a manager renewing the Lease after the restart",
        READY_WITHIN,
        || async {
            let spec = deployed.lease().await?;
            spec.holder_identity.as_ref()?;
            let renewed = spec.renew_time?.0;
            (renewed > back_at).then_some(renewed)
        },
    )
    .await;
    // A resource made now converges (the defaulting and validating webhooks answer on the way).
    deployed.converges("hopper", "Hopper").await;
    let converged = back.elapsed();
    let pods = deployed.replicas_ready(2).await;
    let restarts = container_restarts(&pods).saturating_sub(restarts_before);
    let leading_again = Duration::try_from(renewed.duration_since(back_at)).unwrap_or_default();
    println!(
        "figure: kube-apiserver down {API_SERVER_DOWN:?}: a leader renewed {leading_again:?} after it was back, \
         a new PostgresWriter Ready {converged:?} after, {restarts} container restarts"
    );
    assert!(
        converged <= CONVERGED_WITHIN + LEASE_DURATION + LEASE_RETRY,
        "a resource converged {converged:?} after kube-apiserver was back"
    );
}

fn manager_pods() -> ListParams {
    ListParams::default().labels(MANAGER_SELECTOR)
}

/// The restarts of the manager containers in `pods`, added up.
fn container_restarts(pods: &[Pod]) -> i32 {
    pods.iter().map(support::deployment::container_restarts).sum()
}

testenv::cluster_tier!(the_deployed_operator_rides_out_a_leader_drain_and_an_api_server_restart);
