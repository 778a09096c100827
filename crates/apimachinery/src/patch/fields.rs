//! What of an object no manager owns: its type meta and the metadata the server sets.

use serde_json::{Map, Value};

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
