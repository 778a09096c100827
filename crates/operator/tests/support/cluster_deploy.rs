//! What the tests that deploy the operator to the cluster tier's node share (`deployed.rs` with `make
//! deploy`, `deployed_helm.rs` with Helm): the image the tier loaded into the node, a database outside
//! the cluster reached through a Service, and the manager's pods Ready.

use std::{net::IpAddr, time::Duration};

use k8s_openapi::api::core::v1::{Namespace, Node, Pod, Service};
use kube::{
    Api,
    api::{ListParams, PostParams},
};
use serde_json::json;

use super::eventually;

/// The namespace the operator is deployed to, as the README names it.
pub const NAMESPACE: &str = "operator-system";
/// The label of the manager's pods.
pub const MANAGER_PODS: &str = "control-plane=controller-manager";

/// How long a deployed manager pod may take to be Ready: scheduled, started from an image already on
/// the node, its readiness probe passed (first after 5 s, then every 10 s), on a 2-core machine that
/// runs the rest of the tier's processes too.
pub const READY_WITHIN: Duration = Duration::from_secs(180);

/// The image the tier built with `make docker-build` and loaded into the node (testenv/cluster/env.sh).
pub fn operator_image() -> String {
    std::env::var("OPERATOR_IMAGE").unwrap_or_else(|_| "localhost/operator:cluster-test".into())
}

/// The node's InternalIP: the address of the tier's bridge, which pods reach.
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

/// A selectorless Service `postgres` in `namespace` whose endpoint is the database at
/// `address:port`, outside the cluster, as a managed database would be.
pub async fn database_service(client: &kube::Client, namespace: &str, address: IpAddr, port: u16) {
    let services: Api<Service> = Api::namespaced(client.clone(), namespace);
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
        Api::namespaced(client.clone(), namespace);
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

/// Creates the namespace `name` unless it exists.
pub async fn ensure_namespace(client: &kube::Client, name: &str) {
    let namespaces: Api<Namespace> = Api::all(client.clone());
    if namespaces.get_opt(name).await.unwrap().is_none() {
        let namespace = serde_json::from_value(json!({"metadata": {"name": name}})).unwrap();
        namespaces
            .create(&PostParams::default(), &namespace)
            .await
            .unwrap();
    }
}

pub fn is_ready(pod: &Pod) -> bool {
    pod.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|c| c.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

/// Pods not being deleted.
pub fn live(pods: Vec<Pod>) -> Vec<Pod> {
    pods.into_iter()
        .filter(|p| p.metadata.deletion_timestamp.is_none())
        .collect()
}

/// The image of a pod's first container.
pub fn image_of(pod: &Pod) -> Option<&str> {
    pod.spec.as_ref()?.containers.first()?.image.as_deref()
}

/// Exactly `count` manager pods in [`NAMESPACE`], every one Running and Ready on `image`; returns
/// them.
pub async fn manager_pods_ready(client: &kube::Client, count: usize, image: &str) -> Vec<Pod> {
    let pods: Api<Pod> = Api::namespaced(client.clone(), NAMESPACE);
    let selector = ListParams::default().labels(MANAGER_PODS);
    eventually(
        &format!("{count} manager pods Running and Ready on {image}"),
        READY_WITHIN,
        || async {
            let listed = live(pods.list(&selector).await.ok()?.items);
            (listed.len() == count && listed.iter().all(|p| is_ready(p) && image_of(p) == Some(image)))
                .then_some(listed)
        },
    )
    .await
}
