//! Object metadata rules (V5): names, labels, annotations, owner references.
//! - [`names`]: DNS-1123 subdomain and label, DNS-1035 label.
//! - [`labels`]: qualified names, label values, annotation size, finalizers.
//! - [`owners`]: owner references.

pub mod labels;
pub mod names;
pub mod owners;
pub mod workloads;

pub use names::NameRule;

use serde_json::Value;

use crate::FieldCause;
use crate::schema::messages;

/// Validates `metadata` of an object about to be stored. Empty when valid.
///
/// `name` is required unless `generateName` is set (the server generates the name before storing).
/// Whether a namespace is required is the server's business; a namespace given must be a DNS label.
pub fn validate_metadata(object: &Value, name_rule: NameRule) -> Vec<FieldCause> {
    let mut out = Vec::new();
    let metadata = object.get("metadata").unwrap_or(&Value::Null);
    let text = |key: &str| metadata.get(key).and_then(Value::as_str).unwrap_or_default();

    let generate_name = text("generateName");
    if !generate_name.is_empty() {
        for message in names::name_errors(name_rule, generate_name, true) {
            out.push(messages::invalid(
                "metadata.generateName",
                &Value::String(generate_name.to_owned()),
                &message,
            ));
        }
    }
    let name = text("name");
    if name.is_empty() {
        if generate_name.is_empty() {
            out.push(messages::required(
                "metadata.name",
                "name or generateName is required",
            ));
        }
    } else {
        for message in names::name_errors(name_rule, name, false) {
            out.push(messages::invalid(
                "metadata.name",
                &Value::String(name.to_owned()),
                &message,
            ));
        }
    }
    let namespace = text("namespace");
    if !namespace.is_empty() {
        for message in names::dns1123_label(namespace) {
            out.push(messages::invalid(
                "metadata.namespace",
                &Value::String(namespace.to_owned()),
                &message,
            ));
        }
    }
    if let Some(generation) = metadata.get("generation").and_then(Value::as_i64)
        && generation < 0
    {
        out.push(messages::invalid(
            "metadata.generation",
            &Value::from(generation),
            "must be greater than or equal to 0",
        ));
    }
    let field = |key: &str| metadata.get(key).unwrap_or(&Value::Null);
    labels::validate_labels(field("labels"), "metadata.labels", &mut out);
    labels::validate_annotations(field("annotations"), "metadata.annotations", &mut out);
    owners::validate_owner_references(field("ownerReferences"), "metadata.ownerReferences", &mut out);
    labels::validate_finalizers(field("finalizers"), "metadata.finalizers", &mut out);
    out
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn rendered(object: Value, rule: NameRule) -> Vec<String> {
        validate_metadata(&object, rule)
            .into_iter()
            .map(|c| format!("{}: {}", c.field, c.message))
            .collect()
    }

    #[test]
    fn v5_valid_metadata_has_no_causes() {
        let object = json!({"metadata": {
            "name": "web-1", "namespace": "default",
            "labels": {"app.kubernetes.io/name": "web"},
            "annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{}"},
            "finalizers": ["example.com/cleanup"],
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "d", "uid": "u"}]
        }});
        assert!(rendered(object, NameRule::Subdomain).is_empty());
    }

    #[test]
    fn v5_name_is_required_unless_generate_name() {
        assert_eq!(
            rendered(json!({"metadata": {}}), NameRule::Subdomain),
            ["metadata.name: Required value: name or generateName is required"]
        );
        assert!(rendered(json!({"metadata": {"generateName": "web-"}}), NameRule::Subdomain).is_empty());
        assert_eq!(
            rendered(json!({}), NameRule::Subdomain),
            ["metadata.name: Required value: name or generateName is required"]
        );
    }

    #[test]
    fn v5_invalid_name_reports_the_subdomain_rule() {
        let out = validate_metadata(&json!({"metadata": {"name": "Web_1"}}), NameRule::Subdomain);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].field, "metadata.name");
        assert_eq!(out[0].reason, "FieldValueInvalid");
        assert!(
            out[0]
                .message
                .starts_with("Invalid value: \"Web_1\": a lowercase RFC 1123 subdomain must consist of")
        );
    }

    #[test]
    fn v5_namespace_names_are_labels_and_service_names_dns1035() {
        assert_eq!(
            rendered(json!({"metadata": {"name": "a.b"}}), NameRule::Label),
            [r#"metadata.name: Invalid value: "a.b": must not contain dots"#]
        );
        assert!(rendered(json!({"metadata": {"name": "a.b"}}), NameRule::Subdomain).is_empty());
        assert_eq!(
            rendered(json!({"metadata": {"name": "1svc"}}), NameRule::Dns1035Label).len(),
            1
        );
        assert!(rendered(json!({"metadata": {"name": "svc-1"}}), NameRule::Dns1035Label).is_empty());
    }

    #[test]
    fn v5_owner_reference_causes_carry_indexed_paths() {
        let object = json!({"metadata": {"name": "x", "ownerReferences": [{"apiVersion": "v1", "kind": "ConfigMap", "name": "o"}]}});
        assert_eq!(
            rendered(object, NameRule::Subdomain),
            [r#"metadata.ownerReferences[0].uid: Invalid value: "": must not be empty"#]
        );
    }

    #[test]
    fn v5_bad_namespace_and_labels_are_reported() {
        let object = json!({"metadata": {"name": "x", "namespace": "Bad", "labels": {"k": "v!"}}});
        let out = validate_metadata(&object, NameRule::Subdomain);
        let fields: Vec<&str> = out.iter().map(|c| c.field.as_str()).collect();
        assert_eq!(fields, ["metadata.namespace", "metadata.labels"]);
    }
}
