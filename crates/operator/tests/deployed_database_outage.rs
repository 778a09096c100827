//! A database outage under the deployed operator, on the cluster tier's real node, with two replicas
//! and then with one (`kubectl scale`): the PostgreSQL outside the cluster stopped (`pg_ctl stop`) for
//! longer than the readiness probe takes to fail a pod (3 failures, 10 s apart). Throughout, as a
//! user would notice it:
//! - every manager pod stays Ready, so the webhook Service keeps its endpoints;
//! - VoteConfigs are created as v1 (the defaulting webhook fills the colors) and as v1alpha1 (the
//!   conversion webhook), read back in both versions, and WebApps are created; all converge;
//! - a PostgresWriter created or changed meanwhile reports `DatabaseUnavailable`;
//! - once the database is back, every PostgresWriter is Ready again, with its row written.
//!
//! Runs alone, after the rest of the tier (the `cluster-deployed` nextest profile).

mod support;

use std::{
    collections::BTreeSet,
    path::Path,
    time::{Duration, Instant},
};

use k8s_openapi::api::{
    apps::v1::Deployment,
    core::v1::{ConfigMap, Service},
};
use kube::{
    Api,
    api::{Patch, PatchParams, PostParams},
};
use operator::{
    api::{
        postgres_writer::PostgresWriter,
        vote_config::{VoteConfig, v1alpha1},
        web_app::WebApp,
    },
    db::throwaway::ThrowawayPostgres,
};
use serde_json::{Value, json};
use support::{
    Backend, WEB_IMAGE,
    deployment::{self, Deployed},
    eventually,
    postgres_writer::{ready_reason, wait_reason, writer},
};

/// Where the test's own resources live.
const WORKLOADS: &str = "deployed-database-outage";

/// How long the database stays down: past the readiness probe's verdict (failureThreshold 3 x
/// periodSeconds 10 in config/manager), so that a readiness tied to the database would have shown.
const OUTAGE: Duration = Duration::from_secs(45);
/// How long a resource may take to converge once its write is stored: a reconcile and a write.
const CONVERGED_WITHIN: Duration = Duration::from_secs(60);
/// A PostgresWriter reports a database that refuses connections within two database steps (the
/// default --db-connect-timeout 5 s + --db-statement-timeout 10 s each), then its status is written.
const REPORTED_WITHIN: Duration = Duration::from_secs(40);
/// Once the database is back: the failed reconciles' retries, backed off to at most 30 s, and a write.
const RECOVERED_WITHIN: Duration = Duration::from_secs(60);

async fn a_database_outage_leaves_the_deployed_manager_ready_and_the_other_kinds_working(backend: Backend) {
    let deployed = Deployed::up(backend, WORKLOADS).await;
    let client = deployed.client.clone();

    for replicas in [2, 1] {
        let pods = deployed.scale(replicas).await;
        deployed.leader(&pods).await;
        outage(&client, &deployed.kubeconfig, &deployed.pg, replicas).await;
    }

    deployed.undeploy().await;
}

/// One outage with `replicas` manager pods: PostgreSQL stopped for [`OUTAGE`], everything the module
/// promises checked, then started again.
async fn outage(client: &kube::Client, kubeconfig: &Path, pg: &ThrowawayPostgres, replicas: usize) {
    let writers: Api<PostgresWriter> = Api::namespaced(client.clone(), WORKLOADS);
    let pp = PostParams::default();
    let before = format!("before-{replicas}");
    writers
        .create(&pp, &writer(&before, "students", "Ada", 36, "UK"))
        .await
        .unwrap();
    wait_reason(&writers, &before, "True/Synced", CONVERGED_WITHIN).await;

    pg.stop().await.expect("pg_ctl stop");
    let stopped = Instant::now();
    println!("{replicas} replica(s): PostgreSQL stopped");
    let during = format!("during-{replicas}");
    writers
        .create(&pp, &writer(&during, "students", "Grace", 45, "US"))
        .await
        .expect("a PostgresWriter is admitted while the database is down");
    writers
        .patch(
            &before,
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"age": 37}})),
        )
        .await
        .unwrap();
    for name in [&during, &before] {
        wait_reason(&writers, name, "False/DatabaseUnavailable", REPORTED_WITHIN).await;
    }
    the_other_kinds_work(client, kubeconfig, &format!("{replicas}-early")).await;
    pods_stay_ready(client, replicas, stopped + OUTAGE).await;
    // Past the probe's verdict: the webhooks still answer.
    the_other_kinds_work(client, kubeconfig, &format!("{replicas}-late")).await;
    pods_stay_ready(client, replicas, Instant::now()).await;
    println!(
        "{replicas} replica(s): every pod Ready and every write served through {:?} of outage",
        stopped.elapsed()
    );

    pg.restart().await.expect("PostgreSQL starts again");
    let restarted = Instant::now();
    for name in [&during, &before] {
        wait_reason(&writers, name, "True/Synced", RECOVERED_WITHIN).await;
    }
    println!(
        "{replicas} replica(s): every PostgresWriter Ready {:?} after PostgreSQL started again",
        restarted.elapsed()
    );
    let writer = writers.get(&before).await.unwrap();
    assert_eq!(ready_reason(&writer).as_deref(), Some("True/Synced"));
    assert_eq!(
        writer.spec.age, 37,
        "the change made during the outage is the one written"
    );
}

/// Every manager pod Ready (and as many as `replicas`) on every look, once a second, until `until`.
async fn pods_stay_ready(client: &kube::Client, replicas: usize, until: Instant) {
    loop {
        let pods = deployment::manager_pods(client).await.expect("the pods list");
        let not_ready: BTreeSet<String> = pods
            .iter()
            .filter(|p| !deployment::is_ready(p))
            .filter_map(|p| p.metadata.name.clone())
            .collect();
        assert!(
            pods.len() == replicas && not_ready.is_empty(),
            "every manager pod stays Ready while the database is down: {} pods, not Ready: {not_ready:?}",
            pods.len()
        );
        if Instant::now() >= until {
            return;
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

/// VoteConfigs through both versions and a WebApp, each created through the webhooks and converged.
async fn the_other_kinds_work(client: &kube::Client, kubeconfig: &Path, suffix: &str) {
    let vote_configs: Api<VoteConfig> = Api::namespaced(client.clone(), WORKLOADS);
    let old_vote_configs: Api<v1alpha1::VoteConfig> = Api::namespaced(client.clone(), WORKLOADS);
    let web_apps: Api<WebApp> = Api::namespaced(client.clone(), WORKLOADS);
    let pp = PostParams::default();

    let pets = format!("pets-{suffix}");
    let body: VoteConfig = serde_json::from_value(json!({
        "apiVersion": "voting.schoolofdevops.com/v1", "kind": "VoteConfig",
        "metadata": {"name": pets},
        "spec": {"question": "Which pet?", "options": [{"id": "a", "label": "Cats"}, {"id": "b", "label": "Dogs"}]}
    }))
    .unwrap();
    let created = vote_configs
        .create(&pp, &body)
        .await
        .expect("a v1 VoteConfig is created through the defaulting webhook");
    assert!(created.spec.options.iter().all(|o| o.color.is_some()));

    let polls = format!("polls-{suffix}");
    let old: v1alpha1::VoteConfig = serde_json::from_value(json!({
        "apiVersion": "voting.schoolofdevops.com/v1alpha1", "kind": "VoteConfig",
        "metadata": {"name": polls},
        "spec": {"options": [
            {"id": "a", "label": "Tabs", "color": "#FF6B6B"}, {"id": "b", "label": "Spaces", "color": "#4ECDC4"}
        ]}
    }))
    .unwrap();
    old_vote_configs
        .create(&pp, &old)
        .await
        .expect("a v1alpha1 VoteConfig is created through the conversion webhook");
    // Read back in the other version each, as kubectl reads them.
    let as_old = support::kubectl(
        kubeconfig,
        &[
            "get",
            "voteconfigs.v1alpha1.voting.schoolofdevops.com",
            &pets,
            "-n",
            WORKLOADS,
            "-o",
            "json",
        ],
    );
    let as_old: Value = serde_json::from_str(&as_old).unwrap();
    assert_eq!(
        as_old["metadata"]["annotations"]["voting.schoolofdevops.com/question"],
        "Which pet?"
    );
    vote_configs
        .get(&polls)
        .await
        .expect("the v1alpha1 VoteConfig reads as v1");

    let shop = format!("shop-{suffix}");
    let app: WebApp = serde_json::from_value(json!({
        "apiVersion": "example.com/v1", "kind": "WebApp",
        "metadata": {"name": shop}, "spec": {"image": WEB_IMAGE, "replicas": 1}
    }))
    .unwrap();
    web_apps.create(&pp, &app).await.expect("a WebApp is created");

    let config_maps: Api<ConfigMap> = Api::namespaced(client.clone(), WORKLOADS);
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), WORKLOADS);
    let services: Api<Service> = Api::namespaced(client.clone(), WORKLOADS);
    eventually(
        &format!("{pets}, {polls} and {shop} to converge"),
        CONVERGED_WITHIN,
        || async {
            for name in [&pets, &polls] {
                config_maps.get_opt(&format!("{name}-config")).await.ok()??;
                vote_configs.get(name).await.ok()?.status?.config_map_name?;
            }
            deployments.get_opt(&shop).await.ok()??;
            services.get_opt(&shop).await.ok()??;
            web_apps.get(&shop).await.ok()?.status?.phase?;
            Some(())
        },
    )
    .await;
}

testenv::cluster_tier!(a_database_outage_leaves_the_deployed_manager_ready_and_the_other_kinds_working);
