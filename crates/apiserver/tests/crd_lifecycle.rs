//! A CRD's life as its clients see it (V1, L6): the create is answered with the CRD as written, and
//! kube-apiserver's controllers then accept its names and establish it, in a status write of their
//! own; a DELETE adds the cleanup finalizer and is answered with the CRD marked for deletion, which
//! goes once its custom resources are gone. Compared with the real kube-apiserver.

mod common;

use common::request;
use serde_json::{Value, json};
use testenv::{Backend, ControlPlane};

const CRDS: &str = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
const GROUP: &str = "lifecycle.crd.example.com";
const CLEANUP: &str = "customresourcecleanup.apiextensions.k8s.io";

fn crd() -> Value {
    json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("sprockets.{GROUP}")},
        "spec": {"group": GROUP, "scope": "Namespaced",
            "names": {"plural": "sprockets", "singular": "sprocket", "kind": "Sprocket", "listKind": "SprocketList"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object"}}}]}})
}

fn condition<'a>(crd: &'a Value, kind: &str) -> Option<&'a Value> {
    crd["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == kind)
}

async fn a_crd_is_established_after_its_create_and_terminating_after_its_delete(backend: Backend) {
    let plane = ControlPlane::start(backend).await.expect("control plane starts");
    let client = plane.client();
    let created = request(&client, "POST", CRDS, "application/json", crd()).await;
    assert_eq!(created.status, 201, "{}", created.body);
    assert!(
        created.body["metadata"]["finalizers"].is_null(),
        "{}",
        created.body
    );
    assert_eq!(
        created.body["status"]["acceptedNames"],
        json!({"kind": "", "plural": ""})
    );
    assert!(
        condition(&created.body, "Established").is_none(),
        "{}",
        created.body
    );

    let path = format!("{CRDS}/sprockets.{GROUP}");
    common::eventually("the CRD established", || async {
        let crd = request(&client, "GET", &path, "application/json", Value::Null)
            .await
            .body;
        condition(&crd, "Established").is_some_and(|c| c["status"] == "True")
    })
    .await;
    let established = request(&client, "GET", &path, "application/json", Value::Null)
        .await
        .body;
    assert!(established["metadata"]["finalizers"].is_null(), "{established}");
    assert_eq!(established["status"]["acceptedNames"]["kind"], "Sprocket");
    let controllers = established["metadata"]["managedFields"]
        .as_array()
        .and_then(|entries| entries.iter().find(|e| e["manager"] == "kube-apiserver"))
        .cloned()
        .unwrap_or(Value::Null);
    assert_eq!(controllers["subresource"], "status", "{established}");
    assert!(
        controllers["fieldsV1"]["f:status"]["f:acceptedNames"].is_object(),
        "{controllers}"
    );

    let deleted = request(&client, "DELETE", &path, "application/json", Value::Null).await;
    assert_eq!(deleted.status, 200, "{}", deleted.body);
    assert_eq!(
        deleted.body["kind"], "CustomResourceDefinition",
        "{}",
        deleted.body
    );
    assert!(
        deleted.body["metadata"]["deletionTimestamp"].is_string(),
        "{}",
        deleted.body
    );
    assert_eq!(deleted.body["metadata"]["finalizers"], json!([CLEANUP]));
    let terminating = condition(&deleted.body, "Terminating")
        .cloned()
        .unwrap_or(Value::Null);
    assert_eq!(
        (&terminating["status"], &terminating["reason"]),
        (&json!("True"), &json!("InstanceDeletionPending")),
        "{}",
        deleted.body
    );
    common::eventually("the CRD gone", || async {
        request(&client, "GET", &path, "application/json", Value::Null)
            .await
            .status
            == 404
    })
    .await;
}

testenv::each_control_plane!(a_crd_is_established_after_its_create_and_terminating_after_its_delete);
