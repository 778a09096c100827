//! What a test using the crate relies on: CRDs served at start, the kubeconfig, plain HTTP, a data dir
//! that outlives a server, a clear error for a CRD the server refuses, and a server gone once dropped.

use std::time::{Duration, Instant};

use k8s_openapi::{
    api::core::v1::{ConfigMap, Namespace, Node},
    apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition,
};
use kube::{
    Api, CustomResource, CustomResourceExt, ResourceExt,
    api::{ListParams, PostParams},
};
use kube_envtest::{Environment, Error};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(CustomResource, Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[kube(group = "example.com", version = "v1", kind = "Greeting", namespaced)]
pub struct GreetingSpec {
    pub message: String,
}

fn greeting(name: &str, message: &str) -> Greeting {
    Greeting::new(
        name,
        GreetingSpec {
            message: message.into(),
        },
    )
}

fn config_map(name: &str) -> ConfigMap {
    let mut config_map = ConfigMap::default();
    config_map.metadata.name = Some(name.to_owned());
    config_map.data = Some([("key".to_owned(), "value".to_owned())].into());
    config_map
}

fn is_established(crd: &CustomResourceDefinition) -> bool {
    crd.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|c| c.iter().any(|c| c.type_ == "Established" && c.status == "True"))
}

#[tokio::test]
async fn crds_named_at_start_are_established_and_serve_their_kind_at_once() {
    let env = Environment::builder()
        .crd_for::<Greeting>()
        .start()
        .await
        .unwrap();

    let crds: Api<CustomResourceDefinition> = Api::all(env.client());
    assert!(is_established(&crds.get(Greeting::crd_name()).await.unwrap()));
    let greetings: Api<Greeting> = Api::default_namespaced(env.client());
    greetings
        .create(&PostParams::default(), &greeting("hello", "hi"))
        .await
        .unwrap();
    assert_eq!(greetings.get("hello").await.unwrap().spec.message, "hi");
}

#[tokio::test]
async fn crds_installed_on_a_running_server_are_established_when_the_call_returns() {
    let env = Environment::start().await.unwrap();
    let greetings: Api<Greeting> = Api::default_namespaced(env.client());
    assert!(
        greetings.list(&ListParams::default()).await.is_err(),
        "not served before the CRD"
    );

    env.install_crd_for::<Greeting>().await.unwrap();
    // Installing again (a test's setup run twice) is no error.
    env.install_crds([Greeting::crd()]).await.unwrap();

    greetings
        .create(&PostParams::default(), &greeting("hello", "hi"))
        .await
        .unwrap();
}

#[tokio::test]
async fn a_crd_the_server_refuses_is_an_error_naming_it_and_the_field() {
    let mut crd = Greeting::crd();
    crd.spec.names.plural = "Not-A-Plural".into();

    let error = Environment::builder()
        .crd(crd)
        .start()
        .await
        .expect_err("refused");

    assert!(matches!(error, Error::InstallCrd { .. }), "{error:?}");
    let message = error.to_string();
    assert!(message.contains("greetings.example.com"), "{message}");
    let source = std::error::Error::source(&error)
        .map(ToString::to_string)
        .unwrap_or_default();
    assert!(source.contains("spec.names.plural"), "{source}");
}

#[tokio::test]
async fn the_kubeconfig_written_to_a_path_reaches_the_server_with_its_token() {
    let env = Environment::start().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("nested/kubeconfig");

    env.write_kubeconfig(&path).unwrap();

    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600, "the kubeconfig holds the token");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), env.kubeconfig_yaml());
    let token = env.token().expect("a token over https");
    assert!(env.kubeconfig_yaml().contains(token));
    assert!(
        !format!("{env:?}").contains(token),
        "Debug output keeps the token out"
    );
    let kubeconfig = kube::config::Kubeconfig::read_from(&path).unwrap();
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default())
        .await
        .unwrap();
    assert!(env.url().starts_with("https://127.0.0.1:"), "{}", env.url());
    let client = kube::Client::try_from(config).unwrap();
    let namespaces: Api<Namespace> = Api::all(client);
    let names: Vec<String> = namespaces
        .list(&ListParams::default())
        .await
        .unwrap()
        .iter()
        .map(|n| n.name_any())
        .collect();
    assert!(names.contains(&"default".to_owned()), "{names:?}");
}

#[tokio::test]
async fn without_a_token_the_kubeconfig_is_refused_over_https() {
    let env = Environment::start().await.unwrap();
    let mut config = env.kube_config();
    config.auth_info.token = None;
    let anonymous: Api<ConfigMap> = Api::default_namespaced(kube::Client::try_from(config).unwrap());

    let error = anonymous.list(&ListParams::default()).await.expect_err("401");

    assert!(
        matches!(&error, kube::Error::Api(status) if status.code == 401),
        "{error:?}"
    );
}

#[tokio::test]
async fn plain_http_serves_anyone_without_a_token() {
    let env = Environment::builder().plain_http().start().await.unwrap();

    assert!(env.url().starts_with("http://127.0.0.1:"), "{}", env.url());
    assert_eq!((env.token(), env.ca_pem()), (None, None));
    assert!(!env.kubeconfig_yaml().contains("token"));
    let config_maps: Api<ConfigMap> = Api::default_namespaced(env.client());
    config_maps
        .create(&PostParams::default(), &config_map("open"))
        .await
        .unwrap();
}

#[tokio::test]
async fn a_data_dir_keeps_objects_and_crds_across_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let start = || {
        Environment::builder()
            .data_dir(dir.path())
            .crd_for::<Greeting>()
            .start()
    };
    let env = start().await.unwrap();
    let config_maps: Api<ConfigMap> = Api::default_namespaced(env.client());
    let uid = config_maps
        .create(&PostParams::default(), &config_map("kept"))
        .await
        .unwrap()
        .uid();
    Api::<Greeting>::default_namespaced(env.client())
        .create(&PostParams::default(), &greeting("kept", "still here"))
        .await
        .unwrap();
    env.stop().await;

    // The CRD is installed again (an apply of the same definition) over the one kept.
    let env = start().await.unwrap();

    let config_maps: Api<ConfigMap> = Api::default_namespaced(env.client());
    assert_eq!(config_maps.get("kept").await.unwrap().uid(), uid);
    let greetings: Api<Greeting> = Api::default_namespaced(env.client());
    assert_eq!(greetings.get("kept").await.unwrap().spec.message, "still here");
}

#[tokio::test]
async fn a_dropped_environment_no_longer_accepts_connections() {
    let env = Environment::start().await.unwrap();
    let addr = env.addr();
    tokio::net::TcpStream::connect(addr).await.expect("serving");

    drop(env);

    // The listener closes when the runtime next runs the aborted server task: poll, with a deadline.
    let deadline = Instant::now() + Duration::from_secs(10);
    while tokio::net::TcpStream::connect(addr).await.is_ok() {
        assert!(Instant::now() < deadline, "{addr} still accepts connections");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test]
async fn the_simulated_node_is_there_by_default_and_can_be_switched_off() {
    let with_node = Environment::start().await.unwrap();
    let nodes: Api<Node> = Api::all(with_node.client());
    assert_eq!(nodes.list(&ListParams::default()).await.unwrap().items.len(), 1);
    let without = Environment::builder()
        .simulated_node(false)
        .start()
        .await
        .unwrap();
    let nodes: Api<Node> = Api::all(without.client());
    assert!(nodes.list(&ListParams::default()).await.unwrap().items.is_empty());
}
