//! The Helm chart as `make helm-chart` generates it from the installer (`make build-installer`'s
//! install.yaml), checked with Helm built from its Go module, no cluster needed: `helm lint` passes;
//! its default render is install.yaml's objects, Helm's labels aside, so the two cannot drift; and
//! each value users change changes what it says and nothing else. `deployed_helm.rs` installs it on
//! the cluster tier.

mod support;

use std::{collections::BTreeMap, path::Path};

use serde_json::Value;
use support::helm::{self, Helm, NAMESPACE, RELEASE};

const IMAGE: &str = "registry.example.com/operator:v0.1.0";

/// The labels every object of the chart carries beside its own, and the annotation that keeps the
/// CRDs on `helm uninstall`: Helm's bookkeeping, which install.yaml has no use for.
const HELM_LABELS: [&str; 5] = [
    "helm.sh/chart",
    "app.kubernetes.io/name",
    "app.kubernetes.io/instance",
    "app.kubernetes.io/version",
    "app.kubernetes.io/managed-by",
];
const KEEP: &str = "helm.sh/resource-policy";

/// `object` without Helm's labels and the keep annotation (and without a map they leave empty).
fn without_helm_bookkeeping(mut object: Value) -> Value {
    let Some(metadata) = object.get_mut("metadata").and_then(Value::as_object_mut) else {
        return object;
    };
    for (field, keys) in [("labels", &HELM_LABELS[..]), ("annotations", &[KEEP][..])] {
        if let Some(map) = metadata.get_mut(field).and_then(Value::as_object_mut) {
            for key in keys {
                map.remove(*key);
            }
            if map.is_empty() {
                metadata.remove(field);
            }
        }
    }
    object
}

/// The objects of a YAML stream by kind and name.
fn by_kind_name(yaml: &str) -> BTreeMap<(String, String), Value> {
    helm::objects(yaml)
        .into_iter()
        .map(|o| (helm::kind_name(&o), o))
        .collect()
}

/// `helm template` of the chart into `namespace` with `flags` (`--set ...`).
fn render(helm: &Helm, chart: &Path, namespace: &str, flags: &[&str]) -> BTreeMap<(String, String), Value> {
    let chart = chart.to_str().expect("a UTF-8 path");
    let args = [&["template", RELEASE, chart, "--namespace", namespace][..], flags].concat();
    by_kind_name(&helm.ok(None, &args))
}

fn deployment(objects: &BTreeMap<(String, String), Value>) -> &Value {
    objects
        .iter()
        .find(|((kind, _), _)| kind == "Deployment")
        .map(|(_, o)| o)
        .expect("the manager's Deployment")
}

fn env(deployment: &Value, name: &str) -> String {
    deployment["spec"]["template"]["spec"]["containers"][0]["env"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|e| e["name"] == name)
        .and_then(|e| e["value"].as_str())
        .unwrap_or_default()
        .to_owned()
}

fn args(deployment: &Value) -> Vec<String> {
    deployment["spec"]["template"]["spec"]["containers"][0]["args"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|a| a.as_str().map(str::to_owned))
        .collect()
}

#[test]
fn the_chart_lints_and_its_default_render_is_the_installers_objects() {
    let helm = Helm::build();
    let dist = tempfile::tempdir().unwrap();
    let chart = helm::make_chart(dist.path(), IMAGE);
    let lint = helm.ok(None, &["lint", "--strict", chart.to_str().unwrap()]);
    assert!(lint.contains("0 chart(s) failed"), "{lint}");

    let installer = std::fs::read_to_string(dist.path().join("install.yaml")).unwrap();
    let mut expected = by_kind_name(&installer);
    // Helm installs into the release's namespace (`--create-namespace` makes it).
    assert!(expected.remove(&("Namespace".into(), NAMESPACE.into())).is_some());
    let rendered = render(&helm, &chart, NAMESPACE, &[]);
    assert_eq!(
        rendered.keys().collect::<Vec<_>>(),
        expected.keys().collect::<Vec<_>>(),
        "the chart renders install.yaml's objects, no more, no fewer"
    );
    for (key, object) in rendered {
        let labels = &object["metadata"]["labels"];
        assert_eq!(labels["app.kubernetes.io/managed-by"], "Helm", "{key:?}");
        assert_eq!(labels["app.kubernetes.io/instance"], RELEASE, "{key:?}");
        if key.0 == "CustomResourceDefinition" {
            assert_eq!(object["metadata"]["annotations"][KEEP], "keep", "{key:?}");
        }
        assert_eq!(
            without_helm_bookkeeping(object),
            expected[&key],
            "{key:?} differs from install.yaml's"
        );
    }
}

#[test]
fn the_values_users_change_change_only_what_they_name() {
    let helm = Helm::build();
    let dist = tempfile::tempdir().unwrap();
    let chart = helm::make_chart(dist.path(), IMAGE);
    let defaults = render(&helm, &chart, NAMESPACE, &[]);
    let changed = render(
        &helm,
        &chart,
        NAMESPACE,
        &[
            "--set",
            "manager.image.repository=mirror.example/team/operator,manager.image.tag=v0.2.0",
            "--set",
            "manager.image.pullPolicy=Always,manager.replicas=1,manager.leaderElection=false",
            "--set",
            "manager.resources.limits.memory=256Mi",
            "--set",
            "postgres.host=db.example.internal,postgres.port=6432,postgres.dbname=votes,postgres.user=writer",
            "--set",
            "postgres.passwordSecret.name=db-credentials,metrics.secure=false,crd.keep=false",
        ],
    );
    let manager = deployment(&changed);
    let container = &manager["spec"]["template"]["spec"]["containers"][0];
    assert_eq!(container["image"], "mirror.example/team/operator:v0.2.0");
    assert_eq!(container["imagePullPolicy"], "Always");
    assert_eq!(container["resources"]["limits"]["memory"], "256Mi");
    assert_eq!(
        container["resources"]["requests"]["memory"], "32Mi",
        "the rest as it was"
    );
    assert_eq!(manager["spec"]["replicas"], 1);
    let args = args(manager);
    assert!(!args.contains(&"--leader-elect".to_owned()), "{args:?}");
    assert!(args.contains(&"--metrics-secure=false".to_owned()), "{args:?}");
    assert_eq!(
        [
            env(manager, "PSQL_HOST"),
            env(manager, "PSQL_PORT"),
            env(manager, "PSQL_DBNAME"),
            env(manager, "PSQL_USER")
        ],
        ["db.example.internal", "6432", "votes", "writer"]
    );
    assert_eq!(
        manager["spec"]["template"]["spec"]["volumes"][0]["secret"]["secretName"],
        "db-credentials"
    );
    for ((kind, name), object) in &changed {
        if kind == "CustomResourceDefinition" {
            assert!(object["metadata"]["annotations"].is_null(), "{name}: not kept");
        } else if kind != "Deployment" {
            assert_eq!(
                object,
                &defaults[&(kind.clone(), name.clone())],
                "{kind} {name} does not depend on these values"
            );
        }
    }
    let defaults = deployment(&defaults);
    assert!(
        defaults["spec"]["template"]["spec"]["containers"][0]
            .get("imagePullPolicy")
            .is_none(),
        "Kubernetes' default unless one is given"
    );

    // Without leader election every replica would reconcile: the chart refuses more than one.
    let refused = helm.run(
        None,
        &[
            "template",
            RELEASE,
            chart.to_str().unwrap(),
            "--set",
            "manager.leaderElection=false",
        ],
    );
    assert!(!refused.success);
    assert!(
        refused.stderr.contains(
            "manager.leaderElection=false lets every replica reconcile at once: set manager.replicas=1"
        ),
        "{}",
        refused.stderr
    );
    // Without the CRDs (managed elsewhere): everything else.
    let without = render(&helm, &chart, NAMESPACE, &["--set", "crd.enable=false"]);
    assert!(without.keys().all(|(kind, _)| kind != "CustomResourceDefinition"));
    assert!(without.keys().any(|(kind, _)| kind == "Deployment"));
}

#[test]
fn every_reference_to_the_namespace_follows_the_release() {
    let helm = Helm::build();
    let dist = tempfile::tempdir().unwrap();
    let chart = helm::make_chart(dist.path(), IMAGE);
    let rendered = render(&helm, &chart, "tools", &[]);
    let text = serde_json::to_string(&rendered.values().collect::<Vec<_>>()).unwrap();
    assert!(
        !text.contains(NAMESPACE),
        "install.yaml's namespace is left somewhere"
    );
    let conversion = &rendered[&(
        "CustomResourceDefinition".to_owned(),
        "voteconfigs.voting.schoolofdevops.com".to_owned(),
    )]["spec"]["conversion"]["webhook"]["clientConfig"]["service"];
    assert_eq!(conversion["namespace"], "tools");
    for ((kind, name), object) in &rendered {
        if let Some(namespace) = object["metadata"]["namespace"].as_str() {
            assert_eq!(namespace, "tools", "{kind} {name}");
        }
        for subject in object["subjects"].as_array().into_iter().flatten() {
            assert_eq!(subject["namespace"], "tools", "{kind} {name}");
        }
        for webhook in object["webhooks"].as_array().into_iter().flatten() {
            assert_eq!(
                webhook["clientConfig"]["service"]["namespace"], "tools",
                "{kind} {name}"
            );
        }
    }
}
