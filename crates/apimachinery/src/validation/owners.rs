//! `metadata.ownerReferences` (V5): apiVersion, kind, name and uid required; at most one controller.

use serde_json::Value;

use crate::FieldCause;
use crate::schema::messages::{self, child, index};

/// The version part of an `apiVersion` (`v1`, `apps/v1`); empty when it cannot be parsed.
fn version_of(api_version: &str) -> &str {
    match api_version.split('/').collect::<Vec<_>>().as_slice() {
        [version] => version,
        [_, version] => version,
        _ => "",
    }
}

/// `ValidateOwnerReferences`, with causes on `metadata.ownerReferences[i].<field>`.
pub fn validate_owner_references(references: &Value, path: &str, out: &mut Vec<FieldCause>) {
    let Some(list) = references.as_array() else {
        if !references.is_null() {
            out.push(messages::invalid(path, references, "must be a list"));
        }
        return;
    };
    let mut controllers = Vec::new();
    for (i, reference) in list.iter().enumerate() {
        let ref_path = index(path, i);
        let text = |key: &str| reference.get(key).and_then(Value::as_str).unwrap_or_default();
        let empty = |key: &str| Value::String(text(key).to_owned());
        if version_of(text("apiVersion")).is_empty() {
            out.push(messages::invalid(
                child(&ref_path, "apiVersion"),
                &empty("apiVersion"),
                "version must not be empty",
            ));
        }
        for key in ["kind", "name", "uid"] {
            if text(key).is_empty() {
                out.push(messages::invalid(
                    child(&ref_path, key),
                    &empty(key),
                    "must not be empty",
                ));
            }
        }
        if reference.get("controller").and_then(Value::as_bool) == Some(true) {
            controllers.push(format!("{}/{}", text("kind"), text("name")));
        }
    }
    if controllers.len() > 1 {
        let detail = format!(
            "Only one reference can have Controller set to true. Found \"true\" in references for {}",
            controllers.join(" and ")
        );
        out.push(messages::invalid(path, references, &detail));
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn causes(references: Value) -> Vec<String> {
        let mut out = Vec::new();
        validate_owner_references(&references, "metadata.ownerReferences", &mut out);
        out.into_iter()
            .map(|c| format!("{}: {}", c.field, c.message))
            .collect()
    }

    #[test]
    fn v5_complete_owner_reference_is_valid() {
        let owner = json!([{"apiVersion": "example.com/v1", "kind": "VoteConfig", "name": "v", "uid": "u1", "controller": true}]);
        assert!(causes(owner).is_empty());
    }

    #[test]
    fn v5_owner_reference_fields_are_required() {
        assert_eq!(
            causes(json!([{}])),
            [
                r#"metadata.ownerReferences[0].apiVersion: Invalid value: "": version must not be empty"#,
                r#"metadata.ownerReferences[0].kind: Invalid value: "": must not be empty"#,
                r#"metadata.ownerReferences[0].name: Invalid value: "": must not be empty"#,
                r#"metadata.ownerReferences[0].uid: Invalid value: "": must not be empty"#
            ]
        );
    }

    #[test]
    fn v5_at_most_one_controller_reference() {
        let refs = json!([
            {"apiVersion": "v1", "kind": "ConfigMap", "name": "a", "uid": "1", "controller": true},
            {"apiVersion": "v1", "kind": "ConfigMap", "name": "b", "uid": "2", "controller": true}
        ]);
        let out = causes(refs);
        assert_eq!(out.len(), 1);
        assert!(out[0].starts_with("metadata.ownerReferences: Invalid value: ["));
        assert!(out[0].ends_with(r#"Only one reference can have Controller set to true. Found "true" in references for ConfigMap/a and ConfigMap/b"#));
    }
}
