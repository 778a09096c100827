//! ValidatingAdmissionPolicies as a client sees them: a bound policy refuses what its validations do
//! not hold for, with kube-apiserver's Status; `variables` are computed in order, each using those
//! before it; a variable that fails to evaluate fails what reads it (unless `failurePolicy: Ignore`);
//! a `Warn` binding warns instead of refusing. Each test runs on the embedded server and on the real
//! kube-apiserver, whose answers are the expected ones.

mod common;

use std::time::Duration;

use common::{Answer, request};
use serde_json::{Value, json};
use testenv::{Backend, ControlPlane};

const POLICIES: &str = "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies";
const BINDINGS: &str = "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicybindings";

/// How long kube-apiserver may take to enforce a new policy and binding: its admission plugin learns
/// of them from its informers, within a second or two on an idle machine.
const ENFORCED_WITHIN: Duration = Duration::from_secs(30);

fn deployment(name: &str, replicas: i64) -> Value {
    json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "labels": {"app": name}},
        "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "c", "image": "busybox"}]}}}})
}

async fn create(client: &kube::Client, namespace: &str, object: Value) -> Answer {
    let plural = match object["kind"].as_str() {
        Some("ReplicaSet") => "replicasets",
        _ => "deployments",
    };
    let path = format!("/apis/apps/v1/namespaces/{namespace}/{plural}");
    request(client, "POST", &path, "application/json", object).await
}

/// A namespace labelled for the policies' bindings, and the policy and binding given, once a marker
/// Deployment of one replica is refused (kube-apiserver enforces a new binding a moment later).
async fn bind(client: &kube::Client, namespace: &str, policy: Value, binding: Value) {
    let labelled = json!({"apiVersion": "v1", "kind": "Namespace",
        "metadata": {"name": namespace, "labels": {"policies": namespace}}});
    let created = request(client, "POST", "/api/v1/namespaces", "application/json", labelled).await;
    assert!(matches!(created.status, 201 | 409), "{}", created.body);
    for (path, object) in [(POLICIES, policy), (BINDINGS, binding)] {
        let created = request(client, "POST", path, "application/json", object).await;
        assert_eq!(created.status, 201, "{}", created.body);
    }
    let deadline = tokio::time::Instant::now() + ENFORCED_WITHIN;
    loop {
        let marker = create(client, namespace, deployment("marker", 1)).await;
        if marker.status == 201 {
            let path = format!("/apis/apps/v1/namespaces/{namespace}/deployments/marker");
            request(client, "DELETE", &path, "", Value::Null).await;
        } else {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the policy is never enforced"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

fn policy(name: &str, spec: Value) -> Value {
    let mut spec = spec;
    spec["matchConstraints"] = json!({"resourceRules": [{"apiGroups": ["apps"], "apiVersions": ["v1"],
        "operations": ["CREATE", "UPDATE"], "resources": ["deployments"]}]});
    json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": name}, "spec": spec})
}

fn binding(policy: &str, namespace: &str, actions: &[&str]) -> Value {
    json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": format!("{policy}-binding")},
        "spec": {"policyName": policy, "validationActions": actions,
            "matchResources": {"namespaceSelector": {"matchLabels": {"policies": namespace}}}}})
}

fn denial(namespace_name: &str, policy: &str, message: &str) -> Value {
    let said = format!(
        "ValidatingAdmissionPolicy '{policy}' with binding '{policy}-binding' denied request: {message}"
    );
    json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": format!("deployments.apps \"{namespace_name}\" is forbidden: {said}"),
        "reason": "Invalid",
        "details": {"name": namespace_name, "group": "apps", "kind": "deployments", "causes": [{"message": said}]},
        "code": 422})
}

/// The e2e suite's case: variables referring to variables, read by validations.
async fn validations_read_variables_that_read_variables(backend: Backend) {
    let plane = ControlPlane::start(backend).await.expect("control plane starts");
    let client = plane.client();
    let spec = json!({"variables": [
            {"name": "replicas", "expression": "object.spec.replicas"},
            {"name": "oddReplicas", "expression": "variables.replicas % 2 == 1"}],
        "validations": [
            {"expression": "variables.replicas > 1"},
            {"expression": "variables.oddReplicas",
                "messageExpression": "'replicas must be odd, got ' + string(variables.replicas)"}]});
    bind(
        &client,
        "with-variables",
        policy("replicas.example.com", spec),
        binding("replicas.example.com", "with-variables", &["Deny"]),
    )
    .await;
    let one = create(&client, "with-variables", deployment("one", 1)).await;
    assert_eq!(
        one.body,
        denial(
            "one",
            "replicas.example.com",
            "failed expression: variables.replicas > 1"
        )
    );
    let two = create(&client, "with-variables", deployment("two", 2)).await;
    assert_eq!(
        two.body,
        denial("two", "replicas.example.com", "replicas must be odd, got 2")
    );
    assert_eq!(
        create(&client, "with-variables", deployment("three", 3))
            .await
            .status,
        201
    );
    // An update is held to the policy too.
    let path = "/apis/apps/v1/namespaces/with-variables/deployments/three";
    let scaled = request(
        &client,
        "PATCH",
        path,
        "application/merge-patch+json",
        json!({"spec": {"replicas": 4}}),
    )
    .await;
    assert_eq!(
        scaled.body,
        denial("three", "replicas.example.com", "replicas must be odd, got 4")
    );
    // What the policy does not match, or the binding does not select, is let through.
    let replica_set = json!({"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": "rs"},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "rs"}},
            "template": {"metadata": {"labels": {"app": "rs"}}, "spec": {"containers": [{"name": "c", "image": "busybox"}]}}}});
    assert_eq!(create(&client, "with-variables", replica_set).await.status, 201);
    assert_eq!(
        create(&client, "default", deployment("elsewhere", 1))
            .await
            .status,
        201
    );
}

/// A variable that fails to evaluate fails the validation that reads it, naming it; under
/// `failurePolicy: Ignore` that validation is passed over. A validation that reads no broken
/// variable still counts.
async fn a_variable_that_fails_fails_what_reads_it(backend: Backend) {
    let plane = ControlPlane::start(backend).await.expect("control plane starts");
    let client = plane.client();
    let spec = |failure_policy: &str| {
        json!({"failurePolicy": failure_policy, "variables": [
                {"name": "missing", "expression": "object.spec.nosuch"},
                {"name": "doubled", "expression": "variables.missing * 2"}],
            "validations": [
                {"expression": "object.spec.replicas > 1", "message": "at least two replicas"},
                {"expression": "object.spec.replicas < 5 || variables.doubled == 2"}]})
    };
    bind(
        &client,
        "failing",
        policy("failing.example.com", spec("Fail")),
        binding("failing.example.com", "failing", &["Deny"]),
    )
    .await;
    let refused = create(&client, "failing", deployment("many", 5)).await;
    assert_eq!(
        refused.body,
        denial(
            "many",
            "failing.example.com",
            "expression 'object.spec.replicas < 5 || variables.doubled == 2' resulted in error: \
             composited variable \"doubled\" fails to evaluate: composited variable \"missing\" fails to \
             evaluate: no such key: nosuch"
        )
    );
    assert_eq!(
        create(&client, "failing", deployment("three", 3)).await.status,
        201
    );

    bind(
        &client,
        "ignoring",
        policy("ignoring.example.com", spec("Ignore")),
        binding("ignoring.example.com", "ignoring", &["Deny"]),
    )
    .await;
    assert_eq!(
        create(&client, "ignoring", deployment("many", 5)).await.status,
        201
    );
    let refused = create(&client, "ignoring", deployment("single", 1)).await;
    assert_eq!(
        refused.body,
        denial("single", "ignoring.example.com", "at least two replicas")
    );
}

/// A binding with the `Warn` action lets the request through with a warning for each failure.
async fn a_warn_binding_warns_instead_of_refusing(backend: Backend) {
    let plane = ControlPlane::start(backend).await.expect("control plane starts");
    let client = plane.client();
    let spec = json!({"validations": [
        {"expression": "object.spec.replicas > 1", "message": "at least two replicas"},
        {"expression": "object.spec.replicas % 2 == 1", "reason": "Forbidden"}]});
    // The namespace is bound twice: to refuse a marker while enforcement starts, then to warn.
    bind(
        &client,
        "warned",
        policy("warned.example.com", spec.clone()),
        binding("warned.example.com", "warned", &["Deny"]),
    )
    .await;
    let path = format!("{BINDINGS}/warned.example.com-binding");
    let rebound = request(
        &client,
        "PATCH",
        &path,
        "application/merge-patch+json",
        json!({"spec": {"validationActions": ["Warn"]}}),
    )
    .await;
    assert_eq!(rebound.status, 200, "{}", rebound.body);
    let deadline = tokio::time::Instant::now() + ENFORCED_WITHIN;
    let warned = loop {
        let answer = create(&client, "warned", deployment("zero", 0)).await;
        if answer.status == 201 {
            break answer;
        }
        assert!(tokio::time::Instant::now() < deadline, "{}", answer.body);
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    assert_eq!(
        warned.warnings,
        [
            "299 - \"Validation failed for ValidatingAdmissionPolicy 'warned.example.com' with binding \
             'warned.example.com-binding': at least two replicas\"",
            "299 - \"Validation failed for ValidatingAdmissionPolicy 'warned.example.com' with binding \
             'warned.example.com-binding': failed expression: object.spec.replicas % 2 == 1\""
        ]
    );
}

testenv::each_control_plane!(
    validations_read_variables_that_read_variables,
    a_variable_that_fails_fails_what_reads_it,
    a_warn_binding_warns_instead_of_refusing,
);
