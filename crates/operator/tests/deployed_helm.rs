//! The Helm chart on the cluster tier's real node, as a user installs it: `make helm-chart` generates
//! it from the installer, Helm (built from its Go module) installs it with the tier's image, upgrades
//! it to a second tag of that image, and uninstalls it. Checked as a user would notice:
//! - both manager pods Running and Ready on the image, and a PostgresWriter's row written from them to
//!   a PostgreSQL outside the cluster (the `postgres` Service, the `postgres-password` Secret);
//! - after `helm upgrade`, both pods on the second tag, and a new PostgresWriter converges;
//! - after `helm uninstall`, nothing the chart made is left but the CRDs it keeps
//!   (`helm.sh/resource-policy: keep`, as docs/operators.md says), and once they are deleted as the
//!   chart's notes say, nothing at all.
//!
//! The second tag is the same image tagged twice in the node's containerd (testenv/cluster/images.sh):
//! OPERATOR_IMAGE and OPERATOR_IMAGE_UPGRADE. The manager's controllers watch every namespace, so this
//! test runs alone, after the rest of the tier (the `cluster-deployed` nextest profile).

mod support;

use std::path::Path;

use k8s_openapi::api::core::v1::{Namespace, Pod};
use kube::{
    Api,
    api::{DeleteParams, ListParams, PostParams},
};
use operator::{api::postgres_writer::PostgresWriter, db::throwaway::ThrowawayPostgres};
use serde_json::Value;
use support::{
    Backend, ControlPlane,
    deployment::{
        CONVERGED_WITHIN, MANAGER_SELECTOR, NAMESPACE, READY_WITHIN, database_service, ensure_namespace,
        manager_pods_ready, node_address, node_has_image, operator_image,
    },
    helm::{self, Helm, RELEASE},
};

/// Where the test's own resources live.
const WORKLOADS: &str = "deployed-helm";
/// The CRDs the chart keeps on `helm uninstall`.
const CRDS: [&str; 3] = [
    "postgreswriters.demo.yash.com",
    "voteconfigs.voting.schoolofdevops.com",
    "webapps.example.com",
];

/// The second tag of the tier's operator image, which `helm upgrade` moves to.
fn upgrade_image() -> String {
    std::env::var("OPERATOR_IMAGE_UPGRADE")
        .unwrap_or_else(|_| "localhost/operator:cluster-test-upgrade".into())
}

/// Repository and tag, as the chart's values take them.
fn repository_and_tag(image: &str) -> (&str, &str) {
    image
        .rsplit_once(':')
        .filter(|(_, tag)| !tag.contains('/'))
        .unwrap_or((image, "latest"))
}

async fn helm_installs_upgrades_and_uninstalls_the_operator_leaving_nothing_behind(backend: Backend) {
    let plane = ControlPlane::start(backend).await.expect("the cluster runs");
    let client = plane.client();
    let home = tempfile::tempdir().unwrap();
    let kubeconfig = home.path().join("kubeconfig");
    plane.write_kubeconfig(&kubeconfig).unwrap();
    let (image, upgrade) = (operator_image(), upgrade_image());
    for tagged in [&image, &upgrade] {
        assert!(
            node_has_image(&client, tagged).await,
            "the node has {tagged} (testenv/cluster/images.sh tags the operator's image twice)"
        );
    }
    let helm = Helm::build();
    let dist = home.path().join("dist");
    let chart = helm::make_chart(&dist, &image);
    let chart = chart.to_str().expect("a UTF-8 path");

    // What an earlier run of this test, or of deployed.rs, left (each stops at its first failure).
    let _ = helm.run(
        Some(&kubeconfig),
        &["uninstall", RELEASE, "--namespace", NAMESPACE, "--wait"],
    );
    support::make(
        &kubeconfig,
        &[
            "undeploy",
            &format!("IMG={image}"),
            &format!("DIST={}", dist.display()),
        ],
    );
    let namespaces: Api<Namespace> = Api::all(client.clone());
    for namespace in [NAMESPACE, WORKLOADS] {
        let _ = namespaces.delete(namespace, &DeleteParams::default()).await;
        support::until_gone(
            &namespaces,
            namespace,
            "an earlier run's namespace to go",
            READY_WITHIN,
        )
        .await;
    }

    // The database outside the cluster, and what the README has the user make before installing.
    let node_ip = node_address(&client).await;
    let pg = ThrowawayPostgres::start_on(node_ip)
        .await
        .expect("PostgreSQL starts");
    let sql = support::postgres_writer::connect(&pg).await;
    ensure_namespace(&client, NAMESPACE).await;
    support::kubectl(
        &kubeconfig,
        &[
            "-n",
            NAMESPACE,
            "create",
            "secret",
            "generic",
            "postgres-password",
            &format!("--from-literal=password={}", pg.password()),
        ],
    );
    database_service(&client, node_ip, pg.port()).await;

    helm.ok(
        Some(&kubeconfig),
        &["install", RELEASE, chart, "--namespace", NAMESPACE],
    );
    manager_pods_ready(&client, 2, Some(&image)).await;
    ensure_namespace(&client, WORKLOADS).await;
    converges(&client, &sql, "ada", "Ada").await;

    let (repository, tag) = repository_and_tag(&upgrade);
    helm.ok(
        Some(&kubeconfig),
        &[
            "upgrade",
            RELEASE,
            chart,
            "--namespace",
            NAMESPACE,
            "--set",
            &format!("manager.image.repository={repository},manager.image.tag={tag}"),
        ],
    );
    manager_pods_ready(&client, 2, Some(&upgrade)).await;
    let releases = helm.ok(
        Some(&kubeconfig),
        &["list", "--namespace", NAMESPACE, "--output", "json"],
    );
    let releases: Value = serde_json::from_str(&releases).expect("helm list prints JSON");
    assert_eq!(releases[0]["revision"], "2", "{releases}");
    assert_eq!(releases[0]["status"], "deployed", "{releases}");
    converges(&client, &sql, "grace", "Grace").await;
    let rows = support::postgres_writer::rows(&sql, "students").await;
    assert!(
        rows.iter().any(|r| r.1 == "Ada"),
        "the first row survives the upgrade: {rows:?}"
    );

    // Our resources go first, while the manager runs: PostgresWriters' finalizers need it.
    let writers: Api<PostgresWriter> = Api::namespaced(client.clone(), WORKLOADS);
    for name in ["ada", "grace"] {
        writers.delete(name, &DeleteParams::default()).await.unwrap();
        support::until_gone(&writers, name, "the PostgresWriter to go", CONVERGED_WITHIN).await;
    }
    let rendered = home.path().join("rendered.yaml");
    let objects = helm.ok(None, &["template", RELEASE, chart, "--namespace", NAMESPACE]);
    std::fs::write(&rendered, objects).unwrap();

    helm.ok(
        Some(&kubeconfig),
        &["uninstall", RELEASE, "--namespace", NAMESPACE, "--wait"],
    );
    nothing_left_but_the_kept_crds(&client, &kubeconfig, &rendered).await;
    let listed = helm.ok(Some(&kubeconfig), &["list", "--all-namespaces", "--short"]);
    assert_eq!(listed.trim(), "", "no release is left");

    // As the chart's notes say, the CRDs go by hand.
    let mut delete = vec!["delete", "crd"];
    delete.extend(CRDS);
    support::kubectl(&kubeconfig, &delete);
    let left = support::kubectl(
        &kubeconfig,
        &[
            "get",
            "-f",
            rendered.to_str().unwrap(),
            "--ignore-not-found",
            "-o",
            "name",
        ],
    );
    assert_eq!(left.trim(), "", "nothing of the chart is left");
    for namespace in [NAMESPACE, WORKLOADS] {
        namespaces
            .delete(namespace, &DeleteParams::default())
            .await
            .unwrap();
    }
}

/// After `helm uninstall`: of every object the chart renders, only the CRDs exist, each kept by its
/// annotation; the manager's pods are gone.
async fn nothing_left_but_the_kept_crds(client: &kube::Client, kubeconfig: &Path, rendered: &Path) {
    let pods: Api<Pod> = Api::namespaced(client.clone(), NAMESPACE);
    support::eventually("the manager's pods to go", READY_WITHIN, || async {
        pods.list(&ListParams::default().labels(MANAGER_SELECTOR))
            .await
            .ok()?
            .items
            .is_empty()
            .then_some(())
    })
    .await;
    let left = support::kubectl(
        kubeconfig,
        &[
            "get",
            "-f",
            rendered.to_str().unwrap(),
            "--ignore-not-found",
            "-o",
            "name",
        ],
    );
    let mut left: Vec<&str> = left.lines().collect();
    left.sort_unstable();
    let kept: Vec<String> = CRDS
        .iter()
        .map(|crd| format!("customresourcedefinition.apiextensions.k8s.io/{crd}"))
        .collect();
    assert_eq!(left, kept, "helm uninstall leaves only the CRDs it keeps");
    for crd in CRDS {
        let annotations = support::kubectl(
            kubeconfig,
            &["get", "crd", crd, "-o", "jsonpath={.metadata.annotations}"],
        );
        assert!(
            annotations.contains("\"helm.sh/resource-policy\":\"keep\""),
            "{crd}: {annotations}"
        );
    }
}

/// Creates PostgresWriter `name` in table `students` and waits for its row and its Ready status.
async fn converges(client: &kube::Client, sql: &tokio_postgres::Client, name: &str, student: &str) {
    let writers: Api<PostgresWriter> = Api::namespaced(client.clone(), WORKLOADS);
    let mut writer = support::postgres_writer::writer(name, "students", student, 41, "UK");
    writer.metadata.namespace = Some(WORKLOADS.into());
    writers.create(&PostParams::default(), &writer).await.unwrap();
    support::postgres_writer::wait_reason(&writers, name, "True/Synced", CONVERGED_WITHIN).await;
    let rows = support::postgres_writer::rows(sql, "students").await;
    assert!(rows.iter().any(|r| r.1 == student), "the row of {name}: {rows:?}");
}

testenv::cluster_tier!(helm_installs_upgrades_and_uninstalls_the_operator_leaving_nothing_behind);
