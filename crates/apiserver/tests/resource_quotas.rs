//! ResourceQuotas (Q1): the status the quota controller measures, and the writes the ResourceQuota
//! admission refuses, with kube-apiserver's words. Each test runs on both servers; on the real one
//! with every controller of kube-controller-manager, its resourcequota controller among them.

mod common;

use std::time::{Duration, Instant};

use common::{Answer, request};
use serde_json::{Value, json};
use testenv::{Backend, ControlPlane, real::Controllers};

/// How long a quota's status may take to follow a write: kube-controller-manager measures within
/// seconds, and upstream's e2e specs wait a minute for it.
const MEASURED_WITHIN: Duration = Duration::from_secs(60);

async fn plane(backend: Backend) -> ControlPlane {
    match backend {
        Backend::Real => ControlPlane::real(Controllers::All).await,
        _ => ControlPlane::start(backend).await,
    }
    .expect("control plane starts")
}

fn pod(name: &str, resources: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
        "spec": {"containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10", "resources": resources}]}})
}

/// Reads the quota until its `status.used` is `used` (and its `status.hard` its spec's).
async fn wait_for_usage(client: &kube::Client, path: &str, used: Value) -> Value {
    let deadline = Instant::now() + MEASURED_WITHIN;
    loop {
        let quota = request(client, "GET", path, "", Value::Null).await.body;
        if quota["status"]["used"] == used && quota["status"]["hard"] == quota["spec"]["hard"] {
            return quota;
        }
        assert!(
            Instant::now() < deadline,
            "the quota's usage never became {used}: {quota}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

fn refused(answer: &Answer) -> (u16, &str, &str) {
    (
        answer.status,
        answer.body["reason"].as_str().unwrap_or_default(),
        answer.body["message"].as_str().unwrap_or_default(),
    )
}

async fn a_quota_counts_what_its_namespace_holds_and_refuses_what_exceeds_it(backend: Backend) {
    let plane = plane(backend).await;
    let client = plane.client();
    let created = request(
        &client,
        "POST",
        "/api/v1/namespaces",
        "application/json",
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "quota-test"}}),
    )
    .await;
    assert_eq!(created.status, 201, "{}", created.text);
    let base = "/api/v1/namespaces/quota-test";
    let hard = json!({"pods": "2", "cpu": "1", "memory": "500Mi", "services": "3", "services.nodeports": "1",
        "count/replicasets.apps": "1", "resourcequotas": "1"});
    let quota = json!({"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "q"}, "spec": {"hard": hard}});
    let created = request(
        &client,
        "POST",
        &format!("{base}/resourcequotas"),
        "application/json",
        quota,
    )
    .await;
    assert_eq!(created.status, 201, "{}", created.text);
    let quota_path = format!("{base}/resourcequotas/q");
    let nothing = json!({"pods": "0", "cpu": "0", "memory": "0", "services": "0", "services.nodeports": "0",
        "count/replicasets.apps": "0", "resourcequotas": "1"});
    wait_for_usage(&client, &quota_path, nothing.clone()).await;

    // A Pod that fits is charged its requests.
    let pods = format!("{base}/pods");
    let small = pod("small", json!({"requests": {"cpu": "500m", "memory": "200Mi"}}));
    let created = request(&client, "POST", &pods, "application/json", small).await;
    assert_eq!(created.status, 201, "{}", created.text);
    let mut one_pod = nothing.clone();
    one_pod["pods"] = json!("1");
    one_pod["cpu"] = json!("500m");
    one_pod["memory"] = json!("200Mi");
    wait_for_usage(&client, &quota_path, one_pod.clone()).await;

    // One that would take the quota past its CPU is refused, naming request, usage and limit.
    let big = pod("big", json!({"requests": {"cpu": "600m", "memory": "100Mi"}}));
    let answer = request(&client, "POST", &pods, "application/json", big).await;
    assert_eq!(
        refused(&answer),
        (
            403,
            "Forbidden",
            "pods \"big\" is forbidden: exceeded quota: q, requested: cpu=600m, used: cpu=500m, limited: cpu=1"
        ),
        "{}",
        answer.text
    );
    assert_eq!(answer.body["details"], json!({"name": "big", "kind": "pods"}));
    // So is one that states no CPU or memory while the quota limits them.
    let bare = pod("bare", json!({}));
    let answer = request(&client, "POST", &pods, "application/json", bare).await;
    assert_eq!(
        refused(&answer),
        (
            403,
            "Forbidden",
            "pods \"bare\" is forbidden: failed quota: q: must specify cpu for: c; memory for: c"
        ),
        "{}",
        answer.text
    );

    // Services: a NodePort Service's ports are node ports.
    let services = format!("{base}/services");
    let node_port = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "np"},
        "spec": {"type": "NodePort", "ports": [{"name": "a", "port": 80}, {"name": "b", "port": 81}]}});
    let answer = request(&client, "POST", &services, "application/json", node_port).await;
    assert_eq!(
        refused(&answer),
        (
            403,
            "Forbidden",
            "services \"np\" is forbidden: exceeded quota: q, requested: services.nodeports=2, used: services.nodeports=0, limited: services.nodeports=1"
        ),
        "{}",
        answer.text
    );
    let plain = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web"},
        "spec": {"ports": [{"port": 80}]}});
    let created = request(&client, "POST", &services, "application/json", plain).await;
    assert_eq!(created.status, 201, "{}", created.text);
    // A second quota is one more than the quota allows.
    let second = json!({"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "second"},
        "spec": {"hard": {"pods": "1"}}});
    let answer = request(
        &client,
        "POST",
        &format!("{base}/resourcequotas"),
        "application/json",
        second,
    )
    .await;
    assert_eq!(
        refused(&answer).2,
        "resourcequotas \"second\" is forbidden: exceeded quota: q, requested: resourcequotas=1, used: resourcequotas=1, limited: resourcequotas=1"
    );
    let mut with_service = one_pod.clone();
    with_service["services"] = json!("1");
    wait_for_usage(&client, &quota_path, with_service.clone()).await;

    // Deleted, the Pod and the Service give their usage back.
    let deleted = request(
        &client,
        "DELETE",
        &format!("{pods}/small?gracePeriodSeconds=0"),
        "",
        Value::Null,
    )
    .await;
    assert_eq!(deleted.status, 200, "{}", deleted.text);
    let deleted = request(&client, "DELETE", &format!("{services}/web"), "", Value::Null).await;
    assert_eq!(deleted.status, 200, "{}", deleted.text);
    wait_for_usage(&client, &quota_path, nothing).await;
}

async fn a_scoped_quota_counts_only_the_pods_in_its_scope(backend: Backend) {
    let plane = plane(backend).await;
    let client = plane.client();
    let base = "/api/v1/namespaces/default";
    let quota = json!({"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "ending"},
        "spec": {"hard": {"pods": "1"}, "scopes": ["Terminating"]}});
    let created = request(
        &client,
        "POST",
        &format!("{base}/resourcequotas"),
        "application/json",
        quota,
    )
    .await;
    assert_eq!(created.status, 201, "{}", created.text);
    let quota_path = format!("{base}/resourcequotas/ending");
    wait_for_usage(&client, &quota_path, json!({"pods": "0"})).await;

    let pods = format!("{base}/pods");
    let long_running = pod("long-running", json!({}));
    let created = request(&client, "POST", &pods, "application/json", long_running).await;
    assert_eq!(created.status, 201, "{}", created.text);
    let mut ending = pod("ending", json!({}));
    ending["spec"]["activeDeadlineSeconds"] = json!(3600);
    let created = request(&client, "POST", &pods, "application/json", ending.clone()).await;
    assert_eq!(created.status, 201, "{}", created.text);
    wait_for_usage(&client, &quota_path, json!({"pods": "1"})).await;
    ending["metadata"]["name"] = json!("ending-too");
    let answer = request(&client, "POST", &pods, "application/json", ending).await;
    assert_eq!(
        refused(&answer).2,
        "pods \"ending-too\" is forbidden: exceeded quota: ending, requested: pods=1, used: pods=1, limited: pods=1"
    );
}

async fn a_status_written_by_a_client_stands_until_the_quota_is_measured_again(backend: Backend) {
    let plane = plane(backend).await;
    let client = plane.client();
    let base = "/api/v1/namespaces/default/resourcequotas";
    let quota = json!({"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "edited"},
        "spec": {"hard": {"cpu": "1"}}});
    let created = request(&client, "POST", base, "application/json", quota).await;
    assert_eq!(created.status, 201, "{}", created.text);
    let path = format!("{base}/edited");
    wait_for_usage(&client, &path, json!({"cpu": "0"})).await;
    let patched = request(
        &client,
        "PATCH",
        &format!("{path}/status"),
        "application/merge-patch+json",
        json!({"status": {"hard": {"cpu": "2"}}}),
    )
    .await;
    assert_eq!(patched.status, 200, "{}", patched.text);
    assert_eq!(patched.body["status"]["hard"], json!({"cpu": "2"}));
    // A change of the spec has the quota measured again at once.
    let patched = request(
        &client,
        "PATCH",
        &path,
        "application/merge-patch+json",
        json!({"spec": {"hard": {"cpu": "3"}}}),
    )
    .await;
    assert_eq!(patched.status, 200, "{}", patched.text);
    let quota = wait_for_usage(&client, &path, json!({"cpu": "0"})).await;
    assert_eq!(quota["status"]["hard"], json!({"cpu": "3"}));
}

testenv::each_control_plane!(
    a_quota_counts_what_its_namespace_holds_and_refuses_what_exceeds_it,
    a_scoped_quota_counts_only_the_pods_in_its_scope,
    a_status_written_by_a_client_stands_until_the_quota_is_measured_again,
);
