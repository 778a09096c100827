//! The 409 of an apply that would change fields other managers own, in kube-apiserver's words: each
//! field as structured-merge-diff prints a path (`.spec.containers[name="web"].image`), each manager
//! as its managedFields entry names it (`"kubectl-edit" using apps/v1` for an update).

use std::collections::BTreeMap;

use serde_json::Value;

use super::field_set::FieldSet;
use crate::{Error, FieldCause};

/// The fields of each manager (by its managedFields entry) that an apply would take.
pub(super) fn conflict_error(conflicts: &[(&Value, FieldSet)]) -> Error {
    // Grouped by the manager's identity, as the real server groups them in its message.
    let mut by_manager: BTreeMap<String, (String, Vec<String>)> = BTreeMap::new();
    for (entry, fields) in conflicts {
        let (_, paths) = by_manager
            .entry(identity(entry))
            .or_insert_with(|| (describe(entry), Vec::new()));
        let mut printed: Vec<(Vec<OrderKey>, String)> = fields
            .paths()
            .map(|path| (order_key(path), print_path(path)))
            .collect();
        printed.sort();
        paths.extend(printed.into_iter().map(|(_, text)| text));
    }
    let count: usize = by_manager.values().map(|(_, paths)| paths.len()).sum();
    let message = match by_manager.values().next() {
        Some((manager, paths)) if count == 1 => {
            format!(
                "Apply failed with 1 conflict: conflict with {manager}: {}",
                paths[0]
            )
        }
        _ => {
            let lines: Vec<String> = by_manager
                .values()
                .flat_map(|(manager, paths)| {
                    std::iter::once(format!("conflicts with {manager}:"))
                        .chain(paths.iter().map(|path| format!("- {path}")))
                })
                .collect();
            format!("Apply failed with {count} conflicts: {}", lines.join("\n"))
        }
    };
    let causes = by_manager
        .values()
        .flat_map(|(manager, paths)| {
            paths.iter().map(move |path| {
                FieldCause::new("FieldManagerConflict", path, format!("conflict with {manager}"))
            })
        })
        .collect();
    Error::Conflict { message, causes }
}

/// What identifies a managedFields entry: its JSON without time and fields (and, for an applier,
/// without apiVersion), in the field order of Go's type, which also orders managers in a message.
fn identity(entry: &Value) -> String {
    let text = |field: &str| entry.get(field).and_then(Value::as_str).unwrap_or_default();
    let fields: Vec<String> = ["manager", "operation", "apiVersion", "subresource"]
        .into_iter()
        .filter(|field| !(*field == "apiVersion" && text("operation") == "Apply"))
        .filter(|field| !text(field).is_empty())
        .map(|field| format!("{}:{}", Value::from(field), Value::from(text(field))))
        .collect();
    format!("{{{}}}", fields.join(","))
}

/// A manager as a conflict names it: `"name"`, its subresource, and for an updater its apiVersion.
fn describe(entry: &Value) -> String {
    let text = |field: &str| entry.get(field).and_then(Value::as_str).unwrap_or_default();
    let mut described = format!("{:?}", text("manager"));
    if !text("subresource").is_empty() {
        described = format!("{described} with subresource {:?}", text("subresource"));
    }
    if text("operation") == "Update" {
        described = format!("{described} using {}", text("apiVersion"));
    }
    described
}

/// A FieldsV1 path as structured-merge-diff prints it.
pub(super) fn print_path(path: &[String]) -> String {
    path.iter().map(|element| print_element(element)).collect()
}

fn print_element(element: &str) -> String {
    let (kind, rest) = element.split_at(element.find(':').map_or(0, |i| i + 1));
    match kind {
        "f:" => format!(".{rest}"),
        "k:" => {
            let fields: Vec<String> = serde_json::from_str::<serde_json::Map<String, Value>>(rest)
                .map(|keys| {
                    keys.iter()
                        .map(|(name, value)| format!("{name}={}", go_value(value)))
                        .collect()
                })
                .unwrap_or_default();
            format!("[{}]", fields.join(","))
        }
        "v:" => {
            let value = serde_json::from_str::<Value>(rest).unwrap_or(Value::Null);
            format!("[={}]", go_value(&value))
        }
        "i:" => format!("[{rest}]"),
        _ => element.to_owned(),
    }
}

/// A scalar as Go's `%v` (`%q` for a string) prints it in a path.
fn go_value(value: &Value) -> String {
    match value {
        Value::Null => "null".to_owned(),
        Value::String(text) => format!("{text:?}"),
        other => other.to_string(),
    }
}

/// One path element's place: whether paths go on below it, its kind's rank, its text.
type OrderKey = (bool, u8, String);

/// The order in which structured-merge-diff walks a set: at each node its members, then the paths
/// below each child; elements by kind (field names, keys, values, indices), then by text.
fn order_key(path: &[String]) -> Vec<OrderKey> {
    path.iter()
        .enumerate()
        .map(|(depth, element)| {
            let rank = match element.get(..2) {
                Some("f:") => 0,
                Some("k:") => 1,
                Some("v:") => 2,
                _ => 3,
            };
            (depth + 1 < path.len(), rank, element.clone())
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_print_as_structured_merge_diff_prints_them() {
        let path: Vec<String> = [
            "f:spec",
            r#"k:{"containerPort":80,"protocol":"TCP"}"#,
            r#"v:"x""#,
            "i:3",
            "f:name",
        ]
        .map(str::to_owned)
        .to_vec();
        assert_eq!(
            print_path(&path),
            r#".spec[containerPort=80,protocol="TCP"][="x"][3].name"#
        );
    }

    #[test]
    fn updaters_are_named_with_their_api_version() {
        let entry = serde_json::json!({"manager": "kubectl-edit", "operation": "Update",
            "apiVersion": "apps/v1", "time": "2026-01-01T00:00:00Z"});
        assert_eq!(describe(&entry), r#""kubectl-edit" using apps/v1"#);
        assert_eq!(
            identity(&entry),
            r#"{"manager":"kubectl-edit","operation":"Update","apiVersion":"apps/v1"}"#
        );
    }
}
