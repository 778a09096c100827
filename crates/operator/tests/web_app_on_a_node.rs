//! WebApp for real, on the cluster tier's node: the kubelet runs the pods from an image made on this
//! machine, kube-proxy carries a request to them through the Service, and kube-controller-manager's
//! controllers make and collect the ReplicaSets and pods. The controller runs in this process, watching
//! only the test's own namespace, so these tests share the cluster with the rest of the tier.

mod support;

use std::{net::SocketAddr, time::Duration};

use k8s_openapi::api::{
    apps::v1::{Deployment, ReplicaSet},
    core::v1::{Pod, Service},
};
use kube::{
    Api, ResourceExt,
    api::{DeleteParams, ListParams, Patch, PatchParams, PostParams},
};
use operator::{api::web_app::WebApp, controllers::web_app};
use serde_json::json;
use support::{Backend, COLLECTED_WITHIN, PODS_READY_WITHIN, Scene, WEB_IMAGE, eventually};

/// How long a pull of an image no registry serves may take to fail: one attempt, refused at once.
const FAILED_WITHIN: Duration = Duration::from_secs(90);

/// A namespace of the test's own, and the WebApp controller watching only it.
struct OnANode {
    scene: Scene,
    _controller: support::Running,
}

impl OnANode {
    async fn start(backend: Backend, name: &str) -> OnANode {
        let scene = Scene::start(backend, name).await;
        let (ctx, shutdown) = scene.context(Duration::from_secs(300));
        let controller = support::spawn(ctx, shutdown, web_app::run);
        OnANode {
            scene,
            _controller: controller,
        }
    }

    fn api<K>(&self) -> Api<K>
    where
        K: kube::Resource<Scope = k8s_openapi::NamespaceResourceScope, DynamicType = ()>,
    {
        self.scene.api()
    }

    async fn create_web_app(&self, name: &str, image: &str, replicas: i32) {
        let web_app: WebApp = serde_json::from_value(json!({
            "apiVersion": "example.com/v1", "kind": "WebApp",
            "metadata": {"name": name},
            "spec": {"image": image, "replicas": replicas, "port": 8080},
        }))
        .unwrap();
        self.api::<WebApp>()
            .create(&PostParams::default(), &web_app)
            .await
            .unwrap();
    }

    /// Waits until `name` reports `phase` with `ready` replicas ready.
    async fn phase(&self, name: &str, phase: &str, ready: i32, within: Duration) -> WebApp {
        let api = self.api::<WebApp>();
        eventually(
            &format!("{name} to be {phase} with {ready} ready"),
            within,
            || async {
                let web_app = api.get(name).await.ok()?;
                let status = web_app.status.as_ref()?;
                (status.phase.as_deref() == Some(phase) && status.ready_replicas == Some(ready))
                    .then_some(web_app.clone())
            },
        )
        .await
    }

    /// The names of `name`'s pods that are not being deleted.
    async fn pods(&self, name: &str) -> Vec<String> {
        let params = ListParams::default().labels(&format!("app={name}"));
        self.api::<Pod>()
            .list(&params)
            .await
            .unwrap()
            .items
            .into_iter()
            .filter(|p| p.metadata.deletion_timestamp.is_none())
            .map(|p| p.name_any())
            .collect()
    }
}

/// Where the Service of `name` answers: its cluster IP, through kube-proxy's rules on this host.
async fn service_address(scene: &OnANode, name: &str) -> SocketAddr {
    let service = scene.api::<Service>().get(name).await.unwrap();
    let spec = service.spec.unwrap();
    SocketAddr::new(
        spec.cluster_ip.unwrap().parse().unwrap(),
        spec.ports.unwrap()[0].port as u16,
    )
}

async fn a_web_app_runs_answers_through_its_service_and_scales(backend: Backend) {
    let scene = OnANode::start(backend, "web-app-runs").await;
    scene.create_web_app("shop", WEB_IMAGE, 2).await;
    scene.phase("shop", "Running", 2, PODS_READY_WITHIN).await;
    let pods = scene.pods("shop").await;
    assert_eq!(pods.len(), 2, "{pods:?}");

    // Through the Service: one of the WebApp's pods answers.
    let address = service_address(&scene, "shop").await;
    let answer = eventually("the Service to answer", PODS_READY_WITHIN, || async {
        support::http_get(address, "/").await.ok()
    })
    .await;
    assert_eq!(answer.status, 200);
    let from = answer
        .body
        .trim()
        .strip_prefix("hello from ")
        .unwrap_or_default()
        .to_owned();
    assert!(pods.contains(&from), "answered by {from:?}, one of {pods:?}");

    // Scaled up and down: the pods follow, and so does the phase.
    let scale = |replicas: i32| json!({"spec": {"replicas": replicas}});
    let web_apps = scene.api::<WebApp>();
    web_apps
        .patch("shop", &PatchParams::default(), &Patch::Merge(scale(3)))
        .await
        .unwrap();
    scene.phase("shop", "Running", 3, PODS_READY_WITHIN).await;
    assert_eq!(scene.pods("shop").await.len(), 3);
    web_apps
        .patch("shop", &PatchParams::default(), &Patch::Merge(scale(1)))
        .await
        .unwrap();
    scene.phase("shop", "Running", 1, PODS_READY_WITHIN).await;
    eventually("the pods to shrink to one", PODS_READY_WITHIN, || async {
        (scene.pods("shop").await.len() == 1).then_some(())
    })
    .await;
}

async fn an_image_that_cannot_be_pulled_fails_the_web_app_with_the_kubelets_reason(backend: Backend) {
    let scene = OnANode::start(backend, "web-app-fails").await;
    scene
        .create_web_app("broken", "localhost/operator-test/missing:1", 1)
        .await;
    let failed = scene.phase("broken", "Failed", 0, FAILED_WITHIN).await;
    let ready = failed
        .status
        .unwrap()
        .conditions
        .into_iter()
        .find(|c| &*c.type_ == "Ready")
        .unwrap();
    assert_eq!(&*ready.status, "False");
    assert!(
        ["ErrImagePull", "ImagePullBackOff"].contains(&&*ready.reason),
        "the kubelet's reason: {ready:?}"
    );
    assert!(
        ready.message.contains("localhost/operator-test/missing:1"),
        "the message names the image: {}",
        ready.message
    );
    support::warning_event(
        &scene.scene.client,
        &scene.scene.namespace,
        "broken",
        &ready.reason,
        FAILED_WITHIN,
    )
    .await;

    // Fixed by the user: Running.
    scene
        .api::<WebApp>()
        .patch(
            "broken",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"image": WEB_IMAGE}})),
        )
        .await
        .unwrap();
    scene.phase("broken", "Running", 1, PODS_READY_WITHIN).await;
}

async fn a_deleted_web_app_takes_its_deployment_replica_sets_pods_and_service(backend: Backend) {
    let scene = OnANode::start(backend, "web-app-goes").await;
    scene.create_web_app("gone", WEB_IMAGE, 2).await;
    scene.phase("gone", "Running", 2, PODS_READY_WITHIN).await;
    let replica_sets = scene
        .api::<ReplicaSet>()
        .list(&ListParams::default())
        .await
        .unwrap()
        .items;
    assert!(
        !replica_sets.is_empty(),
        "kube-controller-manager made a ReplicaSet"
    );

    scene
        .api::<WebApp>()
        .delete("gone", &DeleteParams::default())
        .await
        .unwrap();
    let deployments = scene.api::<Deployment>();
    support::until_gone(
        &deployments,
        "gone",
        "the Deployment to be collected",
        COLLECTED_WITHIN,
    )
    .await;
    let services = scene.api::<Service>();
    support::until_gone(&services, "gone", "the Service to be collected", COLLECTED_WITHIN).await;
    for replica_set in replica_sets {
        let api = scene.api::<ReplicaSet>();
        support::until_gone(
            &api,
            &replica_set.name_any(),
            "the ReplicaSet to be collected",
            COLLECTED_WITHIN,
        )
        .await;
    }
    eventually("the pods to be collected", COLLECTED_WITHIN, || async {
        scene.pods("gone").await.is_empty().then_some(())
    })
    .await;
}

testenv::cluster_tier!(
    a_web_app_runs_answers_through_its_service_and_scales,
    an_image_that_cannot_be_pulled_fails_the_web_app_with_the_kubelets_reason,
    a_deleted_web_app_takes_its_deployment_replica_sets_pods_and_service,
);
