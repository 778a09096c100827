//! WebApp on every tier, each test in a namespace of its own. Pods run for real only on the cluster
//! tier's node; the embedded server's simulated node and the real tier's kubelet stand-in report what
//! they would (see `support::kubelet`), so each test asserts the same on every tier.

mod support;

use std::time::Duration;

use k8s_openapi::api::{
    apps::v1::Deployment,
    core::v1::{ResourceQuota, Service},
};
use kube::{
    Api,
    api::{DeleteParams, Patch, PatchParams, PostParams},
};
use operator::{
    api::web_app::{LEGACY_FINALIZER, WebApp},
    controllers::web_app,
};
use serde_json::json;
use support::{Backend, PODS_READY_WITHIN, Scene, WEB_IMAGE, eventually, kubelet::KubeletStandIn};

/// How long the controller may take to act on a change: a reconcile is a few requests.
const LIMIT: Duration = Duration::from_secs(15);

/// An image no node has and no registry serves: a rollout to it changes the Deployment, and on the
/// cluster tier's node its pods never start (which no assertion here depends on).
const NEXT_IMAGE: &str = "localhost/operator-test/web:2";

fn web_app_body(name: &str) -> WebApp {
    serde_json::from_value(json!({
        "apiVersion": "example.com/v1", "kind": "WebApp",
        "metadata": {"name": name}, "spec": {"image": WEB_IMAGE, "replicas": 2}
    }))
    .expect("valid WebApp")
}

async fn phase(api: &Api<WebApp>, name: &str) -> Option<String> {
    api.get(name).await.ok()?.status?.phase
}

/// Waits, as long as pods may take to be ready, until `name` is Running.
async fn until_running(api: &Api<WebApp>, name: &str) {
    eventually(&format!("{name} Running"), PODS_READY_WITHIN, || async {
        (phase(api, name).await.as_deref() == Some("Running")).then_some(())
    })
    .await;
}

/// What the WebApp controller's field manager wrote into an object: how it looks to someone asking
/// whether the controller wrote it again. Others write beside it (the Deployment controller its
/// status, on the tiers where one runs), so the resourceVersion would not tell.
fn written_by_the_controller(meta: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta) -> String {
    let entries: Vec<_> = meta
        .managed_fields
        .iter()
        .flatten()
        .filter(|m| m.manager.as_deref() == Some(web_app::NAME))
        .collect();
    serde_json::to_string(&entries).expect("managed fields serialize")
}

async fn deployment_and_service_follow_the_spec_are_repaired_and_status_tracks_readiness(backend: Backend) {
    let scene = Scene::start(backend, "web-app-follows").await;
    let _kubelet = KubeletStandIn::start(scene.plane(), &scene.client);
    let (ctx, shutdown) = scene.context(Duration::from_secs(300));
    let running = support::spawn(ctx, shutdown, web_app::run);
    let api: Api<WebApp> = scene.api();
    let deployments: Api<Deployment> = scene.api();
    let services: Api<Service> = scene.api();

    let created = api
        .create(&PostParams::default(), &web_app_body("shop"))
        .await
        .unwrap();
    until_running(&api, "shop").await;
    let deployment = deployments.get("shop").await.unwrap();
    assert_eq!(
        deployment.metadata.owner_references.unwrap()[0].uid,
        created.metadata.uid.clone().unwrap()
    );
    let service = services.get("shop").await.unwrap().spec.unwrap();
    assert_eq!(service.selector.unwrap()["app"], "shop");
    assert_eq!(service.ports.unwrap()[0].port, 80, "port defaults to 80");
    assert_eq!(
        api.get("shop").await.unwrap().status.unwrap().ready_replicas,
        Some(2)
    );

    // A reconcile that finds everything as desired writes nothing.
    let versions = || async {
        (
            written_by_the_controller(&deployments.get("shop").await.unwrap().metadata),
            services.get("shop").await.unwrap().metadata.resource_version,
            api.get("shop").await.unwrap().status,
        )
    };
    let before = versions().await;
    let reconciles = running.reconciles();
    api.patch(
        "shop",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"labels": {"touch": "1"}}})),
    )
    .await
    .unwrap();
    eventually("a reconcile of the label change", LIMIT, || async {
        (running.reconciles() > reconciles).then_some(())
    })
    .await;
    assert_eq!(versions().await, before, "no child or status write");

    // Spec changes roll out.
    api.patch(
        "shop",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"image": NEXT_IMAGE, "replicas": 3, "port": 8080}})),
    )
    .await
    .unwrap();
    eventually("the rollout", LIMIT, || async {
        let d = deployments.get("shop").await.ok()?;
        let spec = d.spec?;
        let image = spec.template.spec?.containers[0].image.clone()?;
        let port = services.get("shop").await.ok()?.spec?.ports?[0].port;
        (image == NEXT_IMAGE && spec.replicas == Some(3) && port == 8080).then_some(())
    })
    .await;

    // Drift is repaired.
    deployments
        .patch(
            "shop",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"replicas": 9}})),
        )
        .await
        .unwrap();
    eventually("replicas repaired", LIMIT, || async {
        (deployments.get("shop").await.ok()?.spec?.replicas == Some(3)).then_some(())
    })
    .await;
    services.delete("shop", &DeleteParams::default()).await.unwrap();
    eventually("Service recreated", LIMIT, || async {
        services.get_opt("shop").await.ok()?.map(|_| ())
    })
    .await;

    // Deletion is the garbage collector's: the WebApp carries no finalizer, the children go with it.
    assert!(api.get("shop").await.unwrap().metadata.finalizers.is_none());
    api.delete("shop", &DeleteParams::default()).await.unwrap();
    until_all_gone(&scene, "shop", "the WebApp and its children to go").await;
    running.stop().await;
}

/// Waits until WebApp `name`, its Deployment and its Service are gone (the garbage collector's work).
async fn until_all_gone(scene: &Scene, name: &str, what: &str) {
    let api: Api<WebApp> = scene.api();
    let deployments: Api<Deployment> = scene.api();
    let services: Api<Service> = scene.api();
    eventually(what, support::COLLECTED_WITHIN, || async {
        let gone = api.get_opt(name).await.ok()?.is_none()
            && deployments.get_opt(name).await.ok()?.is_none()
            && services.get_opt(name).await.ok()?.is_none();
        gone.then_some(())
    })
    .await;
}

async fn a_web_app_is_deleted_with_its_children_while_no_operator_runs(backend: Backend) {
    let scene = Scene::start(backend, "web-app-no-operator").await;
    let _kubelet = KubeletStandIn::start(scene.plane(), &scene.client);
    let api: Api<WebApp> = scene.api();
    let deployments: Api<Deployment> = scene.api();
    let services: Api<Service> = scene.api();
    let (ctx, shutdown) = scene.context(Duration::from_secs(300));
    let running = support::spawn(ctx, shutdown, web_app::run);
    api.create(&PostParams::default(), &web_app_body("shop"))
        .await
        .unwrap();
    eventually("the children", LIMIT, || async {
        let deployment = deployments.get_opt("shop").await.ok()??;
        let service = services.get_opt("shop").await.ok()??;
        Some((deployment, service))
    })
    .await;
    running.stop().await;

    api.delete("shop", &DeleteParams::default()).await.unwrap();
    until_all_gone(
        &scene,
        "shop",
        "the WebApp and its children to go with no operator",
    )
    .await;
}

async fn the_finalizer_of_earlier_versions_is_removed_so_no_web_app_stays_stuck(backend: Backend) {
    let scene = Scene::start(backend, "web-app-old-finalizer").await;
    let _kubelet = KubeletStandIn::start(scene.plane(), &scene.client);
    let api: Api<WebApp> = scene.api();
    let deployments: Api<Deployment> = scene.api();
    // As an earlier version left them: one WebApp in use, one deleted while no operator ran (held by
    // the finalizer), each beside a finalizer of someone else's, which must stay.
    let with_old_finalizer = |name: &str| {
        let mut body = web_app_body(name);
        body.metadata.finalizers = Some(vec!["example.com/someone-else".into(), LEGACY_FINALIZER.into()]);
        body
    };
    for name in ["kept", "deleted"] {
        api.create(&PostParams::default(), &with_old_finalizer(name))
            .await
            .unwrap();
    }
    api.delete("deleted", &DeleteParams::default()).await.unwrap();
    assert!(
        api.get("deleted")
            .await
            .unwrap()
            .metadata
            .deletion_timestamp
            .is_some(),
        "held by its finalizers"
    );

    let (ctx, shutdown) = scene.context(Duration::from_secs(300));
    let running = support::spawn(ctx, shutdown, web_app::run);
    let only_someone_elses = Some(vec!["example.com/someone-else".to_owned()]);
    for name in ["kept", "deleted"] {
        eventually("the old finalizer removed", LIMIT, || async {
            (api.get(name).await.ok()?.metadata.finalizers == only_someone_elses).then_some(())
        })
        .await;
    }
    // The WebApp in use is reconciled as usual; the deleted one gets no children.
    until_running(&api, "kept").await;
    assert!(deployments.get_opt("deleted").await.unwrap().is_none());
    running.stop().await;

    // With the other finalizer gone too, deletion completes: nothing of ours holds it.
    for name in ["kept", "deleted"] {
        api.patch(
            name,
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"finalizers": null}})),
        )
        .await
        .unwrap();
    }
    api.delete("kept", &DeleteParams::default()).await.unwrap();
    for name in ["kept", "deleted"] {
        support::until_gone(&api, name, "the WebApp to go", LIMIT).await;
    }
}

async fn a_deployment_that_never_becomes_ready_keeps_the_web_app_deploying(backend: Backend) {
    let scene = Scene::start(backend, "web-app-never-ready").await;
    let _kubelet = KubeletStandIn::start(scene.plane(), &scene.client);
    // What keeps the pods from being ready is the node's business, so the test arranges it for every
    // tier's node: on the cluster tier's, a quota of no pods in the namespace, so that the ReplicaSet
    // makes none (kube-apiserver refuses them); the embedded server's simulated node and the real
    // tier's kubelet stand-in enforce no quota and honour the never-ready annotation instead, which
    // must be on the Deployment, so the test puts it there once the controller has made it.
    let quota: ResourceQuota =
        serde_json::from_value(json!({"metadata": {"name": "no-pods"}, "spec": {"hard": {"pods": "0"}}}))
            .unwrap();
    scene
        .api::<ResourceQuota>()
        .create(&PostParams::default(), &quota)
        .await
        .unwrap();
    let (ctx, shutdown) = scene.context(Duration::from_secs(300));
    let running = support::spawn(ctx, shutdown, web_app::run);
    let api: Api<WebApp> = scene.api();
    let deployments: Api<Deployment> = scene.api();
    api.create(&PostParams::default(), &web_app_body("stuck"))
        .await
        .unwrap();
    eventually("the Deployment", LIMIT, || async {
        deployments.get_opt("stuck").await.ok()?.map(|_| ())
    })
    .await;
    deployments
        .patch(
            "stuck",
            &PatchParams::default(),
            &Patch::Merge(
                json!({"metadata": {"annotations": {(apiserver::emulated::NEVER_READY_ANNOTATION): "true"}}}),
            ),
        )
        .await
        .unwrap();
    // The Deployment passes through "spec changed, status not yet observed" first: wait for the settled
    // state, its spec taken in and no pod ready (the node's verdict), before the WebApp's.
    eventually(
        "the Deployment observed with no pod ready",
        PODS_READY_WITHIN,
        || async {
            let deployment = deployments.get("stuck").await.ok()?;
            let status = deployment.status?;
            (status.observed_generation == deployment.metadata.generation
                && status.ready_replicas.unwrap_or(0) == 0)
                .then_some(())
        },
    )
    .await;
    // The embedded server's node and the stand-in give their word at once, so "none ready" is final
    // there; on the cluster tier's node pods take a moment to start, and "none ready" could be "not
    // yet" but for the Deployment saying that the quota refused its pods.
    if scene.backend() == Backend::Cluster {
        eventually("the Deployment to report its pods refused", LIMIT, || async {
            let conditions = deployments.get("stuck").await.ok()?.status?.conditions?;
            conditions
                .iter()
                .any(|c| c.type_ == "ReplicaFailure" && c.status == "True")
                .then_some(())
        })
        .await;
    }
    let status = eventually("Deploying with no ready replicas", LIMIT, || async {
        let status = api.get("stuck").await.ok()?.status?;
        (status.phase.as_deref() == Some("Deploying") && status.ready_replicas == Some(0)).then_some(status)
    })
    .await;
    assert_eq!(status.ready_replicas, Some(0));
    assert_eq!(&*status.conditions[0].status, "False");
    running.stop().await;
}

async fn kubectl_scale_resizes_the_web_app_and_its_deployment(backend: Backend) {
    let scene = Scene::start(backend, "web-app-scale").await;
    let _kubelet = KubeletStandIn::start(scene.plane(), &scene.client);
    let (ctx, shutdown) = scene.context(Duration::from_secs(300));
    let running = support::spawn(ctx, shutdown, web_app::run);
    let api: Api<WebApp> = scene.api();
    let deployments: Api<Deployment> = scene.api();
    api.create(&PostParams::default(), &web_app_body("shop"))
        .await
        .unwrap();
    until_running(&api, "shop").await;
    let kubeconfig = scene.kubeconfig();

    let namespace = scene.namespace.as_str();
    support::kubectl(
        &kubeconfig,
        &["scale", "webapp/shop", "-n", namespace, "--replicas=3"],
    );
    eventually(
        "the Deployment scaled and the WebApp Running with 3",
        PODS_READY_WITHIN,
        || async {
            let replicas = deployments.get("shop").await.ok()?.spec?.replicas;
            let status = api.get("shop").await.ok()?.status?;
            (replicas == Some(3)
                && status.ready_replicas == Some(3)
                && status.phase.as_deref() == Some("Running"))
            .then_some(())
        },
    )
    .await;
    // The Scale an autoscaler reads: replicas asked and ready, and the pods' selector.
    let scale: serde_json::Value = serde_json::from_str(&support::kubectl(
        &kubeconfig,
        &[
            "get",
            "--raw",
            &format!("/apis/example.com/v1/namespaces/{namespace}/webapps/shop/scale"),
        ],
    ))
    .expect("a Scale");
    assert_eq!(scale["spec"]["replicas"], 3);
    assert_eq!(scale["status"], json!({"replicas": 3, "selector": "app=shop"}));
    running.stop().await;
}

/// The child of a WebApp's name that a user makes before the WebApp exists.
#[derive(Clone, Copy)]
enum Child {
    Deployment,
    Service,
}

/// Makes the user's `child` named `name`; returns its uid.
async fn make_users(scene: &Scene, child: Child, name: &str) -> Option<String> {
    let meta = json!({"name": name, "labels": {"team": "users"}});
    let created = match child {
        Child::Deployment => {
            let body: Deployment = serde_json::from_value(json!({
                "metadata": meta,
                "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "users-own"}},
                         "template": {"metadata": {"labels": {"app": "users-own"}},
                                      "spec": {"containers": [{"name": "main", "image": WEB_IMAGE}]}}}
            }))
            .unwrap();
            let api: Api<Deployment> = scene.api();
            api.create(&PostParams::default(), &body).await.unwrap().metadata
        }
        Child::Service => {
            let body: Service = serde_json::from_value(json!({
                "metadata": meta,
                "spec": {"selector": {"app": "users-own"}, "ports": [{"name": "web", "port": 9000}]}
            }))
            .unwrap();
            let api: Api<Service> = scene.api();
            api.create(&PostParams::default(), &body).await.unwrap().metadata
        }
    };
    created.uid
}

/// What the user's `child` looks like to whoever might have touched it, if it exists.
#[derive(Debug, PartialEq)]
struct Touched {
    uid: Option<String>,
    owner_references: usize,
    /// Whether the WebApp's field manager wrote any field.
    by_us: bool,
}

async fn users(scene: &Scene, child: Child, name: &str) -> Option<Touched> {
    let meta = match child {
        Child::Deployment => scene.api::<Deployment>().get_opt(name).await.unwrap()?.metadata,
        Child::Service => scene.api::<Service>().get_opt(name).await.unwrap()?.metadata,
    };
    Some(Touched {
        uid: meta.uid,
        owner_references: meta.owner_references.map_or(0, |o| o.len()),
        by_us: meta
            .managed_fields
            .unwrap_or_default()
            .iter()
            .any(|m| m.manager.as_deref() == Some(web_app::NAME)),
    })
}

async fn a_child_someone_else_made_is_left_alone_and_outlives_the_web_app(backend: Backend, child: Child) {
    let scene = Scene::start(
        backend,
        match child {
            Child::Deployment => "web-app-users-deployment",
            Child::Service => "web-app-users-service",
        },
    )
    .await;
    let uid = make_users(&scene, child, "shop").await;
    let untouched = Some(Touched {
        uid,
        owner_references: 0,
        by_us: false,
    });
    let (ctx, shutdown) = scene.context(Duration::from_secs(300));
    let running = support::spawn(ctx, shutdown, web_app::run);
    let api: Api<WebApp> = scene.api();
    let created = api
        .create(&PostParams::default(), &web_app_body("shop"))
        .await
        .unwrap();

    let (reason, other) = match child {
        Child::Deployment => ("DeploymentNotOwned", "services"),
        Child::Service => ("ServiceNotOwned", "deployments"),
    };
    let ready = eventually("Ready=False with the not-owned reason", LIMIT, || async {
        let status = api.get("shop").await.ok()?.status?;
        let ready = status.conditions.into_iter().find(|c| &*c.type_ == "Ready")?;
        (&*ready.status == "False" && &*ready.reason == reason).then_some(ready)
    })
    .await;
    assert!(
        ready.message.contains("not owned") && ready.message.contains("delete or rename"),
        "the message says what to do: {}",
        ready.message
    );
    support::warning_event(&scene.client, &scene.namespace, "shop", reason, LIMIT).await;
    assert_eq!(
        users(&scene, child, "shop").await,
        untouched,
        "the user's object is untouched"
    );
    // Neither child is applied while one is in the way.
    let other_exists = match other {
        "services" => scene.api::<Service>().get_opt("shop").await.unwrap().is_some(),
        _ => scene.api::<Deployment>().get_opt("shop").await.unwrap().is_some(),
    };
    assert!(!other_exists, "no {other} made beside the user's object");

    // Deleting the WebApp leaves the user's object: once the garbage collector has collected a
    // dependent the WebApp really owns, it has acted on the deletion.
    let owned: k8s_openapi::api::core::v1::ConfigMap = serde_json::from_value(json!({
        "metadata": {"name": "shop-dependent", "ownerReferences": [{
            "apiVersion": "example.com/v1", "kind": "WebApp", "name": "shop",
            "uid": created.metadata.uid.clone().unwrap()
        }]}
    }))
    .unwrap();
    let config_maps: Api<k8s_openapi::api::core::v1::ConfigMap> = scene.api();
    config_maps.create(&PostParams::default(), &owned).await.unwrap();
    api.delete("shop", &DeleteParams::default()).await.unwrap();
    support::until_gone(
        &config_maps,
        "shop-dependent",
        "the WebApp's dependent to be collected",
        support::COLLECTED_WITHIN,
    )
    .await;
    support::until_gone(&api, "shop", "the WebApp to go", LIMIT).await;
    assert_eq!(
        users(&scene, child, "shop").await,
        untouched,
        "the user's object outlives the WebApp, untouched"
    );
    running.stop().await;
}

async fn a_deployment_someone_else_made_is_left_alone_and_outlives_the_web_app(backend: Backend) {
    a_child_someone_else_made_is_left_alone_and_outlives_the_web_app(backend, Child::Deployment).await;
}

async fn a_service_someone_else_made_is_left_alone_and_outlives_the_web_app(backend: Backend) {
    a_child_someone_else_made_is_left_alone_and_outlives_the_web_app(backend, Child::Service).await;
}

/// The resync interval of the drift test: short, so that several resyncs pass quickly.
const RESYNC: Duration = Duration::from_secs(1);

async fn what_others_add_to_the_children_stays_and_resyncs_neither_write_nor_report(backend: Backend) {
    let scene = Scene::start(backend, "web-app-others-add").await;
    let (client, namespace) = (&scene.client, scene.namespace.as_str());
    let _kubelet = KubeletStandIn::start(scene.plane(), client);
    let (ctx, shutdown) = scene.context(RESYNC);
    let running = support::spawn(ctx, shutdown, web_app::run);
    let api: Api<WebApp> = scene.api();
    let deployments: Api<Deployment> = scene.api();
    let services: Api<Service> = scene.api();
    api.create(&PostParams::default(), &web_app_body("shop"))
        .await
        .unwrap();
    let applied = || async {
        let deployment = support::times_reported(client, namespace, "shop", "DeploymentApplied").await;
        let service = support::times_reported(client, namespace, "shop", "ServiceApplied").await;
        Some((deployment.ok()?, service.ok()?))
    };
    eventually(
        "Running and both children's creation reported",
        PODS_READY_WITHIN,
        || async {
            let running = phase(&api, "shop").await.as_deref() == Some("Running");
            (running && applied().await? == (1, 1)).then_some(())
        },
    )
    .await;
    let kubeconfig = scene.kubeconfig();

    // Someone adds a port to the Service and a label to the pods, under a field manager of their own.
    let before = running.reconciles();
    let service_version = support::kubectl(
        &kubeconfig,
        &[
            "patch",
            "service",
            "shop",
            "-n",
            namespace,
            "--field-manager",
            "someone-else",
            "-p",
            r#"{"spec":{"ports":[{"name":"metrics","port":9090}]}}"#,
            "-o",
            "jsonpath={.metadata.resourceVersion}",
        ],
    );
    support::kubectl(
        &kubeconfig,
        &[
            "patch",
            "deployment",
            "shop",
            "-n",
            namespace,
            "--field-manager",
            "someone-else",
            "-p",
            r#"{"spec":{"template":{"metadata":{"labels":{"team":"shop"}}}}}"#,
        ],
    );
    // The changes' own reconciles and at least two resyncs.
    eventually("four reconciles", LIMIT + 4 * RESYNC, || async {
        (running.reconciles() >= before + 4).then_some(())
    })
    .await;
    let service = services.get("shop").await.unwrap();
    assert_eq!(
        service.metadata.resource_version.as_deref(),
        Some(service_version.as_str()),
        "no Service write since the hand edit"
    );
    let mut ports: Vec<i32> = service
        .spec
        .unwrap()
        .ports
        .unwrap()
        .iter()
        .map(|p| p.port)
        .collect();
    ports.sort();
    assert_eq!(ports, [80, 9090], "their port kept beside ours");
    let template = deployments.get("shop").await.unwrap().spec.unwrap().template;
    assert_eq!(template.metadata.unwrap().labels.unwrap()["team"], "shop");
    assert_eq!(applied().await, Some((1, 1)), "no child applied again");

    // A hand edit of our field is repaired.
    support::kubectl(
        &kubeconfig,
        &[
            "patch",
            "deployment",
            "shop",
            "-n",
            namespace,
            "--field-manager",
            "someone-else",
            "-p",
            r#"{"spec":{"replicas":5}}"#,
        ],
    );
    eventually("our replicas repaired and the repair reported", LIMIT, || async {
        let replicas = deployments.get("shop").await.ok()?.spec?.replicas;
        (replicas == Some(2) && applied().await? == (2, 1)).then_some(())
    })
    .await;
    running.stop().await;
}

testenv::every_tier!(
    what_others_add_to_the_children_stays_and_resyncs_neither_write_nor_report,
    a_deployment_someone_else_made_is_left_alone_and_outlives_the_web_app,
    a_service_someone_else_made_is_left_alone_and_outlives_the_web_app,
    kubectl_scale_resizes_the_web_app_and_its_deployment,
    deployment_and_service_follow_the_spec_are_repaired_and_status_tracks_readiness,
    a_deployment_that_never_becomes_ready_keeps_the_web_app_deploying,
    a_web_app_is_deleted_with_its_children_while_no_operator_runs,
    the_finalizer_of_earlier_versions_is_removed_so_no_web_app_stays_stuck,
);
