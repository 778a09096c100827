//! Service-account tokens, compared with the real kube-apiserver: a TokenRequest issues a token for
//! the audiences and the time it names, bound to a Pod or a Secret; a TokenReview says whose it is
//! (the service account's user, its groups, the audiences it is valid for and the object it is bound
//! to), refuses it for an audience it was not issued for and once its object is deleted; and requests
//! made with it are the service account's, which RBAC grants what its bindings grant and nothing more.

mod common;

use std::collections::BTreeSet;

use common::request;
use kube::Client;
use serde_json::{Value, json};
use testenv::{Backend, ControlPlane};

const NAMESPACE: &str = "tokens";
const ACCOUNT: &str = "builder";
const USERNAME: &str = "system:serviceaccount:tokens:builder";
const AUDIENCE: &str = "https://vault.example.com";

async fn post(client: &Client, path: &str, body: Value) -> common::Answer {
    request(client, "POST", path, "application/json", body).await
}

async fn get(client: &Client, path: &str) -> common::Answer {
    request(client, "GET", path, "", Value::Null).await
}

async fn created(client: &Client, path: &str, body: Value) -> Value {
    let answer = post(client, path, body).await;
    assert_eq!(answer.status, 201, "{path}: {}", answer.text);
    answer.body
}

/// The namespace [`NAMESPACE`] with the service account [`ACCOUNT`] in it.
async fn namespace_and_account(admin: &Client) {
    created(
        admin,
        "/api/v1/namespaces",
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}}),
    )
    .await;
    account(admin, ACCOUNT).await;
}

async fn account(admin: &Client, name: &str) {
    created(
        admin,
        &format!("/api/v1/namespaces/{NAMESPACE}/serviceaccounts"),
        json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": name}}),
    )
    .await;
}

/// A token for [`ACCOUNT`] as `spec` asks (the whole TokenRequest answered).
async fn token_request(admin: &Client, spec: Value) -> common::Answer {
    post(
        admin,
        &format!("/api/v1/namespaces/{NAMESPACE}/serviceaccounts/{ACCOUNT}/token"),
        json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": spec}),
    )
    .await
}

async fn issued_token(admin: &Client, spec: Value) -> String {
    let answer = token_request(admin, spec).await;
    assert_eq!(answer.status, 201, "{}", answer.text);
    answer.body["status"]["token"]
        .as_str()
        .expect("a token")
        .to_owned()
}

/// The status of a TokenReview of `token` for `audiences` (none: the API server's own).
async fn review(admin: &Client, token: &str, audiences: &[&str]) -> Value {
    let mut spec = json!({"token": token});
    if !audiences.is_empty() {
        spec["audiences"] = json!(audiences);
    }
    let answer = post(
        admin,
        "/apis/authentication.k8s.io/v1/tokenreviews",
        json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": spec}),
    )
    .await;
    assert_eq!(answer.status, 201, "{}", answer.text);
    answer.body["status"].clone()
}

fn extra_keys(status: &Value) -> BTreeSet<String> {
    status["user"]["extra"]
        .as_object()
        .map(|extra| extra.keys().cloned().collect())
        .unwrap_or_default()
}

/// Why a review's token authenticated no one (kube-apiserver's `status.error`); `None` if it did.
fn refusal(status: &Value) -> Option<&str> {
    let refused = status["authenticated"] != true && status["user"].get("username").is_none();
    refused.then(|| status["error"].as_str().unwrap_or_default())
}

/// Waits until the review of `token` (for `audiences`) is refused for `reason`. kube-apiserver keeps
/// a successful authentication of a token for ten seconds, so a token of a deleted object is refused
/// within those: a deadline well past them.
async fn until_refused(admin: &Client, token: &str, audiences: &[&str], reason: &str) {
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let status = review(admin, token, audiences).await;
        if refusal(&status).is_some() {
            assert_eq!(refusal(&status), Some(reason), "{status}");
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "still authenticated: {status}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
}

const INVALIDATED: &str = "[invalid bearer token, service account token has been invalidated]";

async fn a_token_bound_to_a_pod_is_reviewed_as_its_service_account(backend: Backend) {
    // No node: the pod stays unscheduled on both control planes, so no node is named in the token.
    let plane = common::without_a_node(backend).await;
    let admin = plane.client();
    namespace_and_account(&admin).await;
    let account = get(
        &admin,
        &format!("/api/v1/namespaces/{NAMESPACE}/serviceaccounts/{ACCOUNT}"),
    )
    .await
    .body;
    let pod = created(
        &admin,
        &format!("/api/v1/namespaces/{NAMESPACE}/pods"),
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "worker"},
            "spec": {"serviceAccountName": ACCOUNT, "containers": [{"name": "c", "image": "busybox"}]}}),
    )
    .await;
    let pod_uid = pod["metadata"]["uid"].as_str().expect("a uid");

    let issued = token_request(
        &admin,
        json!({"audiences": [AUDIENCE, "api"], "expirationSeconds": 1200,
            "boundObjectRef": {"apiVersion": "v1", "kind": "Pod", "name": "worker", "uid": pod_uid}}),
    )
    .await;
    assert_eq!(issued.status, 201, "{}", issued.text);
    assert_eq!(issued.body["kind"], "TokenRequest");
    assert_eq!(issued.body["spec"]["audiences"], json!([AUDIENCE, "api"]));
    assert_eq!(issued.body["spec"]["expirationSeconds"], 1200);
    assert_eq!(issued.body["spec"]["boundObjectRef"]["name"], "worker");
    let expires: jiff::Timestamp = issued.body["status"]["expirationTimestamp"]
        .as_str()
        .expect("an expiration")
        .parse()
        .expect("RFC 3339");
    let lives = expires.duration_since(jiff::Timestamp::now()).as_secs();
    assert!((1100..=1200).contains(&lives), "expires in {lives}s");
    let token = issued.body["status"]["token"].as_str().expect("a token");

    let status = review(&admin, token, &[AUDIENCE]).await;
    assert_eq!(status["authenticated"], true, "{status}");
    assert_eq!(status["user"]["username"], USERNAME, "{status}");
    assert_eq!(status["user"]["uid"], account["metadata"]["uid"], "{status}");
    assert_eq!(
        status["user"]["groups"],
        json!([
            "system:serviceaccounts",
            "system:serviceaccounts:tokens",
            "system:authenticated"
        ]),
        "{status}"
    );
    // Of the audiences asked, those the token was issued for.
    assert_eq!(status["audiences"], json!([AUDIENCE]), "{status}");
    let extra = &status["user"]["extra"];
    assert_eq!(
        extra_keys(&status),
        BTreeSet::from([
            "authentication.kubernetes.io/credential-id".to_owned(),
            "authentication.kubernetes.io/pod-name".to_owned(),
            "authentication.kubernetes.io/pod-uid".to_owned(),
        ]),
        "{status}"
    );
    assert_eq!(extra["authentication.kubernetes.io/pod-name"], json!(["worker"]));
    assert_eq!(extra["authentication.kubernetes.io/pod-uid"], json!([pod_uid]));
    assert!(
        extra["authentication.kubernetes.io/credential-id"][0]
            .as_str()
            .is_some_and(|id| id.starts_with("JTI=")),
        "{status}"
    );

    // Neither for an audience it was not issued for, nor for the API server's own.
    assert_eq!(
        refusal(&review(&admin, token, &["https://other.example.com"]).await),
        Some(
            r#"[invalid bearer token, token audiences ["https://vault.example.com" "api"] is invalid for the target audiences ["https://other.example.com"]]"#
        )
    );
    assert_eq!(
        refusal(&review(&admin, token, &[]).await),
        Some(
            r#"[invalid bearer token, token audiences ["https://vault.example.com" "api"] is invalid for the target audiences ["https://kubernetes.default.svc"]]"#
        )
    );
    // A token the server never issued.
    assert_eq!(
        refusal(&review(&admin, "not-a-token", &[]).await),
        Some("invalid bearer token")
    );

    // Deleting the pod ends the token.
    let deleted = request(
        &admin,
        "DELETE",
        &format!("/api/v1/namespaces/{NAMESPACE}/pods/worker"),
        "",
        Value::Null,
    )
    .await;
    assert_eq!(deleted.status, 200, "{}", deleted.text);
    until_refused(&admin, token, &[AUDIENCE], INVALIDATED).await;
}

async fn a_token_bound_to_a_secret_lasts_as_long_as_the_secret(backend: Backend) {
    let plane = ControlPlane::start(backend).await.expect("control plane starts");
    let admin = plane.client();
    namespace_and_account(&admin).await;
    created(
        &admin,
        &format!("/api/v1/namespaces/{NAMESPACE}/secrets"),
        json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "session"}}),
    )
    .await;
    // For the API server's own audience (none named), so that requests are made with it.
    let token = issued_token(
        &admin,
        json!({"boundObjectRef": {"apiVersion": "v1", "kind": "Secret", "name": "session"}}),
    )
    .await;
    let status = review(&admin, &token, &[]).await;
    assert_eq!(status["authenticated"], true, "{status}");
    assert_eq!(status["user"]["username"], USERNAME, "{status}");
    assert_eq!(
        extra_keys(&status),
        BTreeSet::from(["authentication.kubernetes.io/credential-id".to_owned()]),
        "{status}"
    );
    let holder = Client::try_from(plane.kube_config_with_token(Some(&token))).expect("a client");
    let whoami = post(
        &holder,
        "/apis/authentication.k8s.io/v1/selfsubjectreviews",
        json!({"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}),
    )
    .await;
    assert_eq!(whoami.status, 201, "{}", whoami.text);
    assert_eq!(whoami.body["status"]["userInfo"]["username"], USERNAME);

    let deleted = request(
        &admin,
        "DELETE",
        &format!("/api/v1/namespaces/{NAMESPACE}/secrets/session"),
        "",
        Value::Null,
    )
    .await;
    assert_eq!(deleted.status, 200, "{}", deleted.text);
    until_refused(&admin, &token, &[], INVALIDATED).await;
    // A request with it is no one's.
    assert_eq!(
        get(&holder, "/api/v1/namespaces/tokens/configmaps").await.status,
        401
    );
}

async fn a_token_request_is_refused_as_kube_apiserver_refuses_it(backend: Backend) {
    let plane = common::without_a_node(backend).await;
    let admin = plane.client();
    namespace_and_account(&admin).await;
    let short = token_request(&admin, json!({"expirationSeconds": 60})).await;
    assert_eq!(short.status, 422, "{}", short.text);
    assert_eq!(
        short.body["message"],
        "TokenRequest.authentication.k8s.io \"\" is invalid: spec.expirationSeconds: Invalid value: 60: may not specify a duration less than 10 minutes"
    );
    // A body naming another account or namespace than the path's.
    let path = format!("/api/v1/namespaces/{NAMESPACE}/serviceaccounts/{ACCOUNT}/token");
    let named = |metadata: Value| json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "metadata": metadata, "spec": {}});
    let other_name = post(&admin, &path, named(json!({"name": "other"}))).await;
    assert_eq!(other_name.status, 422, "{}", other_name.text);
    assert_eq!(
        other_name.body["message"],
        "TokenRequest.authentication.k8s.io \"builder\" is invalid: metadata.name: Invalid value: \"other\": must match the service account name if specified"
    );
    let other_namespace = post(&admin, &path, named(json!({"namespace": "elsewhere"}))).await;
    assert_eq!(other_namespace.status, 400, "{}", other_namespace.text);
    assert_eq!(
        other_namespace.body["message"],
        "the namespace of the provided object does not match the namespace sent on the request"
    );
    let config_map = token_request(
        &admin,
        json!({"boundObjectRef": {"apiVersion": "v1", "kind": "ConfigMap", "name": "c"}}),
    )
    .await;
    assert_eq!(config_map.status, 400, "{}", config_map.text);
    assert_eq!(
        config_map.body["message"],
        "cannot bind token to object of type /v1, Kind=ConfigMap"
    );
    let missing = token_request(
        &admin,
        json!({"boundObjectRef": {"apiVersion": "v1", "kind": "Secret", "name": "missing"}}),
    )
    .await;
    assert_eq!(missing.status, 404, "{}", missing.text);
    assert_eq!(missing.body["message"], "secrets \"missing\" not found");
    // A pod run as another account cannot hold this one's token.
    account(&admin, "other").await;
    created(
        &admin,
        &format!("/api/v1/namespaces/{NAMESPACE}/pods"),
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "others"},
            "spec": {"serviceAccountName": "other", "containers": [{"name": "c", "image": "busybox"}]}}),
    )
    .await;
    let foreign = token_request(
        &admin,
        json!({"boundObjectRef": {"apiVersion": "v1", "kind": "Pod", "name": "others"}}),
    )
    .await;
    assert_eq!(foreign.status, 400, "{}", foreign.text);
    assert_eq!(
        foreign.body["message"],
        "cannot bind token for serviceaccount \"builder\" to pod running with different serviceaccount name."
    );
}

/// Binds the ClusterRole `view` in `namespace` to the subject `subject`.
async fn bind_view(admin: &Client, namespace: &str, name: &str, subject: Value) {
    created(
        admin,
        &format!("/apis/rbac.authorization.k8s.io/v1/namespaces/{namespace}/rolebindings"),
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
            "metadata": {"name": name},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"},
            "subjects": [subject]}),
    )
    .await;
}

async fn a_service_accounts_token_holds_what_its_role_bindings_grant(backend: Backend) {
    let plane = ControlPlane::start(backend).await.expect("control plane starts");
    let admin = plane.client();
    namespace_and_account(&admin).await;
    let token = issued_token(&admin, json!({"expirationSeconds": 3600})).await;
    let holder = Client::try_from(plane.kube_config_with_token(Some(&token))).expect("a client");
    let configmaps = format!("/api/v1/namespaces/{NAMESPACE}/configmaps");
    let forbidden = format!(
        r#"configmaps is forbidden: User "{USERNAME}" cannot list resource "configmaps" in API group "" in the namespace "tokens""#
    );
    let refused = get(&holder, &configmaps).await;
    assert_eq!(refused.status, 403, "{}", refused.text);
    assert_eq!(refused.body["message"], forbidden.as_str());

    // Bindings of someone else grant it nothing: another account of the namespace, an account of the
    // same name elsewhere, the same account in another namespace.
    account(&admin, "other").await;
    bind_view(
        &admin,
        NAMESPACE,
        "other-view",
        json!({"kind": "ServiceAccount", "name": "other", "namespace": NAMESPACE}),
    )
    .await;
    bind_view(
        &admin,
        NAMESPACE,
        "elsewhere-view",
        json!({"kind": "ServiceAccount", "name": ACCOUNT, "namespace": "default"}),
    )
    .await;
    bind_view(
        &admin,
        "default",
        "builder-view",
        json!({"kind": "ServiceAccount", "name": ACCOUNT, "namespace": NAMESPACE}),
    )
    .await;
    common::eventually("the binding in default to grant there", || async {
        get(&holder, "/api/v1/namespaces/default/configmaps").await.status == 200
    })
    .await;
    let still = get(&holder, &configmaps).await;
    assert_eq!(still.status, 403, "{}", still.text);
    assert_eq!(still.body["message"], forbidden.as_str());

    // A RoleBinding to the account grants.
    bind_view(
        &admin,
        NAMESPACE,
        "builder-view",
        json!({"kind": "ServiceAccount", "name": ACCOUNT, "namespace": NAMESPACE}),
    )
    .await;
    common::eventually("the binding to grant the account", || async {
        get(&holder, &configmaps).await.status == 200
    })
    .await;
    let write = post(
        &holder,
        &configmaps,
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "mine"}}),
    )
    .await;
    assert_eq!(write.status, 403, "{}", write.text);
    assert_eq!(
        write.body["message"],
        format!(
            r#"configmaps is forbidden: User "{USERNAME}" cannot create resource "configmaps" in API group "" in the namespace "tokens""#
        )
    );
}

testenv::each_control_plane!(
    a_token_bound_to_a_pod_is_reviewed_as_its_service_account,
    a_token_bound_to_a_secret_lasts_as_long_as_the_secret,
    a_token_request_is_refused_as_kube_apiserver_refuses_it,
    a_service_accounts_token_holds_what_its_role_bindings_grant,
);
