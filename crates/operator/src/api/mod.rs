//! The resource types, one file per kind.

pub mod postgres_writer;
pub mod vote_config;
pub mod web_app;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    CustomResourceConversion, CustomResourceDefinition, WebhookConversion,
};
use kube::CustomResourceExt;

use crate::webhook::{CONVERSION_PATH, configurations::Endpoint};

/// Every CRD this operator serves, in the order `operator crds` prints them, with VoteConfig's
/// conversion webhook reached through the in-cluster Service (`config/webhook`).
pub fn crds() -> Vec<CustomResourceDefinition> {
    crds_converting_at(&Endpoint::InCluster)
}

/// Every CRD, VoteConfig's converting through the webhook at `endpoint` (dev mode and tests point it
/// at a listener of their own).
pub fn crds_converting_at(endpoint: &Endpoint) -> Vec<CustomResourceDefinition> {
    let mut vote_config = vote_config::crd();
    vote_config.spec.conversion = Some(CustomResourceConversion {
        strategy: "Webhook".into(),
        webhook: Some(WebhookConversion {
            client_config: Some(endpoint.conversion(CONVERSION_PATH)),
            conversion_review_versions: vec!["v1".into()],
        }),
    });
    vec![
        postgres_writer::PostgresWriter::crd(),
        vote_config,
        web_app::WebApp::crd(),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vote_config_schema_enforces_counts_patterns_and_unique_ids() {
        let crd = serde_json::to_value(&crds()[1]).unwrap();
        assert_eq!(crd["spec"]["names"]["shortNames"][0], "vc");
        let versions: Vec<(&str, bool)> = crd["spec"]["versions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| (v["name"].as_str().unwrap(), v["storage"].as_bool().unwrap()))
            .collect();
        assert_eq!(versions, [("v1alpha1", false), ("v1", true)]);
        assert_eq!(crd["spec"]["conversion"]["strategy"], "Webhook");
        assert_eq!(
            crd["spec"]["conversion"]["webhook"]["clientConfig"]["service"]["path"],
            "/convert"
        );
        let options = &crd["spec"]["versions"][1]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]
            ["options"];
        assert_eq!(
            (options["minItems"].as_u64(), options["maxItems"].as_u64()),
            (Some(2), Some(10))
        );
        assert_eq!(options["x-kubernetes-list-type"], "map");
        assert_eq!(options["x-kubernetes-list-map-keys"][0], "id");
        let item = &options["items"]["properties"];
        assert_eq!(item["id"]["pattern"], "^[a-z]$");
        assert_eq!(item["color"]["pattern"], "^#[0-9A-Fa-f]{6}$");
        assert_eq!(item["label"]["maxLength"], 50);
        assert_eq!(item["label"]["pattern"], r"^[^:\r\n]+$");
    }

    #[test]
    fn web_app_schema_defaults_replicas_and_port() {
        let crd = serde_json::to_value(web_app::WebApp::crd()).unwrap();
        let spec = &crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"];
        assert_eq!(spec["properties"]["replicas"]["default"], 1);
        assert_eq!(spec["properties"]["port"]["default"], 80);
        assert_eq!(spec["properties"]["port"]["maximum"], 65535.0);
        assert_eq!(spec["required"], serde_json::json!(["image"]));
    }
}
