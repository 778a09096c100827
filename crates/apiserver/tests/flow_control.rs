//! API Priority and Fairness as a client sees it: the FlowSchemas and PriorityLevelConfigurations
//! kube-apiserver creates, each FlowSchema's `Dangling` condition (False when its priority level
//! exists, True when not), and the uids of the FlowSchema and priority level a request matched in the
//! headers of its response. Each test runs on the embedded server and on the real kube-apiserver,
//! whose answers are the expected ones.

mod common;

use std::time::Duration;

use common::request;
use serde_json::{Value, json};
use testenv::{Backend, ControlPlane};

const FLOW_SCHEMAS: &str = "/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas";
const PRIORITY_LEVELS: &str = "/apis/flowcontrol.apiserver.k8s.io/v1/prioritylevelconfigurations";

/// How long kube-apiserver's configuration controller may take to write a condition: it works from
/// its informers, within a second or two on an idle machine.
const CONDITIONS_WITHIN: Duration = Duration::from_secs(30);

/// The uids a response names: (FlowSchema, priority level).
async fn classified_as(client: &kube::Client, path: &str) -> (u16, Option<String>, Option<String>) {
    let request = axum::http::Request::builder()
        .method("GET")
        .uri(path)
        .body(kube::client::Body::empty())
        .expect("a request");
    let response = client.send(request).await.expect("an answer");
    let header = |name: &str| {
        response
            .headers()
            .get(name)
            .and_then(|value| value.to_str().ok())
            .map(str::to_owned)
    };
    (
        response.status().as_u16(),
        header("X-Kubernetes-PF-FlowSchema-UID"),
        header("X-Kubernetes-PF-PriorityLevel-UID"),
    )
}

async fn uid(client: &kube::Client, path: &str) -> String {
    let object = request(client, "GET", path, "", Value::Null).await;
    assert_eq!(object.status, 200, "{path}: {}", object.body);
    object.body["metadata"]["uid"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

/// The `Dangling` condition of FlowSchema `name`, once it has one as (status, reason, message).
async fn dangling(client: &kube::Client, name: &str, status: &str) -> (String, String, String) {
    let deadline = tokio::time::Instant::now() + CONDITIONS_WITHIN;
    loop {
        let flow_schema = request(client, "GET", &format!("{FLOW_SCHEMAS}/{name}"), "", Value::Null).await;
        let condition = flow_schema.body["status"]["conditions"]
            .as_array()
            .and_then(|conditions| conditions.iter().find(|c| c["type"] == "Dangling"))
            .cloned();
        if let Some(condition) = condition.filter(|c| c["status"] == status) {
            let text = |field: &str| condition[field].as_str().unwrap_or_default().to_owned();
            assert!(!text("lastTransitionTime").is_empty(), "{condition}");
            return (text("status"), text("reason"), text("message"));
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "{name} has no Dangling={status} condition: {}",
            flow_schema.body
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// A client authenticated as service account `default/{name}`, by a token the server issued.
async fn service_account_client(plane: &ControlPlane, name: &str) -> kube::Client {
    let client = plane.client();
    let accounts = "/api/v1/namespaces/default/serviceaccounts";
    let account = json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": name}});
    assert_eq!(
        request(&client, "POST", accounts, "application/json", account)
            .await
            .status,
        201
    );
    let token_request = json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {}});
    let issued = request(
        &client,
        "POST",
        &format!("{accounts}/{name}/token"),
        "application/json",
        token_request,
    )
    .await;
    assert_eq!(issued.status, 201, "{}", issued.body);
    let token = issued.body["status"]["token"].as_str().unwrap_or_default();
    kube::Client::try_from(plane.kube_config_with_token(Some(token))).expect("a client")
}

/// The mandatory and suggested configuration of kube-apiserver 1.33, every FlowSchema's priority
/// level found.
async fn the_configuration_kube_apiserver_creates_is_served(backend: Backend) {
    let plane = ControlPlane::start(backend).await.expect("control plane starts");
    let client = plane.client();
    let names = |list: Value| -> Vec<String> {
        list["items"]
            .as_array()
            .map(|items| {
                items
                    .iter()
                    .map(|i| i["metadata"]["name"].as_str().unwrap_or_default().to_owned())
                    .collect()
            })
            .unwrap_or_default()
    };
    let levels = request(&client, "GET", PRIORITY_LEVELS, "", Value::Null).await;
    assert_eq!(
        names(levels.body),
        [
            "catch-all",
            "exempt",
            "global-default",
            "leader-election",
            "node-high",
            "system",
            "workload-high",
            "workload-low"
        ]
    );
    let schemas = request(&client, "GET", FLOW_SCHEMAS, "", Value::Null).await;
    let schema_names = names(schemas.body.clone());
    assert_eq!(
        schema_names,
        [
            "catch-all",
            "endpoint-controller",
            "exempt",
            "global-default",
            "kube-controller-manager",
            "kube-scheduler",
            "kube-system-service-accounts",
            "probes",
            "service-accounts",
            "system-leader-election",
            "system-node-high",
            "system-nodes",
            "workload-leader-election"
        ]
    );
    let exempt = request(&client, "GET", &format!("{FLOW_SCHEMAS}/exempt"), "", Value::Null).await;
    assert_eq!(
        exempt.body["spec"],
        json!({"priorityLevelConfiguration": {"name": "exempt"}, "matchingPrecedence": 1,
            "rules": [{"subjects": [{"kind": "Group", "group": {"name": "system:masters"}}],
                "resourceRules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"],
                    "clusterScope": true, "namespaces": ["*"]}],
                "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}]}]})
    );
    assert_eq!(
        exempt.body["metadata"]["annotations"],
        json!({"apf.kubernetes.io/autoupdate-spec": "true"})
    );
    for name in schema_names {
        let (_, reason, message) = dangling(&client, &name, "False").await;
        assert_eq!(reason, "Found");
        assert!(
            message.starts_with("This FlowSchema references the PriorityLevelConfiguration object named"),
            "{message}"
        );
    }
}

/// Every classified response names its FlowSchema and priority level: the administrator's requests
/// the exempt ones, a service account's `service-accounts` and `workload-low`, until a FlowSchema of
/// higher precedence made for it matches first.
async fn responses_name_the_flow_schema_and_priority_level_they_matched(backend: Backend) {
    let plane = ControlPlane::start(backend).await.expect("control plane starts");
    let client = plane.client();
    let exempt = (
        Some(uid(&client, &format!("{FLOW_SCHEMAS}/exempt")).await),
        Some(uid(&client, &format!("{PRIORITY_LEVELS}/exempt")).await),
    );
    for path in [
        "/version",
        "/api/v1/namespaces/default/configmaps",
        "/api/v1/namespaces",
    ] {
        let (status, flow_schema, level) = classified_as(&client, path).await;
        assert_eq!((status, (flow_schema, level)), (200, exempt.clone()), "{path}");
    }

    let account = service_account_client(&plane, "classified").await;
    let (_, flow_schema, level) = classified_as(&account, "/version").await;
    assert_eq!(
        (flow_schema, level),
        (
            Some(uid(&client, &format!("{FLOW_SCHEMAS}/service-accounts")).await),
            Some(uid(&client, &format!("{PRIORITY_LEVELS}/workload-low")).await),
        )
    );
    // A resource request is classified too (by the same FlowSchema: its rules name every resource).
    let (_, flow_schema, _) = classified_as(&account, "/api/v1/namespaces/default/configmaps").await;
    assert_eq!(
        flow_schema,
        Some(uid(&client, &format!("{FLOW_SCHEMAS}/service-accounts")).await)
    );

    let level = json!({"apiVersion": "flowcontrol.apiserver.k8s.io/v1", "kind": "PriorityLevelConfiguration",
        "metadata": {"name": "e2e-testing-prioritylevel"},
        "spec": {"type": "Limited", "limited": {"nominalConcurrencyShares": 1,
            "limitResponse": {"type": "Reject"}}}});
    let level = request(&client, "POST", PRIORITY_LEVELS, "application/json", level).await;
    assert_eq!(level.status, 201, "{}", level.body);
    let schema = json!({"apiVersion": "flowcontrol.apiserver.k8s.io/v1", "kind": "FlowSchema",
        "metadata": {"name": "e2e-testing-flowschema"},
        "spec": {"matchingPrecedence": 1000, "priorityLevelConfiguration": {"name": "e2e-testing-prioritylevel"},
            "distinguisherMethod": {"type": "ByUser"},
            "rules": [{"subjects": [{"kind": "ServiceAccount",
                    "serviceAccount": {"namespace": "default", "name": "classified"}}],
                "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}]}]}});
    let schema = request(&client, "POST", FLOW_SCHEMAS, "application/json", schema).await;
    assert_eq!(schema.status, 201, "{}", schema.body);
    dangling(&client, "e2e-testing-flowschema", "False").await;
    let made = (
        schema.body["metadata"]["uid"].as_str().map(str::to_owned),
        level.body["metadata"]["uid"].as_str().map(str::to_owned),
    );
    // kube-apiserver's filter takes up a new FlowSchema from its informers, after the condition.
    let deadline = tokio::time::Instant::now() + CONDITIONS_WITHIN;
    loop {
        let (_, flow_schema, level) = classified_as(&account, "/version").await;
        if (flow_schema.clone(), level.clone()) == made {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "still {flow_schema:?} {level:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // Its resource requests match no rule of it, and go on to the suggested FlowSchemas.
    let (_, flow_schema, _) = classified_as(&account, "/api/v1/namespaces/default/configmaps").await;
    assert_ne!(flow_schema, made.0);
}

/// A FlowSchema naming a priority level that does not exist dangles, with kube-apiserver's reason
/// and message, until the priority level is made.
async fn a_flow_schema_naming_a_missing_priority_level_dangles(backend: Backend) {
    let plane = ControlPlane::start(backend).await.expect("control plane starts");
    let client = plane.client();
    let schema = json!({"apiVersion": "flowcontrol.apiserver.k8s.io/v1", "kind": "FlowSchema",
        "metadata": {"name": "orphan"},
        "spec": {"matchingPrecedence": 500, "priorityLevelConfiguration": {"name": "not-yet"},
            "rules": [{"subjects": [{"kind": "Group", "group": {"name": "system:authenticated"}}],
                "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}]}]}});
    let created = request(&client, "POST", FLOW_SCHEMAS, "application/json", schema).await;
    assert_eq!(created.status, 201, "{}", created.body);
    assert_eq!(
        dangling(&client, "orphan", "True").await,
        (
            "True".to_owned(),
            "NotFound".to_owned(),
            "This FlowSchema references the PriorityLevelConfiguration object named \"not-yet\" but there is no such object"
                .to_owned()
        )
    );
    let entries = request(&client, "GET", &format!("{FLOW_SCHEMAS}/orphan"), "", Value::Null).await;
    let writer = entries.body["metadata"]["managedFields"]
        .as_array()
        .and_then(|entries| entries.iter().find(|e| e["subresource"] == "status"))
        .cloned()
        .unwrap_or_default();
    assert_eq!(
        (&writer["manager"], &writer["operation"]),
        (
            &json!("api-priority-and-fairness-config-consumer-v1"),
            &json!("Apply")
        )
    );

    let level = json!({"apiVersion": "flowcontrol.apiserver.k8s.io/v1", "kind": "PriorityLevelConfiguration",
        "metadata": {"name": "not-yet"}, "spec": {"type": "Limited", "limited": {"nominalConcurrencyShares": 1,
            "limitResponse": {"type": "Reject"}}}});
    assert_eq!(
        request(&client, "POST", PRIORITY_LEVELS, "application/json", level)
            .await
            .status,
        201
    );
    assert_eq!(
        dangling(&client, "orphan", "False").await,
        (
            "False".to_owned(),
            "Found".to_owned(),
            "This FlowSchema references the PriorityLevelConfiguration object named \"not-yet\" and it exists"
                .to_owned()
        )
    );
    let deleted = request(
        &client,
        "DELETE",
        &format!("{PRIORITY_LEVELS}/not-yet"),
        "",
        Value::Null,
    )
    .await;
    assert_eq!(deleted.status, 200, "{}", deleted.body);
    dangling(&client, "orphan", "True").await;
}

/// A request as another user (`Impersonate-User`) is classified as that user, and `/metrics` gives
/// each priority level its nominal seats: its shares of kube-apiserver's 600, rounded up.
async fn impersonated_requests_are_classified_as_the_user_and_metrics_show_each_level(backend: Backend) {
    let plane = ControlPlane::start(backend).await.expect("control plane starts");
    let client = plane.client();
    let level = json!({"apiVersion": "flowcontrol.apiserver.k8s.io/v1", "kind": "PriorityLevelConfiguration",
        "metadata": {"name": "noxu-level"},
        "spec": {"type": "Limited", "limited": {"nominalConcurrencyShares": 1,
            "limitResponse": {"type": "Reject"}}}});
    let level = request(&client, "POST", PRIORITY_LEVELS, "application/json", level).await;
    assert_eq!(level.status, 201, "{}", level.body);
    let schema = json!({"apiVersion": "flowcontrol.apiserver.k8s.io/v1", "kind": "FlowSchema",
        "metadata": {"name": "noxu-schema"},
        "spec": {"matchingPrecedence": 1000, "priorityLevelConfiguration": {"name": "noxu-level"},
            "distinguisherMethod": {"type": "ByUser"},
            "rules": [{"subjects": [{"kind": "User", "user": {"name": "noxu"}}],
                "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}]}]}});
    let schema = request(&client, "POST", FLOW_SCHEMAS, "application/json", schema).await;
    assert_eq!(schema.status, 201, "{}", schema.body);
    dangling(&client, "noxu-schema", "False").await;
    let made = (
        schema.body["metadata"]["uid"].as_str().map(str::to_owned),
        level.body["metadata"]["uid"].as_str().map(str::to_owned),
    );

    let as_user = |user: &'static str| {
        let client = client.clone();
        async move {
            let request = axum::http::Request::builder()
                .method("GET")
                .uri("/version")
                .header("Impersonate-User", user)
                .header("Impersonate-Group", "system:authenticated")
                .body(kube::client::Body::empty())
                .expect("a request");
            let response = client.send(request).await.expect("an answer");
            let header = |name: &str| {
                response
                    .headers()
                    .get(name)
                    .and_then(|value| value.to_str().ok())
                    .map(str::to_owned)
            };
            (
                header("X-Kubernetes-PF-FlowSchema-UID"),
                header("X-Kubernetes-PF-PriorityLevel-UID"),
            )
        }
    };
    let deadline = tokio::time::Instant::now() + CONDITIONS_WITHIN;
    loop {
        let classified = as_user("noxu").await;
        if classified == made {
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "still {classified:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // Another user goes on to the FlowSchemas every cluster has: not the administrator's exempt one.
    let (flow_schema, _) = as_user("foo").await;
    assert!(flow_schema.is_some());
    assert_ne!(flow_schema, made.0);
    assert_ne!(
        flow_schema,
        Some(uid(&client, &format!("{FLOW_SCHEMAS}/exempt")).await)
    );

    // Who the request acts as, as the server sees it.
    let review = json!({"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"});
    let reviewed = {
        let request = axum::http::Request::builder()
            .method("POST")
            .uri("/apis/authentication.k8s.io/v1/selfsubjectreviews")
            .header("content-type", "application/json")
            .header("Impersonate-User", "noxu")
            .body(kube::client::Body::from(
                serde_json::to_vec(&review).expect("JSON"),
            ))
            .expect("a request");
        let response = client.send(request).await.expect("an answer");
        let bytes = axum::body::to_bytes(axum::body::Body::new(response.into_body()), usize::MAX)
            .await
            .expect("a body");
        serde_json::from_slice::<Value>(&bytes).expect("a review")
    };
    assert_eq!(
        reviewed["status"]["userInfo"],
        json!({"username": "noxu", "groups": ["system:authenticated"]})
    );

    // The 1 share of the new level among the 245 of the levels every cluster has.
    let deadline = tokio::time::Instant::now() + CONDITIONS_WITHIN;
    loop {
        let metrics = common::request(&client, "GET", "/metrics", "", Value::Null).await;
        assert_eq!(metrics.status, 200);
        let seats = |level: &str| {
            let prefix = format!("apiserver_flowcontrol_nominal_limit_seats{{priority_level=\"{level}\"}} ");
            metrics
                .text
                .lines()
                .find_map(|line| line.strip_prefix(&prefix).map(str::to_owned))
        };
        if seats("noxu-level").is_some() {
            assert_eq!(seats("noxu-level").as_deref(), Some("3"), "{}", metrics.text);
            assert_eq!(seats("catch-all").as_deref(), Some("13"));
            assert_eq!(seats("exempt").as_deref(), Some("0"));
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "no seats for the new level"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

testenv::each_control_plane!(
    impersonated_requests_are_classified_as_the_user_and_metrics_show_each_level,
    the_configuration_kube_apiserver_creates_is_served,
    responses_name_the_flow_schema_and_priority_level_they_matched,
    a_flow_schema_naming_a_missing_priority_level_dangles,
);
