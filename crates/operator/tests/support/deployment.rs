//! The operator deployed as a user deploys it, on the cluster tier's real node: the image `make
//! docker-build` built (testenv/cluster/images.sh loads it into the node's containerd, as a push to a
//! registry would make it pullable), the README's "Deploying to a real cluster" steps played for real,
//! and a PostgreSQL outside the cluster on the node's address, as a managed database would be. What
//! every test binary named `deployed*` shares; each runs alone (the `cluster-deployed` profile), since
//! the deployed manager watches every namespace.

use std::{
    net::IpAddr,
    path::{Path, PathBuf},
    time::Duration,
};

use k8s_openapi::api::{
    apps::v1::Deployment,
    coordination::v1::Lease,
    core::v1::{Namespace, Node, Pod, Service},
};
use kube::{
    Api, ResourceExt,
    api::{DeleteParams, ListParams, PostParams},
};
use operator::{
    api::postgres_writer::PostgresWriter,
    db::throwaway::{ServerTls, ThrowawayPostgres},
};
use serde_json::json;

use super::{Backend, ControlPlane, eventually};

pub const NAMESPACE: &str = "operator-system";
pub const MANAGER: &str = "operator-controller-manager";
/// The manager pods' label, which their Deployment selects by.
pub const MANAGER_SELECTOR: &str = "control-plane=controller-manager";
/// `--leader-election-id`'s default: the Lease's name.
pub const LEASE: &str = "operator.demo.yash.com";

/// How long a deployed manager pod may take to be Ready: scheduled, started from an image already on
/// the node, its readiness probe passed (first after 5 s, then every 10 s), on a 2-core machine that
/// runs the rest of the tier's processes too.
pub const READY_WITHIN: Duration = Duration::from_secs(180);
/// How long a resource may take to converge once a leader runs: a reconcile and a database write.
pub const CONVERGED_WITHIN: Duration = Duration::from_secs(60);
/// The manager's Lease terms (`--lease-duration`'s default, renewed with a third left): a standby
/// takes over at most this long after the leader's last renewal, plus its next look at the Lease.
pub const LEASE_DURATION: Duration = Duration::from_secs(15);
pub const LEASE_RETRY: Duration = Duration::from_secs(5);
/// How long the manager may take to issue its certificate and inject the CA: it does both at start,
/// then checks every tenth of the certificate's validity (at most ten minutes).
pub const INJECTED_WITHIN: Duration = Duration::from_secs(120);

/// The image the tier built with `make docker-build` and loaded into the node (testenv/cluster/env.sh).
pub fn operator_image() -> String {
    std::env::var("OPERATOR_IMAGE").unwrap_or_else(|_| "localhost/operator:cluster-test".into())
}

/// The operator deployed by the README's steps, with its database, and a namespace for the test's own
/// resources.
pub struct Deployed {
    pub plane: ControlPlane,
    pub client: kube::Client,
    /// The admin's kubeconfig, for kubectl and make.
    pub kubeconfig: PathBuf,
    /// `DIST=...` for make: where `make build-installer` writes install.yaml.
    pub dist: String,
    /// Where the test's own resources live.
    pub workloads: String,
    pub node_ip: IpAddr,
    /// The database, outside the cluster on the node's address.
    pub pg: ThrowawayPostgres,
    /// Its superuser over its Unix socket (no TLS needed, whatever the server's rules), for the
    /// test's own SQL.
    pub sql: tokio_postgres::Client,
    _home: tempfile::TempDir,
}

/// What a test may prepare right before `make deploy` (a Secret of its own, say).
pub struct BeforeDeploy {
    pub client: kube::Client,
    pub kubeconfig: PathBuf,
    pub node_ip: IpAddr,
}

impl Deployed {
    /// Cleans up what an earlier run left (it stops at its first failure), starts PostgreSQL on the
    /// node's address, plays the README's deploy steps and waits for both replicas to be Ready.
    pub async fn up(backend: Backend, workloads: &str) -> Self {
        Self::up_with(backend, workloads, None, |_| async {}).await
    }

    /// As [`Self::up`], with a database that accepts only TLS with `tls`'s certificate when one is
    /// given, and `before_deploy` run right before `make deploy`, once the database's Service and the
    /// README's `kubectl` steps before it exist.
    pub async fn up_with<F, Fut>(
        backend: Backend,
        workloads: &str,
        tls: Option<&ServerTls>,
        before_deploy: F,
    ) -> Self
    where
        F: FnOnce(BeforeDeploy) -> Fut,
        Fut: std::future::Future<Output = ()>,
    {
        let plane = ControlPlane::start(backend).await.expect("the cluster runs");
        let client = plane.client();
        let home = tempfile::tempdir().unwrap();
        let kubeconfig = home.path().join("kubeconfig");
        plane.write_kubeconfig(&kubeconfig).unwrap();
        let node_ip = node_address(&client).await;
        let image = operator_image();
        assert!(
            node_has_image(&client, &image).await,
            "the node has {image} (testenv/cluster/images.sh builds it with make docker-build)"
        );
        let dist = format!("DIST={}", home.path().join("dist").display());
        super::make(&kubeconfig, &["undeploy", &format!("IMG={image}"), &dist]);
        let namespaces: Api<Namespace> = Api::all(client.clone());
        for namespace in [NAMESPACE, workloads] {
            let _ = namespaces.delete(namespace, &DeleteParams::default()).await;
            super::until_gone(
                &namespaces,
                namespace,
                "an earlier run's namespace to go",
                READY_WITHIN,
            )
            .await;
        }

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
        let deployed = Deployed {
            plane,
            client,
            kubeconfig,
            dist,
            workloads: workloads.to_owned(),
            node_ip,
            pg,
            sql,
            _home: home,
        };
        deployed.play_readme_steps(before_deploy).await;
        deployed.replicas_ready(2).await;
        ensure_namespace(&deployed.client, workloads).await;
        deployed
    }

    /// The README's steps, for real.
    async fn play_readme_steps<F, Fut>(&self, before_deploy: F)
    where
        F: FnOnce(BeforeDeploy) -> Fut,
        Fut: std::future::Future<Output = ()>,
    {
        let image = operator_image();
        let mut before_deploy = Some(before_deploy);
        for step in &super::readme_deploy_steps() {
            let words: Vec<&str> = step.split_whitespace().collect();
            match words.as_slice() {
                // testenv/cluster/images.sh ran `make docker-build IMG=<the tier's image>` and loaded
                // the image into the node's containerd: what a push to a registry the node pulls from
                // gives.
                ["make", "docker-build", ..] | ["docker", "push", ..] => {}
                ["make", "deploy", _] => {
                    // What the README says the manager reaches: a Service named postgres in its
                    // namespace.
                    database_service(&self.client, self.node_ip, self.pg.port()).await;
                    if let Some(before_deploy) = before_deploy.take() {
                        before_deploy(BeforeDeploy {
                            client: self.client.clone(),
                            kubeconfig: self.kubeconfig.clone(),
                            node_ip: self.node_ip,
                        })
                        .await;
                    }
                    self.make(&["deploy", &format!("IMG={image}")]);
                }
                ["kubectl", args @ ..] => {
                    let args: Vec<String> = args
                        .iter()
                        .map(|a| a.replace("=...", &format!("={}", self.pg.password())))
                        .collect();
                    let args: Vec<&str> = args.iter().map(String::as_str).collect();
                    self.kubectl(&args);
                }
                _ => panic!("a README deploy step this test does not know how to play: {step}"),
            }
        }
    }

    pub fn kubectl(&self, args: &[&str]) -> String {
        super::kubectl(&self.kubeconfig, args)
    }

    /// `make` with the admin's kubeconfig and the test's DIST.
    pub fn make(&self, args: &[&str]) {
        let mut args = args.to_vec();
        args.push(&self.dist);
        super::make(&self.kubeconfig, &args);
    }

    pub fn pods(&self) -> Api<Pod> {
        Api::namespaced(self.client.clone(), NAMESPACE)
    }

    pub fn writers(&self) -> Api<PostgresWriter> {
        Api::namespaced(self.client.clone(), &self.workloads)
    }

    /// Exactly `count` manager pods, none terminating, every one Running and Ready; returns them.
    pub async fn replicas_ready(&self, count: usize) -> Vec<Pod> {
        manager_pods_ready(&self.client, count, None).await
    }

    /// The manager Deployment scaled to `replicas`, and that many pods Ready.
    pub async fn scale(&self, replicas: usize) -> Vec<Pod> {
        self.kubectl(&[
            "-n",
            NAMESPACE,
            "scale",
            "deployment",
            MANAGER,
            &format!("--replicas={replicas}"),
        ]);
        self.replicas_ready(replicas).await
    }

    pub async fn manager_deployment(&self) -> Deployment {
        let deployments: Api<Deployment> = Api::namespaced(self.client.clone(), NAMESPACE);
        deployments.get(MANAGER).await.unwrap()
    }

    /// The Lease as it stands.
    pub async fn lease(&self) -> Option<k8s_openapi::api::coordination::v1::LeaseSpec> {
        let leases: Api<Lease> = Api::namespaced(self.client.clone(), NAMESPACE);
        leases.get_opt(LEASE).await.ok()??.spec
    }

    /// The one pod among `pods` that holds the Lease, waited for: right after a scale-down the pod
    /// going away may hold it for the moment between its deletion and its SIGTERM.
    pub async fn leader(&self, pods: &[Pod]) -> String {
        let names: Vec<String> = pods.iter().map(ResourceExt::name_any).collect();
        eventually(
            &format!("one of {names:?} to hold the Lease"),
            READY_WITHIN,
            || async {
                let holder = self.lease().await?.holder_identity?;
                let leading: Vec<&String> = names.iter().filter(|name| holds(&holder, name)).collect();
                (leading.len() == 1).then(|| leading[0].clone())
            },
        )
        .await
    }

    /// PostgresWriter `name` in table `students`, created, and waited for: its row and Ready.
    pub async fn converges(&self, name: &str, student: &str) {
        let writers = self.writers();
        let mut writer = super::postgres_writer::writer(name, "students", student, 41, "UK");
        writer.metadata.namespace = Some(self.workloads.clone());
        writers.create(&PostParams::default(), &writer).await.unwrap();
        super::postgres_writer::wait_reason(&writers, name, "True/Synced", CONVERGED_WITHIN).await;
        let rows = super::postgres_writer::rows(&self.sql, "students").await;
        assert!(rows.iter().any(|r| r.1 == student), "the row of {name}: {rows:?}");
    }

    /// `make undeploy`, then none of what `make deploy` applied is left, nor any of our kinds' objects.
    pub async fn undeploy(&self) {
        self.make(&["undeploy", &format!("IMG={}", operator_image())]);
        let namespaces: Api<Namespace> = Api::all(self.client.clone());
        super::until_gone(
            &namespaces,
            NAMESPACE,
            "the operator's namespace to go",
            READY_WITHIN,
        )
        .await;
        let crds: Api<
            k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition,
        > = Api::all(self.client.clone());
        for crd in operator::api::crds() {
            let name = crd.metadata.name.unwrap();
            super::until_gone(&crds, &name, "the CRD to go", READY_WITHIN).await;
        }
        for kind in [
            "clusterroles",
            "clusterrolebindings",
            "mutatingwebhookconfigurations",
            "validatingwebhookconfigurations",
        ] {
            let listed = self.kubectl(&["get", kind, "-o", "name"]);
            let left: Vec<&str> = listed.lines().filter(|l| l.contains("operator-")).collect();
            assert!(left.is_empty(), "make undeploy left {left:?}");
        }
        let _ = namespaces.delete(&self.workloads, &DeleteParams::default()).await;
    }
}

/// The manager pods' names and their containers' restart counts: unchanged when nothing restarted.
pub async fn manager_restarts(client: &kube::Client) -> Vec<(String, i32)> {
    let listed = manager_pods(client).await.unwrap_or_default();
    let mut restarts: Vec<(String, i32)> = listed
        .iter()
        .map(|pod| (pod.name_any(), container_restarts(pod)))
        .collect();
    restarts.sort();
    restarts
}

/// The restarts of `pod`'s containers, added up.
pub fn container_restarts(pod: &Pod) -> i32 {
    pod.status
        .iter()
        .flat_map(|s| s.container_statuses.iter().flatten())
        .map(|c| c.restart_count)
        .sum()
}

/// Whether the Lease holder identity `holder` is pod `pod`'s (the manager names itself `<pod>-<id>`).
pub fn holds(holder: &str, pod: &str) -> bool {
    holder.starts_with(&format!("{pod}-"))
}

pub fn is_ready(pod: &Pod) -> bool {
    pod.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|c| c.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

/// The pods that are not being deleted.
pub fn live_pods(pods: Vec<Pod>) -> Vec<Pod> {
    pods.into_iter()
        .filter(|p| p.metadata.deletion_timestamp.is_none())
        .collect()
}

/// The manager's pods that are not being deleted.
pub async fn manager_pods(client: &kube::Client) -> kube::Result<Vec<Pod>> {
    let pods: Api<Pod> = Api::namespaced(client.clone(), NAMESPACE);
    let listed = pods.list(&ListParams::default().labels(MANAGER_SELECTOR)).await?;
    Ok(live_pods(listed.items))
}

/// The image of a pod's first container.
pub fn image_of(pod: &Pod) -> Option<&str> {
    pod.spec.as_ref()?.containers.first()?.image.as_deref()
}

/// Exactly `count` manager pods, none terminating, every one Running and Ready (on `image`, if given);
/// returns them.
pub async fn manager_pods_ready(client: &kube::Client, count: usize, image: Option<&str>) -> Vec<Pod> {
    let pods: Api<Pod> = Api::namespaced(client.clone(), NAMESPACE);
    let selector = ListParams::default().labels(MANAGER_SELECTOR);
    let on = image.map(|image| format!(" on {image}")).unwrap_or_default();
    eventually(
        &format!("{count} manager pods Running and Ready{on}"),
        READY_WITHIN,
        || async {
            let listed = live_pods(pods.list(&selector).await.ok()?.items);
            let wanted = |p: &Pod| is_ready(p) && image.is_none_or(|image| image_of(p) == Some(image));
            (listed.len() == count && listed.iter().all(wanted)).then_some(listed)
        },
    )
    .await
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

/// A selectorless Service `postgres` in the manager's namespace whose endpoint is the database.
pub async fn database_service(client: &kube::Client, address: IpAddr, port: u16) {
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

/// The cluster tier's scripts (testenv/cluster), e.g. `restart.sh kube-apiserver 20`.
pub fn cluster_script(script: &str, args: &[&str]) {
    let path: &Path = &super::repository().join("testenv/cluster").join(script);
    let status = std::process::Command::new("bash")
        .arg(path)
        .args(args)
        .status()
        .expect("bash runs");
    assert!(status.success(), "{script} {args:?} failed: {status}");
}
