//! kubectl 1.33 (the kubectl on PATH, default flags) against the embedded API server: the conformance
//! checks of docs/apiserver-requirements.md. Each kubectl call has a timeout.

mod common;

use apiserver::Config;
use common::kubectl::fixture;
use testenv::ControlPlane;

/// kubectl against an embedded server of its own, which lives as long as the kubectl does.
struct Kubectl {
    _plane: ControlPlane,
    cli: common::kubectl::Kubectl,
}

impl Kubectl {
    async fn start() -> Kubectl {
        let plane = ControlPlane::embedded(Config::default())
            .await
            .expect("server starts");
        let cli = common::kubectl::Kubectl::new(&plane);
        Kubectl { _plane: plane, cli }
    }
}

impl std::ops::Deref for Kubectl {
    type Target = common::kubectl::Kubectl;

    fn deref(&self) -> &Self::Target {
        &self.cli
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn check_1_2_version_and_api_resources() {
    let kubectl = Kubectl::start().await;
    let version = kubectl.ok(&["version"]).await;
    assert!(version.contains("Server Version: v1.33"), "{version}");
    let resources = kubectl.ok(&["api-resources"]).await;
    for expected in [
        "configmaps",
        "cm",
        "deployments",
        "deploy",
        "leases",
        "customresourcedefinitions",
        "crd,crds",
    ] {
        assert!(
            resources.contains(expected),
            "api-resources lacks {expected}:\n{resources}"
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn check_3_to_8_crd_apply_validation_printer_columns_and_status() {
    let kubectl = Kubectl::start().await;
    kubectl.install_crd().await;
    let resources = kubectl.ok(&["api-resources"]).await;
    assert!(resources.contains("pgw"), "{resources}");
    let raw = kubectl.ok(&["get", "--raw", "/apis/example.com/v1"]).await;
    assert!(raw.contains("postgreswriters/status"), "{raw}");

    kubectl.ok(&["apply", "-f", &fixture("cr.yaml")]).await;
    let table = kubectl.ok(&["get", "postgreswriters"]).await;
    let header = table.lines().next().unwrap_or_default();
    assert!(
        header.contains("NAME")
            && header.contains("TABLE")
            && header.contains("REPLICAS")
            && header.contains("AGE"),
        "{table}"
    );
    assert!(table.contains("w1") && table.contains("students"), "{table}");

    let strict = kubectl
        .fails(&["apply", "-f", &fixture("cr-unknown-field.yaml")])
        .await;
    assert!(
        strict.contains("strict decoding error") && strict.contains("colour"),
        "{strict}"
    );
    kubectl
        .ok(&[
            "apply",
            "--validate=false",
            "-f",
            &fixture("cr-unknown-field.yaml"),
        ])
        .await;
    let spec = kubectl.ok(&["get", "pgw", "w2", "-o", "jsonpath={.spec}"]).await;
    let spec: serde_json::Value = serde_json::from_str(&spec).expect("spec is JSON");
    assert_eq!(
        spec,
        serde_json::json!({"table": "students", "replicas": 1}),
        "pruned and defaulted"
    );

    let invalid = kubectl.fails(&["apply", "-f", &fixture("cr-invalid.yaml")]).await;
    assert!(invalid.contains("is invalid"), "{invalid}");

    kubectl
        .ok(&[
            "patch",
            "pgw",
            "w1",
            "--type",
            "merge",
            "-p",
            r#"{"spec":{"table":"pupils"}}"#,
        ])
        .await;
    kubectl
        .ok(&[
            "patch",
            "pgw",
            "w1",
            "--subresource=status",
            "--type",
            "merge",
            "-p",
            r#"{"status":{"phase":"Ready"}}"#,
        ])
        .await;
    let object = kubectl
        .ok(&[
            "get",
            "pgw",
            "w1",
            "-o",
            "jsonpath={.metadata.generation} {.spec.table} {.status.phase}",
        ])
        .await;
    assert_eq!(object, "2 pupils Ready");
}

#[tokio::test(flavor = "multi_thread")]
async fn check_11_finalizer_blocks_delete_until_removed() {
    let kubectl = Kubectl::start().await;
    kubectl.ok(&["create", "-f", &fixture("configmap.yaml")]).await;
    kubectl
        .ok(&[
            "patch",
            "cm",
            "held",
            "--type",
            "merge",
            "-p",
            r#"{"metadata":{"finalizers":["x/y"]}}"#,
        ])
        .await;
    kubectl.fails(&["delete", "cm", "held", "--timeout=2s"]).await;
    let deleting = kubectl
        .ok(&[
            "get",
            "cm",
            "held",
            "-o",
            "jsonpath={.metadata.deletionTimestamp}",
        ])
        .await;
    assert!(!deleting.is_empty(), "deletionTimestamp set");
    kubectl
        .ok(&[
            "patch",
            "cm",
            "held",
            "--type",
            "json",
            "-p",
            r#"[{"op":"remove","path":"/metadata/finalizers"}]"#,
        ])
        .await;
    kubectl
        .ok(&["wait", "--for=delete", "cm/held", "--timeout=5s"])
        .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn check_13_16_namespace_deletion_and_error_messages() {
    let kubectl = Kubectl::start().await;
    kubectl.ok(&["create", "-f", &fixture("namespace-t.yaml")]).await;
    kubectl
        .ok(&["delete", "ns", "t", "--wait", "--timeout=10s"])
        .await;
    let missing = kubectl.fails(&["get", "cm", "c", "-n", "t"]).await;
    assert!(
        missing.contains("NotFound") || missing.contains("not found"),
        "{missing}"
    );
    kubectl.ok(&["create", "-f", &fixture("configmap.yaml")]).await;
    let exists = kubectl.fails(&["create", "-f", &fixture("configmap.yaml")]).await;
    assert!(
        exists.contains("AlreadyExists") || exists.contains("already exists"),
        "{exists}"
    );
    let nope = kubectl.fails(&["get", "cm", "nope"]).await;
    assert!(nope.contains("NotFound") || nope.contains("not found"), "{nope}");
}

#[tokio::test(flavor = "multi_thread")]
async fn check_9_27_deployment_reapply_removes_a_container_and_rolls_out() {
    let kubectl = Kubectl::start().await;
    kubectl.ok(&["apply", "-f", &fixture("deployment.yaml")]).await;
    kubectl
        .ok(&["apply", "-f", &fixture("deployment-one-container.yaml")])
        .await;
    let containers = kubectl
        .ok(&[
            "get",
            "deploy",
            "d1",
            "-o",
            "jsonpath={.spec.template.spec.containers[*].name}",
        ])
        .await;
    assert_eq!(
        containers, "web",
        "client-side apply's strategic merge patch removed exactly the sidecar"
    );
    let rollout = kubectl
        .ok(&["rollout", "status", "deploy/d1", "--timeout=5s"])
        .await;
    assert!(rollout.contains("successfully rolled out"), "{rollout}");
}

#[tokio::test(flavor = "multi_thread")]
async fn check_10_get_watch_prints_a_row_per_change_with_the_same_columns() {
    use std::io::{BufRead, BufReader};
    let kubectl = Kubectl::start().await;
    kubectl.install_crd().await;
    kubectl.ok(&["apply", "-f", &fixture("cr.yaml")]).await;
    /// The watching kubectl, killed however the test ends (a failed assertion included).
    struct Watch(std::process::Child);
    impl Drop for Watch {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    let mut watch = Watch(
        kubectl
            .command()
            .args(["get", "pgw", "-w"])
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("kubectl get -w starts"),
    );
    let (sender, lines) = std::sync::mpsc::channel();
    let stdout = watch.0.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if sender.send(line).is_err() {
                break;
            }
        }
    });
    let next = |what: &str| {
        lines
            .recv_timeout(std::time::Duration::from_secs(15))
            .unwrap_or_else(|_| panic!("no {what} line"))
    };
    let header = next("header");
    assert!(
        header.contains("TABLE") && header.contains("REPLICAS"),
        "{header}"
    );
    assert!(next("first row").contains("students"));
    kubectl.ok(&["annotate", "pgw", "w1", "touched=yes"]).await;
    let row = next("row after the change");
    assert!(row.contains("w1") && row.contains("students"), "{row}");
    assert!(!row.contains("TABLE"), "no second header (T2)");
}

impl Kubectl {
    /// Creates ConfigMap `owner` and a dependent naming it in `ownerReferences`.
    async fn owner_and_dependent(&self, owner: &str, dependent: &str) {
        let owner_file = self.manifest(
            &format!("{owner}.yaml"),
            &format!("apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: {owner}}}\n"),
        );
        self.ok(&["create", "-f", &owner_file]).await;
        let uid = self
            .ok(&["get", "cm", owner, "-o", "jsonpath={.metadata.uid}"])
            .await;
        let dependent_file = self.manifest(
            &format!("{dependent}.yaml"),
            &format!(
                "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {dependent}\n  ownerReferences:\n  \
                 - {{apiVersion: v1, kind: ConfigMap, name: {owner}, uid: {uid}, blockOwnerDeletion: true}}\n"
            ),
        );
        self.ok(&["create", "-f", &dependent_file]).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn check_14_cascading_deletes_background_foreground_and_orphan() {
    let kubectl = Kubectl::start().await;

    kubectl.owner_and_dependent("owner-bg", "dep-bg").await;
    kubectl.ok(&["delete", "cm", "owner-bg", "--wait"]).await;
    kubectl
        .ok(&["wait", "--for=delete", "cm/dep-bg", "--timeout=10s"])
        .await;

    kubectl.owner_and_dependent("owner-fg", "dep-fg").await;
    kubectl
        .ok(&[
            "delete",
            "cm",
            "owner-fg",
            "--cascade=foreground",
            "--timeout=10s",
        ])
        .await;
    let gone = kubectl.fails(&["get", "cm", "owner-fg", "dep-fg"]).await;
    assert!(gone.contains("NotFound"), "{gone}");

    kubectl.owner_and_dependent("owner-or", "dep-or").await;
    kubectl
        .ok(&["delete", "cm", "owner-or", "--cascade=orphan", "--timeout=10s"])
        .await;
    let refs = kubectl
        .ok(&[
            "get",
            "cm",
            "dep-or",
            "-o",
            "jsonpath={.metadata.ownerReferences}",
        ])
        .await;
    assert_eq!(
        refs.trim(),
        "",
        "the orphan keeps no reference to its deleted owner"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn check_15_server_side_apply_conflicts_between_managers_until_forced() {
    let kubectl = Kubectl::start().await;
    kubectl.install_crd().await;
    kubectl
        .ok(&["apply", "--server-side", "-f", &fixture("cr.yaml")])
        .await;
    let other = kubectl.manifest(
        "cr-other-table.yaml",
        "apiVersion: example.com/v1\nkind: PostgresWriter\nmetadata: {name: w1, namespace: default}\nspec: {table: teachers}\n",
    );
    let conflict = kubectl
        .fails(&["apply", "--server-side", "--field-manager=ci", "-f", &other])
        .await;
    assert!(conflict.contains("conflict"), "{conflict}");
    assert!(conflict.contains(".spec.table"), "{conflict}");
    let table = kubectl
        .ok(&["get", "pgw", "w1", "-o", "jsonpath={.spec.table}"])
        .await;
    assert_eq!(table, "students", "a refused apply changes nothing");

    kubectl
        .ok(&[
            "apply",
            "--server-side",
            "--field-manager=ci",
            "--force-conflicts",
            "-f",
            &other,
        ])
        .await;
    let table = kubectl
        .ok(&["get", "pgw", "w1", "-o", "jsonpath={.spec.table}"])
        .await;
    assert_eq!(table, "teachers");
    let managers = kubectl
        .ok(&[
            "get",
            "pgw",
            "w1",
            "--show-managed-fields",
            "-o",
            "jsonpath={.metadata.managedFields[*].manager}",
        ])
        .await;
    assert!(managers.contains("ci"), "{managers}");
}

#[tokio::test(flavor = "multi_thread")]
async fn kubectl_apply_of_a_mistyped_or_unknown_built_in_field_is_refused_by_the_server() {
    let kubectl = Kubectl::start().await;
    let mistyped = kubectl.manifest(
        "mistyped.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata: {x: true}\n",
    );
    let refused = kubectl.fails(&["apply", "-f", &mistyped]).await;
    assert!(
        refused.contains(
            "ConfigMap in version \"v1\" cannot be handled as a ConfigMap: json: cannot unmarshal bool \
             into Go struct field ConfigMap.data of type string"
        ),
        "{refused}"
    );
    let unknown = kubectl.manifest(
        "unknown.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: u}\ndata: {x: \"1\"}\nfoo: bar\n",
    );
    let refused = kubectl
        .fails(&["apply", "--validate=strict", "-f", &unknown])
        .await;
    assert!(refused.contains("unknown field \"foo\""), "{refused}");
    let warned = kubectl.run(&["apply", "--validate=warn", "-f", &unknown]).await;
    assert!(warned.status.success(), "{warned:?}");
    assert!(
        String::from_utf8_lossy(&warned.stderr).contains("unknown field \"foo\""),
        "{warned:?}"
    );
}
