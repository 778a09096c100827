//! `make deploy` on the real control plane, step by step as the README's "Deploying to a real cluster"
//! gives them: the `kubectl` steps as written, then `make deploy`, which writes the installer
//! (`make build-installer`'s `install.yaml`) and applies it with `kubectl apply -f`. Every object in it
//! must be accepted and stored. No node runs there, so the manager is admitted but not run:
//! `rbac_enforced.rs` runs it as a process, and the cluster tier's `deployed.rs` runs the image on a
//! node from the same installer. Then every name the manager's Deployment and the webhook wiring refer
//! to must exist: in the installer or in what the README's steps created.

mod support;

use std::collections::BTreeSet;

use serde_json::Value;
use support::{Backend, ControlPlane};

/// The objects of an installer, as JSON.
fn installer_objects(path: &std::path::Path) -> Vec<Value> {
    let yaml = std::fs::read_to_string(path).expect("the installer was written");
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

async fn readme_deploy_steps_work_and_every_reference_of_the_manager_and_its_webhooks_exists(
    backend: Backend,
) {
    let plane = ControlPlane::start(backend).await.expect("control plane starts");
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    let dist = dir.path().join("dist");
    plane.write_kubeconfig(&kubeconfig).unwrap();

    let steps = support::readme_deploy_steps();
    assert!(steps.iter().any(|s| s.starts_with("make deploy")), "{steps:?}");
    for step in &steps {
        let words: Vec<&str> = step.split_whitespace().collect();
        match words.as_slice() {
            // No image is built, pushed or pulled for a server-side dry run.
            ["make", "docker-build", ..] | ["docker", "push", ..] => {}
            ["make", "deploy", image] => {
                support::make(
                    &kubeconfig,
                    &["deploy", image, &format!("DIST={}", dist.display())],
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
    let installer = dist.join("install.yaml");
    let objects = installer_objects(&installer);
    // Every object of the installer was accepted and is stored.
    let stored = support::kubectl(
        &kubeconfig,
        &["get", "-f", &installer.display().to_string(), "-o", "name"],
    );
    assert_eq!(stored.lines().count(), objects.len(), "{stored}");
    let image = objects
        .iter()
        .find(|o| o["kind"] == "Deployment")
        .and_then(|d| d.pointer("/spec/template/spec/containers/0/image"))
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    assert!(
        steps.iter().any(|s| s.ends_with(&format!("IMG={image}"))),
        "the manager runs the image the README's make deploy names, not {image}"
    );
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
    webhook_references_exist(&objects, &exists);
}

/// The webhook wiring of `objects` (config/default rendered) holds together: each webhook client names
/// a rendered Service whose port leads to the manager's webhook port, and the manager issues its
/// certificate for that Service into a rendered Secret.
fn webhook_references_exist(objects: &[Value], exists: &dyn Fn(&str, &str, &str) -> bool) {
    let mut clients = Vec::new();
    for object in objects {
        match object["kind"].as_str() {
            Some("CustomResourceDefinition") => clients.extend(
                object
                    .pointer("/spec/conversion/webhook/clientConfig/service")
                    .cloned(),
            ),
            Some("MutatingWebhookConfiguration" | "ValidatingWebhookConfiguration") => clients.extend(
                object["webhooks"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(|w| w["clientConfig"]["service"].clone()),
            ),
            _ => {}
        }
    }
    assert_eq!(clients.len(), 3, "one conversion and two admission webhooks");

    let manager = objects
        .iter()
        .find(|o| o["kind"] == "Deployment")
        .and_then(|d| d.pointer("/spec/template/spec/containers/0"))
        .expect("the manager's container is rendered");
    let (_, _, namespace) = kind_name_namespace(objects.iter().find(|o| o["kind"] == "Deployment").unwrap());
    let flag = |name: &str| {
        manager["args"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .find_map(|arg| arg.strip_prefix(&format!("--{name}=")))
            .unwrap_or_else(|| panic!("the manager runs with --{name}"))
            .to_owned()
    };
    let secret = flag("webhook-cert-secret");
    assert!(
        exists("Secret", &secret, &namespace),
        "the manager keeps its certificate in Secret {namespace}/{secret}, which nothing creates"
    );
    let issued_for = flag("webhook-service");
    let webhook_port = manager["ports"]
        .as_array()
        .and_then(|ports| ports.iter().find(|p| p["name"] == "webhook-server"))
        .map(|p| p["containerPort"].clone())
        .expect("the manager exposes its webhook port");
    for client in clients {
        let (name, service_namespace) = (
            client["name"].as_str().unwrap_or_default(),
            client["namespace"].as_str().unwrap_or_default(),
        );
        assert!(
            exists("Service", name, service_namespace),
            "webhook Service {service_namespace}/{name}"
        );
        assert_eq!(
            (name, service_namespace),
            (issued_for.as_str(), namespace.as_str()),
            "the certificate is issued for the Service the webhooks call"
        );
        let service = objects
            .iter()
            .find(|o| kind_name_namespace(o) == ("Service".into(), name.into(), service_namespace.into()))
            .expect("the Service is rendered");
        let port = client["port"].as_i64().unwrap_or(443);
        let target = service["spec"]["ports"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|p| p["port"] == port)
            .map(|p| p["targetPort"].clone());
        assert_eq!(
            target,
            Some(webhook_port.clone()),
            "Service port {port} leads to the webhook port"
        );
    }
}

testenv::real_control_plane!(
    readme_deploy_steps_work_and_every_reference_of_the_manager_and_its_webhooks_exists
);
