//! The self-subject reviews `kubectl auth can-i` and `kubectl auth whoami` send, as JSON (as kube-rs
//! and the Python client send them), with the administrator's token: the embedded server answers as
//! the real kube-apiserver answers a member of `system:masters`. kubectl itself sends these as
//! protobuf (crates/apiserver/tests/protobuf.rs).

mod common;

use std::str::FromStr;

use common::request;
use serde_json::{Value, json};
use testenv::{Backend, ControlPlane};

const ACCESS: &str = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews";
const RULES: &str = "/apis/authorization.k8s.io/v1/selfsubjectrulesreviews";
const WHOAMI: &str = "/apis/authentication.k8s.io/v1/selfsubjectreviews";

async fn ask(client: &kube::Client, path: &str, review: Value) -> Value {
    let answer = request(client, "POST", path, "application/json", review).await;
    assert_eq!(answer.status, 201, "{}", answer.body);
    answer.body
}

async fn self_reviews_answer_for_the_administrator(backend: Backend) {
    let plane = ControlPlane::start(backend).await.expect("control plane starts");
    let client = plane.client();

    let can_i = |verb: &str, resource: &str| {
        json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
            "spec": {"resourceAttributes": {"namespace": "default", "verb": verb, "resource": resource}}})
    };
    let allowed = ask(&client, ACCESS, can_i("create", "pods")).await;
    assert_eq!(allowed["kind"], "SelfSubjectAccessReview");
    assert_eq!(allowed["status"]["allowed"], true, "{allowed}");
    assert_eq!(
        allowed["spec"],
        can_i("create", "pods")["spec"],
        "the question is echoed"
    );
    // The review is answered as it was created: with the managedFields of its create.
    let entries = allowed["metadata"]["managedFields"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert_eq!(entries.len(), 1, "{allowed}");
    assert_eq!(
        (
            &entries[0]["operation"],
            &entries[0]["apiVersion"],
            &entries[0]["fieldsV1"]
        ),
        (
            &json!("Update"),
            &json!("authorization.k8s.io/v1"),
            &json!({"f:spec": {"f:resourceAttributes": {".": {}, "f:namespace": {}, "f:resource": {}, "f:verb": {}}}})
        ),
        "{allowed}"
    );
    assert!(entries[0]["time"].is_string(), "{allowed}");
    assert_eq!(allowed["metadata"]["creationTimestamp"], Value::Null);
    let url = json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
        "spec": {"nonResourceAttributes": {"path": "/metrics", "verb": "get"}}});
    assert_eq!(ask(&client, ACCESS, url).await["status"]["allowed"], true);

    let rules = json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectRulesReview",
        "spec": {"namespace": "default"}});
    let rules = ask(&client, RULES, rules).await;
    let everything = json!({"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]});
    let resource_rules = rules["status"]["resourceRules"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert!(resource_rules.contains(&everything), "{rules}");
    assert_eq!(rules["status"]["incomplete"], false);
    assert_eq!(
        rules["metadata"],
        json!({"creationTimestamp": null}),
        "a rules review is answered with a new object"
    );

    let whoami = json!({"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"});
    let whoami = ask(&client, WHOAMI, whoami).await;
    assert_eq!(whoami["status"]["userInfo"]["username"], "admin");
    let groups = whoami["status"]["userInfo"]["groups"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert!(groups.contains(&json!("system:masters")), "{whoami}");
    let stamped = whoami["metadata"]["creationTimestamp"]
        .as_str()
        .unwrap_or_default();
    assert!(
        jiff::Timestamp::from_str(stamped).is_ok(),
        "a SelfSubjectReview is stamped with the time it was answered: {whoami}"
    );
    assert!(whoami["metadata"].get("managedFields").is_none(), "{whoami}");

    // An access review must name a resource or a non-resource URL.
    let empty =
        json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview", "spec": {}});
    let refused = request(&client, "POST", ACCESS, "application/json", empty).await;
    assert_eq!(
        (refused.status, &refused.body["reason"]),
        (422, &json!("Invalid")),
        "{}",
        refused.body
    );
}

testenv::each_control_plane!(self_reviews_answer_for_the_administrator);
