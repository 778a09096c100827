//! The request audit (`Config::audit`): a kube-rs client's every call is recorded with the verb,
//! resource and namespace an RBAC authorizer would check it against, and the client's user agent.

mod common;

use std::time::Duration;

use apiserver::{ApiServer, Audit, AuditRecord, Config};
use axum::http::{HeaderValue, header};
use futures::StreamExt;
use k8s_openapi::api::{
    apps::v1::Deployment,
    core::v1::{ConfigMap, Namespace},
};
use kube::{
    Api, Client,
    api::{DeleteParams, ListParams, Patch, PatchParams, PostParams, WatchParams},
};
use serde_json::{Value, json};

const AGENT: &str = "audit-test/1.0";

async fn audited(audit: Audit) -> ApiServer {
    ApiServer::start(Config {
        audit,
        ..Config::default()
    })
    .await
    .expect("server starts")
}

/// A client of `server` that says who it is, so its requests can be told from anyone else's.
fn client(server: &ApiServer) -> Client {
    let mut config = server.kube_config();
    config
        .headers
        .push((header::USER_AGENT, HeaderValue::from_static(AGENT)));
    Client::try_from(config).unwrap()
}

fn deployment(name: &str) -> Deployment {
    serde_json::from_value(json!({
        "metadata": {"name": name},
        "spec": {"selector": {"matchLabels": {"app": name}}, "template": {
            "metadata": {"labels": {"app": name}},
            "spec": {"containers": [{"name": "web", "image": "nginx"}]}}}
    }))
    .unwrap()
}

/// `verb group resource[/sub] namespace name code`, one line per record of this test's client.
fn summary(records: &[AuditRecord]) -> Vec<String> {
    records
        .iter()
        .filter(|r| r.user_agent.as_deref() == Some(AGENT))
        .map(|r| match r.resource() {
            Some(a) => format!(
                "{} {} {} {} {} {}",
                a.verb,
                if a.group.is_empty() { "core" } else { &a.group },
                a.rbac_resource(),
                a.namespace.as_deref().unwrap_or("-"),
                a.name.as_deref().unwrap_or("-"),
                r.code
            ),
            None => format!("{:?} {}", r.attributes, r.code),
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn each_kube_rs_call_is_recorded_with_its_authorization_verb() {
    let server = audited(Audit::Memory).await;
    let client = client(&server);
    let config_maps: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), "default");
    let namespaces: Api<Namespace> = Api::all(client.clone());

    config_maps
        .create(
            &PostParams::default(),
            &common::config_map("one", json!({"k": "v"})),
        )
        .await
        .unwrap();
    let mut one = config_maps.get("one").await.unwrap();
    config_maps.list(&ListParams::default()).await.unwrap();
    let watch = config_maps
        .watch(&WatchParams::default().timeout(1), "0")
        .await
        .unwrap();
    // The request is recorded when the watch starts; its events do not matter here.
    drop(tokio::time::timeout(Duration::from_secs(3), watch.boxed().next()).await);
    one.data = Some([("k".to_owned(), "changed".to_owned())].into());
    config_maps
        .replace("one", &PostParams::default(), &one)
        .await
        .unwrap();
    config_maps
        .patch(
            "one",
            &PatchParams::default(),
            &Patch::Merge(json!({"data": {"k": "patched"}})),
        )
        .await
        .unwrap();
    // Server-side apply of an object that does not exist yet creates it.
    config_maps
        .patch(
            "two",
            &PatchParams::apply("audit-test"),
            &Patch::Apply(common::config_map("two", json!({"k": "v"}))),
        )
        .await
        .unwrap();
    config_maps.delete("one", &DeleteParams::default()).await.unwrap();
    config_maps
        .delete_collection(&DeleteParams::default(), &ListParams::default())
        .await
        .unwrap();
    let missing = config_maps.get("one").await.unwrap_err();
    assert!(
        matches!(missing, kube::Error::Api(ref s) if s.code == 404),
        "{missing:?}"
    );
    deployments
        .create(&PostParams::default(), &deployment("web"))
        .await
        .unwrap();
    deployments
        .patch_status(
            "web",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"replicas": 1}})),
        )
        .await
        .unwrap();
    namespaces.get("default").await.unwrap();
    client.apiserver_version().await.unwrap();

    assert_eq!(
        summary(&server.audit()),
        [
            "create core configmaps default - 201",
            "get core configmaps default one 200",
            "list core configmaps default - 200",
            "watch core configmaps default - 200",
            "update core configmaps default one 200",
            "patch core configmaps default one 200",
            "patch core configmaps default two 201",
            "create core configmaps default two 201",
            "delete core configmaps default one 200",
            "deletecollection core configmaps default - 200",
            "get core configmaps default one 404",
            "create apps deployments default - 201",
            "patch apps deployments/status default web 200",
            "get core namespaces default default 200",
            r#"NonResource(NonResourceAttributes { verb: "get", path: "/version" }) 200"#,
        ]
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_watch_of_one_named_object_names_it() {
    let server = audited(Audit::Memory).await;
    let config_maps: Api<ConfigMap> = Api::namespaced(client(&server), "default");
    let watch = config_maps
        .watch(
            &WatchParams::default().fields("metadata.name=one").timeout(1),
            "0",
        )
        .await
        .unwrap();
    drop(tokio::time::timeout(Duration::from_secs(3), watch.boxed().next()).await);
    assert_eq!(
        summary(&server.audit()),
        ["watch core configmaps default one 200"]
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn nothing_is_recorded_unless_asked_for() {
    let config = Config::default();
    assert_eq!(config.audit, Audit::Off);
    let server = ApiServer::start(config).await.unwrap();
    let config_maps: Api<ConfigMap> = Api::namespaced(client(&server), "default");
    config_maps.list(&ListParams::default()).await.unwrap();
    assert!(server.audit().is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn requests_without_the_token_are_refused_before_being_recorded() {
    let server = audited(Audit::Memory).await;
    let mut config = server.kube_config();
    config.auth_info.token = Some("wrong".to_owned().into());
    config
        .headers
        .push((header::USER_AGENT, HeaderValue::from_static(AGENT)));
    let config_maps: Api<ConfigMap> = Api::namespaced(Client::try_from(config).unwrap(), "default");
    let refused = config_maps.list(&ListParams::default()).await.unwrap_err();
    assert!(
        matches!(refused, kube::Error::Api(ref s) if s.code == 401),
        "{refused:?}"
    );
    assert!(server.audit().is_empty(), "{:?}", server.audit());
}

#[tokio::test(flavor = "multi_thread")]
async fn the_audit_log_file_gets_one_json_object_per_request() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.jsonl");
    let server = audited(Audit::MemoryAndFile(path.clone())).await;
    let config_maps: Api<ConfigMap> = Api::namespaced(client(&server), "default");
    config_maps.list(&ListParams::default()).await.unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    let lines: Vec<Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(
        lines,
        [json!({
            "resourceAttributes": {"verb": "list", "group": "", "version": "v1", "resource": "configmaps",
                "namespace": "default"},
            "userAgent": AGENT, "code": 200
        })]
    );
    assert_eq!(server.audit().len(), 1, "also kept in memory");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }
}
