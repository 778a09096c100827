//! The resource types, one file per kind.

mod descriptions;
pub mod postgres_writer;
pub mod vote_config;
pub mod web_app;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::CustomResourceExt;

/// Every CRD of this operator as its types declare it, in the order `operator crds` prints them.
/// VoteConfig's conversion stanza is not here: where the conversion webhook listens is the webhook
/// layer's knowledge, and [`crate::webhook::configurations::crds`] adds it to what is installed.
pub fn crds() -> Vec<CustomResourceDefinition> {
    let mut crds = vec![
        postgres_writer::PostgresWriter::crd(),
        vote_config::crd(),
        web_app::WebApp::crd(),
    ];
    crds.iter_mut().for_each(descriptions::unwrap_lines);
    crds
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
