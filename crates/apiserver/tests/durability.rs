//! Durability : with `--data-dir` every object survives a restart unchanged,
//! resourceVersions keep increasing across restarts, and a `kill -9` in the middle of a burst of
//! writes loses no write that was answered. Without a data dir nothing survives.

mod common;

use std::{
    collections::BTreeMap,
    path::Path,
    process::Stdio,
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
    time::Duration,
};

use apiserver::{ApiServer, Config};
use k8s_openapi::{
    api::core::v1::{ConfigMap, Namespace, Service},
    apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition,
};
use kube::{
    Api, Client,
    api::{DynamicObject, Patch, PatchParams, PostParams},
    config::{KubeConfigOptions, Kubeconfig},
    core::{ApiResource, GroupVersionKind},
};
use serde::Serialize;
use serde_json::{Value, json};
use tokio::{
    io::{AsyncBufReadExt, AsyncReadExt, BufReader},
    task::JoinHandle,
};

const NAMESPACE: &str = "kept";

fn with_data_dir(dir: &Path) -> Config {
    Config {
        data_dir: Some(dir.to_owned()),
        ..Config::default()
    }
}

fn parse<T: serde::de::DeserializeOwned>(value: Value) -> T {
    serde_json::from_value(value).expect("a valid object")
}

fn as_json(object: &impl Serialize) -> Value {
    serde_json::to_value(object).expect("serializes")
}

fn resource_version(object: &Value) -> u64 {
    object["metadata"]["resourceVersion"]
        .as_str()
        .and_then(|rv| rv.parse().ok())
        .unwrap_or_else(|| panic!("a numeric resourceVersion in {object}"))
}

fn writers_api(client: &Client) -> Api<DynamicObject> {
    let gvk = GroupVersionKind::gvk("example.com", "v1", "PostgresWriter");
    Api::namespaced_with(
        client.clone(),
        NAMESPACE,
        &ApiResource::from_gvk_with_plural(&gvk, "postgreswriters"),
    )
}

fn writer(name: &str, table: &str) -> DynamicObject {
    parse(json!({
        "apiVersion": "example.com/v1", "kind": "PostgresWriter",
        "metadata": {"name": name}, "spec": {"table": table}
    }))
}

fn service(name: &str) -> Service {
    parse(json!({
        "apiVersion": "v1", "kind": "Service", "metadata": {"name": name},
        "spec": {"selector": {"app": name}, "ports": [{"port": 80}]}
    }))
}

/// Every object the first test writes, as the server returns it, by a readable label.
async fn snapshot(client: &Client) -> BTreeMap<String, Value> {
    let config_maps: Api<ConfigMap> = Api::namespaced(client.clone(), NAMESPACE);
    let mut all = BTreeMap::new();
    for name in ["plain", "updated"] {
        all.insert(
            format!("configmap {name}"),
            as_json(&config_maps.get(name).await.unwrap()),
        );
    }
    let namespaces: Api<Namespace> = Api::all(client.clone());
    all.insert(
        "namespace".into(),
        as_json(&namespaces.get(NAMESPACE).await.unwrap()),
    );
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    all.insert(
        "crd".into(),
        as_json(&crds.get("postgreswriters.example.com").await.unwrap()),
    );
    all.insert(
        "custom resource".into(),
        as_json(&writers_api(client).get("w1").await.unwrap()),
    );
    let services: Api<Service> = Api::namespaced(client.clone(), NAMESPACE);
    all.insert("service".into(), as_json(&services.get("web").await.unwrap()));
    all
}

#[tokio::test(flavor = "multi_thread")]
async fn objects_survive_a_restart_with_the_same_content_uid_and_resource_version() {
    let dir = tempfile::tempdir().unwrap();
    let first = ApiServer::start(with_data_dir(dir.path())).await.unwrap();
    let client = first.client();
    let namespaces: Api<Namespace> = Api::all(client.clone());
    namespaces
        .create(
            &PostParams::default(),
            &parse(json!({"metadata": {"name": NAMESPACE}})),
        )
        .await
        .unwrap();
    let config_maps: Api<ConfigMap> = Api::namespaced(client.clone(), NAMESPACE);
    for name in ["plain", "updated", "deleted"] {
        config_maps
            .create(
                &PostParams::default(),
                &common::config_map(name, json!({"k": "v"})),
            )
            .await
            .unwrap();
    }
    let patch = Patch::Merge(json!({"data": {"k": "changed"}}));
    config_maps
        .patch("updated", &PatchParams::default(), &patch)
        .await
        .unwrap();
    config_maps.delete("deleted", &Default::default()).await.unwrap();
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let crd = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/crd.yaml"));
    let crd: CustomResourceDefinition = serde_yaml::from_str(&crd.unwrap()).unwrap();
    crds.create(&PostParams::default(), &crd).await.unwrap();
    let writers = writers_api(&client);
    writers
        .create(&PostParams::default(), &writer("w1", "students"))
        .await
        .unwrap();
    let status = Patch::Merge(json!({"status": {"phase": "Ready"}}));
    writers
        .patch_status("w1", &PatchParams::default(), &status)
        .await
        .unwrap();
    let services: Api<Service> = Api::namespaced(client.clone(), NAMESPACE);
    services
        .create(&PostParams::default(), &service("web"))
        .await
        .unwrap();
    let before = snapshot(&client).await;
    let latest_before = config_maps
        .list(&Default::default())
        .await
        .unwrap()
        .metadata
        .resource_version;
    let latest_before: u64 = latest_before.unwrap().parse().unwrap();
    first.shutdown().await;

    let second = ApiServer::start(with_data_dir(dir.path()))
        .await
        .expect("the data dir opens again once the first server is shut down");
    let client = second.client();
    let after = snapshot(&client).await;
    for (what, object) in &before {
        assert_eq!(
            &after[what], object,
            "{what}: content, uid and resourceVersion are kept"
        );
    }
    assert_eq!(after["configmap updated"]["data"]["k"], "changed");
    assert_eq!(after["custom resource"]["status"]["phase"], "Ready");
    let config_maps: Api<ConfigMap> = Api::namespaced(client.clone(), NAMESPACE);
    let gone = config_maps
        .get("deleted")
        .await
        .expect_err("a deleted object stays deleted");
    assert!(matches!(gone, kube::Error::Api(status) if status.code == 404));

    // The CRD's kind is served again: its resources can be listed and created.
    let writers = writers_api(&client);
    let names: Vec<String> = writers
        .list(&Default::default())
        .await
        .expect("the custom resource kind is served after the restart")
        .items
        .into_iter()
        .filter_map(|w| w.metadata.name)
        .collect();
    assert_eq!(names, ["w1"]);
    let w2 = writers
        .create(&PostParams::default(), &writer("w2", "teachers"))
        .await
        .unwrap();
    let new_rv: u64 = w2.metadata.resource_version.unwrap().parse().unwrap();
    for (what, object) in &before {
        assert!(
            new_rv > resource_version(object),
            "{what}: {new_rv} after {object}"
        );
    }
    assert!(new_rv > latest_before, "{new_rv} > {latest_before}");

    let services: Api<Service> = Api::namespaced(client.clone(), NAMESPACE);
    let web2 = services
        .create(&PostParams::default(), &service("web2"))
        .await
        .unwrap();
    let old_ip = before["service"]["spec"]["clusterIP"].as_str().unwrap();
    let new_ip = web2.spec.unwrap().cluster_ip.unwrap();
    assert_ne!(new_ip, old_ip, "a Service IP is not handed out twice");
    second.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_generated_token_is_kept_in_the_data_dir_owner_only() {
    let dir = tempfile::tempdir().unwrap();
    let first = ApiServer::start(with_data_dir(dir.path())).await.unwrap();
    let token = first.token().expect("a generated token").to_owned();
    first.shutdown().await;
    let second = ApiServer::start(with_data_dir(dir.path())).await.unwrap();
    assert_eq!(
        second.token(),
        Some(token.as_str()),
        "a kubeconfig's token still works"
    );
    #[cfg(unix)]
    for file in ["token", "store.redb"] {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(dir.path().join(file))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600, "{file}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_data_dir_in_use_by_another_server_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let _first = ApiServer::start(with_data_dir(dir.path())).await.unwrap();
    let refused = ApiServer::start(with_data_dir(dir.path()))
        .await
        .err()
        .expect("a second server cannot open the same data dir");
    assert!(refused.to_string().contains("in use"), "{refused}");
}

#[tokio::test]
async fn without_a_data_dir_nothing_survives_a_restart() {
    let config = Config::default();
    assert_eq!(config.data_dir, None, "memory-only by default");
    let first = ApiServer::start(config.clone()).await.unwrap();
    let api: Api<ConfigMap> = Api::namespaced(first.client(), "default");
    api.create(
        &PostParams::default(),
        &common::config_map("gone", json!({"k": "v"})),
    )
    .await
    .unwrap();
    first.shutdown().await;
    let second = ApiServer::start(config).await.unwrap();
    let api: Api<ConfigMap> = Api::namespaced(second.client(), "default");
    assert!(api.get_opt("gone").await.unwrap().is_none());
}

/// The `apiserver` binary with `args`, in `dir`; stdout and stderr piped.
fn spawn_bin(dir: &Path, args: &[&str]) -> tokio::process::Child {
    tokio::process::Command::new(env!("CARGO_BIN_EXE_apiserver"))
        .args(args)
        .current_dir(dir)
        .env_remove("APISERVER_ADDR")
        .env_remove("APISERVER_DATA_DIR")
        .env_remove("APISERVER_INSECURE_NO_AUTH")
        .env_remove("APISERVER_TOKEN_FILE")
        .env_remove("RUST_LOG")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("the apiserver binary starts")
}

/// Waits for the bin's `serving on URL` line (keeping stdout and stderr, the logs, drained), or
/// returns its stderr when it exits first.
async fn served(child: &mut tokio::process::Child) -> Result<JoinHandle<()>, String> {
    let mut stdout = BufReader::new(child.stdout.take().unwrap()).lines();
    let (serving_tx, serving_rx) = tokio::sync::oneshot::channel();
    let reading = tokio::spawn(async move {
        let mut serving_tx = Some(serving_tx);
        while let Ok(Some(line)) = stdout.next_line().await {
            if line.contains("serving on ")
                && let Some(tx) = serving_tx.take()
            {
                let _ = tx.send(());
            }
        }
    });
    let serving = tokio::time::timeout(Duration::from_secs(30), serving_rx)
        .await
        .expect("the bin starts or exits within 30 s");
    match serving {
        Ok(()) => {
            let mut pipe = child.stderr.take().unwrap();
            tokio::spawn(async move { tokio::io::copy(&mut pipe, &mut tokio::io::sink()).await });
            Ok(reading)
        }
        Err(_) => {
            let mut stderr = String::new();
            let mut pipe = child.stderr.take().unwrap();
            pipe.read_to_string(&mut stderr).await.unwrap();
            Err(stderr)
        }
    }
}

async fn client_from_kubeconfig(path: &Path) -> Client {
    let text = std::fs::read_to_string(path).unwrap();
    let kubeconfig = Kubeconfig::from_yaml(&text).unwrap();
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .unwrap();
    Client::try_from(config).unwrap()
}

const BURST_WRITERS: usize = 8;
/// The writer that receives this many-th 201 sends the SIGKILL at once, so that the kill lands while
/// writes are being answered, not after a pause in which everything got saved anyway.
const ACKNOWLEDGED_BEFORE_KILL: usize = 300;

#[tokio::test(flavor = "multi_thread")]
async fn kill_9_in_a_burst_of_writes_loses_no_acknowledged_write() {
    let dir = tempfile::tempdir().unwrap();
    let data_dir = dir.path().join("data");
    let data_dir = data_dir.to_str().unwrap();
    let args = [
        "--addr",
        "127.0.0.1:0",
        "--data-dir",
        data_dir,
        "--kubeconfig",
        "kubeconfig",
    ];
    let mut child = spawn_bin(dir.path(), &args);
    let _stdout = served(&mut child).await.expect("the bin serves");
    let api: Api<ConfigMap> = Api::namespaced(
        client_from_kubeconfig(&dir.path().join("kubeconfig")).await,
        "default",
    );

    // Writers create ConfigMaps until a request fails, remembering every 201 they got.
    let child = Arc::new(std::sync::Mutex::new(child));
    let acknowledged = Arc::new(std::sync::Mutex::new(Vec::<ConfigMap>::new()));
    let killed = Arc::new(AtomicBool::new(false));
    let mut writers = Vec::new();
    for w in 0..BURST_WRITERS {
        let (api, acknowledged, killed, child) =
            (api.clone(), acknowledged.clone(), killed.clone(), child.clone());
        writers.push(tokio::spawn(async move {
            for i in 0.. {
                match api
                    .create(
                        &PostParams::default(),
                        &common::config_map(&format!("burst-{w}-{i}"), json!({"k": "v"})),
                    )
                    .await
                {
                    Ok(created) => {
                        let mut acknowledged = acknowledged.lock().unwrap();
                        acknowledged.push(created);
                        if acknowledged.len() == ACKNOWLEDGED_BEFORE_KILL {
                            killed.store(true, Ordering::SeqCst);
                            child.lock().unwrap().start_kill().expect("SIGKILL");
                        }
                    }
                    Err(error) => {
                        assert!(
                            killed.load(Ordering::SeqCst),
                            "a create failed before the kill: {error}"
                        );
                        return;
                    }
                }
            }
        }));
    }
    for writer in writers {
        // Each writer ends on a failed request: the kill landed while all of them were writing.
        tokio::time::timeout(Duration::from_secs(120), writer)
            .await
            .expect("the burst reaches the kill and writers stop once the server is gone")
            .unwrap();
    }
    let acknowledged = std::mem::take(&mut *acknowledged.lock().unwrap());
    let mut child = Arc::try_unwrap(child)
        .expect("writers are done")
        .into_inner()
        .unwrap();
    assert!(!child.wait().await.unwrap().success(), "killed");

    let mut child = spawn_bin(dir.path(), &args);
    let _stdout = served(&mut child)
        .await
        .expect("the bin serves again on the same data dir");
    let client = client_from_kubeconfig(&dir.path().join("kubeconfig")).await;
    let api: Api<ConfigMap> = Api::namespaced(client, "default");
    let mut latest = 0;
    for created in &acknowledged {
        let name = created.metadata.name.as_deref().unwrap();
        let stored = api.get_opt(name).await.unwrap();
        let stored = stored.unwrap_or_else(|| panic!("acknowledged {name} was lost"));
        assert_eq!(
            as_json(&stored),
            as_json(created),
            "{name} is kept as acknowledged"
        );
        latest = latest.max(resource_version(&as_json(created)));
    }
    let after = api
        .create(
            &PostParams::default(),
            &common::config_map("after-restart", json!({"k": "v"})),
        )
        .await
        .unwrap();
    let after = resource_version(&as_json(&after));
    assert!(after > latest, "resourceVersion {after} continues after {latest}");
    child.kill().await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn bin_refuses_an_unusable_data_dir_with_one_line() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a-file"), "not a directory").unwrap();
    let args = ["--addr", "127.0.0.1:0", "--data-dir", "a-file"];
    let mut child = spawn_bin(dir.path(), &args);
    let stderr = served(&mut child).await.expect_err("the bin refuses to start");
    assert!(!child.wait().await.unwrap().success());
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines.len(), 1, "{stderr}");
    assert!(
        lines[0].starts_with("apiserver: cannot open data dir"),
        "{stderr}"
    );
}

// The TLS identity (CA and serving certificate) kept in the data dir next to the token.

/// The same address and data dir every start, as `apiserver --addr A --data-dir D` restarted.
fn fixed_address_with_data_dir(dir: &Path) -> Config {
    // A port the OS just handed out and nobody holds: free for both starts, barring a race.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .unwrap()
        .port();
    Config {
        addr: std::net::SocketAddr::from(([127, 0, 0, 1], port)),
        ..with_data_dir(dir)
    }
}

/// Creates and lists a ConfigMap through the kubeconfig at `path`, as a user holding it would.
async fn use_kubeconfig(path: &Path, name: &str) {
    let api: Api<ConfigMap> = Api::namespaced(client_from_kubeconfig(path).await, "default");
    api.create(
        &PostParams::default(),
        &common::config_map(name, json!({"k": "v"})),
    )
    .await
    .unwrap_or_else(|e| panic!("create through {}: {e}", path.display()));
    let names: Vec<String> = api
        .list(&Default::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter_map(|cm| cm.metadata.name)
        .collect();
    assert!(names.iter().any(|n| n == name), "{names:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_kubeconfig_written_before_a_restart_still_works_after_it() {
    let dir = tempfile::tempdir().unwrap();
    let (data, kubeconfig) = (dir.path().join("data"), dir.path().join("kubeconfig"));
    let config = fixed_address_with_data_dir(&data);
    let first = ApiServer::start(config.clone()).await.unwrap();
    first.write_kubeconfig(&kubeconfig).unwrap();
    use_kubeconfig(&kubeconfig, "before").await;
    first.shutdown().await;

    let second = ApiServer::start(config).await.unwrap();
    use_kubeconfig(&kubeconfig, "after").await;
    assert_eq!(
        std::fs::read_to_string(&kubeconfig).unwrap(),
        second.kubeconfig_yaml(),
        "same URL, CA and token"
    );
    #[cfg(unix)]
    for file in ["ca.pem", "tls.pem"] {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(data.join(file)).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600, "{file} holds a private key");
    }
    second.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_damaged_serving_certificate_is_replaced_under_the_kept_ca() {
    let dir = tempfile::tempdir().unwrap();
    let (data, kubeconfig) = (dir.path().join("data"), dir.path().join("kubeconfig"));
    let config = fixed_address_with_data_dir(&data);
    let first = ApiServer::start(config.clone()).await.unwrap();
    first.write_kubeconfig(&kubeconfig).unwrap();
    first.shutdown().await;
    let ca = std::fs::read(data.join("ca.pem")).unwrap();
    std::fs::write(data.join("tls.pem"), "not a certificate").unwrap();

    let second = ApiServer::start(config.clone()).await.unwrap();
    use_kubeconfig(&kubeconfig, "served-by-a-new-certificate").await;
    second.shutdown().await;
    assert_eq!(std::fs::read(data.join("ca.pem")).unwrap(), ca, "the CA is kept");
    let serving = std::fs::read_to_string(data.join("tls.pem")).unwrap();
    assert!(serving.contains("BEGIN CERTIFICATE"), "{serving}");
    let third = ApiServer::start(config).await.unwrap();
    assert_eq!(
        std::fs::read_to_string(data.join("tls.pem")).unwrap(),
        serving,
        "a valid certificate is reused"
    );
    third.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_damaged_ca_is_refused_rather_than_silently_replaced() {
    let dir = tempfile::tempdir().unwrap();
    let first = ApiServer::start(with_data_dir(dir.path())).await.unwrap();
    first.shutdown().await;
    std::fs::write(dir.path().join("ca.pem"), "not a CA").unwrap();
    let refused = ApiServer::start(with_data_dir(dir.path()))
        .await
        .err()
        .expect("a server whose kubeconfigs nobody could trust does not start");
    let message = refused.to_string();
    assert!(
        message.contains("ca.pem") && message.contains("remove it"),
        "{message}"
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("ca.pem")).unwrap(),
        "not a CA"
    );
}
