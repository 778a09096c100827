//! The operators' whole lifecycle, as a user drives it: the three controllers' objects created,
//! changed, edited by hand behind the controller's back and deleted, and leader election between two
//! replicas of the binary. What the RBAC test audits and what the recorded conformance corpus is
//! recorded from.

use std::{fmt, path::Path, time::Duration};

use k8s_openapi::{
    api::{
        apps::v1::Deployment,
        coordination::v1::Lease,
        core::v1::{ConfigMap, Service},
    },
    apimachinery::pkg::apis::meta::v1::ObjectMeta,
};
use kube::{
    Api, ResourceExt,
    api::{DeleteParams, Patch, PatchParams, PostParams},
};
use operator::api::{postgres_writer::PostgresWriter, vote_config::VoteConfig, web_app::WebApp};
use serde_json::json;

use super::eventually;

/// How long each step of a lifecycle may take to show.
pub const LIMIT: Duration = Duration::from_secs(30);

pub fn object<T: serde::de::DeserializeOwned>(value: serde_json::Value) -> T {
    serde_json::from_value(value).expect("a valid object")
}

pub async fn repaired<K>(api: &Api<K>, name: &str, what: &str, ok: impl Fn(&K) -> bool)
where
    K: Clone + serde::de::DeserializeOwned + fmt::Debug,
{
    eventually(what, LIMIT, || async {
        api.get_opt(name).await.ok()?.filter(|o| ok(o)).map(|_| ())
    })
    .await;
}

/// VoteConfig: ConfigMap created, updated, repaired after an edit and a delete, collected at the end.
pub async fn vote_config_lifecycle(client: &kube::Client) -> Vec<ObjectMeta> {
    let api: Api<VoteConfig> = Api::namespaced(client.clone(), "default");
    let config_maps: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let options = |second: &str| {
        let cats = json!({"id": "a", "label": "Cats", "color": "#FF6B6B"});
        json!([cats, {"id": "b", "label": second, "color": "#4ECDC4"}])
    };
    let body = json!({"apiVersion": "voting.schoolofdevops.com/v1", "kind": "VoteConfig",
        "metadata": {"name": "pets"}, "spec": {"options": options("Dogs")}});
    api.create(&PostParams::default(), &object(body)).await.unwrap();
    let has = |text: &'static str| {
        move |cm: &ConfigMap| {
            cm.data
                .as_ref()
                .and_then(|d| d.get("options.txt"))
                .is_some_and(|t| t.contains(text))
        }
    };
    repaired(&config_maps, "pets-config", "the ConfigMap", has("Dogs")).await;
    eventually("Ready", LIMIT, || async {
        api.get("pets").await.ok()?.status?.config_map_name.map(|_| ())
    })
    .await;
    let children = vec![config_maps.get("pets-config").await.unwrap().metadata];

    let update = Patch::Merge(json!({"spec": {"options": options("Birds")}}));
    api.patch("pets", &PatchParams::default(), &update).await.unwrap();
    repaired(&config_maps, "pets-config", "the updated ConfigMap", has("Birds")).await;
    let edit = Patch::Merge(json!({"data": {"options.txt": "hacked"}}));
    config_maps
        .patch("pets-config", &PatchParams::default(), &edit)
        .await
        .unwrap();
    repaired(&config_maps, "pets-config", "the edit repaired", has("Birds")).await;
    config_maps
        .delete("pets-config", &DeleteParams::default())
        .await
        .unwrap();
    repaired(
        &config_maps,
        "pets-config",
        "the ConfigMap recreated",
        has("Birds"),
    )
    .await;

    api.delete("pets", &DeleteParams::default()).await.unwrap();
    super::until_gone(&config_maps, "pets-config", "the ConfigMap collected", LIMIT).await;
    children
}

/// WebApp: Deployment and Service applied, rolled out, repaired, the finalizer's cleanup on delete.
pub async fn web_app_lifecycle(client: &kube::Client) -> Vec<ObjectMeta> {
    let api: Api<WebApp> = Api::namespaced(client.clone(), "default");
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), "default");
    let services: Api<Service> = Api::namespaced(client.clone(), "default");
    // With the finalizer earlier versions added, which the controller removes (an upgrade).
    let body = json!({"apiVersion": "example.com/v1", "kind": "WebApp",
        "metadata": {"name": "shop", "finalizers": [operator::api::web_app::LEGACY_FINALIZER]},
        "spec": {"image": "nginx:1.27", "replicas": 2}});
    api.create(&PostParams::default(), &object(body)).await.unwrap();
    eventually("Running, the old finalizer gone", LIMIT, || async {
        let shop = api.get("shop").await.ok()?;
        (shop.finalizers().is_empty() && shop.status?.phase.as_deref() == Some("Running")).then_some(())
    })
    .await;
    let children = vec![
        deployments.get("shop").await.unwrap().metadata,
        services.get("shop").await.unwrap().metadata,
    ];

    let update = Patch::Merge(json!({"spec": {"image": "nginx:1.28", "replicas": 3, "port": 8080}}));
    api.patch("shop", &PatchParams::default(), &update).await.unwrap();
    let replicas = |n: i32| move |d: &Deployment| d.spec.as_ref().and_then(|s| s.replicas) == Some(n);
    repaired(&deployments, "shop", "the rollout", replicas(3)).await;
    let drift = Patch::Merge(json!({"spec": {"replicas": 9}}));
    deployments
        .patch("shop", &PatchParams::default(), &drift)
        .await
        .unwrap();
    repaired(&deployments, "shop", "replicas repaired", replicas(3)).await;
    services.delete("shop", &DeleteParams::default()).await.unwrap();
    repaired(&services, "shop", "the Service recreated", |_| true).await;

    api.delete("shop", &DeleteParams::default()).await.unwrap();
    eventually("the WebApp and its children gone", LIMIT, || async {
        let gone = api.get_opt("shop").await.ok()?.is_none()
            && deployments.get_opt("shop").await.ok()?.is_none()
            && services.get_opt("shop").await.ok()?.is_none();
        gone.then_some(())
    })
    .await;
    children
}

/// PostgresWriter: the row written, updated, moved to another table and deleted behind the finalizer,
/// with the orphan sweep on.
pub async fn postgres_writer_lifecycle(client: &kube::Client) {
    let api: Api<PostgresWriter> = Api::namespaced(client.clone(), "default");
    let table = |writer: PostgresWriter| writer.status.and_then(|s| s.table);
    let body = json!({"apiVersion": "demo.yash.com/v1", "kind": "PostgresWriter",
        "metadata": {"name": "alex"},
        "spec": {"table": "students", "name": "alex", "age": 23, "country": "canada"}});
    api.create(&PostParams::default(), &object(body)).await.unwrap();
    eventually("the row written", LIMIT, || async {
        (table(api.get("alex").await.ok()?).as_deref() == Some("students")).then_some(())
    })
    .await;
    let update = Patch::Merge(json!({"spec": {"age": 24}}));
    api.patch("alex", &PatchParams::default(), &update).await.unwrap();
    let moved = Patch::Merge(json!({"spec": {"table": "alumni"}}));
    api.patch("alex", &PatchParams::default(), &moved).await.unwrap();
    eventually("the row moved", LIMIT, || async {
        (table(api.get("alex").await.ok()?).as_deref() == Some("alumni")).then_some(())
    })
    .await;
    api.delete("alex", &DeleteParams::default()).await.unwrap();
    super::until_gone(&api, "alex", "the PostgresWriter gone", LIMIT).await;
}

/// Two replicas of the real binary in `namespace`, as config/manager deploys them: the first leads and
/// renews, lets go on SIGTERM, the standby takes over and lets go in turn.
pub async fn leader_election(kubeconfig: &Path, namespace: &str, client: &kube::Client) {
    let replica = |identity: &str| {
        super::OperatorProcess::spawn(
            kubeconfig,
            &[
                "run",
                "--leader-elect",
                "--controllers=vote-config",
                "--lease-duration-seconds=3",
                "--metrics-bind-address=0",
                "--health-probe-bind-address=0",
                // As deployed, the webhooks are the certificate's business, not a local run's.
                "--local-webhooks=never",
            ],
            &[("HOSTNAME", identity), ("POD_NAMESPACE", namespace)],
        )
    };
    let leases: Api<Lease> = Api::namespaced(client.clone(), namespace);
    let renewed = || async {
        leases
            .get_opt("operator.demo.yash.com")
            .await
            .ok()??
            .spec?
            .renew_time
    };
    let mut first = replica("first");
    first.wait_for_log("became the leader", LIMIT).await;
    let mut second = replica("second");
    second.wait_for_log("waiting to become the leader", LIMIT).await;
    let before = renewed().await;
    eventually("a renewal", LIMIT, || async {
        renewed().await.filter(|t| Some(t) != before.as_ref())
    })
    .await;
    first.signal("TERM");
    assert!(
        first.exit_within(LIMIT).await.is_some_and(|s| s.success()),
        "{}",
        first.log_so_far()
    );
    second.wait_for_log("became the leader", LIMIT).await;
    second.signal("TERM");
    assert!(
        second.exit_within(LIMIT).await.is_some_and(|s| s.success()),
        "{}",
        second.log_so_far()
    );
}
