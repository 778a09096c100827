//! An object as the store keeps it: its compact JSON. A `serde_json::Value` costs about four times the
//! JSON it holds (a heap node per map and per string), which at 100,000 1 KiB ConfigMaps is ~470 MiB
//! instead of ~110 MiB (`cargo bench -p apiserver --bench memory`). Reads decode: a get or a list
//! pays a parse, while the memory of a held object is paid for as long as it lives. The bytes are
//! shared (`Arc`), so a list copies pointers under the store lock and decodes after releasing it.

use std::{
    collections::{BTreeMap, HashMap},
    sync::Arc,
};

use serde_json::Value;

/// An object's JSON as stored; cloning shares the bytes.
#[derive(Clone)]
pub struct StoredObject(Arc<[u8]>);

/// Storage key -> (namespace, name) -> object.
pub(crate) type Objects = HashMap<String, BTreeMap<(String, String), StoredObject>>;

impl std::fmt::Debug for StoredObject {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The size only: a stored object may be a Secret.
        write!(f, "StoredObject({} bytes)", self.0.len())
    }
}

impl StoredObject {
    /// The compact JSON of `object`.
    pub fn encode(object: &Value) -> StoredObject {
        // A Value always serializes: its map keys are strings.
        StoredObject(serde_json::to_vec(object).unwrap_or_default().into())
    }

    /// The size of the object's JSON.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// The JSON itself.
    pub fn as_bytes(&self) -> &[u8] {
        &self.0
    }

    /// Whether there are no bytes (never, for an object made by [`StoredObject::encode`]).
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Whether both are the same stored version: every write stores a new one.
    pub fn is_same_version(&self, other: &StoredObject) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }

    /// The object, parsed again.
    pub fn decode(&self) -> Value {
        // Only `encode` makes these bytes, so they always parse; Null would only mean a bug here.
        serde_json::from_slice(&self.0).unwrap_or(Value::Null)
    }

    /// Whether the object has a deletionTimestamp, read without building the object. The checks that
    /// follow every removal ask this of the namespace and of the CRD, whose schema makes it one of the
    /// largest objects: decoding it whole was 6% of the API server's CPU while custom resources were
    /// being deleted (`cargo bench -p operator --bench convergence`, perf).
    pub fn is_deleting(&self) -> bool {
        #[derive(serde::Deserialize)]
        struct Object {
            #[serde(default)]
            metadata: Metadata,
        }
        #[derive(serde::Deserialize, Default)]
        struct Metadata {
            #[serde(rename = "deletionTimestamp", default)]
            deletion_timestamp: Option<serde::de::IgnoredAny>,
        }
        serde_json::from_slice::<Object>(&self.0)
            .is_ok_and(|object| object.metadata.deletion_timestamp.is_some())
    }
}

/// The store's form of objects loaded as values (from a data dir).
pub(crate) fn encode_all(objects: HashMap<String, BTreeMap<(String, String), Value>>) -> Objects {
    objects
        .into_iter()
        .map(|(key, objects)| {
            let objects = objects
                .into_iter()
                .map(|(at, object)| (at, StoredObject::encode(&object)))
                .collect();
            (key, objects)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn an_object_decodes_to_what_was_encoded() {
        let object =
            json!({"metadata": {"name": "c", "labels": {"a": "ü"}}, "data": {"k": "v\n\"q\""}, "n": 1.5});
        assert_eq!(StoredObject::encode(&object).decode(), object);
    }

    #[test]
    fn deleting_is_read_from_the_deletion_timestamp_alone() {
        let deleting = |object: Value| StoredObject::encode(&object).is_deleting();
        let schema =
            json!({"openAPIV3Schema": {"type": "object", "properties": {"metadata": {"type": "object"}}}});
        assert!(deleting(
            json!({"spec": schema, "metadata": {"name": "c", "deletionTimestamp": "2026-11-23T00:00:00Z"}})
        ));
        assert!(!deleting(json!({"metadata": {"name": "c"}, "spec": schema})));
        assert!(!deleting(
            json!({"metadata": {"name": "c", "deletionTimestamp": null}})
        ));
        assert!(!deleting(json!({"kind": "Namespace"})));
    }
}
