//! The subresources of built-in kinds that write or answer for something else than the object itself:
//! a namespace's `finalize`, a pod's `eviction` and `resize`, a service account's `token`, and the
//! Service and node proxies. Each is compared with what the real kube-apiserver answers on a cluster
//! where nothing runs (no kubelet, no scheduler, no endpoints or disruption controller).

mod common;

use common::{Answer, request};
use serde_json::{Value, json};
use testenv::{Backend, ControlPlane};

async fn get(client: &kube::Client, path: &str) -> Answer {
    request(client, "GET", path, "application/json", Value::Null).await
}

async fn post(client: &kube::Client, path: &str, body: Value) -> Answer {
    request(client, "POST", path, "application/json", body).await
}

async fn merge_patch(client: &kube::Client, path: &str, body: Value) -> Answer {
    request(client, "PATCH", path, "application/merge-patch+json", body).await
}

/// A client that sends `token` and shows every answer as it comes: kube-rs would retry a 429 or a 503
/// on its own, for minutes, where these tests look at them.
fn client_with(plane: &ControlPlane, token: Option<&str>) -> kube::Client {
    let mut config = plane.kube_config_with_token(token);
    config.default_retry = false;
    kube::Client::try_from(config).expect("a client")
}

fn status_of(answer: &Answer) -> (u16, &str, &str) {
    (
        answer.status,
        answer.body["reason"].as_str().unwrap_or_default(),
        answer.body["message"].as_str().unwrap_or_default(),
    )
}

const NAMESPACES: &str = "/api/v1/namespaces";
const PODS: &str = "/api/v1/namespaces/default/pods";

async fn discovery_lists_the_subresources_with_their_kinds(backend: Backend) {
    let plane = ControlPlane::start(backend).await.expect("control plane starts");
    let core = get(&plane.client(), "/api/v1").await;
    let entry = |name: &str| {
        core.body["resources"]
            .as_array()
            .and_then(|all| all.iter().find(|r| r["name"] == name))
            .cloned()
            .unwrap_or(Value::Null)
    };
    let described = |name: &str| {
        let e = entry(name);
        (
            e["kind"].clone(),
            e["group"].clone(),
            e["version"].clone(),
            e["verbs"].clone(),
        )
    };
    let proxy_verbs = json!(["create", "delete", "get", "patch", "update"]);
    assert_eq!(
        described("namespaces/finalize"),
        (json!("Namespace"), Value::Null, Value::Null, json!(["update"]))
    );
    assert_eq!(
        described("pods/eviction"),
        (json!("Eviction"), json!("policy"), json!("v1"), json!(["create"]))
    );
    assert_eq!(
        described("pods/resize"),
        (
            json!("Pod"),
            Value::Null,
            Value::Null,
            json!(["get", "patch", "update"])
        )
    );
    assert_eq!(
        described("serviceaccounts/token"),
        (
            json!("TokenRequest"),
            json!("authentication.k8s.io"),
            json!("v1"),
            json!(["create"])
        )
    );
    assert_eq!(
        described("services/proxy"),
        (
            json!("ServiceProxyOptions"),
            Value::Null,
            Value::Null,
            proxy_verbs.clone()
        )
    );
    assert_eq!(
        described("nodes/proxy"),
        (json!("NodeProxyOptions"), Value::Null, Value::Null, proxy_verbs)
    );
}

testenv::each_control_plane!(discovery_lists_the_subresources_with_their_kinds);

async fn finalize_writes_the_namespace_finalizers_and_lets_a_deleted_namespace_go(backend: Backend) {
    let plane = ControlPlane::start(backend).await.expect("control plane starts");
    let client = client_with(&plane, plane.admin_token());
    let name = "finalized";
    let path = format!("{NAMESPACES}/{name}");
    let created = post(
        &client,
        NAMESPACES,
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}),
    )
    .await;
    assert_eq!(created.status, 201, "{}", created.body);
    assert_eq!(created.body["spec"]["finalizers"], json!(["kubernetes"]));

    // Only `finalize` writes them: an update of the namespace keeps them as stored.
    let patched = merge_patch(&client, &path, json!({"spec": {"finalizers": []}})).await;
    assert_eq!(patched.status, 200, "{}", patched.body);
    assert_eq!(patched.body["spec"]["finalizers"], json!(["kubernetes"]));

    let mut namespace = get(&client, &path).await.body;
    namespace["spec"]["finalizers"] = json!(["kubernetes", "example.com/keep"]);
    namespace["status"] = json!({"phase": "Terminating"});
    let finalized = request(
        &client,
        "PUT",
        &format!("{path}/finalize"),
        "application/json",
        namespace,
    )
    .await;
    assert_eq!(finalized.status, 200, "{}", finalized.body);
    assert_eq!(
        finalized.body["spec"]["finalizers"],
        json!(["kubernetes", "example.com/keep"])
    );
    // The status is the namespace registry's.
    assert_eq!(finalized.body["status"]["phase"], "Active");
    let read = get(&client, &format!("{path}/finalize")).await;
    assert_eq!(read.status, 405, "{}", read.body);

    // Deleted, the namespace waits for the finalizer of someone else's.
    let deleted = request(&client, "DELETE", &path, "application/json", Value::Null).await;
    assert_eq!(deleted.status, 200, "{}", deleted.body);
    // The namespace controller empties it and takes its own finalizer away, not the other.
    common::eventually(
        "the namespace Terminating, held by the other finalizer",
        || async {
            let body = get(&client, &path).await.body;
            body["status"]["phase"] == "Terminating"
                && body["spec"]["finalizers"] == json!(["example.com/keep"])
        },
    )
    .await;
    let mut terminating = get(&client, &path).await.body;
    assert_eq!(terminating["spec"]["finalizers"], json!(["example.com/keep"]));
    // Once the other finalizer is gone, nothing holds the namespace.
    terminating["spec"]["finalizers"] = json!([]);
    let released = request(
        &client,
        "PUT",
        &format!("{path}/finalize"),
        "application/json",
        terminating,
    )
    .await;
    assert_eq!(released.status, 200, "{}", released.body);
    common::eventually("the namespace gone", || async {
        get(&client, &path).await.status == 404
    })
    .await;
}

testenv::each_control_plane!(finalize_writes_the_namespace_finalizers_and_lets_a_deleted_namespace_go);

fn eviction(name: &str) -> Value {
    json!({"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": name}})
}

async fn create_pod(client: &kube::Client, name: &str, container: Value) {
    let pod = json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "labels": {"app": name}}, "spec": {"containers": [container]}});
    let created = post(client, PODS, pod).await;
    assert_eq!(created.status, 201, "{}", created.body);
}

async fn eviction_deletes_the_pod_unless_its_disruption_budget_forbids(backend: Backend) {
    let plane = ControlPlane::start(backend).await.expect("control plane starts");
    let client = client_with(&plane, plane.admin_token());
    let container = json!({"name": "app", "image": "nginx"});
    create_pod(&client, "evictee", container.clone()).await;

    let misnamed = post(&client, &format!("{PODS}/evictee/eviction"), eviction("other")).await;
    assert_eq!(
        status_of(&misnamed),
        (
            400,
            "BadRequest",
            "name in URL does not match name in Eviction object"
        )
    );
    let missing = post(&client, &format!("{PODS}/nope/eviction"), eviction("nope")).await;
    assert_eq!(status_of(&missing), (404, "NotFound", "pods \"nope\" not found"));

    let evicted = post(&client, &format!("{PODS}/evictee/eviction"), eviction("evictee")).await;
    assert_eq!(evicted.status, 201, "{}", evicted.body);
    assert_eq!(
        (&evicted.body["kind"], &evicted.body["status"]),
        (&json!("Status"), &json!("Success"))
    );
    common::eventually("the evicted pod gone", || async {
        get(&client, &format!("{PODS}/evictee")).await.status == 404
    })
    .await;

    // A running, ready pod is guarded by the budget that selects it.
    create_pod(&client, "guarded", container).await;
    let running = merge_patch(
        &client,
        &format!("{PODS}/guarded/status"),
        json!({"status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}}),
    )
    .await;
    assert_eq!(running.status, 200, "{}", running.body);
    let budgets = "/apis/policy/v1/namespaces/default/poddisruptionbudgets";
    let budget = json!({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
        "metadata": {"name": "guard"},
        "spec": {"maxUnavailable": 0, "selector": {"matchLabels": {"app": "guarded"}}}});
    let created = post(&client, budgets, budget).await;
    assert_eq!(created.status, 201, "{}", created.body);
    let path = format!("{PODS}/guarded/eviction");
    let refused_message = "Cannot evict pod as it would violate the pod's disruption budget.";

    // No disruption controller has looked at the budget yet.
    let unprocessed = post(&client, &path, eviction("guarded")).await;
    assert_eq!(status_of(&unprocessed), (429, "TooManyRequests", refused_message));
    assert_eq!(
        unprocessed.body["details"]["causes"],
        json!([{"reason": "DisruptionBudget",
            "message": "The disruption budget guard is still being processed by the server."}])
    );
    assert_eq!(unprocessed.body["details"]["retryAfterSeconds"], 10);

    let status = |allowed: i64| {
        json!({"status": {"observedGeneration": 1, "disruptionsAllowed": allowed, "currentHealthy": 1,
            "desiredHealthy": 1, "expectedPods": 1}})
    };
    let budget_status = format!("{budgets}/guard/status");
    let written = merge_patch(&client, &budget_status, status(0)).await;
    assert_eq!(written.status, 200, "{}", written.body);
    let refused = post(&client, &path, eviction("guarded")).await;
    assert_eq!(status_of(&refused), (429, "TooManyRequests", refused_message));
    assert_eq!(
        refused.body["details"]["causes"],
        json!([{"reason": "DisruptionBudget",
            "message": "The disruption budget guard needs 1 healthy pods and has 1 currently"}])
    );
    assert_eq!(get(&client, &format!("{PODS}/guarded")).await.status, 200);

    let written = merge_patch(&client, &budget_status, status(1)).await;
    assert_eq!(written.status, 200, "{}", written.body);
    let allowed = post(&client, &path, eviction("guarded")).await;
    assert_eq!(allowed.status, 201, "{}", allowed.body);
    common::eventually("the guarded pod gone", || async {
        get(&client, &format!("{PODS}/guarded")).await.status == 404
    })
    .await;
    let spent = get(&client, &format!("{budgets}/guard")).await;
    assert_eq!(spent.body["status"]["disruptionsAllowed"], 0, "{}", spent.body);
    assert!(
        spent.body["status"]["disruptedPods"]["guarded"].is_string(),
        "{}",
        spent.body
    );
}

testenv::each_control_plane!(eviction_deletes_the_pod_unless_its_disruption_budget_forbids);

async fn resize_changes_the_container_resources_alone(backend: Backend) {
    let plane = ControlPlane::start(backend).await.expect("control plane starts");
    let client = client_with(&plane, plane.admin_token());
    let container = json!({"name": "app", "image": "nginx",
        "resources": {"requests": {"cpu": "100m"}, "limits": {"cpu": "200m"}}});
    create_pod(&client, "sized", container).await;
    let path = format!("{PODS}/sized/resize");
    let read = get(&client, &path).await;
    assert_eq!(
        (read.status, &read.body["kind"]),
        (200, &json!("Pod")),
        "{}",
        read.body
    );

    let resize = json!({"metadata": {"labels": {"app": "changed"}},
        "spec": {"containers": [{"name": "app", "image": "busybox",
            "resources": {"requests": {"cpu": "150m"}, "limits": {"cpu": "300m"}}}]}});
    let resized = request(
        &client,
        "PATCH",
        &path,
        "application/strategic-merge-patch+json",
        resize,
    )
    .await;
    assert_eq!(resized.status, 200, "{}", resized.body);
    let app = &resized.body["spec"]["containers"][0];
    assert_eq!(
        app["resources"],
        json!({"requests": {"cpu": "150m"}, "limits": {"cpu": "300m"}})
    );
    assert_eq!(app["image"], "nginx");
    assert_eq!(resized.body["metadata"]["labels"], json!({"app": "sized"}));

    // A resize may not change the pod's quality of service.
    let fixed = json!({"cpu": "100m", "memory": "64Mi"});
    create_pod(
        &client,
        "fixed",
        json!({"name": "app", "image": "nginx", "resources": {"requests": fixed, "limits": fixed}}),
    )
    .await;
    let burstable =
        json!({"spec": {"containers": [{"name": "app", "resources": {"limits": {"cpu": "200m"}}}]}});
    let refused = request(
        &client,
        "PATCH",
        &format!("{PODS}/fixed/resize"),
        "application/strategic-merge-patch+json",
        burstable,
    )
    .await;
    assert_eq!(
        status_of(&refused),
        (
            422,
            "Invalid",
            "Pod \"fixed\" is invalid: spec: Invalid value: \"Guaranteed\": Pod QOS Class may not change as a result of resizing"
        )
    );

    let mut pod = get(&client, &format!("{PODS}/sized")).await.body;
    pod["spec"]["containers"]
        .as_array_mut()
        .expect("containers")
        .push(json!({"name": "extra", "image": "nginx"}));
    let added = request(&client, "PUT", &path, "application/json", pod).await;
    assert_eq!(status_of(&added).0, 422, "{}", added.body);
    assert_eq!(
        added.body["details"]["causes"][0]["field"], "spec.containers",
        "{}",
        added.body
    );
}

testenv::each_control_plane!(resize_changes_the_container_resources_alone);

async fn service_account_tokens_authenticate_as_the_account(backend: Backend) {
    let plane = ControlPlane::start(backend).await.expect("control plane starts");
    let client = client_with(&plane, plane.admin_token());
    let accounts = "/api/v1/namespaces/default/serviceaccounts";
    let account = json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "robot"}});
    let created = post(&client, accounts, account).await;
    assert_eq!(created.status, 201, "{}", created.body);
    let token_request = |seconds: Value| {
        json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
            "spec": {"expirationSeconds": seconds}})
    };

    let short = post(
        &client,
        &format!("{accounts}/robot/token"),
        token_request(json!(599)),
    )
    .await;
    assert_eq!(
        status_of(&short),
        (
            422,
            "Invalid",
            "TokenRequest.authentication.k8s.io \"\" is invalid: spec.expirationSeconds: Invalid value: 599: may not specify a duration less than 10 minutes"
        )
    );
    let ghost = post(
        &client,
        &format!("{accounts}/ghost/token"),
        token_request(Value::Null),
    )
    .await;
    assert_eq!(
        status_of(&ghost),
        (404, "NotFound", "serviceaccounts \"ghost\" not found")
    );

    // The answer holds the token: asserted on without ever being printed.
    let issued = post(
        &client,
        &format!("{accounts}/robot/token"),
        token_request(Value::Null),
    )
    .await;
    assert_eq!(issued.status, 201);
    assert_eq!(
        (&issued.body["kind"], &issued.body["apiVersion"]),
        (&json!("TokenRequest"), &json!("authentication.k8s.io/v1"))
    );
    assert_eq!(issued.body["spec"]["expirationSeconds"], 3600);
    assert_eq!(issued.body["metadata"]["name"], "robot");
    assert!(issued.body["status"]["expirationTimestamp"].is_string());
    let token = issued.body["status"]["token"]
        .as_str()
        .filter(|t| !t.is_empty())
        .expect("a token")
        .to_owned();

    let robot = client_with(&plane, Some(&token));
    let review = json!({"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"});
    let reviews = "/apis/authentication.k8s.io/v1/selfsubjectreviews";
    let who = post(&robot, reviews, review.clone()).await;
    assert_eq!(who.status, 201, "{}", who.body);
    let user = &who.body["status"]["userInfo"];
    assert_eq!(user["username"], "system:serviceaccount:default:robot");
    assert_eq!(user["uid"], created.body["metadata"]["uid"]);
    assert_eq!(
        user["groups"],
        json!([
            "system:serviceaccounts",
            "system:serviceaccounts:default",
            "system:authenticated"
        ])
    );

    // The token dies with its account.
    let deleted = request(
        &client,
        "DELETE",
        &format!("{accounts}/robot"),
        "application/json",
        Value::Null,
    )
    .await;
    assert_eq!(deleted.status, 200, "{}", deleted.body);
    common::eventually("the token refused", || async {
        post(&robot, reviews, review.clone()).await.status == 401
    })
    .await;
}

testenv::each_control_plane!(service_account_tokens_authenticate_as_the_account);

async fn service_and_node_proxies_answer_as_when_nothing_runs(backend: Backend) {
    let plane = ControlPlane::start(backend).await.expect("control plane starts");
    let client = client_with(&plane, plane.admin_token());
    let services = "/api/v1/namespaces/default/services";
    let service = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web"},
        "spec": {"selector": {"app": "web"}, "ports": [{"name": "http", "port": 80}]}});
    let created = post(&client, services, service).await;
    assert_eq!(created.status, 201, "{}", created.body);

    // No endpoints controller runs: the Service has no Endpoints object.
    let without = get(&client, &format!("{services}/web/proxy/")).await;
    assert_eq!(
        status_of(&without),
        (404, "NotFound", "services \"web\" not found")
    );
    let endpoints = json!({"apiVersion": "v1", "kind": "Endpoints", "metadata": {"name": "web"}});
    let created = post(&client, "/api/v1/namespaces/default/endpoints", endpoints).await;
    assert_eq!(created.status, 201, "{}", created.body);
    let unavailable = (
        503,
        "ServiceUnavailable",
        "no endpoints available for service \"web\"",
    );
    for method in ["GET", "POST", "PUT", "DELETE"] {
        let answer = request(
            &client,
            method,
            &format!("{services}/web/proxy/healthz"),
            "application/json",
            Value::Null,
        )
        .await;
        assert_eq!(status_of(&answer), unavailable, "{method}");
    }
    let named_port = get(&client, &format!("{services}/http:web:80/proxy/")).await;
    assert_eq!(status_of(&named_port), unavailable);
    let wrong_port = get(&client, &format!("{services}/web:81/proxy/")).await;
    assert_eq!(
        status_of(&wrong_port),
        (
            503,
            "ServiceUnavailable",
            "no service port 81 found for service \"web\""
        )
    );
    let missing = get(&client, &format!("{services}/nope:80/proxy/")).await;
    assert_eq!(
        status_of(&missing),
        (404, "NotFound", "services \"nope\" not found")
    );

    let node = json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "worker-1"}});
    let created = post(&client, "/api/v1/nodes", node).await;
    assert_eq!(created.status, 201, "{}", created.body);
    let proxied = get(&client, "/api/v1/nodes/worker-1/proxy/healthz").await;
    assert_eq!(
        status_of(&proxied),
        (500, "", "no preferred addresses found; known addresses: []")
    );
    let missing = get(&client, "/api/v1/nodes/nope/proxy/").await;
    assert_eq!(status_of(&missing), (404, "NotFound", "nodes \"nope\" not found"));
}

testenv::each_control_plane!(service_and_node_proxies_answer_as_when_nothing_runs);
