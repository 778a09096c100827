//! CRDs from the manifests a project ships, as envtest's `CRDDirectoryPaths` installs them: a
//! directory's CRD documents installed and Established before `start` returns, other documents passed
//! over, and a file that does not parse or a CRD the server refuses named in the error.

use std::path::Path;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::{
    Api, CustomResource, CustomResourceExt,
    api::{DynamicObject, GroupVersionKind, PostParams},
    discovery::ApiResource,
};
use kube_envtest::{Environment, Error};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(CustomResource, Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[kube(group = "example.com", version = "v1", kind = "Greeting", namespaced)]
pub struct GreetingSpec {
    pub message: String,
}

#[derive(CustomResource, Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[kube(group = "example.com", version = "v1", kind = "Farewell", namespaced)]
pub struct FarewellSpec {
    pub message: String,
}

fn write(dir: &Path, file: &str, text: &str) {
    std::fs::write(dir.join(file), text).unwrap();
}

fn yaml(crd: &CustomResourceDefinition) -> String {
    serde_yaml::to_string(crd).unwrap()
}

/// What `config/crd` holds in a kubebuilder project: a file per CRD and a kustomization beside them.
fn config_crd(dir: &Path) {
    write(dir, "example.com_greetings.yaml", &yaml(&Greeting::crd()));
    write(
        dir,
        "example.com_farewells.yml",
        &format!("# generated\n---\n{}", yaml(&Farewell::crd())),
    );
    write(
        dir,
        "kustomization.yaml",
        "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n- example.com_greetings.yaml\n",
    );
    write(dir, "README.md", "not a manifest");
}

#[tokio::test]
async fn every_crd_in_a_directory_of_manifests_is_served_when_start_returns() {
    let dir = tempfile::tempdir().unwrap();
    config_crd(dir.path());
    let env = Environment::builder()
        .crd_paths([dir.path()])
        .start()
        .await
        .unwrap();

    for crd in [Greeting::crd(), Farewell::crd()] {
        let version = &crd.spec.versions[0].name;
        let gvk = GroupVersionKind::gvk(&crd.spec.group, version, &crd.spec.names.kind);
        let api: Api<DynamicObject> =
            Api::default_namespaced_with(env.client(), &ApiResource::from_gvk(&gvk));
        let object: DynamicObject = serde_json::from_value(serde_json::json!({
            "apiVersion": format!("{}/{version}", crd.spec.group), "kind": crd.spec.names.kind,
            "metadata": {"name": "one"}, "spec": {"message": "hi"},
        }))
        .unwrap();
        api.create(&PostParams::default(), &object)
            .await
            .unwrap_or_else(|e| panic!("{} is served at once: {e}", crd.spec.names.kind));
    }
    let crds: Api<CustomResourceDefinition> = Api::all(env.client());
    let installed = crds.list(&Default::default()).await.unwrap().items;
    assert_eq!(installed.len(), 2, "the two CRDs and nothing else");
}

#[tokio::test]
async fn a_single_file_with_several_documents_is_read_whole() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("install.yaml");
    let namespace = "apiVersion: v1\nkind: Namespace\nmetadata: {name: system}\n";
    let text = format!(
        "{namespace}---\n{}---\n{}",
        yaml(&Greeting::crd()),
        yaml(&Farewell::crd())
    );
    std::fs::write(&file, text).unwrap();
    let env = Environment::builder().crd_paths([&file]).start().await.unwrap();
    let crds: Api<CustomResourceDefinition> = Api::all(env.client());
    for crd in [Greeting::crd_name(), Farewell::crd_name()] {
        crds.get(crd).await.unwrap();
    }
}

#[tokio::test]
async fn a_missing_path_or_a_document_that_does_not_parse_is_an_error_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("config/crd");
    let error = Environment::builder()
        .crd_paths([&missing])
        .start()
        .await
        .expect_err("a missing path");
    assert!(matches!(error, Error::ReadCrds { .. }), "{error:?}");
    assert!(error.to_string().contains("config/crd"), "{error}");

    write(dir.path(), "good.yaml", &yaml(&Greeting::crd()));
    write(
        dir.path(),
        "broken.yaml",
        "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nspec: [unclosed\n",
    );
    let error = Environment::builder()
        .crd_paths([dir.path()])
        .start()
        .await
        .expect_err("a document that is not YAML");
    let message = error.to_string();
    assert!(message.contains("broken.yaml"), "{message}");

    std::fs::remove_file(dir.path().join("broken.yaml")).unwrap();
    write(
        dir.path(),
        "old.yaml",
        "apiVersion: apiextensions.k8s.io/v1beta1\nkind: CustomResourceDefinition\nmetadata: {name: olds.example.com}\n",
    );
    let message = Environment::builder()
        .crd_paths([dir.path()])
        .start()
        .await
        .expect_err("a v1beta1 CRD")
        .to_string();
    assert!(
        message.contains("old.yaml") && message.contains("apiextensions.k8s.io/v1"),
        "{message}"
    );
}

#[tokio::test]
async fn a_crd_the_server_refuses_is_an_error_naming_its_file_and_the_field() {
    let dir = tempfile::tempdir().unwrap();
    let mut crd = Greeting::crd();
    crd.spec.names.plural = "Not-A-Plural".into();
    write(dir.path(), "greetings.yaml", &yaml(&crd));
    let error = Environment::builder()
        .crd_paths([dir.path()])
        .start()
        .await
        .expect_err("refused");
    assert!(matches!(error, Error::InstallCrd { .. }), "{error:?}");
    let message = error.to_string();
    assert!(
        message.contains("greetings.example.com") && message.contains("greetings.yaml"),
        "{message}"
    );
    assert!(message.contains("spec.names.plural"), "{message}");
}
