//! Writes through subresources pass admission as any other write does: a ValidatingAdmissionPolicy or
//! an admission webhook whose rules name `deployments/scale`, `deployments/status`, `pods/eviction`,
//! `pods/binding` or `serviceaccounts/token` sees those writes, as the object the subresource is
//! written with (a Scale, the whole Deployment, an Eviction, a Binding, a TokenRequest), and may
//! refuse them. Each test runs on the embedded
//! server and on the real kube-apiserver, whose answers are the expected ones.

mod common;

use std::time::Duration;

use axum::Router;
use common::{
    Answer, request,
    webhook_server::{Recorder, WebhookServer},
};
use serde_json::{Value, json};
use testenv::{Backend, ControlPlane};

const POLICIES: &str = "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies";
const BINDINGS: &str = "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicybindings";
const WEBHOOKS: &str = "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations";

/// How long kube-apiserver may take to call a new webhook or enforce a new policy: its admission
/// plugins learn of them from informers, within a second or two on an idle machine.
const ENFORCED_WITHIN: Duration = Duration::from_secs(30);

/// Sends `write` until `enforced` says its answer shows the new configuration at work.
async fn until_enforced<F, Fut>(what: &str, mut write: F, enforced: impl Fn(&Answer) -> bool) -> Answer
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Answer>,
{
    let deadline = tokio::time::Instant::now() + ENFORCED_WITHIN;
    loop {
        let answer = write().await;
        if enforced(&answer) {
            return answer;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "{what} is never enforced: {}",
            answer.body
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

async fn post(client: &kube::Client, path: &str, body: Value) -> Answer {
    request(client, "POST", path, "application/json", body).await
}

async fn created(client: &kube::Client, path: &str, body: Value) {
    let answer = post(client, path, body).await;
    assert_eq!(answer.status, 201, "POST {path}: {}", answer.body);
}

fn deployment(name: &str, replicas: i64) -> Value {
    json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "labels": {"app": name}},
        "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "c", "image": "busybox"}]}}}})
}

/// A namespace of its own, labelled so that only the test's bindings and webhooks select it.
async fn labelled_namespace(client: &kube::Client, name: &str) {
    let namespace = json!({"apiVersion": "v1", "kind": "Namespace",
        "metadata": {"name": name, "labels": {"subresource-admission": name}}});
    created(client, "/api/v1/namespaces", namespace).await;
}

/// A policy over Deployments and `resources`, bound in the namespaces labelled `namespace`.
async fn bind_policy(client: &kube::Client, name: &str, namespace: &str, resources: Value, expression: &str) {
    let policy = json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": name},
        "spec": {"failurePolicy": "Fail",
            "matchConstraints": {"resourceRules": [{"apiGroups": ["apps"], "apiVersions": ["v1"],
                "operations": ["CREATE", "UPDATE"], "resources": resources}]},
            "validations": [{"expression": expression}]}});
    let binding = json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": format!("{name}-binding")},
        "spec": {"policyName": name, "validationActions": ["Deny"],
            "matchResources": {"namespaceSelector": {"matchLabels": {"subresource-admission": namespace}}}}});
    created(client, POLICIES, policy).await;
    created(client, BINDINGS, binding).await;
}

/// The Status a policy's denial of a write to Deployment `name` answers with.
fn denial(name: &str, policy: &str, expression: &str) -> Value {
    let said = format!(
        "ValidatingAdmissionPolicy '{policy}' with binding '{policy}-binding' denied request: failed expression: {expression}"
    );
    json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": format!("deployments.apps \"{name}\" is forbidden: {said}"),
        "reason": "Invalid",
        "details": {"name": name, "group": "apps", "kind": "deployments", "causes": [{"message": said}]},
        "code": 422})
}

/// `kubectl scale` past a policy's limit on `deployments/scale` is refused, as a PATCH or PUT of the
/// Scale is, with the policy's message: the policy sees the Scale (`object.spec.replicas`). A policy
/// on `deployments/status` sees the whole Deployment written through `/status`.
async fn policies_see_scale_and_status_writes(backend: Backend) {
    let plane = ControlPlane::start(backend).await.expect("control plane starts");
    let client = plane.client();
    let namespace = "scaled";
    labelled_namespace(&client, namespace).await;
    let deployments = format!("/apis/apps/v1/namespaces/{namespace}/deployments");
    created(&client, &deployments, deployment("web", 1)).await;
    let limit = "object.spec.replicas <= 5";
    bind_policy(
        &client,
        "at-most-five",
        namespace,
        json!(["deployments", "deployments/scale"]),
        limit,
    )
    .await;
    let marker = || async {
        let answer = post(&client, &deployments, deployment("marker", 9)).await;
        if answer.status == 201 {
            let path = format!("{deployments}/marker");
            request(&client, "DELETE", &path, "", Value::Null).await;
        }
        answer
    };
    let refused = until_enforced("the policy on deployments", marker, |a| a.status != 201).await;
    assert_eq!(refused.body, denial("marker", "at-most-five", limit));

    let scale = format!("{deployments}/web/scale");
    let nine = json!({"spec": {"replicas": 9}});
    let patched = request(&client, "PATCH", &scale, "application/merge-patch+json", nine).await;
    assert_eq!(patched.body, denial("web", "at-most-five", limit));

    let current = request(&client, "GET", &scale, "", Value::Null).await;
    assert_eq!(current.body["kind"], "Scale", "{}", current.body);
    let mut nine = current.body.clone();
    nine["spec"]["replicas"] = json!(9);
    let put = request(&client, "PUT", &scale, "application/json", nine).await;
    assert_eq!(put.body, denial("web", "at-most-five", limit));

    let kubectl = common::kubectl::Kubectl::new(&plane);
    let said = kubectl
        .fails(&["scale", "deployment", "web", "--replicas=9", "-n", namespace])
        .await;
    assert!(
        said.contains("ValidatingAdmissionPolicy 'at-most-five' with binding 'at-most-five-binding' denied request: failed expression: object.spec.replicas <= 5"),
        "{said}"
    );
    kubectl
        .ok(&["scale", "deployment", "web", "--replicas=3", "-n", namespace])
        .await;
    let scaled = request(&client, "GET", &scale, "", Value::Null).await;
    assert_eq!(scaled.body["spec"]["replicas"], 3);

    // The status subresource: the policy sees the whole Deployment.
    let collision = "!has(object.status.collisionCount) || object.status.collisionCount != 7";
    bind_policy(
        &client,
        "no-seven",
        namespace,
        json!(["deployments/status"]),
        collision,
    )
    .await;
    let status = format!("{deployments}/web/status");
    let write_status = || async {
        request(
            &client,
            "PATCH",
            &status,
            "application/merge-patch+json",
            json!({"status": {"collisionCount": 7}}),
        )
        .await
    };
    let refused = until_enforced("the policy on deployments/status", write_status, |a| {
        a.status != 200
    })
    .await;
    assert_eq!(refused.body, denial("web", "no-seven", collision));
    // The main resource is not its status: a spec write passes that policy.
    let spec = request(
        &client,
        "PATCH",
        &format!("{deployments}/web"),
        "application/merge-patch+json",
        json!({"spec": {"replicas": 2}}),
    )
    .await;
    assert_eq!(spec.status, 200, "{}", spec.body);
}

/// Refuses an eviction of a pod whose name starts with `kept` and a binding to `forbidden-node`.
fn judge(review: &Value) -> Value {
    let request = &review["request"];
    let kept = request["name"].as_str().is_some_and(|n| n.starts_with("kept"));
    let forbidden = request["object"]["target"]["name"] == "forbidden-node";
    match kept || forbidden {
        true => json!({"allowed": false, "status": {"code": 403, "message": "not this one"}}),
        false => json!({"allowed": true}),
    }
}

fn pod(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
        "spec": {"containers": [{"name": "app", "image": "nginx"}]}})
}

fn webhook(name: &str, server: &WebhookServer, path: &str, resource: &str, namespace: &str) -> Value {
    json!({"name": name, "clientConfig": server.client_config(path),
        "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": [resource]}],
        "namespaceSelector": {"matchLabels": {"subresource-admission": namespace}},
        "sideEffects": "None", "admissionReviewVersions": ["v1"], "timeoutSeconds": 5})
}

/// The review fields that name what is written, as a webhook reads them.
fn described(review: &Value) -> Value {
    json!({
        "kind": review["kind"], "resource": review["resource"], "subResource": review["subResource"],
        "requestKind": review["requestKind"], "requestResource": review["requestResource"],
        "requestSubResource": review["requestSubResource"], "operation": review["operation"],
        "name": review["name"], "namespace": review["namespace"],
        "objectKind": review["object"]["kind"], "objectApiVersion": review["object"]["apiVersion"],
        "objectName": review["object"]["metadata"]["name"], "oldObject": review["oldObject"],
        "options": review["options"]["kind"],
    })
}

/// A validating webhook on `pods/eviction` sees the Eviction as a CREATE of subresource `eviction`
/// of pods, and may refuse it; one on `pods/binding` sees the Binding likewise.
async fn webhooks_see_evictions_and_bindings(backend: Backend) {
    let plane = common::without_a_node(backend).await;
    let client = plane.client();
    let namespace = "evicted";
    labelled_namespace(&client, namespace).await;
    let recorder = Recorder::default();
    let server = WebhookServer::start(Router::new().route("/judge", recorder.route(judge))).await;
    let configuration = json!({"apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingWebhookConfiguration", "metadata": {"name": "subresource-admission"},
        "webhooks": [
            webhook("eviction.example.com", &server, "/judge", "pods/eviction", namespace),
            webhook("binding.example.com", &server, "/judge", "pods/binding", namespace)]});
    created(&client, WEBHOOKS, configuration).await;
    let pods = format!("/api/v1/namespaces/{namespace}/pods");
    for name in ["kept", "evictee", "bound"] {
        created(&client, &pods, pod(name)).await;
    }
    let eviction =
        |name: &str| json!({"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": name}});

    // No pod is named so: refused once the webhook is called, not found before.
    let probe_path = format!("{pods}/kept-probe/eviction");
    let probe = || post(&client, &probe_path, eviction("kept-probe"));
    until_enforced("the webhook on pods/eviction", probe, |a| a.status == 403).await;
    let refused = post(&client, &format!("{pods}/kept/eviction"), eviction("kept")).await;
    assert_eq!(refused.status, 403, "{}", refused.body);
    assert_eq!(
        refused.body["message"],
        "admission webhook \"eviction.example.com\" denied the request: not this one"
    );
    let kept = request(&client, "GET", &format!("{pods}/kept"), "", Value::Null).await;
    assert_eq!(kept.status, 200, "a refused eviction deletes nothing");

    recorder.clear();
    let evicted = post(&client, &format!("{pods}/evictee/eviction"), eviction("evictee")).await;
    assert_eq!(evicted.status, 201, "{}", evicted.body);
    let reviews = recorder.requests();
    assert_eq!(reviews.len(), 1, "{reviews:?}");
    assert_eq!(
        described(&reviews[0]),
        pod_subresource_create(("policy", "Eviction"), "eviction", "evictee", namespace)
    );

    let binding = |node: &str| {
        json!({"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "bound"},
        "target": {"apiVersion": "v1", "kind": "Node", "name": node}})
    };
    let bind = format!("{pods}/bound/binding");
    let refused = post(&client, &bind, binding("forbidden-node")).await;
    assert_eq!(refused.status, 403, "{}", refused.body);
    assert_eq!(
        refused.body["message"],
        "admission webhook \"binding.example.com\" denied the request: not this one"
    );
    recorder.clear();
    let bound = post(&client, &bind, binding("node-a")).await;
    assert_eq!(bound.status, 201, "{}", bound.body);
    let reviews = recorder.requests();
    assert_eq!(reviews.len(), 1, "{reviews:?}");
    assert_eq!(
        described(&reviews[0]),
        pod_subresource_create(("", "Binding"), "binding", "bound", namespace)
    );
    assert_eq!(reviews[0]["object"]["target"]["name"], "node-a");
    let pod = request(&client, "GET", &format!("{pods}/bound"), "", Value::Null).await;
    assert_eq!(pod.body["spec"]["nodeName"], "node-a");
}

testenv::each_control_plane!(
    policies_see_scale_and_status_writes,
    webhooks_see_evictions_and_bindings,
);

/// What a review of a CREATE on a pod's subresource describes (see `described`): the subresource's
/// own kind (`group`, `kind` at v1) posted to the pod `name`, with no old object.
fn pod_subresource_create(
    (group, kind): (&str, &str),
    subresource: &str,
    name: &str,
    namespace: &str,
) -> Value {
    let gvk = json!({"group": group, "version": "v1", "kind": kind});
    let pods = json!({"group": "", "version": "v1", "resource": "pods"});
    let api_version = if group.is_empty() {
        "v1".to_owned()
    } else {
        format!("{group}/v1")
    };
    json!({
        "kind": gvk, "resource": pods, "subResource": subresource,
        "requestKind": gvk, "requestResource": pods, "requestSubResource": subresource,
        "operation": "CREATE", "name": name, "namespace": namespace,
        "objectKind": kind, "objectApiVersion": api_version, "objectName": name,
        "oldObject": null, "options": "CreateOptions",
    })
}

/// Refuses a TokenRequest for the audience [`REFUSED_AUDIENCE`].
fn judge_token(review: &Value) -> Value {
    let audiences = &review["request"]["object"]["spec"]["audiences"];
    match audiences
        .as_array()
        .is_some_and(|list| list.contains(&json!(REFUSED_AUDIENCE)))
    {
        true => json!({"allowed": false, "status": {"code": 403, "message": "not for that audience"}}),
        false => json!({"allowed": true}),
    }
}

const REFUSED_AUDIENCE: &str = "https://refused.example.com";

fn token_request(spec: Value) -> Value {
    json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": spec})
}

/// A TokenRequest is a CREATE of `serviceaccounts/token` named as the account: a validating webhook
/// sees the TokenRequest as the server completed it (its lifetime and audiences defaulted, its name
/// the account's, its status empty) and may refuse it, and so may a ValidatingAdmissionPolicy.
/// `kubectl create token` is refused as the API is.
async fn token_requests_pass_admission(backend: Backend) {
    let plane = ControlPlane::start(backend).await.expect("control plane starts");
    let client = plane.client();
    let namespace = "tokens-admitted";
    labelled_namespace(&client, namespace).await;
    let accounts = format!("/api/v1/namespaces/{namespace}/serviceaccounts");
    let account = json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "builder"}});
    created(&client, &accounts, account).await;
    let token = format!("{accounts}/builder/token");

    let recorder = Recorder::default();
    let server = WebhookServer::start(Router::new().route("/judge", recorder.route(judge_token))).await;
    let configuration = json!({"apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingWebhookConfiguration", "metadata": {"name": "token-admission"},
        "webhooks": [webhook("token.example.com", &server, "/judge", "serviceaccounts/token", namespace)]});
    created(&client, WEBHOOKS, configuration).await;
    let refused_audience = json!({"audiences": [REFUSED_AUDIENCE]});
    let to_refused_audience = || post(&client, &token, token_request(refused_audience.clone()));
    let refused = until_enforced("the webhook on serviceaccounts/token", to_refused_audience, |a| {
        a.status != 201
    })
    .await;
    assert_eq!(refused.status, 403, "{}", refused.body);
    assert_eq!(
        refused.body["message"],
        "admission webhook \"token.example.com\" denied the request: not for that audience"
    );
    recorder.clear();
    let issued = post(&client, &token, token_request(json!({}))).await;
    assert_eq!(issued.status, 201, "{}", issued.body);
    let reviews = recorder.requests();
    assert_eq!(reviews.len(), 1, "{reviews:?}");
    let review = &reviews[0];
    let tokens = json!({"group": "", "version": "v1", "resource": "serviceaccounts"});
    let kind = json!({"group": "authentication.k8s.io", "version": "v1", "kind": "TokenRequest"});
    assert_eq!(
        described(review),
        json!({"kind": kind, "resource": tokens, "subResource": "token",
            "requestKind": kind, "requestResource": tokens, "requestSubResource": "token",
            "operation": "CREATE", "name": "builder", "namespace": namespace,
            "objectKind": "TokenRequest", "objectApiVersion": "authentication.k8s.io/v1",
            "objectName": "builder", "oldObject": null, "options": "CreateOptions"})
    );
    let object = &review["object"];
    assert_eq!(
        object["spec"],
        json!({"audiences": ["https://kubernetes.default.svc"], "boundObjectRef": null, "expirationSeconds": 3600})
    );
    assert_eq!(
        object["status"],
        json!({"token": "", "expirationTimestamp": null})
    );
    assert_eq!(object["metadata"]["namespace"], namespace);
    let entry = &object["metadata"]["managedFields"][0];
    assert_eq!(
        (&entry["subresource"], &entry["operation"], &entry["fieldsV1"]),
        (
            &json!("token"),
            &json!("Update"),
            &json!({"f:spec": {"f:expirationSeconds": {}}})
        ),
        "the managedFields entry of the request as decoded"
    );

    let policy = json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": "short-tokens"},
        "spec": {"failurePolicy": "Fail",
            "matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
                "operations": ["CREATE"], "resources": ["serviceaccounts/token"]}]},
            "validations": [
                {"expression": "object.spec.expirationSeconds <= 3600"},
                {"expression": "object.metadata.name == 'builder' && size(object.spec.audiences) > 0"}]}});
    let binding = json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": "short-tokens-binding"},
        "spec": {"policyName": "short-tokens", "validationActions": ["Deny"],
            "matchResources": {"namespaceSelector": {"matchLabels": {"subresource-admission": namespace}}}}});
    created(&client, POLICIES, policy).await;
    created(&client, BINDINGS, binding).await;
    let long = || post(&client, &token, token_request(json!({"expirationSeconds": 7200})));
    let refused = until_enforced("the policy on serviceaccounts/token", long, |a| a.status != 201).await;
    let said = "ValidatingAdmissionPolicy 'short-tokens' with binding 'short-tokens-binding' denied request: failed expression: object.spec.expirationSeconds <= 3600";
    assert_eq!(
        refused.body,
        json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": format!("serviceaccounts \"builder\" is forbidden: {said}"),
            "reason": "Invalid",
            "details": {"name": "builder", "kind": "serviceaccounts", "causes": [{"message": said}]},
            "code": 422})
    );
    // Its lifetime defaulted to an hour, its audiences to the server's, named as the account: allowed.
    let issued = post(&client, &token, token_request(json!({}))).await;
    assert_eq!(issued.status, 201, "{}", issued.body);
    assert!(
        issued.body["status"]["token"]
            .as_str()
            .is_some_and(|t| !t.is_empty())
    );

    let kubectl = common::kubectl::Kubectl::new(&plane);
    let said_by_kubectl = kubectl
        .fails(&["create", "token", "builder", "--duration=2h", "-n", namespace])
        .await;
    assert!(
        said_by_kubectl.contains(&format!(
            "failed to create token: serviceaccounts \"builder\" is forbidden: {said}"
        )),
        "{said_by_kubectl}"
    );
    kubectl.ok(&["create", "token", "builder", "-n", namespace]).await;
}

testenv::each_control_plane!(token_requests_pass_admission);
