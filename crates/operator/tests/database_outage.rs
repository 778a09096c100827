//! A database outage as a user of the other kinds sees it: `operator run` with every controller and
//! its webhooks registered with the control plane, then its PostgreSQL stopped. The pod stays ready
//! (`/readyz` 200 on every look, `/healthz` too), VoteConfig and WebApp writes go through the
//! webhooks (defaulting, conversion from v1alpha1) and converge, and only the PostgresWriters say
//! the database is down (`DatabaseUnavailable`), until it is back.
//!
//! On the fresh tiers only (the webhook configurations are cluster-wide); the cluster tier plays the
//! same outage against the deployed manager in `deployed_database_outage.rs`.

mod support;

use std::{
    net::SocketAddr,
    sync::{
        Arc,
        atomic::{AtomicUsize, Ordering},
    },
    time::Duration,
};

use k8s_openapi::api::{
    apps::v1::Deployment,
    core::v1::{ConfigMap, Service},
};
use kube::{Api, api::PostParams};
use operator::{
    api::{
        postgres_writer::PostgresWriter,
        vote_config::{VoteConfig, v1alpha1},
        web_app::WebApp,
    },
    db::{DatabaseConfig, throwaway::ThrowawayPostgres},
};
use serde_json::json;
use support::{
    Backend, EXIT_AFTER_SIGNAL, Scene, WEB_IMAGE, eventually, http_get,
    postgres_writer::{wait_reason, writer},
    serving_operator::{self, PROBE_EVERY},
};
use tokio::sync::watch;

/// How long a resource may take to converge once its write is stored: a reconcile or two.
const CONVERGED_WITHIN: Duration = Duration::from_secs(30);

/// What the operator promises for a database that went away: a reconcile fails at its first
/// abandoned step, after at most one batch ahead of its own (two steps of --db-connect-timeout +
/// --db-statement-timeout), and says so. A stopped server refuses at once; the bound is the promise.
fn reported_within(url: &str) -> Duration {
    DatabaseConfig::from_url(url).step_timeout() * 2 + Duration::from_secs(10)
}

/// Once the database is back: the failed reconcile's retry, backed off to at most 30 s, and a write.
const RECOVERED_WITHIN: Duration = Duration::from_secs(60);

/// How many looks at the probes the outage lasts at least: a couple of seconds of them.
const LOOKS: usize = 20;

/// Every `/readyz` and `/healthz` answer other than 200, looked at every [`PROBE_EVERY`] until `stop`;
/// `looks` counts the rounds.
fn watch_probes(
    probes: SocketAddr,
    looks: Arc<AtomicUsize>,
    mut stop: watch::Receiver<bool>,
) -> tokio::task::JoinHandle<Vec<String>> {
    tokio::spawn(async move {
        let mut refusals = Vec::new();
        while !*stop.borrow() {
            for path in ["/readyz", "/healthz"] {
                match http_get(probes, path).await {
                    Ok(response) if response.status == 200 => {}
                    Ok(response) => refusals.push(format!("{path} {}: {}", response.status, response.body)),
                    Err(error) => refusals.push(format!("{path}: {error}")),
                }
            }
            looks.fetch_add(1, Ordering::SeqCst);
            let _ = tokio::time::timeout(PROBE_EVERY, stop.changed()).await;
        }
        refusals
    })
}

fn vote_config_without_colors(name: &str) -> VoteConfig {
    serde_json::from_value(json!({
        "apiVersion": "voting.schoolofdevops.com/v1", "kind": "VoteConfig",
        "metadata": {"name": name},
        "spec": {"question": "Which pet?", "options": [{"id": "a", "label": "Cats"}, {"id": "b", "label": "Dogs"}]}
    }))
    .expect("a VoteConfig")
}

fn old_vote_config(name: &str) -> v1alpha1::VoteConfig {
    serde_json::from_value(json!({
        "apiVersion": "voting.schoolofdevops.com/v1alpha1", "kind": "VoteConfig",
        "metadata": {"name": name},
        "spec": {"options": [
            {"id": "a", "label": "Tabs", "color": "#FF6B6B"}, {"id": "b", "label": "Spaces", "color": "#4ECDC4"}
        ]}
    }))
    .expect("a v1alpha1 VoteConfig")
}

fn web_app(name: &str) -> WebApp {
    serde_json::from_value(json!({
        "apiVersion": "example.com/v1", "kind": "WebApp",
        "metadata": {"name": name}, "spec": {"image": WEB_IMAGE, "replicas": 1}
    }))
    .expect("a WebApp")
}

/// VoteConfigs made through both versions (the defaulting and conversion webhooks) and a WebApp, each
/// converged: the colors filled in, the v1alpha1 one read as v1, their ConfigMaps and the WebApp's
/// Deployment and Service made, every status written.
async fn the_other_kinds_work(scene: &Scene, suffix: &str) {
    let vote_configs: Api<VoteConfig> = scene.api();
    let old_vote_configs: Api<v1alpha1::VoteConfig> = scene.api();
    let web_apps: Api<WebApp> = scene.api();
    let pp = PostParams::default();
    let pets = format!("pets-{suffix}");
    let created = vote_configs
        .create(&pp, &vote_config_without_colors(&pets))
        .await
        .expect("a VoteConfig is created through the defaulting webhook");
    assert!(
        created.spec.options.iter().all(|o| o.color.is_some()),
        "every option got its color: {:?}",
        created.spec.options
    );
    let polls = format!("polls-{suffix}");
    old_vote_configs
        .create(&pp, &old_vote_config(&polls))
        .await
        .expect("a v1alpha1 VoteConfig is created through the conversion webhook");
    let read_as_v1 = vote_configs
        .get(&polls)
        .await
        .expect("the v1alpha1 VoteConfig reads as v1");
    assert_eq!(read_as_v1.spec.options.len(), 2);
    let shop = format!("shop-{suffix}");
    web_apps
        .create(&pp, &web_app(&shop))
        .await
        .expect("a WebApp is created");

    let config_maps: Api<ConfigMap> = scene.api();
    let deployments: Api<Deployment> = scene.api();
    let services: Api<Service> = scene.api();
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

async fn a_database_outage_leaves_the_pod_ready_and_the_other_kinds_working(backend: Backend) {
    let scene = Scene::start(backend, "database-outage").await;
    let pg = ThrowawayPostgres::start()
        .await
        .expect("throwaway PostgreSQL starts");
    let url = pg.url();
    let mut operator = serving_operator::start(
        &scene,
        "postgres-writer,vote-config,web-app",
        &[],
        &[("DATABASE_URL", &url)],
    )
    .await;
    let writers: Api<PostgresWriter> = scene.api();
    let pp = PostParams::default();
    writers
        .create(&pp, &writer("before", "students", "Ada", 36, "UK"))
        .await
        .unwrap();
    wait_reason(&writers, "before", "True/Synced", CONVERGED_WITHIN).await;
    eventually("/readyz 200", CONVERGED_WITHIN, || async {
        (http_get(operator.probes, "/readyz").await.ok()?.status == 200).then_some(())
    })
    .await;

    let (stop_watching, stop) = watch::channel(false);
    let looks = Arc::new(AtomicUsize::new(0));
    let probes = watch_probes(operator.probes, looks.clone(), stop);
    pg.stop().await.expect("PostgreSQL stops");
    // Made while the database is down: the validating webhook admits it with a warning, the controller
    // reports that it cannot write the row.
    writers
        .create(&pp, &writer("during", "students", "Grace", 45, "US"))
        .await
        .expect("a PostgresWriter is admitted while the database is down");
    wait_reason(
        &writers,
        "during",
        "False/DatabaseUnavailable",
        reported_within(&url),
    )
    .await;
    the_other_kinds_work(&scene, "outage").await;
    eventually(
        "the probes looked at throughout the outage",
        PROBE_EVERY * LOOKS as u32 * 10,
        || async { (looks.load(Ordering::SeqCst) >= LOOKS).then_some(()) },
    )
    .await;
    let _ = stop_watching.send(true);
    let refusals = probes.await.expect("the probe watcher ends");
    println!(
        "/readyz and /healthz looked at {} times during the outage, {} refused",
        looks.load(Ordering::SeqCst),
        refusals.len()
    );
    assert!(
        refusals.is_empty(),
        "the pod stays ready and live while the database is down: {refusals:?}\n{}",
        operator.process.log_so_far()
    );

    pg.restart().await.expect("PostgreSQL starts again");
    wait_reason(&writers, "during", "True/Synced", RECOVERED_WITHIN).await;

    operator.process.signal("TERM");
    let status = operator.process.exit_within(EXIT_AFTER_SIGNAL).await;
    assert!(
        status.is_some_and(|s| s.success()),
        "{status:?}\n{}",
        operator.process.log_so_far()
    );
}

testenv::each_control_plane!(a_database_outage_leaves_the_pod_ready_and_the_other_kinds_working);
