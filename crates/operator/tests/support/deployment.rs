//! The operator deployed as a user deploys it, on the cluster tier's real node: the README's "Deploying
//! to a real cluster" steps played for real (the image `make docker-build` built, loaded into the node
//! as a push to a registry would make it pullable; `make deploy`), a PostgreSQL outside the cluster
//! reached through the `postgres` Service, the manager's replicas and their leader, and `make undeploy`.
//! What the `deployed*` tests share; each runs alone (the `cluster-deployed` nextest profile), since the
//! manager's controllers watch every namespace.

use std::{net::IpAddr, path::PathBuf, time::Duration};

use k8s_openapi::api::{
    apps::v1::Deployment,
    coordination::v1::Lease,
    core::v1::{Namespace, Node, Pod, Service},
};
use kube::{
    Api, ResourceExt,
    api::{DeleteParams, ListParams, PostParams},
};
use operator::db::throwaway::ThrowawayPostgres;
use serde_json::json;

use super::{ControlPlane, eventually};

/// Where `make deploy` puts the manager, and its names there.
pub const NAMESPACE: &str = "operator-system";
pub const MANAGER: &str = "operator-controller-manager";
pub const MANAGER_SELECTOR: &str = "control-plane=controller-manager";
/// `--leader-election-id`'s default: the Lease's name.
pub const LEASE: &str = "operator.demo.yash.com";

/// How long a deployed manager pod may take to be Ready: scheduled, started from an image already on
/// the node, its readiness probe passed (first after 5 s, then every 10 s), on a 2-core machine that
/// runs the rest of the tier's processes too.
pub const READY_WITHIN: Duration = Duration::from_secs(180);

/// The image the tier built with `make docker-build` and loaded into the node (testenv/cluster/env.sh).
pub fn operator_image() -> String {
    std::env::var("OPERATOR_IMAGE").unwrap_or_else(|_| "localhost/operator:cluster-test".into())
}

/// The operator deployed by [`deploy`]: the kubeconfig of the administrator and the `DIST` the
/// Makefile writes install.yaml into.
pub struct Deployed {
    pub client: kube::Client,
    pub kubeconfig: PathBuf,
    dist: String,
    _home: tempfile::TempDir,
}

impl Deployed {
    /// `make <target> IMG=<the image> DIST=<ours>`.
    pub fn make(&self, target: &str) {
        super::make(
            &self.kubeconfig,
            &[target, &format!("IMG={}", operator_image()), &self.dist],
        );
    }

    /// `kubectl scale` of the manager's Deployment to `replicas`, then waits for that many Ready pods.
    pub async fn scale(&self, replicas: usize) -> Vec<Pod> {
        super::kubectl(
            &self.kubeconfig,
            &[
                "-n",
                NAMESPACE,
                "scale",
                "deployment",
                MANAGER,
                &format!("--replicas={replicas}"),
            ],
        );
        replicas_ready(&self.client, replicas).await
    }
}

/// The README's deploy steps, for real, against `plane`, after removing what an earlier run left; the
/// manager reaches `pg` (started on the node's address, see [`node_address`]) through the `postgres`
/// Service, with the password the README's step puts into the Secret `postgres-password`.
pub async fn deploy(plane: &ControlPlane, pg: &ThrowawayPostgres) -> Deployed {
    let client = plane.client();
    let home = tempfile::tempdir().expect("a temporary directory");
    let kubeconfig = home.path().join("kubeconfig");
    plane.write_kubeconfig(&kubeconfig).expect("kubeconfig written");
    let image = operator_image();
    assert!(
        node_has_image(&client, &image).await,
        "the node has {image} (testenv/cluster/images.sh builds it with make docker-build)"
    );
    let deployed = Deployed {
        client: client.clone(),
        kubeconfig,
        dist: format!("DIST={}", home.path().join("dist").display()),
        _home: home,
    };

    // What an earlier run of a deployed test left (it stops at its first failure) goes first.
    deployed.make("undeploy");
    let namespaces: Api<Namespace> = Api::all(client.clone());
    let _ = namespaces.delete(NAMESPACE, &DeleteParams::default()).await;
    super::until_gone(
        &namespaces,
        NAMESPACE,
        "an earlier run's namespace to go",
        READY_WITHIN,
    )
    .await;

    for step in &super::readme_deploy_steps() {
        let words: Vec<&str> = step.split_whitespace().collect();
        match words.as_slice() {
            // testenv/cluster/images.sh ran `make docker-build IMG=<the tier's image>` and loaded the
            // image into the node's containerd: what a push to a registry the node pulls from gives.
            ["make", "docker-build", ..] | ["docker", "push", ..] => {}
            ["make", "deploy", _] => {
                // What the README says the manager reaches: a Service named postgres in its namespace.
                database_service(&client, pg).await;
                deployed.make("deploy");
            }
            ["kubectl", args @ ..] => {
                let args: Vec<String> = args
                    .iter()
                    .map(|a| a.replace("=...", &format!("={}", pg.password())))
                    .collect();
                let args: Vec<&str> = args.iter().map(String::as_str).collect();
                super::kubectl(&deployed.kubeconfig, &args);
            }
            _ => panic!("a README deploy step this test does not know how to play: {step}"),
        }
    }
    deployed
}

/// `make undeploy`, and the operator's namespace gone.
pub async fn undeploy(deployed: &Deployed) {
    deployed.make("undeploy");
    let namespaces: Api<Namespace> = Api::all(deployed.client.clone());
    super::until_gone(
        &namespaces,
        NAMESPACE,
        "the operator's namespace to go",
        READY_WITHIN,
    )
    .await;
}

/// The node's InternalIP: the address of the tier's bridge, which pods reach. A database outside the
/// cluster listens there, as a managed database would.
pub async fn node_address(client: &kube::Client) -> IpAddr {
    let nodes: Api<Node> = Api::all(client.clone());
    let node = nodes.list(&ListParams::default()).await.unwrap().items.remove(0);
    node.status
        .and_then(|s| s.addresses)
        .into_iter()
        .flatten()
        .find(|a| a.type_ == "InternalIP")
        .and_then(|a| a.address.parse().ok())
        .expect("the node has an InternalIP")
}

/// Whether the kubelet lists `image` among the node's images.
pub async fn node_has_image(client: &kube::Client, image: &str) -> bool {
    let nodes: Api<Node> = Api::all(client.clone());
    eventually("the node to list its images", Duration::from_secs(60), || async {
        let node = nodes.list(&ListParams::default()).await.ok()?.items.pop()?;
        let images = node.status?.images?;
        Some(
            images
                .iter()
                .flat_map(|i| i.names.iter().flatten())
                .any(|n| n == image),
        )
    })
    .await
}

/// A selectorless Service `postgres` in the manager's namespace whose endpoint is `pg`.
async fn database_service(client: &kube::Client, pg: &ThrowawayPostgres) {
    let address = node_address(client).await;
    let port = pg.port();
    let services: Api<Service> = Api::namespaced(client.clone(), NAMESPACE);
    let service = json!({
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": "postgres"},
        "spec": {"ports": [{"name": "postgres", "port": 5432, "targetPort": port}]},
    });
    services
        .create(&PostParams::default(), &serde_json::from_value(service).unwrap())
        .await
        .expect("the postgres Service is created");
    let slices: Api<k8s_openapi::api::discovery::v1::EndpointSlice> =
        Api::namespaced(client.clone(), NAMESPACE);
    let slice = json!({
        "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
        "metadata": {"name": "postgres-outside", "labels": {"kubernetes.io/service-name": "postgres"}},
        "addressType": "IPv4",
        "endpoints": [{"addresses": [address.to_string()]}],
        "ports": [{"name": "postgres", "port": port, "protocol": "TCP"}],
    });
    slices
        .create(&PostParams::default(), &serde_json::from_value(slice).unwrap())
        .await
        .expect("the postgres EndpointSlice is created");
}

pub fn is_ready(pod: &Pod) -> bool {
    pod.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|c| c.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

/// The manager's pods that are not going away.
pub async fn manager_pods(client: &kube::Client) -> kube::Result<Vec<Pod>> {
    let pods: Api<Pod> = Api::namespaced(client.clone(), NAMESPACE);
    let listed = pods.list(&ListParams::default().labels(MANAGER_SELECTOR)).await?;
    Ok(listed
        .items
        .into_iter()
        .filter(|p| p.metadata.deletion_timestamp.is_none())
        .collect())
}

/// Exactly `count` manager pods Running and Ready, and the Deployment asking for as many; returns them.
pub async fn replicas_ready(client: &kube::Client, count: usize) -> Vec<Pod> {
    let ready = eventually(
        &format!("{count} manager pods Running and Ready"),
        READY_WITHIN,
        || async {
            let listed = manager_pods(client).await.ok()?;
            (listed.len() == count && listed.iter().all(is_ready)).then_some(listed)
        },
    )
    .await;
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), NAMESPACE);
    let deployment = deployments.get(MANAGER).await.unwrap();
    assert_eq!(
        deployment.spec.and_then(|s| s.replicas),
        Some(i32::try_from(count).unwrap())
    );
    ready
}

/// The one of `pods` that holds the Lease; fails the test unless exactly one does.
pub async fn leader(client: &kube::Client, pods: &[Pod]) -> String {
    let leases: Api<Lease> = Api::namespaced(client.clone(), NAMESPACE);
    let holder = eventually("a manager to hold the Lease", READY_WITHIN, || async {
        leases.get_opt(LEASE).await.ok()??.spec?.holder_identity
    })
    .await;
    let leading: Vec<String> = pods
        .iter()
        .map(ResourceExt::name_any)
        .filter(|name| holder.starts_with(&format!("{name}-")))
        .collect();
    assert_eq!(
        leading.len(),
        1,
        "one of {pods:?} holds the Lease ({holder})",
        pods = pods.iter().map(ResourceExt::name_any).collect::<Vec<_>>()
    );
    leading[0].clone()
}

/// A namespace of the test's own for its resources, made if it is not there yet.
pub async fn workloads_namespace(client: &kube::Client, name: &str) {
    let namespaces: Api<Namespace> = Api::all(client.clone());
    if namespaces.get_opt(name).await.unwrap().is_none() {
        let namespace = serde_json::from_value(json!({"metadata": {"name": name}})).unwrap();
        namespaces
            .create(&PostParams::default(), &namespace)
            .await
            .unwrap();
    }
}
