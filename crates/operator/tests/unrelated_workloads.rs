//! The controllers watch only what they made: their children and the WebApps' pods carry
//! `app.kubernetes.io/managed-by=<controller>`, and every watch of children selects by it. So the
//! cluster's other workloads, most of them labelled `app`, are neither held in the manager's memory
//! (the `unrelated_workloads` bench measures that) nor read as a WebApp's. Children an earlier version
//! made without the label are adopted by their owner reference when the new version starts; a
//! same-named object someone else made is still refused.

mod support;

use std::{
    sync::{Arc, Mutex},
    time::Duration,
};

use apiserver::{AuditRecord, http::filters::audit::Verb};
use futures::StreamExt;
use k8s_openapi::{
    api::{
        apps::v1::Deployment,
        core::v1::{ConfigMap, Pod, Service},
    },
    apimachinery::pkg::apis::meta::v1::ObjectMeta,
};
use kube::{
    Api, Resource, ResourceExt,
    api::{Patch, PatchParams, PostParams},
    runtime::{WatchStreamExt, watcher},
};
use operator::{
    api::{vote_config::VoteConfig, web_app::WebApp},
    controllers::{vote_config, web_app},
};
use serde_json::json;
use support::{
    Backend, PODS_READY_WITHIN, Scene, WEB_IMAGE, eventually, kubelet::KubeletStandIn, lifecycles::object,
};

/// The label our children carry, whose value names the controller that made them (docs/operators.md).
const MANAGED_BY: &str = "app.kubernetes.io/managed-by";
/// How long a controller may take to act on a change: a reconcile is a few requests.
const LIMIT: Duration = Duration::from_secs(15);
/// The resync of the controllers under test: long, so that only watches start reconciles.
const RESYNC: Duration = Duration::from_secs(300);

fn web_app_body(name: &str) -> WebApp {
    object(json!({
        "apiVersion": "example.com/v1", "kind": "WebApp",
        "metadata": {"name": name}, "spec": {"image": WEB_IMAGE, "replicas": 2}
    }))
}

fn vote_config_body(name: &str) -> VoteConfig {
    object(json!({
        "apiVersion": "voting.schoolofdevops.com/v1", "kind": "VoteConfig",
        "metadata": {"name": name},
        "spec": {"options": [{"id": "a", "label": "Cats"}, {"id": "b", "label": "Dogs"}]}
    }))
}

/// Whether any of our controllers' field managers wrote a field of the object.
fn written_by_us(meta: &ObjectMeta) -> bool {
    meta.managed_fields
        .iter()
        .flatten()
        .any(|m| matches!(m.manager.as_deref(), Some(web_app::NAME | vote_config::NAME)))
}

fn managed_by(meta: &ObjectMeta) -> Option<&str> {
    meta.labels.as_ref()?.get(MANAGED_BY).map(String::as_str)
}

/// A user's workloads in the scene's namespace, each labelled `app=<app>` as a user labels theirs: a
/// Deployment, a Service, a ConfigMap, and a Pod on a node of its own whose container cannot pull its
/// image (its status written as that node's kubelet reports it). Returns them as made.
async fn users_workloads(scene: &Scene, app: &str) -> (Deployment, Service, ConfigMap, Pod) {
    let labels = json!({"app": app});
    let deployment: Deployment = object(json!({
        "metadata": {"name": format!("{app}-users"), "labels": labels},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": format!("{app}-users")}},
                 "template": {"metadata": {"labels": {"app": format!("{app}-users")}},
                              "spec": {"containers": [{"name": "main", "image": WEB_IMAGE}]}}},
    }));
    let deployment = scene
        .api::<Deployment>()
        .create(&PostParams::default(), &deployment)
        .await
        .unwrap();
    let service: Service = object(json!({
        "metadata": {"name": format!("{app}-users"), "labels": labels},
        "spec": {"selector": labels, "ports": [{"name": "web", "port": 9000}]},
    }));
    let service = scene
        .api::<Service>()
        .create(&PostParams::default(), &service)
        .await
        .unwrap();
    let config_map: ConfigMap = object(json!({
        "metadata": {"name": format!("{app}-users"), "labels": labels},
        "data": {"settings": "theirs"},
    }));
    let config_map = scene
        .api::<ConfigMap>()
        .create(&PostParams::default(), &config_map)
        .await
        .unwrap();
    // For a node no tier has, so it is never scheduled (nor collected as an orphan, as a pod bound to
    // a missing node would be): its container status is the one written here.
    let pod: Pod = object(json!({
        "metadata": {"name": format!("{app}-users-pod"), "labels": labels},
        "spec": {"nodeSelector": {"users-only": "true"},
                 "containers": [{"name": "main", "image": "users/missing:1"}]},
    }));
    let pods = scene.api::<Pod>();
    pods.create(&PostParams::default(), &pod).await.unwrap();
    let status = json!({"status": {"phase": "Pending", "containerStatuses": [{
        "name": "main", "image": "users/missing:1", "imageID": "", "ready": false, "restartCount": 0,
        "state": {"waiting": {"reason": "ImagePullBackOff", "message": "Back-off pulling image \"users/missing:1\""}},
    }]}});
    let pod = pods
        .patch_status(
            &format!("{app}-users-pod"),
            &PatchParams::default(),
            &Patch::Merge(status),
        )
        .await
        .unwrap();
    (deployment, service, config_map, pod)
}

/// Every phase WebApp `name` passes through, as a watch sees them, from now on.
fn phases_of(scene: &Scene, name: &str) -> (Arc<Mutex<Vec<String>>>, tokio::task::JoinHandle<()>) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let api: Api<WebApp> = scene.api();
    let config = watcher::Config::default().fields(&format!("metadata.name={name}"));
    let record = seen.clone();
    let task = tokio::spawn(async move {
        let mut changes = watcher(api, config).default_backoff().applied_objects().boxed();
        while let Some(Ok(web_app)) = changes.next().await {
            if let Some(phase) = web_app.status.and_then(|s| s.phase) {
                record.lock().unwrap().push(phase);
            }
        }
    });
    (seen, task)
}

async fn web_apps_and_vote_configs_work_beside_users_workloads_labelled_app_and_leave_them_alone(
    backend: Backend,
) {
    let scene = Scene::start(backend, "unrelated-workloads").await;
    let _kubelet = KubeletStandIn::start(scene.plane(), &scene.client);
    // The user's workloads share the label value of our WebApp and VoteConfig: `app=shop`.
    let (deployment, service, config_map, pod) = users_workloads(&scene, "shop").await;
    let (ctx, shutdown) = scene.context(RESYNC);
    let web_apps = support::spawn(ctx, shutdown, web_app::run);
    let (ctx, shutdown) = scene.context(RESYNC);
    let vote_configs = support::spawn(ctx, shutdown, vote_config::run);

    let (phases, watching) = phases_of(&scene, "shop");
    let api: Api<WebApp> = scene.api();
    api.create(&PostParams::default(), &web_app_body("shop"))
        .await
        .unwrap();
    let vote_config_api: Api<VoteConfig> = scene.api();
    vote_config_api
        .create(&PostParams::default(), &vote_config_body("shop"))
        .await
        .unwrap();

    // The WebApp runs as before: its children carry the label, its pods' selector is `app=shop` still.
    let status = eventually("the WebApp Running", PODS_READY_WITHIN, || async {
        let status = api.get("shop").await.ok()?.status?;
        (status.phase.as_deref() == Some("Running")).then_some(status)
    })
    .await;
    assert_eq!(status.ready_replicas, Some(2));
    assert_eq!(status.selector.as_deref(), Some("app=shop"));
    let ours = scene.api::<Deployment>().get("shop").await.unwrap();
    assert_eq!(managed_by(&ours.metadata), Some(web_app::NAME));
    let template = ours.spec.unwrap().template.metadata.unwrap();
    assert_eq!(managed_by(&template), Some(web_app::NAME), "on the pods too");
    let ours = scene.api::<Service>().get("shop").await.unwrap();
    assert_eq!(managed_by(&ours.metadata), Some(web_app::NAME));
    assert_eq!(ours.spec.unwrap().selector.unwrap()["app"], "shop");
    // The user's pod labelled `app=shop`, which cannot start, is not one of the WebApp's: it never
    // failed the WebApp, nor was reported about it.
    assert!(
        !phases.lock().unwrap().iter().any(|p| p == "Failed"),
        "the WebApp's phases: {:?}",
        phases.lock().unwrap()
    );
    watching.abort();
    let reported = support::events(&scene.client, &scene.namespace, "shop", "ImagePullBackOff")
        .await
        .unwrap();
    assert!(reported.is_empty(), "no Event about the user's pod: {reported:?}");

    // The VoteConfig too.
    let synced = eventually("the VoteConfig Ready", LIMIT, || async {
        let status = vote_config_api.get("shop").await.ok()?.status?;
        status
            .conditions
            .iter()
            .any(|c| c.is("Ready", "True"))
            .then_some(status)
    })
    .await;
    assert_eq!(synced.config_map_name.as_deref(), Some("shop-config"));
    let ours = scene.api::<ConfigMap>().get("shop-config").await.unwrap();
    assert_eq!(managed_by(&ours.metadata), Some(vote_config::NAME));

    // The user's workloads are as they were made: no field of ours, no owner, no label added.
    let untouched = |meta: &ObjectMeta, made: &ObjectMeta| {
        assert!(!written_by_us(meta), "{:?} written by a controller", meta.name);
        assert_eq!(meta.owner_references, made.owner_references);
        assert_eq!(meta.labels, made.labels);
    };
    let name = deployment.name_any();
    untouched(
        &scene.api::<Deployment>().get(&name).await.unwrap().metadata,
        &deployment.metadata,
    );
    untouched(
        &scene
            .api::<Service>()
            .get(&service.name_any())
            .await
            .unwrap()
            .metadata,
        &service.metadata,
    );
    untouched(
        &scene
            .api::<ConfigMap>()
            .get(&config_map.name_any())
            .await
            .unwrap()
            .metadata,
        &config_map.metadata,
    );
    untouched(
        &scene.api::<Pod>().get(&pod.name_any()).await.unwrap().metadata,
        &pod.metadata,
    );
    web_apps.stop().await;
    vote_configs.stop().await;
}

/// `child` as the WebApp controller before `app.kubernetes.io/managed-by` wrote it: the same apply
/// under the same field manager, without that label.
fn as_an_earlier_version_made<K: Resource>(
    mut child: K,
    template: impl FnOnce(&mut K) -> Option<&mut ObjectMeta>,
) -> K {
    child.meta_mut().labels.get_or_insert_default().remove(MANAGED_BY);
    if let Some(template) = template(&mut child) {
        template.labels.get_or_insert_default().remove(MANAGED_BY);
    }
    child
}

async fn children_an_earlier_version_made_are_adopted_and_a_strangers_stay_refused(backend: Backend) {
    let scene = Scene::start(backend, "adopted-children").await;
    let _kubelet = KubeletStandIn::start(scene.plane(), &scene.client);
    let api: Api<WebApp> = scene.api();
    let deployments: Api<Deployment> = scene.api();
    let services: Api<Service> = scene.api();

    // What a cluster running the earlier version holds: WebApp `shop` with the Deployment and Service
    // it applied, owned by it, without the label; and WebApp `cart`, whose name a Deployment someone
    // else made holds (labelled `app=cart`, as the earlier version's were).
    let shop = api
        .create(&PostParams::default(), &web_app_body("shop"))
        .await
        .unwrap();
    let earlier = PatchParams::apply(web_app::NAME).force();
    let deployment = as_an_earlier_version_made(web_app::desired_deployment(&shop), |d| {
        d.spec.as_mut()?.template.metadata.as_mut()
    });
    let deployment = deployments
        .patch("shop", &earlier, &Patch::Apply(&deployment))
        .await
        .unwrap();
    let service = as_an_earlier_version_made(web_app::desired_service(&shop), |_| None);
    let service = services
        .patch("shop", &earlier, &Patch::Apply(&service))
        .await
        .unwrap();
    assert_eq!(managed_by(&deployment.metadata), None);
    let strangers: Deployment = object(json!({
        "metadata": {"name": "cart", "labels": {"app": "cart"}},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "cart"}},
                 "template": {"metadata": {"labels": {"app": "cart"}},
                              "spec": {"containers": [{"name": "main", "image": WEB_IMAGE}]}}},
    }));
    let strangers = deployments
        .create(&PostParams::default(), &strangers)
        .await
        .unwrap();
    api.create(&PostParams::default(), &web_app_body("cart"))
        .await
        .unwrap();

    // The new version starts.
    let (ctx, shutdown) = scene.context(RESYNC);
    let running = support::spawn(ctx, shutdown, web_app::run);

    // Adopted: the same objects, labelled, and the WebApp runs on them.
    eventually("the earlier children labelled", LIMIT, || async {
        let deployment = deployments.get("shop").await.ok()?;
        let service = services.get("shop").await.ok()?;
        let template = deployment.spec.as_ref()?.template.metadata.as_ref()?;
        (managed_by(&deployment.metadata) == Some(web_app::NAME)
            && managed_by(template) == Some(web_app::NAME)
            && managed_by(&service.metadata) == Some(web_app::NAME))
        .then_some(())
    })
    .await;
    let adopted = deployments.get("shop").await.unwrap();
    assert_eq!(
        adopted.uid(),
        deployment.uid(),
        "the Deployment is the same object"
    );
    assert_eq!(
        services.get("shop").await.unwrap().uid(),
        service.uid(),
        "the Service is the same object"
    );
    // The label added to the pod template rolls the Deployment out, so a surge pod may count as
    // ready for a while: what a user sees once the rollout is over is Running with its two replicas.
    eventually("shop Running with its 2 replicas", PODS_READY_WITHIN, || async {
        let status = api.get("shop").await.ok()?.status?;
        (status.phase.as_deref() == Some("Running") && status.ready_replicas == Some(2)).then_some(())
    })
    .await;
    // Nothing duplicated: one Deployment and one Service of shop's, the stranger's beside them.
    let deployment_names: Vec<String> = deployments
        .list(&Default::default())
        .await
        .unwrap()
        .items
        .iter()
        .map(ResourceExt::name_any)
        .collect();
    assert_eq!(deployment_names, ["cart", "shop"]);
    let service_names: Vec<String> = services
        .list(&Default::default())
        .await
        .unwrap()
        .items
        .iter()
        .map(ResourceExt::name_any)
        .collect();
    assert_eq!(
        service_names,
        ["shop"],
        "no Service made beside the stranger's Deployment"
    );

    // Refused as before: Ready=False, the reason and a Warning Event; the stranger's object untouched.
    let ready = eventually("cart Ready=False, DeploymentNotOwned", LIMIT, || async {
        let status = api.get("cart").await.ok()?.status?;
        let ready = status.conditions.into_iter().find(|c| &*c.type_ == "Ready")?;
        (&*ready.status == "False" && &*ready.reason == "DeploymentNotOwned").then_some(ready)
    })
    .await;
    assert!(ready.message.contains("not owned"), "{}", ready.message);
    support::warning_event(
        &scene.client,
        &scene.namespace,
        "cart",
        "DeploymentNotOwned",
        LIMIT,
    )
    .await;
    let now = deployments.get("cart").await.unwrap();
    assert_eq!(now.uid(), strangers.uid());
    assert!(
        !written_by_us(&now.metadata),
        "the stranger's Deployment written by the controller"
    );
    assert_eq!(managed_by(&now.metadata), None);
    assert!(now.owner_references().is_empty());
    running.stop().await;
}

testenv::each_control_plane!(
    web_apps_and_vote_configs_work_beside_users_workloads_labelled_app_and_leave_them_alone
);
testenv::every_tier!(children_an_earlier_version_made_are_adopted_and_a_strangers_stay_refused);

/// The user agent of the audited test's own client; every other request is the controllers'.
const TEST_AGENT: &str = "unrelated-workloads-test";

/// The label selector of a request's target (`/api/v1/pods?labelSelector=...&watch=true`), decoded.
fn label_selector(target: &str) -> Option<String> {
    let (_, query) = target.split_once('?')?;
    let value = query
        .split('&')
        .find_map(|pair| pair.strip_prefix("labelSelector="))?;
    Some(value.replace("%2F", "/").replace("%3D", "=").replace("%2C", ","))
}

/// The controllers' lists and watches of what they do not own by kind: every child and pod.
fn child_reads(records: &[AuditRecord]) -> Vec<(String, Option<String>)> {
    records
        .iter()
        .filter(|r| r.user_agent.as_deref() != Some(TEST_AGENT))
        .filter_map(|r| {
            let attributes = r.resource()?;
            let read = matches!(attributes.verb, Verb::List | Verb::Watch)
                && matches!(
                    attributes.resource.as_str(),
                    "configmaps" | "deployments" | "services" | "pods"
                );
            let target = &r.exchange.as_ref()?.target;
            read.then(|| (attributes.resource.clone(), label_selector(target)))
        })
        .collect()
}

/// On the embedded server, whose audit records each request as sent: every list and watch of
/// children the controllers send selects their label, so the server sends them nothing else.
#[tokio::test(flavor = "multi_thread")]
async fn every_watch_of_children_selects_the_controllers_managed_by_label() {
    let server = apiserver::ApiServer::start(apiserver::Config {
        audit: apiserver::Audit::Traffic,
        ..apiserver::Config::default()
    })
    .await
    .expect("API server starts");
    let mut config = server.kube_config();
    config.headers.push((
        axum::http::header::USER_AGENT,
        axum::http::HeaderValue::from_static(TEST_AGENT),
    ));
    let client = kube::Client::try_from(config).expect("client");
    support::install_crds(&client).await;
    let (ctx, shutdown) = support::context(&server.client(), RESYNC);
    let web_apps = support::spawn(ctx, shutdown, web_app::run);
    let (ctx, shutdown) = support::context(&server.client(), RESYNC);
    let vote_configs = support::spawn(ctx, shutdown, vote_config::run);
    let api: Api<WebApp> = Api::namespaced(client.clone(), "default");
    api.create(&PostParams::default(), &web_app_body("shop"))
        .await
        .unwrap();
    let vote_config_api: Api<VoteConfig> = Api::namespaced(client.clone(), "default");
    vote_config_api
        .create(&PostParams::default(), &vote_config_body("pets"))
        .await
        .unwrap();
    eventually("both Ready", PODS_READY_WITHIN, || async {
        let web_app = api.get("shop").await.ok()?.status?.phase;
        let vote_config = vote_config_api.get("pets").await.ok()?.status?.conditions;
        (web_app.as_deref() == Some("Running") && vote_config.iter().any(|c| c.is("Ready", "True")))
            .then_some(())
    })
    .await;

    let reads = child_reads(&server.audit());
    for kind in ["configmaps", "deployments", "services", "pods"] {
        assert!(
            reads.iter().any(|(resource, _)| resource == kind),
            "the controllers watch {kind}: {reads:?}"
        );
    }
    for (resource, selector) in &reads {
        let controller = if resource == "configmaps" {
            vote_config::NAME
        } else {
            web_app::NAME
        };
        assert_eq!(
            selector.as_deref(),
            Some(format!("{MANAGED_BY}={controller}").as_str()),
            "a list or watch of {resource} selects only what {controller} made"
        );
    }
    web_apps.stop().await;
    vote_configs.stop().await;
}
