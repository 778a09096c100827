//! Fields as server-side apply's merge and conflict checks see them: a field is a path of object keys
//! and lists count as one field (atomic), an approximation of structured-merge-diff that is enough for
//! conflicts on scalars and maps. What managedFields record is the exact field set (`field_set.rs`).

use serde_json::{Map, Value};

/// Dotted paths of every leaf in `value` (list-maps by key, other lists as one leaf).
pub(super) fn leaves(value: &Value, path: &mut Vec<String>, out: &mut Vec<(Vec<String>, Value)>) {
    match value {
        Value::Object(map) if !map.is_empty() => {
            for (k, v) in map {
                path.push(k.clone());
                leaves(v, path, out);
                path.pop();
            }
        }
        _ => out.push((path.clone(), value.clone())),
    }
}

pub(super) fn get_path<'a>(value: &'a Value, path: &[String]) -> Option<&'a Value> {
    path.iter().try_fold(value, |v, k| v.get(k))
}

pub(super) fn paths_of_fields(fields: &Value, prefix: &mut Vec<String>, out: &mut Vec<Vec<String>>) {
    let Some(map) = fields.as_object() else { return };
    if map.is_empty() && !prefix.is_empty() {
        out.push(prefix.clone());
    }
    let mut list_owned = false;
    for (key, child) in map {
        if let Some(field) = key.strip_prefix("f:") {
            prefix.push(field.to_owned());
            paths_of_fields(child, prefix, out);
            prefix.pop();
        } else if key != "." && !list_owned && !prefix.is_empty() {
            // Items of a list (`k:{...}`, `v:...`, `i:n`): apply sees lists whole, so owning an item
            // is owning the list.
            list_owned = true;
            out.push(prefix.clone());
        }
    }
}

/// Metadata the server sets, which no manager owns.
const SERVER_METADATA: &[&str] = &[
    "name",
    "namespace",
    "generateName",
    "selfLink",
    "resourceVersion",
    "managedFields",
    "uid",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
];

/// `object` without what no manager owns (type meta, server-set metadata), as field paths see it.
pub(super) fn ownable_content(object: &Value) -> Value {
    let mut content = object.clone();
    let Some(map) = content.as_object_mut() else {
        return content;
    };
    map.remove("apiVersion");
    map.remove("kind");
    if let Some(metadata) = map.get_mut("metadata").and_then(Value::as_object_mut) {
        for key in SERVER_METADATA {
            metadata.remove(*key);
        }
    }
    if map
        .get("metadata")
        .and_then(Value::as_object)
        .is_some_and(Map::is_empty)
    {
        map.remove("metadata");
    }
    content
}

/// Whether two field paths overlap: one is the other or lies inside it.
pub(super) fn overlaps(a: &[String], b: &[String]) -> bool {
    a.starts_with(b) || b.starts_with(a)
}
