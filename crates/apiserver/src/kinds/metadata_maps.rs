//! The labels and annotations of an object as kube-apiserver's registries compare them when they
//! decide whether an update counts a generation.

use serde_json::{Map, Value};

/// The map `field` of an object's metadata (its labels, its annotations); none when absent or empty
/// alike, as Go's semantic comparison takes an empty map for none.
pub(super) fn metadata_map<'a>(object: &'a Value, field: &str) -> Option<&'a Map<String, Value>> {
    object
        .pointer(&format!("/metadata/{field}"))
        .and_then(Value::as_object)
        .filter(|map| !map.is_empty())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn an_empty_map_is_none() {
        let labels = |metadata: Value| metadata_map(&json!({"metadata": metadata}), "labels").cloned();
        assert_eq!(labels(json!({})), None);
        assert_eq!(labels(json!({"labels": {}})), None);
        assert_eq!(
            labels(json!({"labels": {"a": "b"}})),
            json!({"a": "b"}).as_object().cloned()
        );
    }
}
