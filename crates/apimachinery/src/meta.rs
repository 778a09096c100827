//! Small accessors for the `metadata` of objects held as JSON, for every layer of the embedded server.

use serde_json::{Map, Value, json};

/// The string at JSON `pointer` in `object`, if there is one.
pub fn str_at<'a>(object: &'a Value, pointer: &str) -> Option<&'a str> {
    object.pointer(pointer).and_then(Value::as_str)
}

/// `metadata.name`; "" when absent.
pub fn name(object: &Value) -> &str {
    str_at(object, "/metadata/name").unwrap_or("")
}

/// "" for cluster-scoped objects.
pub fn namespace(object: &Value) -> &str {
    str_at(object, "/metadata/namespace").unwrap_or("")
}

/// `metadata.uid`; "" when absent.
pub fn uid(object: &Value) -> &str {
    str_at(object, "/metadata/uid").unwrap_or("")
}

/// `metadata.resourceVersion`, when set and not empty.
pub fn resource_version(object: &Value) -> Option<&str> {
    str_at(object, "/metadata/resourceVersion").filter(|rv| !rv.is_empty())
}

/// Whether `metadata.deletionTimestamp` is set: the object is being deleted.
pub fn is_deleting(object: &Value) -> bool {
    object
        .pointer("/metadata/deletionTimestamp")
        .is_some_and(|v| !v.is_null())
}

/// `metadata.finalizers`, empty when absent.
pub fn finalizers(object: &Value) -> Vec<String> {
    strings_at(object, "/metadata/finalizers")
}

/// The strings of the list at `pointer` (none when it is missing or not a list).
pub fn strings_at(object: &Value, pointer: &str) -> Vec<String> {
    object
        .pointer(pointer)
        .and_then(Value::as_array)
        .map(|list| {
            list.iter()
                .filter_map(|f| f.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

/// Sets `metadata.finalizers`, removing the field when the list is empty (as Go's `omitempty`).
pub fn set_finalizers(object: &mut Value, finalizers: &[String]) {
    let metadata = metadata_mut(object);
    if finalizers.is_empty() {
        metadata.remove("finalizers");
    } else {
        metadata.insert("finalizers".into(), json!(finalizers));
    }
}

/// `metadata.generation`; 0 when absent.
pub fn generation(object: &Value) -> i64 {
    object
        .pointer("/metadata/generation")
        .and_then(Value::as_i64)
        .unwrap_or(0)
}

/// Counts one more change in `metadata.generation` where the object keeps one (above 0), as
/// kube-apiserver does when it marks an object deleting: kinds that keep no generation have none.
pub fn bump_generation(object: &mut Value) {
    let generation = generation(object);
    if generation > 0 {
        metadata_mut(object).insert("generation".into(), json!(generation + 1));
    }
}

/// `metadata` as a mutable map, created when absent or not an object.
pub fn metadata_mut(object: &mut Value) -> &mut Map<String, Value> {
    if !object.is_object() {
        *object = json!({});
    }
    let root = object.as_object_mut().expect("made an object above");
    let metadata = root.entry("metadata").or_insert_with(|| json!({}));
    if !metadata.is_object() {
        *metadata = json!({});
    }
    metadata.as_object_mut().expect("made an object above")
}

/// `metadata.ownerReferences`, empty when absent.
pub fn owner_references(object: &Value) -> Vec<Value> {
    object
        .pointer("/metadata/ownerReferences")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
}

/// The uids named in `metadata.ownerReferences`.
pub fn owner_uids(object: &Value) -> Vec<String> {
    object
        .pointer("/metadata/ownerReferences")
        .and_then(Value::as_array)
        .map(|refs| {
            refs.iter()
                .filter_map(|r| r.get("uid")?.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

/// Everything of an object but `metadata` and `status`: a change here bumps `generation` (C4).
pub fn spec_part(object: &Value) -> Value {
    let mut copy = object.clone();
    if let Some(map) = copy.as_object_mut() {
        map.remove("metadata");
        map.remove("status");
    }
    copy
}

/// The current time as Kubernetes writes timestamps: RFC 3339 in UTC, whole seconds.
pub fn now_rfc3339() -> String {
    jiff::Timestamp::now().strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}

/// Empty lists and maps in metadata are not kept: the real server's Go types drop them (`omitempty`),
/// so a removed last finalizer reads back as no finalizers at all.
pub fn drop_empty_fields(metadata: &mut Map<String, Value>) {
    for field in [
        "finalizers",
        "ownerReferences",
        "labels",
        "annotations",
        "managedFields",
    ] {
        let empty = metadata.get(field).is_some_and(|v| {
            v.as_array().is_some_and(Vec::is_empty) || v.as_object().is_some_and(Map::is_empty)
        });
        if empty {
            metadata.remove(field);
        }
    }
}
