//! The operator deployed as the README tells a user to, on the cluster tier's real node, for the tests
//! that deploy it (`tests/deployed*.rs`): the image `make docker-build` built (loaded into the node's
//! containerd, as a push to a registry would make it pullable), a PostgreSQL outside the cluster on
//! the node's address behind the `postgres` Service, the README's "Deploying to a real cluster" steps
//! played for real, and `make undeploy` checked to leave nothing behind.

use std::{net::IpAddr, path::PathBuf, time::Duration};

use k8s_openapi::{
    api::{
        apps::v1::Deployment,
        core::v1::{Namespace, Node, Pod, Service},
    },
    apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition,
};
use kube::api::{Api, DeleteParams, ListParams, PostParams};
use operator::db::throwaway::{ServerTls, ThrowawayPostgres};
use serde_json::json;

use super::{Backend, ControlPlane, eventually};

/// The manager's namespace, as `config/default` names it.
pub const NAMESPACE: &str = "operator-system";
/// The manager's Deployment.
pub const MANAGER: &str = "operator-controller-manager";

/// How long a deployed manager pod may take to be Ready: scheduled, started from an image already on
/// the node, its readiness probe passed (first after 5 s, then every 10 s), on a 2-core machine that
/// runs the rest of the tier's processes too.
pub const READY_WITHIN: Duration = Duration::from_secs(180);

/// The image the tier built with `make docker-build` and loaded into the node (testenv/cluster/env.sh).
pub fn operator_image() -> String {
    std::env::var("OPERATOR_IMAGE").unwrap_or_else(|_| "localhost/operator:cluster-test".into())
}

/// The operator deployed by the README's steps, and what the test needs to look at it.
pub struct Deployed {
    pub plane: ControlPlane,
    pub client: kube::Client,
    /// The kubeconfig `make` and kubectl use, in a home of the test's own.
    pub kubeconfig: PathBuf,
    /// `DIST=...` for `make`: where build-installer writes install.yaml.
    pub dist: String,
    /// The database, outside the cluster on the node's address.
    pub pg: ThrowawayPostgres,
    /// Its superuser over its Unix socket (no TLS needed, whatever the network rules), for the
    /// test's own SQL.
    pub sql: tokio_postgres::Client,
    _home: tempfile::TempDir,
}

impl Deployed {
    /// Cleans up what an earlier run left (it stops at its first failure), namespaces `workloads`
    /// included, starts the database, then plays the README's deploy steps.
    pub async fn as_the_readme_says(backend: Backend, workloads: &[&str]) -> Deployed {
        Self::as_the_readme_says_with(backend, workloads, None, |_| async {}).await
    }

    /// As [`Self::as_the_readme_says`], with a database that accepts only TLS with `tls`'s
    /// certificate when one is given. `before_deploy` runs right before `make deploy`, once the
    /// database's Service and the README's `kubectl` steps before it exist (for a test's own Secret
    /// or ConfigMap, say).
    pub async fn as_the_readme_says_with<F, Fut>(
        backend: Backend,
        workloads: &[&str],
        tls: Option<&ServerTls>,
        before_deploy: F,
    ) -> Deployed
    where
        F: FnOnce(BeforeDeploy) -> Fut,
        Fut: std::future::Future<Output = ()>,
    {
        let plane = ControlPlane::start(backend).await.expect("the cluster runs");
        let client = plane.client();
        let home = tempfile::tempdir().expect("a home");
        let kubeconfig = home.path().join("kubeconfig");
        plane.write_kubeconfig(&kubeconfig).expect("kubeconfig written");
        let node_ip = node_address(&client).await;
        let image = operator_image();
        assert!(
            node_has_image(&client, &image).await,
            "the node has {image} (testenv/cluster/images.sh builds it with make docker-build)"
        );

        let dist = format!("DIST={}", home.path().join("dist").display());
        super::make(&kubeconfig, &["undeploy", &format!("IMG={image}"), &dist]);
        let namespaces: Api<Namespace> = Api::all(client.clone());
        for namespace in std::iter::once(NAMESPACE).chain(workloads.iter().copied()) {
            let _ = namespaces.delete(namespace, &DeleteParams::default()).await;
            super::until_gone(
                &namespaces,
                namespace,
                "an earlier run's namespace to go",
                READY_WITHIN,
            )
            .await;
        }

        // A database outside the cluster, on the node's address, as a managed database would be.
        let pg = match tls {
            Some(tls) => ThrowawayPostgres::start_tls_only_on(node_ip, tls).await,
            None => ThrowawayPostgres::start_on(node_ip).await,
        }
        .expect("PostgreSQL starts");
        let (sql, connection) = pg
            .local_config()
            .connect(tokio_postgres::NoTls)
            .await
            .expect("the superuser over the Unix socket");
        tokio::spawn(connection);

        let mut before_deploy = Some(before_deploy);
        for step in super::readme_deploy_steps() {
            let words: Vec<&str> = step.split_whitespace().collect();
            match words.as_slice() {
                // testenv/cluster/images.sh ran `make docker-build IMG=<the tier's image>` and loaded
                // the image into the node's containerd: what a push to a registry the node pulls from
                // gives.
                ["make", "docker-build", ..] | ["docker", "push", ..] => {}
                ["make", "deploy", _] => {
                    // What the README says the manager reaches: a Service named postgres in its
                    // namespace.
                    database_service(&client, node_ip, pg.port()).await;
                    if let Some(before_deploy) = before_deploy.take() {
                        before_deploy(BeforeDeploy {
                            client: client.clone(),
                            kubeconfig: kubeconfig.clone(),
                            node_ip,
                        })
                        .await;
                    }
                    super::make(&kubeconfig, &["deploy", &format!("IMG={image}"), &dist]);
                }
                ["kubectl", args @ ..] => {
                    let args: Vec<String> = args
                        .iter()
                        .map(|a| a.replace("=...", &format!("={}", pg.password())))
                        .collect();
                    let args: Vec<&str> = args.iter().map(String::as_str).collect();
                    super::kubectl(&kubeconfig, &args);
                }
                _ => panic!("a README deploy step this test does not know how to play: {step}"),
            }
        }
        Deployed {
            plane,
            client,
            kubeconfig,
            dist,
            pg,
            sql,
            _home: home,
        }
    }

    /// `make undeploy`, then none of what `make deploy` applied is left, nor any of our kinds'
    /// objects; the test's own namespaces go too.
    pub async fn undeploy_leaves_nothing_behind(&self, workloads: &[&str]) {
        super::make(
            &self.kubeconfig,
            &["undeploy", &format!("IMG={}", operator_image()), &self.dist],
        );
        let namespaces: Api<Namespace> = Api::all(self.client.clone());
        super::until_gone(
            &namespaces,
            NAMESPACE,
            "the operator's namespace to go",
            READY_WITHIN,
        )
        .await;
        let crds: Api<CustomResourceDefinition> = Api::all(self.client.clone());
        for crd in operator::api::crds() {
            let name = crd.metadata.name.unwrap_or_default();
            super::until_gone(&crds, &name, "the CRD to go", READY_WITHIN).await;
        }
        for kind in [
            "clusterroles",
            "clusterrolebindings",
            "mutatingwebhookconfigurations",
            "validatingwebhookconfigurations",
        ] {
            let listed = super::kubectl(&self.kubeconfig, &["get", kind, "-o", "name"]);
            let left: Vec<&str> = listed.lines().filter(|l| l.contains("operator-")).collect();
            assert!(left.is_empty(), "make undeploy left {left:?}");
        }
        for namespace in workloads {
            let deleted = namespaces.delete(namespace, &DeleteParams::default()).await;
            assert!(deleted.is_ok(), "{namespace}: {deleted:?}");
        }
    }
}

/// What a test may prepare right before `make deploy`.
pub struct BeforeDeploy {
    pub client: kube::Client,
    pub kubeconfig: PathBuf,
    pub node_ip: IpAddr,
}

/// The node's InternalIP: the address of the tier's bridge, which pods reach.
pub async fn node_address(client: &kube::Client) -> IpAddr {
    let nodes: Api<Node> = Api::all(client.clone());
    let node = nodes
        .list(&ListParams::default())
        .await
        .expect("nodes listed")
        .items
        .remove(0);
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

/// A selectorless Service `postgres` in the manager's namespace whose endpoint is the database.
pub async fn database_service(client: &kube::Client, address: IpAddr, port: u16) {
    let services: Api<Service> = Api::namespaced(client.clone(), NAMESPACE);
    let service = json!({
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": "postgres"},
        "spec": {"ports": [{"name": "postgres", "port": 5432, "targetPort": port}]},
    });
    services
        .create(
            &PostParams::default(),
            &serde_json::from_value(service).expect("a Service"),
        )
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
        .create(
            &PostParams::default(),
            &serde_json::from_value(slice).expect("an EndpointSlice"),
        )
        .await
        .expect("the postgres EndpointSlice is created");
}

pub fn is_ready(pod: &Pod) -> bool {
    pod.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|c| c.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

/// The manager's pods that are not being deleted.
pub async fn manager_pods(client: &kube::Client) -> Option<Vec<Pod>> {
    let pods: Api<Pod> = Api::namespaced(client.clone(), NAMESPACE);
    let selector = ListParams::default().labels("control-plane=controller-manager");
    let listed = pods.list(&selector).await.ok()?.items;
    Some(
        listed
            .into_iter()
            .filter(|p| p.metadata.deletion_timestamp.is_none())
            .collect(),
    )
}

/// Both replicas Running and Ready, from the tier's image, as non-root on a read-only root
/// filesystem; returns their pods.
pub async fn both_replicas_ready(client: &kube::Client) -> Vec<Pod> {
    let ready = eventually("both manager pods Running and Ready", READY_WITHIN, || async {
        let listed = manager_pods(client).await?;
        (listed.len() == 2 && listed.iter().all(is_ready)).then_some(listed)
    })
    .await;
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), NAMESPACE);
    let deployment = deployments.get(MANAGER).await.expect("the manager's Deployment");
    assert_eq!(deployment.spec.and_then(|s| s.replicas), Some(2));
    for pod in &ready {
        let spec = pod.spec.as_ref().expect("a pod spec");
        let container = &spec.containers[0];
        assert_eq!(container.image.as_deref(), Some(operator_image().as_str()));
        let security = container.security_context.as_ref().expect("a security context");
        assert_eq!(security.read_only_root_filesystem, Some(true));
        assert_eq!(
            spec.security_context.as_ref().and_then(|s| s.run_as_non_root),
            Some(true),
            "the kubelet refuses to start a root image under runAsNonRoot: the pod runs as non-root"
        );
        assert_eq!(
            pod.status.as_ref().and_then(|s| s.phase.as_deref()),
            Some("Running")
        );
    }
    ready
}

/// The manager pods' names and their containers' restart counts: unchanged when nothing restarted.
pub async fn manager_restarts(client: &kube::Client) -> Vec<(String, i32)> {
    let mut pods: Vec<(String, i32)> = manager_pods(client)
        .await
        .unwrap_or_default()
        .iter()
        .map(|pod| {
            let restarts = pod
                .status
                .iter()
                .flat_map(|s| s.container_statuses.iter().flatten())
                .map(|c| c.restart_count)
                .sum();
            (pod.metadata.name.clone().unwrap_or_default(), restarts)
        })
        .collect();
    pods.sort();
    pods
}
