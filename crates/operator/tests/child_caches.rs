//! The controllers read their children from the caches their watches keep: once converged, a resync
//! of every object sends the API server no read of a child, however many objects there are. Measured
//! with the embedded API server's request audit, which records each request with its user agent.
//! The controllers watch one namespace (`--watch-namespace`), so their caches do too.

mod support;

use std::{future::Future, time::Duration};

use apiserver::{AuditRecord, http::filters::audit::Verb};
use kube::{Api, api::PostParams};
use operator::{
    api::{postgres_writer::Condition, vote_config::VoteConfig, web_app::WebApp},
    controllers::{vote_config, web_app},
    runtime::ControllerContext,
};
use serde_json::json;
use support::{Running, eventually, lifecycles::object};

/// The user agent of this test's own client; every other request is the operator's.
const TEST_AGENT: &str = "child-caches-test";
const NAMESPACE: &str = "cached";
/// Objects of each kind.
const OBJECTS: usize = 5;
/// Every object is reconciled this often, changed or not.
const RESYNC: Duration = Duration::from_secs(2);
/// Creation to Ready, every object (the simulated node runs the pods at once).
const CONVERGED_WITHIN: Duration = Duration::from_secs(60);

/// Whether `record` is the operator reading a child or a pod one request at a time: a GET of one
/// ConfigMap, Deployment or Service, or a list of them or of pods.
fn reads_a_child(record: &AuditRecord) -> bool {
    let Some(attributes) = record.resource() else {
        return false;
    };
    record.user_agent.as_deref() != Some(TEST_AGENT)
        && matches!(attributes.verb, Verb::Get | Verb::List)
        && attributes.subresource.is_none()
        && matches!(
            attributes.resource.as_str(),
            "configmaps" | "deployments" | "services" | "pods"
        )
}

fn ready(conditions: Option<&Vec<Condition>>) -> bool {
    conditions.into_iter().flatten().any(|c| c.is("Ready", "True"))
}

/// The controller `run` in this process, watching [`NAMESPACE`] only.
fn start<F>(client: &kube::Client, run: impl FnOnce(ControllerContext) -> F) -> Running
where
    F: Future<Output = operator::Result<()>> + Send + 'static,
{
    let (mut ctx, stop) = support::context(client, RESYNC);
    ctx.watch_namespace = Some(NAMESPACE.into());
    support::spawn(ctx, stop, run)
}

fn described(records: &[&AuditRecord]) -> Vec<String> {
    records
        .iter()
        .filter_map(|r| {
            let a = r.resource()?;
            Some(format!("{} {} {:?}", a.verb, a.resource, a.name))
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_converged_resync_reads_no_child_from_the_api_server() {
    let (server, client) = support::audited_cluster(TEST_AGENT).await;
    support::create_namespace(&client, NAMESPACE).await;

    let operator_client = server.client();
    let vote_configs = start(&operator_client, vote_config::run);
    let web_apps = start(&operator_client, web_app::run);

    let vote_config_api: Api<VoteConfig> = Api::namespaced(client.clone(), NAMESPACE);
    let web_app_api: Api<WebApp> = Api::namespaced(client.clone(), NAMESPACE);
    for i in 0..OBJECTS {
        let vote_config = json!({
            "apiVersion": "voting.schoolofdevops.com/v1", "kind": "VoteConfig",
            "metadata": {"name": format!("vote-{i}")},
            "spec": {"options": [{"id": "a", "label": "Cats"}, {"id": "b", "label": "Dogs"}]}
        });
        vote_config_api
            .create(&PostParams::default(), &object(vote_config))
            .await
            .unwrap();
        let web_app = json!({
            "apiVersion": "example.com/v1", "kind": "WebApp",
            "metadata": {"name": format!("web-{i}")},
            "spec": {"image": "nginx:1.27", "replicas": 1, "port": 80}
        });
        web_app_api
            .create(&PostParams::default(), &object(web_app))
            .await
            .unwrap();
    }
    eventually("every object to converge", CONVERGED_WITHIN, || async {
        let vote_configs = vote_config_api.list(&Default::default()).await.ok()?.items;
        let web_apps = web_app_api.list(&Default::default()).await.ok()?.items;
        let converged = vote_configs.len() == OBJECTS
            && web_apps.len() == OBJECTS
            && vote_configs
                .iter()
                .all(|v| ready(v.status.as_ref().map(|s| &s.conditions)))
            && web_apps
                .iter()
                .all(|w| ready(w.status.as_ref().map(|s| &s.conditions)));
        converged.then_some(())
    })
    .await;
    // The audit sees the operator's reads of children: the first reconcile of each object found its
    // children in no cache and looked them up.
    let made: Vec<AuditRecord> = server.audit();
    assert!(
        made.iter().filter(|r| reads_a_child(r)).count() >= OBJECTS,
        "the audit records the operator's lookups of children it had not seen yet"
    );

    // Two resyncs of every object, with nothing changing. Resyncs come by the clock: the window spans
    // two periods, and as many reconciles as two resyncs make (a late event of the convergence may
    // add some, never stand in for a resync).
    let before = (vote_configs.reconciles(), web_apps.reconciles());
    let resynced_twice = 2 * OBJECTS as u64;
    let window = std::time::Instant::now();
    // Two resyncs take two periods; the rest is room for a loaded machine.
    eventually("two resyncs of every object", 15 * RESYNC, || async {
        (window.elapsed() >= 2 * RESYNC
            && vote_configs.reconciles() >= before.0 + resynced_twice
            && web_apps.reconciles() >= before.1 + resynced_twice)
            .then_some(())
    })
    .await;
    let resynced: Vec<AuditRecord> = server.audit().into_iter().skip(made.len()).collect();
    let reads: Vec<&AuditRecord> = resynced.iter().filter(|r| reads_a_child(r)).collect();
    assert!(
        reads.is_empty(),
        "resyncs of {OBJECTS} converged VoteConfigs and {OBJECTS} WebApps read children from the API \
         server: {:?}",
        described(&reads)
    );
    vote_configs.stop().await;
    web_apps.stop().await;
}
