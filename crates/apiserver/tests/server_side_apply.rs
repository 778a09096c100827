//! Server-side apply on lists and maps, as structured-merge-diff decides it: a second manager that
//! applies the values a field already has shares it instead of conflicting; what an applier stops
//! applying is removed (a map list's entry, a set's member, a granular map's key; an atomic list or
//! map is replaced whole) unless another manager owns it too; and a conflict names an updater with
//! the version it wrote. Each test runs on the embedded server and on the real kube-apiserver, whose
//! answers are the expected ones.

mod common;

use common::{Answer, request};
use serde_json::{Value, json};
use testenv::{Backend, ControlPlane};

const APPLY: &str = "application/apply-patch+yaml";
const SHELVES: &str = "/apis/lists.example.com/v1/namespaces/default/shelves";

/// A custom resource with one list or map of each kind structured-merge-diff knows.
fn shelf_crd() -> Value {
    let string = json!({"type": "string"});
    json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "shelves.lists.example.com"},
        "spec": {"group": "lists.example.com", "scope": "Namespaced",
            "names": {"plural": "shelves", "singular": "shelf", "kind": "Shelf"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                    "spec": {"type": "object", "properties": {
                        "books": {"type": "array", "x-kubernetes-list-type": "map",
                            "x-kubernetes-list-map-keys": ["title"],
                            "items": {"type": "object", "required": ["title"], "properties": {
                                "title": string, "pages": {"type": "integer"}}}},
                        "tags": {"type": "array", "x-kubernetes-list-type": "set", "items": string},
                        "order": {"type": "array", "x-kubernetes-list-type": "atomic", "items": string},
                        "labels": {"type": "object", "additionalProperties": string},
                        "sizes": {"type": "object", "x-kubernetes-map-type": "atomic",
                            "additionalProperties": string}}}}}}}]}})
}

async fn apply(client: &kube::Client, path: &str, manager: &str, body: &Value) -> Answer {
    let path = format!("{path}?fieldManager={manager}");
    request(client, "PATCH", &path, APPLY, body.clone()).await
}

/// Each manager's fields, by manager name.
fn owners(object: &Value) -> Vec<(String, String, Value)> {
    let mut owners: Vec<(String, String, Value)> = object["metadata"]["managedFields"]
        .as_array()
        .map(|entries| {
            entries
                .iter()
                .map(|e| {
                    let text = |field: &str| e[field].as_str().unwrap_or_default().to_owned();
                    (text("manager"), text("operation"), e["fieldsV1"].clone())
                })
                .collect()
        })
        .unwrap_or_default();
    owners.sort_by(|a, b| a.0.cmp(&b.0));
    owners
}

fn shelf(name: &str, spec: Value) -> Value {
    json!({"apiVersion": "lists.example.com/v1", "kind": "Shelf",
        "metadata": {"name": name, "finalizers": ["example.com/keep"]}, "spec": spec})
}

async fn install_shelves(plane: &ControlPlane, client: &kube::Client) {
    common::install_crd(client, shelf_crd()).await;
    testenv::discovered(&plane.client(), "lists.example.com", "v1", "shelves").await;
}

async fn release(client: &kube::Client, path: &str) {
    let patch = json!({"metadata": {"finalizers": null}});
    request(client, "PATCH", path, "application/merge-patch+json", patch).await;
}

/// The e2e suite's case: a second manager applying a body identical to the first's is no conflict,
/// and each then owns the same fields (the second without a time: its apply changed nothing).
async fn a_second_manager_applying_the_same_values_shares_them(backend: Backend) {
    let plane = ControlPlane::start(backend).await.expect("control plane starts");
    let client = plane.client();
    let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "shared"},
        "spec": {"containers": [{"name": "c", "image": "busybox"}]}});
    let deployment = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "shared"},
        "spec": {"selector": {"matchLabels": {"app": "shared"}},
            "template": {"metadata": {"labels": {"app": "shared"}},
                "spec": {"containers": [{"name": "c", "image": "busybox"}]}}}});
    install_shelves(&plane, &client).await;
    let shelf = shelf(
        "shared",
        json!({"books": [{"title": "a", "pages": 1}], "tags": ["x"], "order": ["x"],
            "labels": {"k": "v"}, "sizes": {"s": "1"}}),
    );
    for (path, body) in [
        ("/api/v1/namespaces/default/pods/shared", &pod),
        ("/apis/apps/v1/namespaces/default/deployments/shared", &deployment),
        (&format!("{SHELVES}/shared"), &shelf),
    ] {
        let first = apply(&client, path, "first", body).await;
        assert_eq!(first.status, 201, "{}", first.body);
        let second = apply(&client, path, "second", body).await;
        assert_eq!(second.status, 200, "{path}: {}", second.body);
        // The appliers' entries alone: a Deployment's controller may already have written its
        // revision annotation and status under managers of its own.
        let appliers = |manager: &str| manager == "first" || manager == "second";
        let owners: Vec<_> = owners(&second.body)
            .into_iter()
            .filter(|(manager, ..)| appliers(manager))
            .collect();
        assert_eq!(owners.len(), 2, "{path}: {owners:?}");
        assert_eq!(owners[0].2, owners[1].2, "{path}: both own the same fields");
        let entries = second.body["metadata"]["managedFields"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let times: Vec<(&str, bool)> = entries
            .iter()
            .map(|e| (e["manager"].as_str().unwrap_or_default(), e.get("time").is_some()))
            .filter(|(manager, _)| appliers(manager))
            .collect();
        assert_eq!(times, [("second", false), ("first", true)], "{path}");
    }
    release(&client, &format!("{SHELVES}/shared")).await;
}

/// What an applier applied and applies no longer goes, item by item in map and set lists and key by
/// key in a granular map; an atomic list or map is replaced by what is applied; and what another
/// manager applied too stays, now owned by that manager alone.
async fn what_an_applier_stops_applying_is_removed_unless_shared(backend: Backend) {
    let plane = ControlPlane::start(backend).await.expect("control plane starts");
    let client = plane.client();
    install_shelves(&plane, &client).await;
    let path = format!("{SHELVES}/pruned");
    let full = shelf(
        "pruned",
        json!({"books": [{"title": "a", "pages": 1}, {"title": "b", "pages": 2}, {"title": "shared", "pages": 3}],
            "tags": ["x", "y", "shared"], "order": ["x", "y"],
            "labels": {"a": "1", "b": "2", "shared": "3"}, "sizes": {"s": "1", "m": "2"}}),
    );
    let created = apply(&client, &path, "owner", &full).await;
    assert_eq!(created.status, 201, "{}", created.body);
    let partner = shelf(
        "pruned",
        json!({"books": [{"title": "shared", "pages": 3}], "tags": ["shared"], "labels": {"shared": "3"}}),
    );
    assert_eq!(apply(&client, &path, "partner", &partner).await.status, 200);

    let smaller = shelf(
        "pruned",
        json!({"books": [{"title": "b", "pages": 2}], "tags": ["y"], "order": ["y"],
            "labels": {"b": "2"}, "sizes": {"m": "2"}}),
    );
    let pruned = apply(&client, &path, "owner", &smaller).await;
    assert_eq!(pruned.status, 200, "{}", pruned.body);
    assert_eq!(
        pruned.body["spec"],
        json!({"books": [{"title": "b", "pages": 2}, {"title": "shared", "pages": 3}],
            "tags": ["y", "shared"], "order": ["y"], "labels": {"b": "2", "shared": "3"}, "sizes": {"m": "2"}})
    );
    assert_eq!(
        owners(&pruned.body),
        [
            (
                "owner".to_owned(),
                "Apply".to_owned(),
                json!({"f:metadata": {"f:finalizers": {"v:\"example.com/keep\"": {}}},
                    "f:spec": {"f:books": {"k:{\"title\":\"b\"}": {".": {}, "f:pages": {}, "f:title": {}}},
                        "f:labels": {"f:b": {}}, "f:order": {}, "f:sizes": {}, "f:tags": {"v:\"y\"": {}}}})
            ),
            (
                "partner".to_owned(),
                "Apply".to_owned(),
                json!({"f:metadata": {"f:finalizers": {"v:\"example.com/keep\"": {}}},
                    "f:spec": {"f:books": {"k:{\"title\":\"shared\"}": {".": {}, "f:pages": {}, "f:title": {}}},
                        "f:labels": {"f:shared": {}}, "f:tags": {"v:\"shared\"": {}}}})
            ),
        ]
    );
    release(&client, &path).await;
}

/// The e2e suite's Deployment cases: a container's ports left out of the next apply are gone, and a
/// field an update took from the applier is not the applier's to remove.
async fn ports_left_out_are_removed_and_fields_taken_by_an_update_are_kept(backend: Backend) {
    let plane = ControlPlane::start(backend).await.expect("control plane starts");
    let client = plane.client();
    let path = "/apis/apps/v1/namespaces/default/deployments/web";
    let deployment = |ports: bool, replicas: bool| {
        let mut container = json!({"name": "nginx", "image": "nginx"});
        if ports {
            container["ports"] = json!([{"containerPort": 80, "protocol": "TCP"}]);
        }
        let mut body = json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "labels": {"app": "nginx"}},
            "spec": {"selector": {"matchLabels": {"app": "nginx"}},
                "template": {"metadata": {"labels": {"app": "nginx"}}, "spec": {"containers": [container]}}}});
        if replicas {
            body["spec"]["replicas"] = json!(3);
        }
        body
    };
    assert_eq!(
        apply(&client, path, "applier", &deployment(true, true))
            .await
            .status,
        201
    );
    let without_ports = apply(&client, path, "applier", &deployment(false, true)).await;
    assert_eq!(without_ports.status, 200, "{}", without_ports.body);
    assert_eq!(
        without_ports.body["spec"]["template"]["spec"]["containers"][0].get("ports"),
        None
    );

    let scaled = request(
        &client,
        "PATCH",
        &format!("{path}?fieldManager=scaler"),
        "application/merge-patch+json",
        json!({"spec": {"replicas": 4}}),
    )
    .await;
    assert_eq!(scaled.status, 200, "{}", scaled.body);
    // Applying the old value again conflicts with the updater, named with the version it wrote.
    let conflict = apply(&client, path, "applier", &deployment(false, true)).await;
    assert_eq!(conflict.status, 409, "{}", conflict.body);
    assert_eq!(
        conflict.body["message"],
        "Apply failed with 1 conflict: conflict with \"scaler\" using apps/v1: .spec.replicas"
    );
    assert_eq!(
        conflict.body["details"]["causes"],
        json!([{"reason": "FieldManagerConflict", "message": "conflict with \"scaler\" using apps/v1",
            "field": ".spec.replicas"}])
    );
    let without_replicas = apply(&client, path, "applier", &deployment(false, false)).await;
    assert_eq!(without_replicas.status, 200, "{}", without_replicas.body);
    assert_eq!(without_replicas.body["spec"]["replicas"], 4);
}

/// Two managers' conflicts on list items, as one message grouped by manager.
async fn conflicts_on_list_items_name_each_item(backend: Backend) {
    let plane = ControlPlane::start(backend).await.expect("control plane starts");
    let client = plane.client();
    install_shelves(&plane, &client).await;
    let path = format!("{SHELVES}/contested");
    let first = shelf(
        "contested",
        json!({"books": [{"title": "a", "pages": 1}], "tags": ["x"]}),
    );
    assert_eq!(apply(&client, &path, "first", &first).await.status, 201);
    let second = shelf("contested", json!({"labels": {"k": "v"}, "order": ["o"]}));
    assert_eq!(apply(&client, &path, "second", &second).await.status, 200);
    let contender = shelf(
        "contested",
        json!({"books": [{"title": "a", "pages": 9}], "labels": {"k": "w"}, "order": ["p"]}),
    );
    let refused = apply(&client, &path, "third", &contender).await;
    assert_eq!(refused.status, 409, "{}", refused.body);
    assert_eq!(
        refused.body["message"],
        "Apply failed with 3 conflicts: conflicts with \"first\":\n- .spec.books[title=\"a\"].pages\n\
         conflicts with \"second\":\n- .spec.order\n- .spec.labels.k"
    );
    let forced = request(
        &client,
        "PATCH",
        &format!("{path}?fieldManager=third&force=true"),
        APPLY,
        contender.clone(),
    )
    .await;
    assert_eq!(forced.status, 200, "{}", forced.body);
    assert_eq!(
        owners(&forced.body)
            .iter()
            .map(|(manager, _, fields)| (manager.as_str(), fields["f:spec"].clone()))
            .collect::<Vec<_>>(),
        [
            (
                "first",
                json!({"f:books": {"k:{\"title\":\"a\"}": {".": {}, "f:title": {}}}, "f:tags": {"v:\"x\"": {}}})
            ),
            // The forced apply took all the second manager had in spec: it keeps the finalizer alone.
            ("second", Value::Null),
            (
                "third",
                json!({"f:books": {"k:{\"title\":\"a\"}": {".": {}, "f:pages": {}, "f:title": {}}},
                "f:labels": {"f:k": {}}, "f:order": {}})
            ),
        ]
    );
    release(&client, &path).await;
}

testenv::each_control_plane!(
    a_second_manager_applying_the_same_values_shares_them,
    what_an_applier_stops_applying_is_removed_unless_shared,
    ports_left_out_are_removed_and_fields_taken_by_an_update_are_kept,
    conflicts_on_list_items_name_each_item,
);
