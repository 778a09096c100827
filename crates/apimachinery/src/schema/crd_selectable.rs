//! A CRD's `selectableFields`: the fields of its objects that field selectors may name. Each must be a
//! simple JSON path (`.spec.color`) to a string, boolean or integer the schema declares, outside
//! `metadata`, at most eight of them, with kube-apiserver's wording.

use serde_json::Value;

use super::crd_internal::Hoisted;
use super::messages::{self, child, index};
use crate::FieldCause;

const MAX_SELECTABLE_FIELDS: usize = 8;

/// Validates the selectable fields of `list` (the `v1` versions). Where every version lists the same
/// ones, kube-apiserver reads them as the CRD's own (`spec.selectableFields`), against the CRD's own
/// schema, which exists only if every version shares one too.
pub(super) fn validate(list: &[Value], hoisted: &Hoisted, causes: &mut Vec<FieldCause>) {
    if hoisted.selectable {
        let Some(first) = list.first().filter(|v| !fields_of(v).is_empty()) else {
            return;
        };
        match schema_of(first).filter(|_| hoisted.schema) {
            None => causes.push(messages::invalid(
                "spec.selectableFields",
                &Value::String(String::new()),
                "selectableFields may only be set when validations.schema is included",
            )),
            Some(schema) => validate_paths(fields_of(first), schema, "spec.selectableFields", causes),
        }
        return;
    }
    for (i, version) in list.iter().enumerate() {
        let fields = fields_of(version);
        if fields.is_empty() {
            continue;
        }
        let path = child(&index("spec.versions", i), "selectableFields");
        match schema_of(version).filter(|_| !hoisted.schema) {
            None => causes.push(messages::invalid(
                &path,
                &Value::String(String::new()),
                "selectableFields may only be set when version.schema.openAPIV3Schema is not included",
            )),
            Some(schema) => validate_paths(fields, schema, &path, causes),
        }
    }
}

fn fields_of(version: &Value) -> &[Value] {
    version
        .get("selectableFields")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default()
}

fn schema_of(version: &Value) -> Option<&Value> {
    version
        .pointer("/schema/openAPIV3Schema")
        .filter(|s| !s.is_null())
}

fn validate_paths(fields: &[Value], schema: &Value, path: &str, causes: &mut Vec<FieldCause>) {
    let mut unique: Vec<String> = Vec::new();
    for (i, field) in fields.iter().enumerate() {
        let at = child(&index(path, i), "jsonPath");
        let json_path = field.get("jsonPath").and_then(Value::as_str).unwrap_or_default();
        if json_path.is_empty() {
            causes.push(messages::required(at, ""));
            continue;
        }
        let value = Value::String(json_path.to_owned());
        let (names, found) = match resolve(json_path, schema) {
            Ok(resolved) => resolved,
            Err(reason) => {
                causes.push(messages::invalid(
                    at,
                    &value,
                    &format!("is an invalid path: {reason}"),
                ));
                continue;
            }
        };
        if names.first().map(String::as_str) == Some("metadata") {
            causes.push(messages::invalid(
                &at,
                &value,
                "must not point to fields in metadata",
            ));
        }
        let scalar = matches!(
            found.get("type").and_then(Value::as_str),
            Some("string" | "boolean" | "integer")
        );
        if !scalar {
            causes.push(messages::invalid(
                &at,
                &value,
                "must point to a field of type string, boolean or integer. Enum string fields and strings with formats are allowed.",
            ));
        }
        let joined = names.join(".");
        if unique.contains(&joined) {
            causes.push(messages::duplicate(at, &value));
        } else {
            unique.push(joined);
        }
    }
    if unique.len() > MAX_SELECTABLE_FIELDS {
        causes.push(messages::too_many(
            path,
            unique.len(),
            MAX_SELECTABLE_FIELDS as u64,
        ));
    }
}

/// Follows `json_path` (`.a.b`, or `['a']` steps, which selectable fields do not allow) through the
/// schema's properties and additionalProperties: the names passed and the schema found, or why not.
fn resolve<'a>(json_path: &str, schema: &'a Value) -> Result<(Vec<String>, &'a Value), String> {
    let mut names = Vec::new();
    let mut at = schema;
    let mut tokens = tokens(json_path).into_iter();
    while let Some(token) = tokens.next() {
        match token {
            "[" => return Err("array notation is not allowed".into()),
            "." => {
                let name = tokens.next().ok_or("unexpected end of JSON path")?;
                at = if let Some(properties) = at.get("properties").filter(|p| p.is_object()) {
                    properties.get(name).ok_or("does not refer to a valid field")?
                } else if let Some(additional) = at.get("additionalProperties").filter(|a| a.is_object()) {
                    additional
                } else {
                    return Err("does not refer to a valid field".into());
                };
                names.push(name.to_owned());
            }
            other => return Err(format!("expected [ or . but got: {other}")),
        }
    }
    Ok((names, at))
}

/// The delimiters `.`, `[`, `]` as tokens of their own, and the text between them.
fn tokens(json_path: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    for (i, c) in json_path.char_indices() {
        if matches!(c, '.' | '[' | ']') {
            if start < i {
                out.push(&json_path[start..i]);
            }
            out.push(&json_path[i..i + 1]);
            start = i + 1;
        }
    }
    if start < json_path.len() {
        out.push(&json_path[start..]);
    }
    out
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::schema::crd_internal::hoisted;

    fn rendered(list: Value) -> Vec<String> {
        let list = list.as_array().cloned().unwrap_or_default();
        let mut causes = Vec::new();
        validate(&list, &hoisted(&list), &mut causes);
        causes
            .into_iter()
            .map(|c| format!("{}: {}", c.field, c.message))
            .collect()
    }

    fn schema() -> Value {
        json!({"openAPIV3Schema": {"type": "object", "properties": {
            "metadata": {"type": "object"},
            "spec": {"type": "object", "properties": {
                "color": {"type": "string"}, "size": {"type": "integer"}, "tags": {"type": "array"}}}}}})
    }

    #[test]
    fn paths_must_reach_a_declared_scalar_outside_metadata() {
        let version = |fields: Value, name: &str| {
            let mut schema = schema();
            schema["openAPIV3Schema"]["description"] = json!(name);
            json!({"name": name, "schema": schema, "selectableFields": fields})
        };
        let list = json!([
            version(
                json!([{"jsonPath": ".spec.color"}, {"jsonPath": ".spec.size"}]),
                "v1"
            ),
            version(
                json!([{"jsonPath": ".spec.tags"}, {"jsonPath": ".spec.shape"}, {"jsonPath": ".metadata.name"},
                           {"jsonPath": "spec.color"}, {"jsonPath": ".spec['color']"}, {"jsonPath": ""}]),
                "v2"
            ),
        ]);
        assert_eq!(
            rendered(list),
            [
                r#"spec.versions[1].selectableFields[0].jsonPath: Invalid value: ".spec.tags": must point to a field of type string, boolean or integer. Enum string fields and strings with formats are allowed."#,
                r#"spec.versions[1].selectableFields[1].jsonPath: Invalid value: ".spec.shape": is an invalid path: does not refer to a valid field"#,
                r#"spec.versions[1].selectableFields[2].jsonPath: Invalid value: ".metadata.name": is an invalid path: does not refer to a valid field"#,
                r#"spec.versions[1].selectableFields[3].jsonPath: Invalid value: "spec.color": is an invalid path: expected [ or . but got: spec"#,
                r#"spec.versions[1].selectableFields[4].jsonPath: Invalid value: ".spec['color']": is an invalid path: array notation is not allowed"#,
                "spec.versions[1].selectableFields[5].jsonPath: Required value",
            ]
        );
    }

    #[test]
    fn per_version_fields_need_per_version_schemas() {
        let version = |name: &str, path: &str| {
            json!({"name": name, "schema": schema(),
            "selectableFields": [{"jsonPath": path}]})
        };
        assert_eq!(
            rendered(json!([version("v1", ".spec.color"), version("v2", ".spec.size")])),
            [
                r#"spec.versions[0].selectableFields: Invalid value: "": selectableFields may only be set when version.schema.openAPIV3Schema is not included"#,
                r#"spec.versions[1].selectableFields: Invalid value: "": selectableFields may only be set when version.schema.openAPIV3Schema is not included"#,
            ]
        );
    }

    #[test]
    fn fields_every_version_shares_are_the_crds_own() {
        let version = |name: &str| {
            json!({"name": name, "schema": schema(),
            "selectableFields": [{"jsonPath": ".spec.color"}, {"jsonPath": ".spec.color"}]})
        };
        assert_eq!(
            rendered(json!([version("v1"), version("v2")])),
            [r#"spec.selectableFields[1].jsonPath: Duplicate value: ".spec.color""#]
        );
    }
}
