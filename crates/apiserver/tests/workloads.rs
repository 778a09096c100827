//! Deployments, ReplicaSets and Pods as kube-controller-manager makes them (K1). On both servers
//! without a node (the real control plane runs every default controller but no kubelet, the embedded
//! one with its simulated node switched off): names, labels, annotations, owner references, Events and
//! the status fields that do not depend on a node. On the embedded server with its simulated node:
//! what a real cluster with a ready node shows (Pods running and ready, Deployments available).

mod common;

use std::{collections::BTreeMap, future::Future, time::Duration};

use k8s_openapi::api::{
    apps::v1::{Deployment, ReplicaSet},
    core::v1::{Event, Node, Pod, ReplicationController},
};
use kube::{
    Api,
    api::{ListParams, Patch, PatchParams, PostParams},
};
use serde_json::json;
use testenv::{Backend, ControlPlane};

/// How long the real controllers may take: the controller manager starts its informers after the
/// API server is ready, on a machine other test suites share.
const REAL_CONTROLLERS: Duration = Duration::from_secs(60);

async fn until<T, F, Fut>(what: &str, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let deadline = tokio::time::Instant::now() + REAL_CONTROLLERS;
    loop {
        if let Some(found) = check().await {
            return found;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// A control plane that runs the workload controllers and no node.
async fn without_a_node(backend: Backend) -> ControlPlane {
    match backend {
        Backend::Real => ControlPlane::real(testenv::real::Controllers::All).await,
        Backend::Cluster => panic!("the cluster tier has a node"),
        Backend::Embedded => {
            ControlPlane::embedded(apiserver::Config {
                simulated_node: false,
                ..apiserver::Config::default()
            })
            .await
        }
    }
    .expect("control plane starts")
}

fn deployment(name: &str, replicas: i32, image: &str) -> Deployment {
    serde_json::from_value(json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name, "labels": {"app": name},
            "annotations": {"team": "shop",
                "kubectl.kubernetes.io/last-applied-configuration": "{}"}},
        "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "web", "image": image}]}}}
    }))
    .expect("a Deployment")
}

fn hash_of(replica_set: &ReplicaSet) -> String {
    replica_set.metadata.labels.as_ref().expect("labels")["pod-template-hash"].clone()
}

fn annotations(replica_set: &ReplicaSet) -> BTreeMap<String, String> {
    replica_set.metadata.annotations.clone().unwrap_or_default()
}

/// The Deployment's conditions as (type, status, reason, message).
fn conditions(deployment: &Deployment) -> Vec<(String, String, String, String)> {
    deployment
        .status
        .as_ref()
        .and_then(|s| s.conditions.clone())
        .unwrap_or_default()
        .into_iter()
        .map(|c| {
            (
                c.type_,
                c.status,
                c.reason.unwrap_or_default(),
                c.message.unwrap_or_default(),
            )
        })
        .collect()
}

fn condition(kind: &str, status: &str, reason: &str, message: &str) -> (String, String, String, String) {
    (kind.into(), status.into(), reason.into(), message.into())
}

/// The Events about `name`, as (source component, reason, message), oldest first.
async fn events_about(client: &kube::Client, name: &str) -> Vec<(String, String, String)> {
    let events: Api<Event> = Api::default_namespaced(client.clone());
    let mut listed: Vec<Event> = events
        .list(&ListParams::default().fields(&format!("involvedObject.name={name}")))
        .await
        .expect("events list")
        .items;
    // Named after the object and the time in nanoseconds, in hexadecimal: the names sort by time.
    listed.sort_by_key(|e| e.metadata.name.clone());
    listed
        .into_iter()
        .map(|e| {
            let source = e.source.and_then(|s| s.component).unwrap_or_default();
            assert_eq!(
                e.reporting_component.as_deref(),
                Some(source.as_str()),
                "reportingComponent"
            );
            assert_eq!(e.count, Some(1));
            (
                source,
                e.reason.unwrap_or_default(),
                e.message.unwrap_or_default(),
            )
        })
        .collect()
}

fn sorted<T: Ord>(mut items: Vec<T>) -> Vec<T> {
    items.sort();
    items
}

async fn a_deployment_gets_a_replica_set_and_pods_as_the_controllers_make_them(backend: Backend) {
    let plane = without_a_node(backend).await;
    let client = plane.client();
    let deployments: Api<Deployment> = Api::default_namespaced(client.clone());
    let replica_sets: Api<ReplicaSet> = Api::default_namespaced(client.clone());
    let pods: Api<Pod> = Api::default_namespaced(client.clone());
    let created = deployments
        .create(&PostParams::default(), &deployment("web", 3, "nginx:1.27"))
        .await
        .unwrap();
    let uid = created.metadata.uid.clone().unwrap();

    // The ReplicaSet: named after the Deployment and its template's hash, owned by it.
    let first = until("the ReplicaSet", || async {
        replica_sets
            .list(&ListParams::default())
            .await
            .ok()?
            .items
            .into_iter()
            .next()
    })
    .await;
    let hash = hash_of(&first);
    let first_name = format!("web-{hash}");
    assert_eq!(first.metadata.name.as_deref(), Some(first_name.as_str()));
    assert_eq!(
        first.metadata.labels.clone().unwrap(),
        BTreeMap::from([
            ("app".into(), "web".into()),
            ("pod-template-hash".into(), hash.clone())
        ])
    );
    assert_eq!(
        annotations(&first),
        BTreeMap::from([
            ("team".into(), "shop".into()),
            ("deployment.kubernetes.io/desired-replicas".into(), "3".into()),
            ("deployment.kubernetes.io/max-replicas".into(), "4".into()),
            ("deployment.kubernetes.io/revision".into(), "1".into()),
        ]),
        "the Deployment's annotations but kubectl's, and the controller's own"
    );
    let owner = &first.metadata.owner_references.clone().unwrap()[0];
    assert_eq!(
        (
            owner.api_version.as_str(),
            owner.kind.as_str(),
            owner.name.as_str(),
            owner.uid.as_str()
        ),
        ("apps/v1", "Deployment", "web", uid.as_str())
    );
    assert_eq!(
        (owner.controller, owner.block_owner_deletion),
        (Some(true), Some(true))
    );
    let spec = first.spec.clone().unwrap();
    assert_eq!(spec.replicas, Some(3));
    assert_eq!(spec.selector.match_labels.unwrap()["pod-template-hash"], hash);
    assert_eq!(
        spec.template.unwrap().metadata.unwrap().labels.unwrap()["pod-template-hash"],
        hash
    );

    // Its Pods: generated names, the template's labels, the ReplicaSet as controller; Pending.
    let made = until("three Pods", || async {
        let items = pods.list(&ListParams::default()).await.ok()?.items;
        (items.len() == 3).then_some(items)
    })
    .await;
    for pod in &made {
        assert_eq!(
            pod.metadata.generate_name.as_deref(),
            Some(format!("{first_name}-").as_str())
        );
        assert!(
            pod.metadata
                .name
                .as_ref()
                .unwrap()
                .starts_with(&format!("{first_name}-"))
        );
        assert_eq!(pod.metadata.labels.clone().unwrap()["pod-template-hash"], hash);
        let owner = &pod.metadata.owner_references.clone().unwrap()[0];
        assert_eq!(
            (owner.kind.as_str(), owner.name.as_str()),
            ("ReplicaSet", first_name.as_str())
        );
        assert_eq!(
            (owner.controller, owner.block_owner_deletion),
            (Some(true), Some(true))
        );
        assert_eq!(pod.status.as_ref().unwrap().phase.as_deref(), Some("Pending"));
        assert!(pod.spec.as_ref().unwrap().node_name.is_none(), "no node");
    }

    // The status says three replicas, none of them available, and a rollout in progress.
    let status = until("the Deployment's status", || async {
        let d = deployments.get("web").await.ok()?;
        let status = d.status.clone()?;
        (status.replicas == Some(3) && conditions(&d).len() == 2).then_some(d)
    })
    .await;
    assert_eq!(
        status.metadata.annotations.clone().unwrap()["deployment.kubernetes.io/revision"],
        "1"
    );
    let counts = status.status.clone().unwrap();
    assert_eq!(
        (
            counts.observed_generation,
            counts.replicas,
            counts.updated_replicas,
            counts.ready_replicas,
            counts.available_replicas,
            counts.unavailable_replicas
        ),
        (Some(1), Some(3), Some(3), None, None, Some(3))
    );
    assert_eq!(
        conditions(&status),
        [
            condition(
                "Available",
                "False",
                "MinimumReplicasUnavailable",
                "Deployment does not have minimum availability."
            ),
            condition(
                "Progressing",
                "True",
                "ReplicaSetUpdated",
                &format!("ReplicaSet \"{first_name}\" is progressing.")
            ),
        ]
    );
    let rs_status = until("the ReplicaSet's status", || async {
        let status = replica_sets.get(&first_name).await.ok()?.status?;
        (status.observed_generation == Some(1)).then_some(status)
    })
    .await;
    assert_eq!(
        (
            rs_status.replicas,
            rs_status.fully_labeled_replicas,
            rs_status.ready_replicas,
            rs_status.available_replicas
        ),
        (3, Some(3), None, None)
    );

    let pod_names: Vec<String> = made.iter().map(|p| p.metadata.name.clone().unwrap()).collect();
    let mut expected: Vec<(String, String, String)> = pod_names
        .iter()
        .map(|name| {
            (
                "replicaset-controller".into(),
                "SuccessfulCreate".into(),
                format!("Created pod: {name}"),
            )
        })
        .collect();
    assert_eq!(
        sorted(events_about(&client, &first_name).await),
        sorted(expected.clone())
    );
    assert_eq!(
        events_about(&client, "web").await,
        [(
            "deployment-controller".to_owned(),
            "ScalingReplicaSet".to_owned(),
            format!("Scaled up replica set {first_name} from 0 to 3")
        )]
    );

    // Scaled down: the ReplicaSet follows, two Pods go.
    deployments
        .patch(
            "web",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"replicas": 1}})),
        )
        .await
        .unwrap();
    let left = until("one Pod left", || async {
        let items = pods.list(&ListParams::default()).await.ok()?.items;
        (items.len() == 1).then_some(items)
    })
    .await;
    let gone: Vec<&String> = pod_names
        .iter()
        .filter(|name| Some(*name) != left[0].metadata.name.as_ref())
        .collect();
    expected.extend(gone.iter().map(|name| {
        (
            "replicaset-controller".into(),
            "SuccessfulDelete".into(),
            format!("Deleted pod: {name}"),
        )
    }));
    let rs_events = until("the deletions' Events", || async {
        let events = events_about(&client, &first_name).await;
        (events.len() == 5).then_some(events)
    })
    .await;
    assert_eq!(sorted(rs_events), sorted(expected));

    // A new template: a second ReplicaSet, revision 2, scaled up by the surge; the old one cannot go
    // down while nothing is available.
    deployments
        .patch(
            "web",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"template": {"spec": {"containers": [{"name": "web", "image": "nginx:1.28"}]}}}})),
        )
        .await
        .unwrap();
    let second = until("the second ReplicaSet", || async {
        replica_sets
            .list(&ListParams::default())
            .await
            .ok()?
            .items
            .into_iter()
            .find(|rs| rs.metadata.name.as_deref() != Some(first_name.as_str()))
    })
    .await;
    let second_name = second.metadata.name.clone().unwrap();
    assert_eq!(annotations(&second)["deployment.kubernetes.io/revision"], "2");
    let rolled = until("the rollout's status", || async {
        let d = deployments.get("web").await.ok()?;
        let status = d.status.clone()?;
        (status.observed_generation == Some(3) && status.replicas == Some(2)).then_some(d)
    })
    .await;
    assert_eq!(
        rolled.metadata.annotations.unwrap()["deployment.kubernetes.io/revision"],
        "2"
    );
    let counts = rolled.status.unwrap();
    assert_eq!(
        (
            counts.updated_replicas,
            counts.available_replicas,
            counts.unavailable_replicas
        ),
        (Some(1), None, Some(2))
    );
    assert_eq!(
        replica_sets
            .get(&first_name)
            .await
            .unwrap()
            .spec
            .unwrap()
            .replicas,
        Some(1)
    );
    assert_eq!(
        replica_sets
            .get(&second_name)
            .await
            .unwrap()
            .spec
            .unwrap()
            .replicas,
        Some(1)
    );
    let scaling = until("the second scaling Event", || async {
        let events = events_about(&client, "web").await;
        (events.len() == 3).then_some(events)
    })
    .await;
    assert_eq!(
        scaling[1..],
        [
            (
                "deployment-controller".to_owned(),
                "ScalingReplicaSet".to_owned(),
                format!("Scaled down replica set {first_name} from 3 to 1")
            ),
            (
                "deployment-controller".to_owned(),
                "ScalingReplicaSet".to_owned(),
                format!("Scaled up replica set {second_name} from 0 to 1")
            ),
        ]
    );
}

async fn a_replication_controller_keeps_its_pods_as_the_replication_manager_does(backend: Backend) {
    let plane = without_a_node(backend).await;
    let client = plane.client();
    let controllers: Api<ReplicationController> = Api::default_namespaced(client.clone());
    let pods: Api<Pod> = Api::default_namespaced(client.clone());
    let rc: ReplicationController = serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "ReplicationController", "metadata": {"name": "legacy"},
        "spec": {"replicas": 2, "template": {"metadata": {"labels": {"app": "legacy"}},
            "spec": {"containers": [{"name": "web", "image": "registry.k8s.io/pause:3.10"}]}}}
    }))
    .expect("a ReplicationController");
    let rc = controllers
        .create(&PostParams::default(), &rc)
        .await
        .expect("RC created");
    let uid = rc.metadata.uid.clone().expect("a uid");

    let made = until("the RC's two pods", || async {
        let listed = pods.list(&ListParams::default()).await.expect("pods list").items;
        (listed.len() == 2).then_some(listed)
    })
    .await;
    for pod in &made {
        let name = pod.metadata.name.as_deref().expect("a name");
        assert!(name.starts_with("legacy-"), "{name}");
        let owner = &pod.metadata.owner_references.as_ref().expect("an owner")[0];
        assert_eq!(
            (
                owner.api_version.as_str(),
                owner.kind.as_str(),
                owner.name.as_str(),
                owner.uid.as_str()
            ),
            ("v1", "ReplicationController", "legacy", uid.as_str())
        );
        assert_eq!(
            (owner.controller, owner.block_owner_deletion),
            (Some(true), Some(true))
        );
        let labels = pod.metadata.labels.clone().unwrap_or_default();
        assert_eq!(labels, BTreeMap::from([("app".to_owned(), "legacy".to_owned())]));
    }
    let status = until("the RC's status to count its pods", || async {
        let rc = controllers.get("legacy").await.expect("RC read");
        rc.status
            .filter(|s| s.replicas == 2 && s.observed_generation == Some(1))
    })
    .await;
    assert_eq!(status.fully_labeled_replicas, Some(2));
    assert_eq!(status.ready_replicas, None, "no node runs the pods");
    let events = events_about(&client, "legacy").await;
    assert_eq!(
        events
            .iter()
            .map(|(source, reason, _)| (source.as_str(), reason.as_str()))
            .collect::<Vec<_>>(),
        [("replication-controller", "SuccessfulCreate"); 2]
    );

    // Scaled down, it deletes a pod and says so.
    controllers
        .patch(
            "legacy",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"replicas": 1}})),
        )
        .await
        .expect("RC scaled");
    until("one pod left", || async {
        let listed = pods.list(&ListParams::default()).await.expect("pods list").items;
        (listed.len() == 1).then_some(())
    })
    .await;
    until("the deletion's Event", || async {
        let events = events_about(&client, "legacy").await;
        events
            .iter()
            .any(|(_, reason, _)| reason == "SuccessfulDelete")
            .then_some(())
    })
    .await;

    // Deleted without a propagation policy, an RC leaves its pods behind, orphaned: the v1 default
    // kept for clients from before garbage collection.
    controllers
        .delete("legacy", &Default::default())
        .await
        .expect("RC deleted");
    until("the RC gone and its pod orphaned", || async {
        let gone = controllers.get_opt("legacy").await.expect("RC read").is_none();
        let listed = pods.list(&ListParams::default()).await.expect("pods list").items;
        let orphaned = listed.len() == 1
            && listed[0]
                .metadata
                .owner_references
                .as_ref()
                .is_none_or(Vec::is_empty);
        (gone && orphaned).then_some(())
    })
    .await;
}

testenv::each_control_plane!(
    a_deployment_gets_a_replica_set_and_pods_as_the_controllers_make_them,
    a_replication_controller_keeps_its_pods_as_the_replication_manager_does,
);

/// The embedded server with its simulated node, as `make dev` runs it.
async fn with_the_node() -> (ControlPlane, kube::Client) {
    let plane = ControlPlane::embedded(apiserver::Config::default())
        .await
        .expect("server starts");
    let client = plane.client();
    (plane, client)
}

#[tokio::test(flavor = "multi_thread")]
async fn the_simulated_node_is_registered_and_ready() {
    let (_plane, client) = with_the_node().await;
    let nodes: Api<Node> = Api::all(client);
    let listed = nodes.list(&ListParams::default()).await.unwrap().items;
    assert_eq!(listed.len(), 1);
    let node = serde_json::to_value(&listed[0]).unwrap();
    assert!(
        node["spec"].get("taints").is_none(),
        "a ready node keeps no not-ready taint: {node}"
    );
    let conditions: Vec<(String, String, String)> = node["status"]["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["type"].as_str().unwrap().into(),
                c["status"].as_str().unwrap().into(),
                c["reason"].as_str().unwrap().into(),
            )
        })
        .collect();
    assert_eq!(
        conditions,
        [
            (
                "MemoryPressure".into(),
                "False".into(),
                "KubeletHasSufficientMemory".into()
            ),
            (
                "DiskPressure".into(),
                "False".into(),
                "KubeletHasNoDiskPressure".into()
            ),
            (
                "PIDPressure".into(),
                "False".into(),
                "KubeletHasSufficientPID".into()
            ),
            ("Ready".into(), "True".into(), "KubeletReady".into()),
        ]
    );
    for field in ["cpu", "memory", "pods", "ephemeral-storage"] {
        assert!(
            node["status"]["capacity"][field].is_string(),
            "capacity {field}: {node}"
        );
        assert!(
            node["status"]["allocatable"][field].is_string(),
            "allocatable {field}: {node}"
        );
    }
    assert_eq!(node["status"]["addresses"][0]["type"], "InternalIP");
    assert_eq!(node["status"]["nodeInfo"]["kubeletVersion"], "v1.33.13");
    assert_eq!(node["status"]["nodeInfo"]["operatingSystem"], "linux");
    assert_eq!(node["metadata"]["labels"]["kubernetes.io/os"], "linux");
}

#[tokio::test(flavor = "multi_thread")]
async fn pods_run_on_the_simulated_node_as_on_a_ready_node() {
    let (_plane, client) = with_the_node().await;
    let deployments: Api<Deployment> = Api::default_namespaced(client.clone());
    let pods: Api<Pod> = Api::default_namespaced(client.clone());
    deployments
        .create(&PostParams::default(), &deployment("web", 2, "nginx:1.27"))
        .await
        .unwrap();
    // Everything happens before the create is answered: no waiting.
    let listed = pods.list(&ListParams::default()).await.unwrap().items;
    assert_eq!(listed.len(), 2);
    let mut ips = Vec::new();
    for pod in listed {
        let pod = serde_json::to_value(&pod).unwrap();
        let status = &pod["status"];
        assert_eq!(pod["spec"]["nodeName"], "embedded-node");
        assert_eq!(status["phase"], "Running");
        let conditions: Vec<(&str, &str)> = status["conditions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| (c["type"].as_str().unwrap(), c["status"].as_str().unwrap()))
            .collect();
        assert_eq!(
            conditions,
            [
                ("PodReadyToStartContainers", "True"),
                ("Initialized", "True"),
                ("Ready", "True"),
                ("ContainersReady", "True"),
                ("PodScheduled", "True")
            ]
        );
        let container = &status["containerStatuses"][0];
        assert_eq!(container["name"], "web");
        assert_eq!(container["image"], "docker.io/library/nginx:1.27");
        assert!(
            container["imageID"]
                .as_str()
                .unwrap()
                .starts_with("docker.io/library/nginx@sha256:")
        );
        assert!(
            container["containerID"]
                .as_str()
                .unwrap()
                .starts_with("containerd://")
        );
        assert_eq!(
            (container["ready"].clone(), container["started"].clone()),
            (json!(true), json!(true))
        );
        assert_eq!(container["restartCount"], 0);
        assert!(
            container["state"]["running"]["startedAt"].is_string(),
            "{container}"
        );
        assert_eq!(status["qosClass"], "BestEffort");
        assert!(status["startTime"].is_string());
        assert_eq!(status["hostIPs"][0]["ip"], status["hostIP"]);
        assert_eq!(status["podIPs"][0]["ip"], status["podIP"]);
        ips.push(status["podIP"].as_str().unwrap().to_owned());
    }
    assert_ne!(ips[0], ips[1], "each Pod its own address");

    let web = deployments.get("web").await.unwrap();
    let status = web.status.clone().unwrap();
    assert_eq!(
        (
            status.replicas,
            status.updated_replicas,
            status.ready_replicas,
            status.available_replicas,
            status.unavailable_replicas
        ),
        (Some(2), Some(2), Some(2), Some(2), None)
    );
    let rs_name = format!(
        "web-{}",
        hash_of(
            &Api::<ReplicaSet>::default_namespaced(client.clone())
                .list(&ListParams::default())
                .await
                .unwrap()
                .items[0]
        )
    );
    assert_eq!(
        conditions(&web),
        [
            condition(
                "Available",
                "True",
                "MinimumReplicasAvailable",
                "Deployment has minimum availability."
            ),
            condition(
                "Progressing",
                "True",
                "NewReplicaSetAvailable",
                &format!("ReplicaSet \"{rs_name}\" has successfully progressed.")
            ),
        ]
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_rolling_update_replaces_every_pod_and_keeps_the_revision_history_limit() {
    let (_plane, client) = with_the_node().await;
    let deployments: Api<Deployment> = Api::default_namespaced(client.clone());
    let replica_sets: Api<ReplicaSet> = Api::default_namespaced(client.clone());
    let pods: Api<Pod> = Api::default_namespaced(client.clone());
    let mut body = deployment("web", 4, "nginx:1.25");
    body.spec.as_mut().unwrap().revision_history_limit = Some(1);
    deployments.create(&PostParams::default(), &body).await.unwrap();
    for image in ["nginx:1.26", "nginx:1.27", "nginx:1.28"] {
        deployments
            .patch(
                "web",
                &PatchParams::default(),
                &Patch::Merge(json!({"spec": {"template": {"spec": {"containers": [{"name": "web", "image": image}]}}}})),
            )
            .await
            .unwrap();
    }
    let listed = pods.list(&ListParams::default()).await.unwrap().items;
    assert_eq!(listed.len(), 4, "the surge is gone once the rollout ends");
    for pod in &listed {
        let container = &pod.spec.as_ref().unwrap().containers[0];
        assert_eq!(container.image.as_deref(), Some("nginx:1.28"));
    }
    // The newest ReplicaSet and one old one (the history limit); older ones deleted.
    let mut kept: Vec<(String, i32)> = replica_sets
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .iter()
        .map(|rs| {
            (
                annotations(rs)["deployment.kubernetes.io/revision"].clone(),
                rs.spec.as_ref().unwrap().replicas.unwrap(),
            )
        })
        .collect();
    kept.sort();
    assert_eq!(kept, [("3".to_owned(), 0), ("4".to_owned(), 4)]);
    let status = deployments.get("web").await.unwrap().status.unwrap();
    assert_eq!(
        (
            status.updated_replicas,
            status.available_replicas,
            status.replicas
        ),
        (Some(4), Some(4), Some(4))
    );

    // The rollout went step by step within the surge (one Pod at most over four) and unavailability
    // (one Pod at most under): every scaling Event says so.
    let events = events_about(&client, "web").await;
    let steps: Vec<&String> = events
        .iter()
        .filter(|(_, reason, _)| reason == "ScalingReplicaSet")
        .map(|(_, _, m)| m)
        .collect();
    assert!(steps.len() > 6, "{steps:?}");
    assert!(
        steps.iter().any(|m| m.ends_with("from 1 to 0")),
        "old ReplicaSets scaled to nothing: {steps:?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_never_ready_deployment_runs_unready_pods_and_is_not_available() {
    let (_plane, client) = with_the_node().await;
    let deployments: Api<Deployment> = Api::default_namespaced(client.clone());
    let pods: Api<Pod> = Api::default_namespaced(client.clone());
    deployments
        .create(&PostParams::default(), &deployment("web", 2, "nginx:1.27"))
        .await
        .unwrap();
    assert_eq!(
        deployments
            .get("web")
            .await
            .unwrap()
            .status
            .unwrap()
            .ready_replicas,
        Some(2)
    );
    deployments
        .patch(
            "web",
            &PatchParams::default(),
            &Patch::Merge(
                json!({"metadata": {"annotations": {(apiserver::emulated::NEVER_READY_ANNOTATION): "true"}}}),
            ),
        )
        .await
        .unwrap();
    let web = deployments.get("web").await.unwrap();
    let status = web.status.clone().unwrap();
    assert_eq!(
        (
            status.ready_replicas,
            status.available_replicas,
            status.unavailable_replicas
        ),
        (None, None, Some(2))
    );
    assert_eq!(conditions(&web)[1].0, "Available");
    assert_eq!(&conditions(&web)[1].1, "False");
    for pod in pods.list(&ListParams::default()).await.unwrap().items {
        let pod = serde_json::to_value(&pod).unwrap();
        assert_eq!(pod["status"]["phase"], "Running");
        let ready = pod["status"]["conditions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["type"] == "Ready")
            .unwrap()
            .clone();
        assert_eq!(
            (
                ready["status"].clone(),
                ready["reason"].clone(),
                ready["message"].clone()
            ),
            (
                json!("False"),
                json!("ContainersNotReady"),
                json!("containers with unready status: [web]")
            )
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn pods_become_available_after_min_ready_seconds() {
    let (_plane, client) = with_the_node().await;
    let deployments: Api<Deployment> = Api::default_namespaced(client.clone());
    let mut body = deployment("web", 1, "nginx:1.27");
    body.spec.as_mut().unwrap().min_ready_seconds = Some(2);
    deployments.create(&PostParams::default(), &body).await.unwrap();
    let status = deployments.get("web").await.unwrap().status.unwrap();
    assert_eq!(
        (status.ready_replicas, status.available_replicas),
        (Some(1), None)
    );
    // Available once ready for two seconds; the controllers look again every second.
    common::eventually("the Pod available", || async {
        deployments
            .get("web")
            .await
            .unwrap()
            .status
            .unwrap()
            .available_replicas
            == Some(1)
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_pod_whose_node_selector_the_node_does_not_match_is_unschedulable() {
    let (_plane, client) = with_the_node().await;
    let pods: Api<Pod> = Api::default_namespaced(client.clone());
    let pod: Pod = serde_json::from_value(
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "gpu"},
        "spec": {"nodeSelector": {"accelerator": "gpu"}, "containers": [{"name": "a", "image": "busybox"}]}}),
    )
    .unwrap();
    pods.create(&PostParams::default(), &pod).await.unwrap();
    let status = serde_json::to_value(pods.get("gpu").await.unwrap().status.unwrap()).unwrap();
    assert_eq!(status["phase"], "Pending");
    assert_eq!(status["conditions"][0]["type"], "PodScheduled");
    assert_eq!(status["conditions"][0]["reason"], "Unschedulable");
    let events = events_about(&client, "gpu").await;
    assert_eq!(events[0].0, "default-scheduler");
    assert_eq!(events[0].1, "FailedScheduling");
}

#[tokio::test(flavor = "multi_thread")]
async fn recreate_lets_every_old_pod_go_before_the_new_ones_start() {
    let (_plane, client) = with_the_node().await;
    let deployments: Api<Deployment> = Api::default_namespaced(client.clone());
    let replica_sets: Api<ReplicaSet> = Api::default_namespaced(client.clone());
    let mut body = deployment("web", 3, "nginx:1.27");
    body.spec.as_mut().unwrap().strategy = Some(serde_json::from_value(json!({"type": "Recreate"})).unwrap());
    deployments.create(&PostParams::default(), &body).await.unwrap();
    let first = format!(
        "web-{}",
        hash_of(&replica_sets.list(&ListParams::default()).await.unwrap().items[0])
    );
    deployments
        .patch(
            "web",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"template": {"spec": {"containers": [{"name": "web", "image": "nginx:1.28"}]}}}})),
        )
        .await
        .unwrap();
    let second = replica_sets
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .find(|rs| rs.metadata.name.as_deref() != Some(first.as_str()))
        .expect("a second ReplicaSet");
    let second = second.metadata.name.unwrap();
    let scaling: Vec<String> = events_about(&client, "web")
        .await
        .into_iter()
        .filter(|(_, reason, _)| reason == "ScalingReplicaSet")
        .map(|(_, _, message)| message)
        .collect();
    assert_eq!(
        scaling,
        [
            format!("Scaled up replica set {first} from 0 to 3"),
            format!("Scaled down replica set {first} from 3 to 0"),
            format!("Scaled up replica set {second} from 0 to 3"),
        ]
    );
    let status = deployments.get("web").await.unwrap().status.unwrap();
    assert_eq!(
        (
            status.updated_replicas,
            status.available_replicas,
            status.replicas
        ),
        (Some(3), Some(3), Some(3))
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_deleted_deployment_takes_its_replica_sets_and_pods_along() {
    let (_plane, client) = with_the_node().await;
    let deployments: Api<Deployment> = Api::default_namespaced(client.clone());
    let replica_sets: Api<ReplicaSet> = Api::default_namespaced(client.clone());
    let pods: Api<Pod> = Api::default_namespaced(client.clone());
    deployments
        .create(&PostParams::default(), &deployment("web", 2, "nginx:1.27"))
        .await
        .unwrap();
    deployments.delete("web", &Default::default()).await.unwrap();
    assert!(
        replica_sets
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
            .is_empty()
    );
    assert!(pods.list(&ListParams::default()).await.unwrap().items.is_empty());
}

/// A namespace whose ReplicaSet keeps Pods running goes whole when it is deleted: the ReplicaSet's
/// attempts to replace the Pods taken away are refused (the namespace is terminating) and recorded
/// once, and the server goes on answering. Each server tears a namespace down in an order of its own
/// (Pods before or after their ReplicaSet), so the test deletes one on several servers.
#[tokio::test(flavor = "multi_thread")]
async fn a_namespace_with_running_replicas_is_deleted_whole() {
    for _ in 0..4 {
        delete_a_namespace_with_running_replicas().await;
    }
}

async fn delete_a_namespace_with_running_replicas() {
    let (_plane, client) = with_the_node().await;
    let namespaces: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(client.clone());
    let namespace = serde_json::from_value(json!({"metadata": {"name": "teardown"}})).expect("a Namespace");
    namespaces
        .create(&PostParams::default(), &namespace)
        .await
        .unwrap();
    let replica_sets: Api<ReplicaSet> = Api::namespaced(client.clone(), "teardown");
    let replica_set: ReplicaSet = serde_json::from_value(json!({
        "metadata": {"name": "web"},
        "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "web", "image": "nginx:1.27"}]}}}
    }))
    .expect("a ReplicaSet");
    replica_sets
        .create(&PostParams::default(), &replica_set)
        .await
        .unwrap();
    let pods: Api<Pod> = Api::namespaced(client.clone(), "teardown");
    until("three running Pods", || async {
        let listed = pods.list(&ListParams::default()).await.ok()?.items;
        let running = listed
            .iter()
            .filter(|pod| pod.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running"))
            .count();
        (running == 3).then_some(())
    })
    .await;
    let deleted = tokio::time::timeout(
        REAL_CONTROLLERS,
        namespaces.delete("teardown", &Default::default()),
    )
    .await
    .expect("the deletion is answered");
    deleted.unwrap();
    until("the namespace gone", || async {
        matches!(
            namespaces.get("teardown").await,
            Err(kube::Error::Api(status)) if status.code == 404
        )
        .then_some(())
    })
    .await;
    assert!(
        namespaces.get("default").await.is_ok(),
        "the server still answers"
    );
}
