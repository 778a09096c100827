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

async fn kubectl_explain_documents_built_in_and_custom_fields(backend: Backend) {
    let plane = ControlPlane::start(backend).await.expect("control plane starts");
    let kubectl = Kubectl::new(&plane);
    kubectl.ok(&["apply", "-f", &fixture("crd.yaml")]).await;
    kubectl
        .ok(&[
            "wait",
            "--for=condition=established",
            "crd/postgreswriters.example.com",
            "--timeout=20s",
        ])
        .await;
    for (field, lines) in FIELDS {
        let explained = kubectl.ok(&["explain", field]).await;
        for line in *lines {
            assert!(
                explained.contains(line),
                "kubectl explain {field} lacks {line:?}:\n{explained}"
            );
        }
    }
    let from_v2 = kubectl
        .ok(&[
            "explain",
            "deployment.spec.replicas",
            "--output=plaintext-openapiv2",
        ])
        .await;
    for line in ["FIELD:    replicas <integer>", "Number of desired pods."] {
        assert!(
            from_v2.contains(line),
            "the v2 explanation lacks {line:?}:\n{from_v2}"
        );
    }
}

testenv::each_control_plane!(kubectl_explain_documents_built_in_and_custom_fields);
