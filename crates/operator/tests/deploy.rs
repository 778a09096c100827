//! `make install` and `make deploy` rehearsed on the real control plane, step by step as the README's
//! "Deploying to a real cluster" gives them: `operator install` (what `make install` runs), the
//! `kubectl` steps as written, and `kubectl apply --dry-run=server -k config/default` for
//! `make deploy` (no image is pulled, so the manager is admitted but not run; `rbac_enforced.rs` runs
//! it). Then every name the manager's Deployment refers to must exist: in what kustomize renders or
//! in what the README's steps created.

mod support;

use std::{collections::BTreeSet, path::Path, process::Command};

use serde_json::Value;
use support::{Backend, ControlPlane};

/// `operator args` with `kubeconfig`, failing the test with its output if it fails.
fn operator(args: &[&str], kubeconfig: &Path) {
    let output = Command::new(env!("CARGO_BIN_EXE_operator"))
        .args(args)
        .env("KUBECONFIG", kubeconfig)
        .output()
        .expect("operator runs");
    assert!(
        output.status.success(),
        "operator {args:?}: {}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

/// The commands of the README's deploy section, comments dropped.
fn readme_deploy_steps() -> Vec<String> {
    let readme = std::fs::read_to_string(support::repository().join("README.md")).expect("README.md");
    let section = readme
        .split("## Deploying to a real cluster")
        .nth(1)
        .expect("a deploy section");
    let block = section
        .split("```sh\n")
        .nth(1)
        .and_then(|rest| rest.split("```").next())
        .expect("a sh block in the deploy section");
    block
        .lines()
        .map(|line| line.split(" #").next().unwrap_or_default().trim().to_owned())
        .filter(|line| !line.is_empty())
        .collect()
}

/// `kubectl kustomize config/default`, as JSON objects.
fn rendered(kubeconfig: &Path) -> Vec<Value> {
    let yaml = support::kubectl(kubeconfig, &["kustomize", "config/default"]);
    serde_yaml::Deserializer::from_str(&yaml)
        .map(|document| {
            let value: serde_yaml::Value = serde::Deserialize::deserialize(document).expect("YAML");
            serde_json::to_value(value).expect("JSON")
        })
        .filter(|v| !v.is_null())
        .collect()
}

fn kind_name_namespace(object: &Value) -> (String, String, String) {
    let text = |pointer: &str| {
        object
            .pointer(pointer)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    (text("/kind"), text("/metadata/name"), text("/metadata/namespace"))
}

async fn readme_deploy_steps_work_and_every_reference_of_the_manager_exists(backend: Backend) {
    let plane = ControlPlane::start(backend).await.expect("control plane starts");
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    plane.write_kubeconfig(&kubeconfig).unwrap();

    let steps = readme_deploy_steps();
    assert!(steps.iter().any(|s| s == "make deploy"), "{steps:?}");
    for step in &steps {
        let words: Vec<&str> = step.split_whitespace().collect();
        match words.as_slice() {
            // No container engine is needed for a server-side dry run: nothing pulls the image.
            ["make", "docker-build"] => {}
            ["make", "install"] => {
                operator(&["install"], &kubeconfig);
            }
            ["make", "deploy"] => {
                support::kubectl(
                    &kubeconfig,
                    &["apply", "--dry-run=server", "-k", "config/default"],
                );
            }
            ["kubectl", args @ ..] => {
                // The README leaves the password to the reader: `...` stands for it.
                let args: Vec<String> = args.iter().map(|a| a.replace("=...", "=rehearsal")).collect();
                let args: Vec<&str> = args.iter().map(String::as_str).collect();
                support::kubectl(&kubeconfig, &args);
            }
            _ => panic!("a README deploy step this test does not know how to play: {step}"),
        }
    }

    // What exists after the steps: the rendered objects (applied as a dry run) and the cluster's.
    let objects = rendered(&kubeconfig);
    let mut known: BTreeSet<(String, String, String)> = objects.iter().map(kind_name_namespace).collect();
    for kind in ["namespaces", "secrets", "configmaps", "serviceaccounts"] {
        let listed = support::kubectl(&kubeconfig, &["get", kind, "--all-namespaces", "-o", "json"]);
        let listed: Value = serde_json::from_str(&listed).expect("a list");
        for item in listed["items"].as_array().into_iter().flatten() {
            let (_, name, namespace) = kind_name_namespace(item);
            let kind = match kind {
                "namespaces" => "Namespace",
                "secrets" => "Secret",
                "configmaps" => "ConfigMap",
                _ => "ServiceAccount",
            };
            known.insert((kind.to_owned(), name, namespace));
        }
    }
    let exists = |kind: &str, name: &str, namespace: &str| {
        known.contains(&(kind.into(), name.into(), namespace.into()))
    };

    let deployment = objects
        .iter()
        .find(|o| o["kind"] == "Deployment")
        .expect("the manager's Deployment is rendered");
    let (_, _, namespace) = kind_name_namespace(deployment);
    assert!(exists("Namespace", &namespace, ""), "namespace {namespace}");
    let pod = &deployment["spec"]["template"]["spec"];
    let account = pod["serviceAccountName"].as_str().unwrap_or("default");
    assert!(
        exists("ServiceAccount", account, &namespace),
        "ServiceAccount {namespace}/{account}"
    );
    let mut references = Vec::new();
    for volume in pod["volumes"].as_array().into_iter().flatten() {
        if let Some(name) = volume.pointer("/secret/secretName").and_then(Value::as_str) {
            references.push(("Secret", name));
        }
        if let Some(name) = volume.pointer("/configMap/name").and_then(Value::as_str) {
            references.push(("ConfigMap", name));
        }
    }
    for container in pod["containers"].as_array().into_iter().flatten() {
        for env in container["env"].as_array().into_iter().flatten() {
            if let Some(name) = env
                .pointer("/valueFrom/secretKeyRef/name")
                .and_then(Value::as_str)
            {
                references.push(("Secret", name));
            }
            if let Some(name) = env
                .pointer("/valueFrom/configMapKeyRef/name")
                .and_then(Value::as_str)
            {
                references.push(("ConfigMap", name));
            }
        }
        for source in container["envFrom"].as_array().into_iter().flatten() {
            if let Some(name) = source.pointer("/secretRef/name").and_then(Value::as_str) {
                references.push(("Secret", name));
            }
            if let Some(name) = source.pointer("/configMapRef/name").and_then(Value::as_str) {
                references.push(("ConfigMap", name));
            }
        }
    }
    assert!(!references.is_empty(), "the manager mounts its database password");
    for (kind, name) in references {
        assert!(
            exists(kind, name, &namespace),
            "the manager refers to {kind} {namespace}/{name}, which nothing creates"
        );
    }
}

testenv::real_control_plane!(readme_deploy_steps_work_and_every_reference_of_the_manager_exists);
