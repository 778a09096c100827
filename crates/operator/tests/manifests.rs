//! The committed CRDs in config/crd and webhook manifests in config/webhook are exactly what the code
//! generates (`make manifests`).

use std::path::Path;

use operator::webhook::configurations::{self, Endpoint};

#[test]
fn committed_crds_match_the_code() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../config/crd");
    for crd in configurations::crds(&Endpoint::InCluster) {
        let name = crd.metadata.name.clone().unwrap();
        let generated = serde_yaml::to_string(&crd).unwrap();
        let committed = std::fs::read_to_string(dir.join(format!("{name}.yaml")))
            .unwrap_or_else(|e| panic!("config/crd/{name}.yaml: {e}: run `make manifests`"));
        assert_eq!(
            committed, generated,
            "config/crd/{name}.yaml is stale: run `make manifests` and commit"
        );
    }
}

#[test]
fn committed_webhook_manifests_match_the_code() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../config/webhook");
    for (file, generated) in configurations::manifests().unwrap() {
        let committed = std::fs::read_to_string(dir.join(&file))
            .unwrap_or_else(|e| panic!("config/webhook/{file}: {e}: run `make manifests`"));
        assert_eq!(
            committed, generated,
            "config/webhook/{file} is stale: run `make manifests` and commit"
        );
    }
}
