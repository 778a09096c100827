//! `kubectl explain` on both control planes: built-in fields documented as the API documents them
//! (from the OpenAPI v3 documents, and from the v2 one with `--output=plaintext-openapiv2`), and a
//! custom resource's fields from its CRD's schema.

mod common;

use common::kubectl::{Kubectl, fixture};
use testenv::{Backend, ControlPlane};

/// (what to explain, lines the explanation must hold).
const FIELDS: &[(&str, &[&str])] = &[
    (
        "deployment.spec.replicas",
        &["FIELD: replicas <integer>", "Number of desired pods."],
    ),
    (
        "configmap.data",
        &[
            "FIELD: data <map[string]string>",
            "Data contains the configuration data.",
        ],
    ),
    (
        "postgreswriter.spec.table",
        &["KIND:       PostgresWriter", "FIELD: table <string>"],
    ),
    (
        "postgreswriter.spec",
        &["FIELDS:", "replicas\t<integer>", "table\t<string> -required-"],
    ),
];

/// `kubectl explain` with an HTTP cache of its own, so it reads the OpenAPI index the server serves
/// now. kube-apiserver serves that index with no ETag and a Last-Modified of the moment of the
/// request, to the second: a kubectl that cached the index (as `kubectl apply` does) before the
/// CRD's group was listed gets "304 Not Modified" and its stale copy back within the same second.
async fn explain(kubectl: &Kubectl, args: &[&str]) -> String {
    let cache = tempfile::tempdir().expect("temp dir");
    let cache_dir = format!("--cache-dir={}", cache.path().display());
    let mut full = vec!["explain"];
    full.extend_from_slice(args);
    full.push(&cache_dir);
    kubectl.ok(&full).await
}

async fn kubectl_explain_documents_built_in_and_custom_fields(backend: Backend) {
    let plane = ControlPlane::start(backend).await.expect("control plane starts");
    let kubectl = Kubectl::new(&plane);
    kubectl.install_crd().await;
    // kube-apiserver publishes the group's OpenAPI document a moment after the CRD is established,
    // and lists it in the index kubectl explain starts from apart from that.
    let client = plane.client();
    let get = |path: &'static str| {
        let client = client.clone();
        async move { common::send(&client, "GET", path, "application/json", serde_json::Value::Null).await }
    };
    common::eventually(
        "the group's OpenAPI v3 document, listed and with the kind",
        || async {
            let (status, index) = get("/openapi/v3").await;
            let (_, document) = get("/openapi/v3/apis/example.com/v1").await;
            status == 200
                && index["paths"].get("apis/example.com/v1").is_some()
                && document.to_string().contains("\"PostgresWriter\"")
        },
    )
    .await;
    for (field, lines) in FIELDS {
        let explained = explain(&kubectl, &[field]).await;
        for line in *lines {
            assert!(
                explained.contains(line),
                "kubectl explain {field} lacks {line:?}:\n{explained}"
            );
        }
    }
    let from_v2 = explain(
        &kubectl,
        &["deployment.spec.replicas", "--output=plaintext-openapiv2"],
    )
    .await;
    for line in ["FIELD:    replicas <integer>", "Number of desired pods."] {
        assert!(
            from_v2.contains(line),
            "the v2 explanation lacks {line:?}:\n{from_v2}"
        );
    }
}

testenv::each_control_plane!(kubectl_explain_documents_built_in_and_custom_fields);

/// The OpenAPI documents follow a CRD's schema as it changes, however often they were read before.
async fn openapi_documents_follow_a_changed_crd_schema(backend: Backend) {
    let plane = ControlPlane::start(backend).await.expect("control plane starts");
    let client = plane.client();
    let crd: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(fixture("crd.json")).expect("the CRD fixture"))
            .expect("the CRD fixture is JSON");
    common::install_crd(&client, crd).await;
    const V3: &str = "/openapi/v3/apis/example.com/v1";
    const V2: &str = "/openapi/v2";
    let mentions_tablespace = |document: &serde_json::Value| document.to_string().contains("tablespace");
    // kube-apiserver publishes a new group's document a moment after the CRD is established.
    common::eventually("the group's OpenAPI v3 document", || async {
        common::send(&client, "GET", V3, "application/json", serde_json::Value::Null)
            .await
            .0
            == 200
    })
    .await;
    for path in [V3, V2, V3, V2] {
        let (status, document) =
            common::send(&client, "GET", path, "application/json", serde_json::Value::Null).await;
        assert_eq!(status, 200, "{path}");
        assert!(!mentions_tablespace(&document), "{path}");
    }
    let added = serde_json::json!([{"op": "add",
        "path": "/spec/versions/0/schema/openAPIV3Schema/properties/spec/properties/tablespace",
        "value": {"type": "string", "description": "Where the table lives."}}]);
    let (status, body) = common::send(
        &client,
        "PATCH",
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/postgreswriters.example.com",
        "application/json-patch+json",
        added,
    )
    .await;
    assert_eq!(status, 200, "{body}");
    // kube-apiserver republishes its documents a moment after the CRD changes.
    for path in [V3, V2] {
        common::eventually(&format!("{path} to document the new field"), || async {
            let (_, document) =
                common::send(&client, "GET", path, "application/json", serde_json::Value::Null).await;
            mentions_tablespace(&document)
        })
        .await;
    }
}

testenv::each_control_plane!(openapi_documents_follow_a_changed_crd_schema);
