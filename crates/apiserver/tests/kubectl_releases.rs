//! Every kubectl release on this machine (1.27 to 1.33) works against both control planes: each asks
//! for what its own client-go speaks (1.27 and 1.28 the OpenAPI v2 document as protobuf; 1.29
//! aggregated discovery `v2beta1`, which it falls back from to the plain documents), then applies a
//! CRD and a custom resource, lists them, re-applies a Deployment without one of its containers and
//! deletes it all.

mod common;

use common::kubectl::{Kubectl, RELEASES, fixture, release};
use testenv::{Backend, ControlPlane};

async fn every_kubectl_release_applies_lists_and_deletes(backend: Backend) {
    let plane = ControlPlane::start(backend).await.expect("control plane starts");
    for version in RELEASES {
        let kubectl = Kubectl::with_binary(&plane, &release(version));
        kubectl.install_crd().await;
        kubectl.ok(&["apply", "-f", &fixture("cr.yaml")]).await;
        let listed = kubectl.ok(&["get", "pgw"]).await;
        assert!(
            listed.contains("w1") && listed.contains("students"),
            "kubectl {version} get pgw:\n{listed}"
        );

        kubectl.ok(&["apply", "-f", &fixture("deployment.yaml")]).await;
        kubectl
            .ok(&["apply", "-f", &fixture("deployment-one-container.yaml")])
            .await;
        let containers = kubectl
            .ok(&[
                "get",
                "deployment",
                "d1",
                "-o",
                "jsonpath={.spec.template.spec.containers[*].name}",
            ])
            .await;
        assert_eq!(
            containers, "web",
            "kubectl {version}: the re-applied Deployment lost exactly its sidecar"
        );

        for manifest in ["deployment.yaml", "cr.yaml", "crd.yaml"] {
            kubectl.ok(&["delete", "--wait", "-f", &fixture(manifest)]).await;
        }
        let gone = kubectl.run(&["get", "crd", "postgreswriters.example.com"]).await;
        assert!(!gone.status.success(), "kubectl {version}: the CRD is deleted");
    }
}

testenv::each_control_plane!(every_kubectl_release_applies_lists_and_deletes);
