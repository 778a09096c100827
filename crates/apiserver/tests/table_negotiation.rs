//! Which requests kube-apiserver answers as a Table, and in which version: wherever a resource's
//! registry has a table convertor (reads and writes alike, `meta.k8s.io/v1` or its older
//! `v1beta1`), and nowhere else, where a client asking for a Table alone gets 406.

mod common;

use common::{Answer, exchange};
use serde_json::{Value, json};
use testenv::{Backend, ControlPlane};

const TABLE: &str = "application/json;as=Table;v=v1;g=meta.k8s.io";
const TABLE_V1BETA1: &str = "application/json;as=Table;v=v1beta1;g=meta.k8s.io";
const NOT_ACCEPTABLE: &str = "only the following media types are accepted: application/json, \
                              application/yaml, application/vnd.kubernetes.protobuf";

async fn send(client: &kube::Client, method: &str, path: &str, accept: &str, body: Value) -> Answer {
    let body = if body.is_null() {
        Vec::new()
    } else {
        serde_json::to_vec(&body).expect("a JSON body")
    };
    let content_type = if body.is_empty() { "" } else { "application/json" };
    exchange(client, method, path, content_type, accept, body).await
}

/// The first two cells of the Table's first row (the ones after may hold an age).
fn first_cells(table: &Value) -> Vec<Value> {
    table["rows"][0]["cells"]
        .as_array()
        .map(|cells| cells.iter().take(2).cloned().collect())
        .unwrap_or_default()
}

async fn a_review_has_no_table(backend: Backend) {
    let plane = ControlPlane::start(backend).await.expect("control plane starts");
    let client = plane.client();
    let reviews = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews";
    let review = json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
        "spec": {"nonResourceAttributes": {"path": "/", "verb": "get"}}});
    for accept in [TABLE, TABLE_V1BETA1] {
        let refused = send(&client, "POST", reviews, accept, review.clone()).await;
        assert_eq!(
            (refused.status, &refused.body["reason"], &refused.body["message"]),
            (406, &json!("NotAcceptable"), &json!(NOT_ACCEPTABLE)),
            "{accept}: {}",
            refused.text
        );
    }
    // A client that lists JSON after the Table gets the review.
    let answered = send(
        &client,
        "POST",
        reviews,
        &format!("{TABLE},application/json"),
        review,
    )
    .await;
    assert_eq!(
        (answered.status, &answered.body["kind"]),
        (201, &json!("SelfSubjectAccessReview")),
        "{}",
        answered.text
    );
}

async fn tables_answer_reads_and_writes_in_either_version(backend: Backend) {
    let plane = ControlPlane::start(backend).await.expect("control plane starts");
    let client = plane.client();
    let configmaps = "/api/v1/namespaces/default/configmaps";
    let config_map = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings"},
        "data": {"a": "1", "b": "2"}});

    // A write answers the object written as a Table: a dry run's has no resourceVersion.
    let dry_run = send(
        &client,
        "POST",
        &format!("{configmaps}?dryRun=All"),
        TABLE,
        config_map.clone(),
    )
    .await;
    assert_eq!(
        (dry_run.status, &dry_run.body["kind"]),
        (201, &json!("Table")),
        "{}",
        dry_run.text
    );
    assert_eq!(dry_run.body["metadata"], json!({}));
    assert_eq!(first_cells(&dry_run.body), [json!("settings"), json!(2)]);
    let created = send(&client, "POST", configmaps, TABLE_V1BETA1, config_map).await;
    assert_eq!(created.status, 201, "{}", created.text);
    assert_eq!(created.body["apiVersion"], "meta.k8s.io/v1beta1");
    let patch = serde_json::to_vec(&json!({"data": {"c": "3"}})).expect("JSON");
    let patched = exchange(
        &client,
        "PATCH",
        &format!("{configmaps}/settings"),
        "application/merge-patch+json",
        TABLE,
        patch,
    )
    .await;
    assert_eq!(patched.status, 200, "{}", patched.text);
    assert_eq!(first_cells(&patched.body)[1], json!(3));

    // Reads in either version: the same columns and cells, under each version's name.
    let v1 = send(
        &client,
        "GET",
        &format!("{configmaps}/settings"),
        TABLE,
        Value::Null,
    )
    .await;
    let beta = send(
        &client,
        "GET",
        &format!("{configmaps}/settings"),
        TABLE_V1BETA1,
        Value::Null,
    )
    .await;
    assert_eq!(
        (v1.body["apiVersion"].clone(), beta.body["apiVersion"].clone()),
        (json!("meta.k8s.io/v1"), json!("meta.k8s.io/v1beta1"))
    );
    assert_eq!(beta.body["columnDefinitions"], v1.body["columnDefinitions"]);
    assert_eq!(first_cells(&beta.body), first_cells(&v1.body));
    let row_object = &beta.body["rows"][0]["object"];
    assert_eq!(
        (
            &row_object["kind"],
            &row_object["apiVersion"],
            &row_object["metadata"]["name"]
        ),
        (
            &json!("PartialObjectMetadata"),
            &json!("meta.k8s.io/v1beta1"),
            &json!("settings")
        )
    );

    // A v1beta1 list in pages, as the e2e suite reads pod templates.
    let templates = "/api/v1/namespaces/default/podtemplates";
    for index in 0..3 {
        let template = json!({"apiVersion": "v1", "kind": "PodTemplate",
            "metadata": {"name": format!("template-{index:04}")},
            "template": {"spec": {"containers": [{"name": "test", "image": "test2"}]}}});
        let created = send(&client, "POST", templates, "application/json", template).await;
        assert_eq!(created.status, 201, "{}", created.text);
    }
    let page = send(
        &client,
        "GET",
        &format!("{templates}?limit=2"),
        TABLE_V1BETA1,
        Value::Null,
    )
    .await;
    assert_eq!(page.body["apiVersion"], "meta.k8s.io/v1beta1", "{}", page.text);
    let rows = page.body["rows"].as_array().cloned().unwrap_or_default();
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[1]["cells"][0], "template-0001");
    assert!(
        page.body["metadata"]["resourceVersion"]
            .as_str()
            .is_some_and(|rv| !rv.is_empty())
    );
    let token = page.body["metadata"]["continue"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(!token.is_empty(), "{}", page.text);
    let next = send(
        &client,
        "GET",
        &format!("{templates}?continue={token}"),
        TABLE_V1BETA1,
        Value::Null,
    )
    .await;
    assert_eq!(first_cells(&next.body)[0], "template-0002", "{}", next.text);

    // A status subresource has the table of its kind.
    let status = send(
        &client,
        "GET",
        "/api/v1/namespaces/default/status",
        TABLE,
        Value::Null,
    )
    .await;
    assert_eq!(
        (status.status, &status.body["kind"]),
        (200, &json!("Table")),
        "{}",
        status.text
    );
    assert_eq!(first_cells(&status.body), [json!("default"), json!("Active")]);
}

testenv::each_control_plane!(
    a_review_has_no_table,
    tables_answer_reads_and_writes_in_either_version
);
