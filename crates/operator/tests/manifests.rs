//! The committed CRDs in config/crd and webhook manifests in config/webhook are exactly what the code
//! generates (`make manifests`), and every field of every CRD says what it is for.

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

/// Every CRD in config/crd, as its file holds it.
fn committed_crds() -> Vec<(String, serde_json::Value)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../config/crd");
    let mut crds = Vec::new();
    for entry in std::fs::read_dir(&dir).expect("config/crd") {
        let path = entry.expect("a directory entry").path();
        let text = std::fs::read_to_string(&path).expect("readable");
        let Ok(document) = serde_yaml::from_str::<serde_json::Value>(&text) else {
            continue;
        };
        if document["kind"] == "CustomResourceDefinition" {
            crds.push((
                document["metadata"]["name"].as_str().unwrap().to_owned(),
                document,
            ));
        }
    }
    assert_eq!(crds.len(), 3, "the three CRDs");
    crds
}

/// The paths under `schema` (at `path`) whose description is missing, empty, or not written for a
/// reader of `kubectl explain`: kube's placeholder, or a line break inside a paragraph.
fn undescribed(schema: &serde_json::Value, path: &str, found: &mut Vec<String>) {
    let description = schema["description"].as_str().unwrap_or_default();
    let broken_paragraph = description
        .split("\n\n")
        .any(|paragraph| paragraph.contains('\n'));
    if description.trim().is_empty() || description.starts_with("Auto-generated") || broken_paragraph {
        found.push(format!("{path}: {description:?}"));
    }
    if let Some(properties) = schema["properties"].as_object() {
        for (name, property) in properties {
            undescribed(property, &format!("{path}.{name}"), found);
        }
    }
    // The items of a list of objects are described too: kubectl explain shows them as the list's type.
    if schema["items"]["type"] == "object" {
        undescribed(&schema["items"], &format!("{path}[]"), found);
    }
    if schema["additionalProperties"].is_object() {
        undescribed(&schema["additionalProperties"], &format!("{path}{{}}"), found);
    }
}

#[test]
fn every_field_of_every_crd_version_is_described() {
    let mut found = Vec::new();
    for (name, crd) in committed_crds() {
        for version in crd["spec"]["versions"].as_array().unwrap() {
            let schema = &version["schema"]["openAPIV3Schema"];
            assert!(schema.is_object(), "{name} {} has a schema", version["name"]);
            let root = format!("{name} {}: ", version["name"].as_str().unwrap());
            undescribed(schema, &root, &mut found);
        }
    }
    assert!(
        found.is_empty(),
        "fields without a description:\n{}",
        found.join("\n")
    );
}

/// The manager's pod is killed only after the process would have exited by itself: its grace period
/// outlasts the drain (`--shutdown-drain-seconds`, as config/default passes it or its default) and the
/// graceful shutdown after it.
#[test]
fn the_managers_grace_period_outlasts_its_drain_and_graceful_shutdown() {
    let config = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../config");
    let deployment = |file: &str| -> serde_json::Value {
        let text = std::fs::read_to_string(config.join(file)).unwrap();
        serde_yaml::Deserializer::from_str(&text)
            .map(|d| serde::Deserialize::deserialize(d).unwrap())
            .find(|d: &serde_json::Value| d["kind"] == "Deployment")
            .unwrap_or_else(|| panic!("{file}: a Deployment"))
    };
    let manager = deployment("manager/manager.yaml");
    let grace = manager["spec"]["template"]["spec"]["terminationGracePeriodSeconds"]
        .as_u64()
        .expect("config/manager sets terminationGracePeriodSeconds");
    let patched = deployment("default/manager_webhook_patch.yaml");
    let args = patched["spec"]["template"]["spec"]["containers"][0]["args"]
        .as_array()
        .expect("config/default's args")
        .iter()
        .filter_map(|a| a.as_str().map(str::to_owned))
        .collect::<Vec<_>>();
    let drain = args
        .iter()
        .find_map(|a| a.strip_prefix("--shutdown-drain-seconds="))
        .map_or(operator::manager::cli::DEFAULT_SHUTDOWN_DRAIN_SECONDS, |s| {
            s.parse().unwrap()
        });
    let bound = drain + operator::manager::run::GRACEFUL_SHUTDOWN_TIMEOUT.as_secs();
    assert!(
        grace > bound,
        "terminationGracePeriodSeconds {grace} must exceed the drain ({drain} s) and the graceful shutdown \
         after it: {bound} s"
    );
}
