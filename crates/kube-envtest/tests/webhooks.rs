//! Webhooks under test, as envtest's `WebhookInstallOptions` installs them: the configurations of a
//! `config/webhook` directory and a CRD converting through a webhook, pointed at a server the test
//! runs with the certificate kube-envtest made, called by the API server before `start` has long
//! returned; and a manifest that cannot be installed named in the error.

use std::{path::Path, sync::Arc};

use axum::{Json, Router, routing::post};
use k8s_openapi::{
    ByteString,
    api::{
        admissionregistration::v1::{
            RuleWithOperations, ServiceReference, ValidatingWebhook, ValidatingWebhookConfiguration,
            WebhookClientConfig,
        },
        core::v1::ConfigMap,
    },
};
use kube::{
    Api,
    api::{ApiResource, DynamicObject, GroupVersionKind, PostParams},
};
use kube_envtest::{Environment, Error, WebhookInstallOptions, WebhookServing};
use serde_json::{Value, json};

/// What a kubebuilder project's `config/webhook/manifests.yaml` holds: a mutating and a validating
/// configuration for ConfigMaps, calling the Service `webhook-service` at their paths.
const ADMISSION: &str = r#"apiVersion: admissionregistration.k8s.io/v1
kind: MutatingWebhookConfiguration
metadata: {name: mutating-webhook-configuration}
webhooks:
- name: mconfigmap.example.com
  admissionReviewVersions: [v1]
  sideEffects: None
  failurePolicy: Fail
  clientConfig:
    service: {name: webhook-service, namespace: system, path: /mutate-v1-configmap, port: 443}
  rules:
  - {apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [configmaps]}
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata: {name: validating-webhook-configuration}
webhooks:
- name: vconfigmap.example.com
  admissionReviewVersions: [v1]
  sideEffects: None
  failurePolicy: Fail
  clientConfig:
    service: {name: webhook-service, namespace: system, path: /validate-v1-configmap, port: 443}
  rules:
  - {apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [configmaps]}
"#;

/// The Service the configurations name, beside them as in `config/webhook`: passed over.
const SERVICE: &str = "apiVersion: v1\nkind: Service\nmetadata: {name: webhook-service, namespace: system}\n\
                       spec: {ports: [{port: 443, targetPort: 9443}]}\n";

/// A Greeting in two versions, `spec.message` in v1 and `spec.text` in v2, converted by a webhook (the
/// conversion stanza kubebuilder's `config/crd/patches/webhook_in_*.yaml` adds).
const CONVERTING_CRD: &str = r#"apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: greetings.example.com}
spec:
  group: example.com
  names: {kind: Greeting, listKind: GreetingList, plural: greetings, singular: greeting}
  scope: Namespaced
  conversion:
    strategy: Webhook
    webhook:
      clientConfig:
        service: {name: webhook-service, namespace: system, path: /convert}
      conversionReviewVersions: [v1]
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec: {type: object, properties: {message: {type: string}}}
  - name: v2
    served: true
    storage: false
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec: {type: object, properties: {text: {type: string}}}
"#;

fn write(dir: &Path, file: &str, text: &str) {
    std::fs::write(dir.join(file), text).unwrap();
}

/// `config/webhook` and `config/crd` as a kubebuilder project lays them out.
fn project(root: &Path) -> (std::path::PathBuf, std::path::PathBuf) {
    let webhook = root.join("config/webhook");
    let crd = root.join("config/crd");
    std::fs::create_dir_all(&webhook).unwrap();
    std::fs::create_dir_all(&crd).unwrap();
    write(&webhook, "manifests.yaml", ADMISSION);
    write(&webhook, "service.yaml", SERVICE);
    write(
        &webhook,
        "kustomization.yaml",
        "resources:\n- manifests.yaml\n- service.yaml\n",
    );
    write(&crd, "example.com_greetings.yaml", CONVERTING_CRD);
    (webhook, crd)
}

/// The response to the AdmissionReview `review`: allowed, with `patch` (a JSON patch) if any, or
/// refused with `message`.
fn admission_response(review: &Value, allowed: bool, message: &str, patch: Option<Value>) -> Value {
    let mut response = json!({"uid": review["request"]["uid"], "allowed": allowed});
    if !allowed {
        response["status"] = json!({"code": 403, "message": message});
    }
    if let Some(patch) = patch {
        let bytes = serde_json::to_vec(&patch).unwrap();
        response["patchType"] = json!("JSONPatch");
        // ByteString serializes as base64, which is what `patch` carries.
        response["patch"] = serde_json::to_value(ByteString(bytes)).unwrap();
    }
    json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": response})
}

/// Refuses a ConfigMap with a key `forbidden`.
async fn validate(Json(review): Json<Value>) -> Json<Value> {
    let forbidden = review["request"]["object"]["data"].get("forbidden").is_some();
    Json(admission_response(
        &review,
        !forbidden,
        "the key forbidden is not allowed",
        None,
    ))
}

/// Labels every ConfigMap `mutated: "true"`.
async fn mutate(Json(review): Json<Value>) -> Json<Value> {
    let labels = &review["request"]["object"]["metadata"]["labels"];
    let patch = if labels.is_object() {
        json!([{"op": "add", "path": "/metadata/labels/mutated", "value": "true"}])
    } else {
        json!([{"op": "add", "path": "/metadata/labels", "value": {"mutated": "true"}}])
    };
    Json(admission_response(&review, true, "", Some(patch)))
}

/// Converts Greetings: v1's `spec.message` is v2's `spec.text`.
async fn convert(Json(review): Json<Value>) -> Json<Value> {
    let request = &review["request"];
    let desired = request["desiredAPIVersion"].as_str().unwrap_or_default();
    let converted: Vec<Value> = request["objects"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|object| {
            let mut object = object.clone();
            let spec = object["spec"].take();
            let said = spec.get("message").or_else(|| spec.get("text")).cloned();
            object["spec"] = match (desired, said) {
                ("example.com/v2", Some(said)) => json!({"text": said}),
                (_, Some(said)) => json!({"message": said}),
                (_, None) => json!({}),
            };
            object["apiVersion"] = json!(desired);
            object
        })
        .collect();
    Json(json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
        "response": {"uid": request["uid"], "convertedObjects": converted, "result": {"status": "Success"}}
    }))
}

/// The test's webhook server, on the address and with the certificate kube-envtest made for it.
async fn serve(serving: &WebhookServing) -> tokio::task::JoinHandle<()> {
    let router = Router::new()
        .route("/validate-v1-configmap", post(validate))
        .route("/mutate-v1-configmap", post(mutate))
        .route("/convert", post(convert));
    let tls = Arc::new(serving.server_config().unwrap());
    let listener = serving::listener::TlsListener::bind(serving.addr(), tls)
        .await
        .unwrap();
    tokio::spawn(async move {
        axum::serve(listener, router).await.unwrap();
    })
}

fn config_map(name: &str, key: &str) -> ConfigMap {
    serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {key: "value"}
    }))
    .unwrap()
}

/// The message of the API error `result` must be.
fn refusal<T: std::fmt::Debug>(result: kube::Result<T>) -> String {
    match result {
        Err(kube::Error::Api(status)) => status.message,
        other => panic!("expected a refusal, got {other:?}"),
    }
}

async fn project_environment(root: &Path) -> Environment {
    let (webhook, crd) = project(root);
    Environment::builder()
        .crd_paths([crd])
        .webhook_install_options(WebhookInstallOptions::default().paths([webhook]))
        .start()
        .await
        .unwrap()
}

#[tokio::test]
async fn a_validating_webhook_from_config_webhook_refuses_with_its_message() {
    let dir = tempfile::tempdir().unwrap();
    let env = project_environment(dir.path()).await;
    let _server = serve(env.webhook_serving().unwrap()).await;
    let config_maps: Api<ConfigMap> = Api::default_namespaced(env.client());

    let refused = refusal(
        config_maps
            .create(&PostParams::default(), &config_map("bad", "forbidden"))
            .await,
    );

    assert_eq!(
        refused,
        "admission webhook \"vconfigmap.example.com\" denied the request: the key forbidden is not allowed"
    );
    config_maps
        .create(&PostParams::default(), &config_map("good", "allowed"))
        .await
        .expect("admitted");
}

#[tokio::test]
async fn a_mutating_webhook_from_config_webhook_changes_what_is_stored() {
    let dir = tempfile::tempdir().unwrap();
    let env = project_environment(dir.path()).await;
    let _server = serve(env.webhook_serving().unwrap()).await;
    let config_maps: Api<ConfigMap> = Api::default_namespaced(env.client());

    let created = config_maps
        .create(&PostParams::default(), &config_map("plain", "key"))
        .await
        .unwrap();

    assert_eq!(
        created.metadata.labels.unwrap_or_default().get("mutated"),
        Some(&"true".to_owned())
    );
}

fn greetings(env: &Environment, version: &str) -> Api<DynamicObject> {
    let gvk = GroupVersionKind::gvk("example.com", version, "Greeting");
    Api::default_namespaced_with(env.client(), &ApiResource::from_gvk(&gvk))
}

fn greeting(version: &str, name: &str, spec: Value) -> DynamicObject {
    serde_json::from_value(json!({
        "apiVersion": format!("example.com/{version}"), "kind": "Greeting",
        "metadata": {"name": name}, "spec": spec
    }))
    .unwrap()
}

#[tokio::test]
async fn a_crd_from_config_crd_converts_between_versions_through_the_test_server() {
    let dir = tempfile::tempdir().unwrap();
    let env = project_environment(dir.path()).await;
    let _server = serve(env.webhook_serving().unwrap()).await;
    let (v1, v2) = (greetings(&env, "v1"), greetings(&env, "v2"));

    v1.create(
        &PostParams::default(),
        &greeting("v1", "hello", json!({"message": "hi"})),
    )
    .await
    .unwrap();
    v2.create(
        &PostParams::default(),
        &greeting("v2", "bye", json!({"text": "so long"})),
    )
    .await
    .expect("stored as v1 through the webhook");

    assert_eq!(v2.get("hello").await.unwrap().data["spec"], json!({"text": "hi"}));
    assert_eq!(
        v1.get("bye").await.unwrap().data["spec"],
        json!({"message": "so long"})
    );
}

#[tokio::test]
async fn the_serving_certificate_is_in_cert_dir_and_valid_for_the_address() {
    let dir = tempfile::tempdir().unwrap();
    let env = project_environment(dir.path()).await;
    let serving = env.webhook_serving().unwrap();

    assert!(
        serving.url().starts_with("https://127.0.0.1:"),
        "{}",
        serving.url()
    );
    assert_eq!(serving.addr().port(), serving.port());
    let cert_dir = serving.cert_dir().to_owned();
    assert_eq!(
        std::fs::read_to_string(cert_dir.join("tls.crt")).unwrap(),
        serving.cert_pem()
    );
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(cert_dir.join("tls.key"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600, "the key is the owner's alone");
    assert!(
        !format!("{serving:?}").contains(serving.key_pem()),
        "Debug output keeps the key out"
    );
    // The configurations installed carry the CA and the URL.
    let installed: Api<ValidatingWebhookConfiguration> = Api::all(env.client());
    let config = installed
        .get("validating-webhook-configuration")
        .await
        .unwrap()
        .webhooks
        .unwrap()
        .remove(0)
        .client_config;
    assert_eq!(
        config.url,
        Some(format!("{}/validate-v1-configmap", serving.url()))
    );
    assert_eq!(config.ca_bundle.unwrap().0, serving.ca_pem().as_bytes());

    drop(env);
    assert!(!cert_dir.exists(), "removed with the environment");
}

/// A ValidatingWebhookConfiguration as a Rust value, calling `path` on the Service.
fn refusing_config_maps(path: &str) -> ValidatingWebhookConfiguration {
    ValidatingWebhookConfiguration {
        metadata: kube::api::ObjectMeta {
            name: Some("from-rust".into()),
            ..Default::default()
        },
        webhooks: Some(vec![ValidatingWebhook {
            name: "vconfigmap.example.com".into(),
            admission_review_versions: vec!["v1".into()],
            side_effects: "None".into(),
            client_config: WebhookClientConfig {
                service: Some(ServiceReference {
                    name: "webhook-service".into(),
                    namespace: "system".into(),
                    path: Some(path.into()),
                    port: None,
                }),
                ..Default::default()
            },
            rules: Some(vec![RuleWithOperations {
                api_groups: Some(vec!["".into()]),
                api_versions: Some(vec!["v1".into()]),
                operations: Some(vec!["CREATE".into()]),
                resources: Some(vec!["configmaps".into()]),
                scope: None,
            }]),
            ..Default::default()
        }]),
    }
}

#[tokio::test]
async fn configurations_given_as_rust_values_are_installed_on_a_running_server_too() {
    let env = Environment::start().await.unwrap();
    let serving = WebhookInstallOptions::default()
        .validating_webhooks([refusing_config_maps("/validate-v1-configmap")])
        .install(&env.client())
        .await
        .unwrap();
    let _server = serve(&serving).await;
    let config_maps: Api<ConfigMap> = Api::default_namespaced(env.client());

    let refused = refusal(
        config_maps
            .create(&PostParams::default(), &config_map("bad", "forbidden"))
            .await,
    );

    assert!(
        refused.ends_with("denied the request: the key forbidden is not allowed"),
        "{refused}"
    );
}

#[tokio::test]
async fn a_manifest_that_cannot_be_installed_is_an_error_naming_its_file() {
    let dir = tempfile::tempdir().unwrap();
    let start = |path: std::path::PathBuf| {
        Environment::builder()
            .webhook_install_options(WebhookInstallOptions::default().paths([path]))
            .start()
    };

    let missing = dir.path().join("config/webhook");
    let error = start(missing).await.expect_err("a missing path");
    assert!(matches!(error, Error::ReadWebhooks { .. }), "{error:?}");
    assert!(error.to_string().contains("config/webhook"), "{error}");

    write(
        dir.path(),
        "broken.yaml",
        "apiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingWebhookConfiguration\nwebhooks: [unclosed\n",
    );
    let message = start(dir.path().join("broken.yaml"))
        .await
        .expect_err("not YAML")
        .to_string();
    assert!(message.contains("broken.yaml"), "{message}");

    write(
        dir.path(),
        "old.yaml",
        "apiVersion: admissionregistration.k8s.io/v1beta1\nkind: MutatingWebhookConfiguration\nmetadata: {name: old}\n",
    );
    let message = start(dir.path().join("old.yaml"))
        .await
        .expect_err("v1beta1")
        .to_string();
    assert!(
        message.contains("old.yaml") && message.contains("admissionregistration.k8s.io/v1"),
        "{message}"
    );

    // Valid YAML the server refuses: sideEffects must be None or NoneOnDryRun.
    write(
        dir.path(),
        "refused.yaml",
        &ADMISSION.replace("sideEffects: None", "sideEffects: Some"),
    );
    let error = start(dir.path().join("refused.yaml")).await.expect_err("refused");
    assert!(matches!(error, Error::InstallWebhook { .. }), "{error:?}");
    let message = error.to_string();
    assert!(
        message.contains("refused.yaml") && message.contains("mutating-webhook-configuration"),
        "{message}"
    );
    assert!(message.contains("sideEffects"), "{message}");
}
