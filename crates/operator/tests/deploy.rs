//! `make install` and `make deploy` rehearsed on the real control plane, step by step as the README's
//! "Deploying to a real cluster" gives them: `operator install` (what `make install` runs), the
//! `kubectl` steps as written, and `kubectl apply --dry-run=server -k config/default` for
//! `make deploy` (no image is pulled, so the manager is admitted but not run; `rbac_enforced.rs` runs
//! it). cert-manager cannot run on this control plane (it is pods, and no kubelet runs them): its
//! install step registers stand-ins for the two CRDs config/default uses
//! (tests/fixtures/cert-manager-crds.yaml), so that the dry run validates all of config/default, and
//! its wait step has nothing to wait for. Then every name the manager's Deployment and the webhook
//! wiring refer to must exist: in what kustomize renders or in what the README's steps created.

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

async fn readme_deploy_steps_work_and_every_reference_of_the_manager_and_its_webhooks_exists(
    backend: Backend,
) {
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
            ["kubectl", "apply", "-f", url] if url.contains("/cert-manager/") => {
                support::install_cert_manager_crds(&plane.client()).await;
            }
            ["kubectl", "-n", "cert-manager", "wait", ..] => {}
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
    // cert-manager creates the Secret each Certificate names.
    for certificate in objects.iter().filter(|o| o["kind"] == "Certificate") {
        let (_, _, namespace) = kind_name_namespace(certificate);
        let secret = certificate["spec"]["secretName"].as_str().unwrap_or_default();
        known.insert(("Secret".into(), secret.into(), namespace));
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
/// a rendered Service whose port leads to the manager's webhook port, the Certificate is for that
/// Service's DNS name and names a rendered Issuer, and every object that takes a CA bundle asks
/// cert-manager to inject the CA of that Certificate.
fn webhook_references_exist(objects: &[Value], exists: &dyn Fn(&str, &str, &str) -> bool) {
    let mut clients = Vec::new();
    let mut injected = Vec::new();
    for object in objects {
        let configs: Vec<&Value> = match object["kind"].as_str() {
            Some("CustomResourceDefinition") => object
                .pointer("/spec/conversion/webhook/clientConfig")
                .into_iter()
                .collect(),
            Some("MutatingWebhookConfiguration" | "ValidatingWebhookConfiguration") => object["webhooks"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|w| &w["clientConfig"])
                .collect(),
            _ => continue,
        };
        if configs.is_empty() {
            continue;
        }
        let (kind, name, _) = kind_name_namespace(object);
        injected.push((
            format!("{kind} {name}"),
            object
                .pointer("/metadata/annotations/cert-manager.io~1inject-ca-from")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned(),
        ));
        clients.extend(configs.into_iter().map(|c| c["service"].clone()));
    }
    assert_eq!(
        injected.len(),
        3,
        "VoteConfig's CRD and both configurations: {injected:?}"
    );
    assert_eq!(clients.len(), 3, "one conversion and two admission webhooks");

    let certificate = objects
        .iter()
        .find(|o| o["kind"] == "Certificate")
        .expect("the webhook certificate is rendered");
    let (_, certificate_name, certificate_namespace) = kind_name_namespace(certificate);
    for (object, annotation) in &injected {
        assert_eq!(
            annotation,
            &format!("{certificate_namespace}/{certificate_name}"),
            "{object} gets its CA bundle from the Certificate"
        );
    }
    let issuer = certificate["spec"]["issuerRef"]["name"]
        .as_str()
        .unwrap_or_default();
    assert!(
        exists("Issuer", issuer, &certificate_namespace),
        "the Certificate names Issuer {certificate_namespace}/{issuer}, which nothing creates"
    );
    let dns_names: Vec<&str> = certificate["spec"]["dnsNames"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    let webhook_port = objects
        .iter()
        .find(|o| o["kind"] == "Deployment")
        .and_then(|d| d.pointer("/spec/template/spec/containers/0/ports"))
        .and_then(Value::as_array)
        .and_then(|ports| ports.iter().find(|p| p["name"] == "webhook-server"))
        .map(|p| p["containerPort"].clone())
        .expect("the manager exposes its webhook port");
    for client in clients {
        let (name, namespace) = (
            client["name"].as_str().unwrap_or_default(),
            client["namespace"].as_str().unwrap_or_default(),
        );
        assert!(
            exists("Service", name, namespace),
            "webhook Service {namespace}/{name}"
        );
        assert!(
            dns_names.contains(&format!("{name}.{namespace}.svc").as_str()),
            "the certificate {dns_names:?} is for {name}.{namespace}.svc"
        );
        let service = objects
            .iter()
            .find(|o| kind_name_namespace(o) == ("Service".into(), name.into(), namespace.into()))
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
