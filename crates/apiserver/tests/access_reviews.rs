//! Reviews about others (TokenReview, SubjectAccessReview, LocalSubjectAccessReview) and the
//! `bindings` resource, compared with the real kube-apiserver: whose a token is, and what a user may
//! do by the RBAC objects the cluster holds.

mod common;

use common::request;
use serde_json::{Value, json};
use testenv::{Backend, ControlPlane};

const NAMESPACE: &str = "default";

async fn post(client: &kube::Client, path: &str, body: Value) -> common::Answer {
    request(client, "POST", path, "application/json", body).await
}

async fn a_token_review_says_whose_a_token_is(backend: Backend) {
    let plane = ControlPlane::start(backend).await.expect("control plane starts");
    let client = plane.client();
    let token = plane
        .admin_token()
        .expect("the control plane requires a token")
        .to_owned();
    let review = |token: &str| json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": {"token": token}});
    let path = "/apis/authentication.k8s.io/v1/tokenreviews";
    let known = post(&client, path, review(&token)).await;
    assert_eq!(known.status, 201, "{}", known.body);
    assert_eq!(known.body["status"]["authenticated"], true, "{}", known.body);
    assert_eq!(known.body["status"]["user"]["username"], "admin");
    assert!(
        known.body["status"]["user"]["groups"]
            .as_array()
            .is_some_and(|groups| groups.contains(&json!("system:masters"))),
        "{}",
        known.body
    );
    let unknown = post(&client, path, review("not-a-token-anyone-holds")).await;
    assert_eq!(unknown.status, 201, "{}", unknown.body);
    assert_ne!(unknown.body["status"]["authenticated"], true, "{}", unknown.body);
    assert!(
        unknown.body["status"]["user"].get("username").is_none(),
        "{}",
        unknown.body
    );
    let empty = post(&client, path, review("")).await;
    assert_eq!(empty.status, 400, "{}", empty.body);
}

testenv::each_control_plane!(a_token_review_says_whose_a_token_is);

fn access_review(kind: &str, user: &str, verb: &str) -> Value {
    json!({"apiVersion": "authorization.k8s.io/v1", "kind": kind,
        "metadata": {"namespace": NAMESPACE},
        "spec": {"user": user, "resourceAttributes": {"namespace": NAMESPACE, "verb": verb, "resource": "pods"}}})
}

async fn access_reviews_answer_by_rbac(backend: Backend) {
    let plane = ControlPlane::start(backend).await.expect("control plane starts");
    let client = plane.client();
    let cluster_wide = "/apis/authorization.k8s.io/v1/subjectaccessreviews";
    let local = format!("/apis/authorization.k8s.io/v1/namespaces/{NAMESPACE}/localsubjectaccessreviews");
    let before = post(
        &client,
        cluster_wide,
        access_review("SubjectAccessReview", "alice", "get"),
    )
    .await;
    assert_eq!(before.status, 201, "{}", before.body);
    assert_eq!(before.body["status"]["allowed"], false, "{}", before.body);

    let rbac = format!("/apis/rbac.authorization.k8s.io/v1/namespaces/{NAMESPACE}");
    let role = post(
        &client,
        &format!("{rbac}/roles"),
        json!({"apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "Role", "metadata": {"name": "pod-reader"},
        "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list"]}]}),
    )
    .await;
    assert_eq!(role.status, 201, "{}", role.body);
    let binding = post(
        &client,
        &format!("{rbac}/rolebindings"),
        json!({"apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding", "metadata": {"name": "read-pods"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "pod-reader"},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "alice"}]}),
    )
    .await;
    assert_eq!(binding.status, 201, "{}", binding.body);
    // RBAC's informers see the new binding a moment later on a real server.
    let expected = format!(
        r#"RBAC: allowed by RoleBinding "read-pods/{NAMESPACE}" of Role "pod-reader" to User "alice""#
    );
    common::eventually("the binding to take effect", || async {
        let answer = post(
            &client,
            &local,
            access_review("LocalSubjectAccessReview", "alice", "get"),
        )
        .await;
        answer.body["status"]["allowed"] == true
    })
    .await;
    let allowed = post(
        &client,
        &local,
        access_review("LocalSubjectAccessReview", "alice", "get"),
    )
    .await;
    assert_eq!(allowed.status, 201, "{}", allowed.body);
    assert_eq!(
        allowed.body["status"]["reason"],
        expected.as_str(),
        "{}",
        allowed.body
    );
    let denied = post(
        &client,
        cluster_wide,
        access_review("SubjectAccessReview", "alice", "delete"),
    )
    .await;
    assert_eq!(denied.body["status"]["allowed"], false, "{}", denied.body);
    let masters = post(
        &client,
        cluster_wide,
        json!({"apiVersion": "authorization.k8s.io/v1",
        "kind": "SubjectAccessReview", "spec": {"groups": ["system:masters"],
            "nonResourceAttributes": {"path": "/healthz", "verb": "get"}}}),
    )
    .await;
    assert_eq!(masters.body["status"]["allowed"], true, "{}", masters.body);

    let nobody = post(
        &client,
        cluster_wide,
        json!({"apiVersion": "authorization.k8s.io/v1",
        "kind": "SubjectAccessReview", "spec": {"resourceAttributes": {"verb": "get", "resource": "pods"}}}),
    )
    .await;
    assert_eq!(nobody.status, 422, "{}", nobody.body);
    assert_eq!(
        nobody.body["details"]["causes"][0]["field"], "spec.user",
        "{}",
        nobody.body
    );
}

testenv::each_control_plane!(access_reviews_answer_by_rbac);

async fn a_binding_assigns_a_pod_to_a_node(backend: Backend) {
    let plane = common::without_a_node(backend).await;
    let client = plane.client();
    let pods = format!("/api/v1/namespaces/{NAMESPACE}/pods");
    let pod = post(
        &client,
        &pods,
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "bound"},
        "spec": {"containers": [{"name": "web", "image": "nginx"}]}}),
    )
    .await;
    assert_eq!(pod.status, 201, "{}", pod.body);
    let bound = post(&client, &format!("/api/v1/namespaces/{NAMESPACE}/bindings"), json!({"apiVersion": "v1",
        "kind": "Binding", "metadata": {"name": "bound"}, "target": {"apiVersion": "v1", "kind": "Node", "name": "worker-1"}})).await;
    assert_eq!(bound.status, 201, "{}", bound.body);
    assert_eq!(bound.body["status"], "Success", "{}", bound.body);
    let read = request(
        &client,
        "GET",
        &format!("{pods}/bound"),
        "application/json",
        Value::Null,
    )
    .await;
    assert_eq!(read.body["spec"]["nodeName"], "worker-1", "{}", read.body);
}

testenv::each_control_plane!(a_binding_assigns_a_pod_to_a_node);
