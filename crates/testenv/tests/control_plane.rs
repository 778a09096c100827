//! The harness itself: each control plane answers as promised, the real one is the upstream release
//! with its garbage collector and namespace controller (or, when asked, every default controller), and
//! dropping it leaves nothing behind.

use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::{
    Api,
    api::{DeleteParams, PostParams},
};
use serde_json::json;
use testenv::{Backend, ControlPlane};

/// The garbage collector and the namespace controller act within seconds of a deletion; the deadline
/// leaves room for a loaded 2-core machine.
const CONTROLLERS_ACT_WITHIN: Duration = Duration::from_secs(60);

async fn until<F, Fut>(what: &str, mut done: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = Instant::now() + CONTROLLERS_ACT_WITHIN;
    while !done().await {
        assert!(
            Instant::now() < deadline,
            "{what} within {CONTROLLERS_ACT_WITHIN:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The Kubernetes release testenv/control-plane builds, e.g. `1.33.13`.
fn pinned_release() -> &'static str {
    include_str!("../../../testenv/control-plane/go.mod")
        .lines()
        .find_map(|l| l.trim().strip_prefix("k8s.io/kubernetes v"))
        .expect("go.mod pins k8s.io/kubernetes")
}

async fn owner_and_namespace_deletion_are_carried_out(backend: Backend) {
    let plane = ControlPlane::start(backend).await.expect("control plane starts");
    assert_eq!(plane.backend(), backend);
    let client = plane.client();

    // A dependent goes with its owner (garbage collector).
    let config_maps: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let owner = config_maps
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": "owner"}})).unwrap(),
        )
        .await
        .expect("owner created");
    let dependent = json!({"metadata": {"name": "dependent", "ownerReferences": [{
        "apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": owner.metadata.uid.unwrap()}]}});
    config_maps
        .create(
            &PostParams::default(),
            &serde_json::from_value(dependent).unwrap(),
        )
        .await
        .expect("dependent created");
    config_maps
        .delete("owner", &DeleteParams::default())
        .await
        .expect("owner deleted");
    until("the dependent collected", || async {
        matches!(config_maps.get_opt("dependent").await, Ok(None))
    })
    .await;

    // A namespace's contents go with it, then the namespace (namespace controller).
    let namespaces: Api<Namespace> = Api::all(client.clone());
    namespaces
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": "doomed"}})).unwrap(),
        )
        .await
        .expect("namespace created");
    let inside: Api<ConfigMap> = Api::namespaced(client.clone(), "doomed");
    inside
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": "inside"}})).unwrap(),
        )
        .await
        .expect("ConfigMap in the namespace");
    namespaces
        .delete("doomed", &DeleteParams::default())
        .await
        .expect("namespace deleted");
    until("the namespace gone", || async {
        matches!(namespaces.get_opt("doomed").await, Ok(None))
    })
    .await;
}

testenv::each_control_plane!(owner_and_namespace_deletion_are_carried_out);

async fn the_pinned_release_requires_a_token_and_leaves_nothing_behind(backend: Backend) {
    let plane = ControlPlane::start(backend).await.expect("control plane starts");
    let real = plane.as_real().expect("the real control plane");
    let dir = real.dir().to_owned();
    let pids: Vec<u32> = real.pids();

    let version = plane
        .client()
        .apiserver_version()
        .await
        .expect("/version answers");
    let pinned = pinned_release();
    assert_eq!(
        version.git_version,
        format!("v{pinned}"),
        "stamped with the pinned release"
    );
    assert_eq!(
        format!("{}.{}", version.major, version.minor),
        pinned.rsplitn(2, '.').last().unwrap()
    );

    // Without a token, a request is anonymous, and RBAC gives the anonymous user nothing but health.
    let anonymous = kube::Client::try_from(plane.kube_config_with_token(None)).unwrap();
    let error = Api::<ConfigMap>::namespaced(anonymous, "default")
        .list(&Default::default())
        .await
        .expect_err("anonymous list refused");
    assert!(
        matches!(error, kube::Error::Api(ref s) if s.code == 403),
        "{error}"
    );

    drop(plane);
    assert!(!dir.exists(), "{} removed", dir.display());
    for pid in pids {
        assert!(
            !std::path::Path::new(&format!("/proc/{pid}")).exists(),
            "process {pid} stopped"
        );
    }
}

testenv::real_control_plane!(the_pinned_release_requires_a_token_and_leaves_nothing_behind);

#[tokio::test(flavor = "multi_thread")]
async fn the_embedded_server_reports_the_release_of_the_real_one() {
    let embedded = ControlPlane::start(Backend::Embedded)
        .await
        .expect("embedded server starts");
    let version = embedded
        .client()
        .apiserver_version()
        .await
        .expect("/version answers");
    let pinned = pinned_release();
    // The dispatching /usr/bin/kubectl and client-go choose their behaviour by this version.
    assert_eq!(version.git_version, format!("v{pinned}"));
}

/// With every default controller, a namespace gets its ServiceAccount and root CA, a Deployment its
/// ReplicaSet, and an approved CertificateSigningRequest its certificate, as in a cluster.
async fn every_default_controller_runs_when_asked(_: Backend) {
    use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
    use k8s_openapi::api::certificates::v1::CertificateSigningRequest;
    use k8s_openapi::api::core::v1::ServiceAccount;

    let plane = ControlPlane::real(testenv::real::Controllers::All)
        .await
        .expect("control plane starts");
    let client = plane.client();
    Api::<Namespace>::all(client.clone())
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": "controllers"}})).unwrap(),
        )
        .await
        .expect("namespace created");
    let accounts: Api<ServiceAccount> = Api::namespaced(client.clone(), "controllers");
    until("the default ServiceAccount is made", || async {
        matches!(accounts.get_opt("default").await, Ok(Some(_)))
    })
    .await;
    let config_maps: Api<ConfigMap> = Api::namespaced(client.clone(), "controllers");
    until("kube-root-ca.crt holds the cluster's CA", || async {
        let found = config_maps.get_opt("kube-root-ca.crt").await.ok().flatten();
        found
            .and_then(|c| c.data)
            .and_then(|d| d.get("ca.crt").cloned())
            .is_some_and(|ca| ca == plane.ca_pem().unwrap())
    })
    .await;

    let deployment = json!({"metadata": {"name": "web"}, "spec": {
        "selector": {"matchLabels": {"app": "web"}},
        "template": {"metadata": {"labels": {"app": "web"}},
                     "spec": {"containers": [{"name": "web", "image": "nginx"}]}}}});
    Api::<Deployment>::namespaced(client.clone(), "controllers")
        .create(
            &PostParams::default(),
            &serde_json::from_value(deployment).unwrap(),
        )
        .await
        .expect("deployment created");
    let replica_sets: Api<ReplicaSet> = Api::namespaced(client.clone(), "controllers");
    until("the Deployment gets a ReplicaSet", || async {
        replica_sets
            .list(&Default::default())
            .await
            .is_ok_and(|list| !list.items.is_empty())
    })
    .await;

    let key = rcgen::KeyPair::generate().unwrap();
    let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    params.distinguished_name.push(rcgen::DnType::CommonName, "alice");
    let request = params.serialize_request(&key).unwrap().pem().unwrap();
    let csr = json!({"metadata": {"name": "alice"}, "spec": {
        "request": k8s_openapi::ByteString(request.into_bytes()),
        "signerName": "kubernetes.io/kube-apiserver-client",
        "usages": ["client auth"]}});
    let csrs: Api<CertificateSigningRequest> = Api::all(client.clone());
    csrs.create(&PostParams::default(), &serde_json::from_value(csr).unwrap())
        .await
        .expect("CSR created");
    let approval = json!({"status": {"conditions": [{"type": "Approved", "status": "True",
        "reason": "Test", "message": "approved by the test"}]}});
    csrs.patch_approval("alice", &Default::default(), &kube::api::Patch::Merge(approval))
        .await
        .expect("CSR approved");
    until("the approved CSR is signed", || async {
        csrs.get("alice")
            .await
            .is_ok_and(|csr| csr.status.and_then(|s| s.certificate).is_some())
    })
    .await;
}

testenv::real_control_plane!(every_default_controller_runs_when_asked);
