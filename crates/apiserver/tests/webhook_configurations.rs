//! Webhook configurations as stored and refused (A1): the v1 defaults kube-apiserver fills in (what
//! `kubectl get -o yaml` shows) and its validation, with its exact messages. Each test runs on the
//! embedded server and on the real kube-apiserver, whose answers are the expected ones.

mod common;

use common::request;
use serde_json::{Value, json};
use testenv::{Backend, ControlPlane};

const KINDS: [(&str, &str); 2] = [
    ("mutatingwebhookconfigurations", "MutatingWebhookConfiguration"),
    (
        "validatingwebhookconfigurations",
        "ValidatingWebhookConfiguration",
    ),
];

async fn post(
    client: &kube::Client,
    (plural, kind): (&str, &str),
    name: &str,
    webhooks: Value,
) -> common::Answer {
    let body = json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": kind,
        "metadata": {"name": name}, "webhooks": webhooks});
    let path = format!("/apis/admissionregistration.k8s.io/v1/{plural}");
    request(client, "POST", &path, "application/json", body).await
}

fn minimal() -> Value {
    json!({"name": "minimal.example.com", "clientConfig": {"url": "https://127.0.0.1:1/hook"},
        "rules": [{"operations": ["CREATE"], "apiGroups": ["nothing.example.com"], "apiVersions": ["v1"],
                   "resources": ["things"]}],
        "sideEffects": "None", "admissionReviewVersions": ["v1"]})
}

async fn stored_configurations_carry_the_v1_defaults(backend: Backend) {
    let plane = ControlPlane::start(backend).await.expect("control plane starts");
    let client = plane.client();
    for (plural, kind) in KINDS {
        let created = post(&client, (plural, kind), "defaults", json!([minimal()])).await;
        assert_eq!(created.status, 201, "{}", created.body);
        let path = format!("/apis/admissionregistration.k8s.io/v1/{plural}/defaults");
        let read = request(&client, "GET", &path, "", Value::Null).await;
        let mut expected = minimal();
        expected["failurePolicy"] = json!("Fail");
        expected["matchPolicy"] = json!("Equivalent");
        expected["namespaceSelector"] = json!({});
        expected["objectSelector"] = json!({});
        expected["timeoutSeconds"] = json!(10);
        expected["rules"][0]["scope"] = json!("*");
        if kind == "MutatingWebhookConfiguration" {
            expected["reinvocationPolicy"] = json!("Never");
        }
        assert_eq!(read.body["webhooks"], json!([expected]), "{kind}");
    }
}

/// A webhook `minimal()` but for `changes` (a `null` removes the field).
fn changed(changes: Value) -> Value {
    let mut webhook = minimal();
    for (key, value) in changes.as_object().into_iter().flatten() {
        match value {
            Value::Null => {
                webhook.as_object_mut().map(|w| w.remove(key));
            }
            value => webhook[key] = value.clone(),
        }
    }
    webhook
}

async fn invalid_configurations_are_refused_with_every_cause(backend: Backend) {
    let plane = ControlPlane::start(backend).await.expect("control plane starts");
    let client = plane.client();
    let cases = [
        (
            json!([changed(json!({"sideEffects": null}))]),
            "webhooks[0].sideEffects: Required value: must specify one of None, NoneOnDryRun",
        ),
        (
            json!([changed(json!({"admissionReviewVersions": null}))]),
            "webhooks[0].admissionReviewVersions: Required value: must specify one of v1, v1beta1",
        ),
        (
            json!([changed(json!({"name": "nodots", "sideEffects": "Unknown"}))]),
            "[webhooks[0].name: Invalid value: \"nodots\": should be a domain with at least three segments \
             separated by dots, webhooks[0].sideEffects: Unsupported value: \"Unknown\": supported values: \
             \"None\", \"NoneOnDryRun\"]",
        ),
        (
            json!([changed(json!({"clientConfig": {}}))]),
            "webhooks[0].clientConfig: Required value: exactly one of url or service is required",
        ),
        (
            json!([changed(json!({"clientConfig": {"url": "http://127.0.0.1/hook"}}))]),
            "webhooks[0].clientConfig.url: Invalid value: \"http\": 'https' is the only allowed URL scheme; \
             desired format: https://host[/path]",
        ),
        (
            json!([changed(
                json!({"failurePolicy": "Maybe", "matchPolicy": "Sometimes", "timeoutSeconds": 31})
            )]),
            "[webhooks[0].failurePolicy: Unsupported value: \"Maybe\": supported values: \"Fail\", \"Ignore\", \
             webhooks[0].matchPolicy: Unsupported value: \"Sometimes\": supported values: \"Equivalent\", \
             \"Exact\", webhooks[0].timeoutSeconds: Invalid value: 31: the timeout value must be between 1 and \
             30 seconds]",
        ),
        (
            json!([changed(
                json!({"rules": [{"operations": ["FOO"], "apiGroups": [], "apiVersions": ["v1"],
                "resources": ["things"], "scope": "Nowhere"}]})
            )]),
            "[webhooks[0].rules[0].operations[0]: Unsupported value: \"FOO\": supported values: \"*\", \
             \"CONNECT\", \"CREATE\", \"DELETE\", \"UPDATE\", webhooks[0].rules[0].apiGroups: Required value, \
             webhooks[0].rules[0].scope: Unsupported value: \"Nowhere\": supported values: \"*\", \"Cluster\", \
             \"Namespaced\"]",
        ),
        (
            json!([minimal(), minimal()]),
            "webhooks[1].name: Duplicate value: \"minimal.example.com\"",
        ),
    ];
    for (plural, kind) in KINDS {
        for (i, (webhooks, causes)) in cases.iter().enumerate() {
            let refused = post(&client, (plural, kind), &format!("invalid-{i}"), webhooks.clone()).await;
            assert_eq!(refused.status, 422, "{}", refused.body);
            assert_eq!(refused.body["reason"], "Invalid");
            assert_eq!(
                refused.body["message"],
                json!(format!(
                    "{kind}.admissionregistration.k8s.io \"invalid-{i}\" is invalid: {causes}"
                ))
            );
        }
    }
    let reinvocation = json!([changed(json!({"reinvocationPolicy": "Always"}))]);
    let refused = post(&client, KINDS[0], "always", reinvocation).await;
    assert_eq!(
        refused.body["message"],
        "MutatingWebhookConfiguration.admissionregistration.k8s.io \"always\" is invalid: \
         webhooks[0].reinvocationPolicy: Unsupported value: \"Always\": supported values: \"IfNeeded\", \"Never\""
    );
}

testenv::each_control_plane!(
    stored_configurations_carry_the_v1_defaults,
    invalid_configurations_are_refused_with_every_cause,
);
