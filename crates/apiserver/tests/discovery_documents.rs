//! The discovery documents below `/apis` as kube-apiserver serves them: each served group, built-in
//! or added by a CRD, answers `/apis/<group>` with the versions and the preferred version `/apis`
//! lists, and each of its versions `/apis/<group>/<version>`; each in JSON or protobuf, and a 406 or a
//! 404 worded as kube-apiserver words it otherwise.

mod common;

use apimachinery::protobuf;
use common::{Answer, exchange, install_crd};
use serde_json::{Value, json};
use testenv::{Backend, ControlPlane};

const JSON: &str = "application/json";
const PROTOBUF_FIRST: &str = "application/vnd.kubernetes.protobuf, application/json";
const AGGREGATED: &str = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";

async fn get(client: &kube::Client, path: &str, accept: &str) -> Answer {
    exchange(client, "GET", path, "", accept, Vec::new()).await
}

/// A CRD adding the group `discovered.example.com`, served at v1beta1 and v1 (which it prefers).
fn crd() -> Value {
    let version = |name: &str, storage: bool| {
        json!({"name": name, "served": true, "storage": storage,
            "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}})
    };
    json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "gadgets.discovered.example.com"},
        "spec": {"group": "discovered.example.com", "scope": "Namespaced",
            "names": {"plural": "gadgets", "singular": "gadget", "kind": "Gadget", "listKind": "GadgetList"},
            "versions": [version("v1beta1", false), version("v1", true)]}})
}

async fn every_served_group_answers_its_api_group(backend: Backend) {
    let plane = ControlPlane::start(backend).await.expect("control plane starts");
    let client = plane.client();
    install_crd(&client, crd()).await;
    common::discovered(&client, "discovered.example.com", "v1", "gadgets").await;

    let list = get(&client, "/apis", JSON).await;
    let groups = list.body["groups"].as_array().cloned().unwrap_or_default();
    let names: Vec<&str> = groups.iter().filter_map(|g| g["name"].as_str()).collect();
    for expected in [
        "flowcontrol.apiserver.k8s.io",
        "admissionregistration.k8s.io",
        "apiextensions.k8s.io",
        "discovered.example.com",
    ] {
        assert!(names.contains(&expected), "{expected} not in {names:?}");
    }
    for listed in &groups {
        let name = listed["name"].as_str().unwrap_or_default();
        // The e2e suite asks with a trailing slash.
        let group = get(&client, &format!("/apis/{name}/"), JSON).await;
        assert_eq!(group.status, 200, "/apis/{name}: {}", group.text);
        assert_eq!(
            (
                &group.body["kind"],
                &group.body["apiVersion"],
                &group.body["name"]
            ),
            (&json!("APIGroup"), &json!("v1"), &json!(name)),
        );
        assert_eq!(group.body["versions"], listed["versions"], "{name}");
        assert_eq!(
            group.body["preferredVersion"], listed["preferredVersion"],
            "{name}"
        );

        // client-go asks for protobuf first, and reads the same group from it.
        let encoded = get(&client, &format!("/apis/{name}"), PROTOBUF_FIRST).await;
        assert_eq!(
            (encoded.status, encoded.content_type.as_str()),
            (200, protobuf::MEDIA_TYPE)
        );
        let decoded = protobuf::decode(&encoded.bytes, "v1", "APIGroup").expect("an APIGroup");
        assert_eq!(decoded["versions"], listed["versions"], "{name}");

        for version in listed["versions"].as_array().into_iter().flatten() {
            let group_version = version["groupVersion"].as_str().unwrap_or_default();
            let resources = get(&client, &format!("/apis/{group_version}"), JSON).await;
            assert_eq!(resources.status, 200, "{group_version}: {}", resources.text);
            assert_eq!(resources.body["kind"], "APIResourceList");
            assert_eq!(resources.body["groupVersion"], group_version);
        }
    }
    let ours = groups
        .iter()
        .find(|g| g["name"] == "discovered.example.com")
        .cloned()
        .unwrap_or_default();
    assert_eq!(
        ours["preferredVersion"],
        json!({"groupVersion": "discovered.example.com/v1", "version": "v1"})
    );
    let encoded = get(&client, "/apis/discovered.example.com/v1beta1", PROTOBUF_FIRST).await;
    let decoded = protobuf::decode(&encoded.bytes, "v1", "APIResourceList").expect("a resource list");
    assert_eq!(decoded["resources"][0]["name"], "gadgets");
}

async fn discovery_answers_what_it_cannot_serve_as_kube_apiserver(backend: Backend) {
    let plane = ControlPlane::start(backend).await.expect("control plane starts");
    let client = plane.client();
    const ONLY: &str = "only the following media types are accepted: application/json, application/yaml, \
                        application/vnd.kubernetes.protobuf";
    const ROUTED: &str = "406: Not Acceptable\n\nAvailable representations: application/json, \
                          application/yaml, application/vnd.kubernetes.protobuf";
    let refused = [
        ("/apis/apps", AGGREGATED, ONLY),
        ("/apis/apps/v1", AGGREGATED, ONLY),
        ("/api/v1", AGGREGATED, ONLY),
        ("/apis", "text/plain", ONLY),
        ("/apis/apps", "text/plain", ONLY),
        ("/api", "text/plain", ROUTED),
        ("/api/v1", "text/plain", ROUTED),
        ("/apis/apps/v1", "text/plain", ROUTED),
    ];
    for (path, accept, message) in refused {
        let answer = get(&client, path, accept).await;
        assert_eq!(
            (answer.status, &answer.body["reason"], &answer.body["message"]),
            (406, &json!("NotAcceptable"), &json!(message)),
            "{path} as {accept}: {}",
            answer.text
        );
    }
    for path in ["/api", "/apis"] {
        let answer = get(&client, path, AGGREGATED).await;
        assert_eq!(
            (answer.status, answer.content_type.as_str()),
            (200, AGGREGATED),
            "{path}"
        );
    }
    for path in ["/api", "/apis", "/api/v1", "/apis/apps/v1"] {
        let answer = get(&client, path, PROTOBUF_FIRST).await;
        assert_eq!(
            (answer.status, answer.content_type.as_str()),
            (200, protobuf::MEDIA_TYPE),
            "{path}"
        );
    }
    // A group nothing serves is no route at all; a version of a served group is a missing resource.
    for path in ["/apis/nope.example.com", "/apis/nope.example.com/v1"] {
        let answer = get(&client, path, JSON).await;
        assert_eq!(
            (answer.status, answer.text.as_str()),
            (404, "404 page not found\n"),
            "{path}"
        );
    }
    let answer = get(&client, "/apis/apps/v9", JSON).await;
    assert_eq!(
        (answer.status, &answer.body["reason"], &answer.body["message"]),
        (
            404,
            &json!("NotFound"),
            &json!("the server could not find the requested resource")
        )
    );
}

testenv::each_control_plane!(
    every_served_group_answers_its_api_group,
    discovery_answers_what_it_cannot_serve_as_kube_apiserver,
);
