//! Strict decoding of request bodies, as kube-apiserver's decoder reports it (V3): a key repeated in
//! one JSON object is a duplicate field, a key the type or schema lacks is an unknown field, each named
//! by its path (`metadata.labels.a`, `spec.template.spec.containers[0].bar`).
//!
//! serde_json keeps the last of repeated keys without a word, so the body is decoded here by a visitor
//! that notes each repetition; no crate offers that. The value is what Go's encoding/json, which
//! kube-apiserver uses, makes of it: a repeated object is merged into the first, anything else
//! replaces it.

use std::fmt;

use serde::de::{DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

mod typed_order;
mod yaml;

pub use typed_order::typed_field_problems;
pub use yaml::repeated_yaml_keys;

/// A JSON document and the paths of the fields it repeats, in document order.
#[derive(Debug, Clone, PartialEq)]
pub struct Decoded {
    /// The document as Go's encoding/json decodes it: a repeated object merged into the first, any
    /// other repeated value replacing the earlier one.
    pub value: Value,
    /// The paths of the repeated keys, as kube-apiserver names them (`metadata.labels.a`).
    pub duplicate_fields: Vec<String>,
}

/// Decodes `bytes` as JSON, noting repeated keys. Nesting is bounded by serde_json's recursion limit.
pub fn decode_json(bytes: &[u8]) -> serde_json::Result<Decoded> {
    let mut duplicate_fields = Vec::new();
    let mut deserializer = serde_json::Deserializer::from_slice(bytes);
    let value = Node {
        path: Path::Root,
        duplicates: &mut duplicate_fields,
    }
    .deserialize(&mut deserializer)?;
    deserializer.end()?;
    Ok(Decoded {
        value,
        duplicate_fields,
    })
}

/// What strict decoding found, in kube-apiserver's words: duplicate fields, then unknown fields.
pub fn field_problems(duplicate_fields: &[String], unknown_fields: &[String]) -> Vec<String> {
    let duplicates = duplicate_fields
        .iter()
        .map(|path| format!("duplicate field \"{path}\""));
    let unknown = unknown_fields
        .iter()
        .map(|path| format!("unknown field \"{path}\""));
    duplicates.chain(unknown).collect()
}

/// Where a value sits in the document, kept as borrowed links to its parents: the path is written out
/// only for a duplicate, so a body without one costs no allocation per field.
#[derive(Clone, Copy)]
enum Path<'p> {
    Root,
    Key(&'p Path<'p>, &'p str),
    Index(&'p Path<'p>, usize),
}

impl fmt::Display for Path<'_> {
    // Recursion as deep as the document, which serde_json's recursion limit bounds.
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        match self {
            Path::Root => Ok(()),
            Path::Key(Path::Root, key) => write!(f, "{key}"),
            Path::Key(parent, key) => write!(f, "{parent}.{key}"),
            Path::Index(parent, index) => write!(f, "{parent}[{index}]"),
        }
    }
}

/// One value being decoded, at `path`.
struct Node<'a, 'p> {
    path: Path<'p>,
    duplicates: &'a mut Vec<String>,
}

impl<'de> DeserializeSeed<'de> for Node<'_, '_> {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Node<'_, '_> {
    type Value = Value;

    fn expecting(&self, formatter: &mut fmt::Formatter) -> fmt::Result {
        formatter.write_str("a JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_owned()))
    }

    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::new();
        loop {
            let item = Node {
                path: Path::Index(&self.path, items.len()),
                duplicates: &mut *self.duplicates,
            };
            match seq.next_element_seed(item)? {
                Some(item) => items.push(item),
                None => return Ok(Value::Array(items)),
            }
        }
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut object = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            let value = map.next_value_seed(Node {
                path: Path::Key(&self.path, &key),
                duplicates: &mut *self.duplicates,
            })?;
            match object.get_mut(&key) {
                Some(first) => {
                    self.duplicates.push(Path::Key(&self.path, &key).to_string());
                    merge_as_go_decodes(first, value);
                }
                None => {
                    object.insert(key, value);
                }
            }
        }
        Ok(Value::Object(object))
    }
}

/// Go decodes a repeated object into the value the first one made, and anything else over it.
fn merge_as_go_decodes(first: &mut Value, again: Value) {
    match (first, again) {
        (Value::Object(first), Value::Object(again)) => {
            for (key, value) in again {
                match first.get_mut(&key) {
                    Some(existing) => merge_as_go_decodes(existing, value),
                    None => {
                        first.insert(key, value);
                    }
                }
            }
        }
        (first, again) => *first = again,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn repeated_keys_are_named_by_path_in_document_order() {
        let body = br#"{"metadata": {"labels": {"a": "1", "a": "2"}}, "spec": {"containers": [{"name": "c", "name": "d"}]}, "data": {"x": "1", "x": "2"}}"#;
        let decoded = decode_json(body).unwrap();
        assert_eq!(
            decoded.duplicate_fields,
            ["metadata.labels.a", "spec.containers[0].name", "data.x"]
        );
        assert_eq!(
            decoded.value["metadata"]["labels"]["a"], "2",
            "the last scalar wins"
        );
        assert_eq!(decoded.value["spec"]["containers"][0]["name"], "d");
    }

    #[test]
    fn a_repeated_object_is_merged_into_the_first_as_go_decodes_it() {
        let decoded = decode_json(br#"{"data": {"x": "1", "y": "1"}, "data": {"y": "2"}}"#).unwrap();
        assert_eq!(decoded.duplicate_fields, ["data"]);
        assert_eq!(decoded.value, json!({"data": {"x": "1", "y": "2"}}));
    }

    #[test]
    fn a_body_without_repetitions_decodes_as_serde_json_does() {
        let body = br#"{"a": [1, -2, 3.5, true, null, "s"], "b": {"c": {}}, "n": 18446744073709551615}"#;
        let decoded = decode_json(body).unwrap();
        assert!(decoded.duplicate_fields.is_empty());
        assert_eq!(decoded.value, serde_json::from_slice::<Value>(body).unwrap());
    }

    #[test]
    fn trailing_garbage_and_deep_nesting_are_errors_not_crashes() {
        assert!(decode_json(br#"{"a": 1} x"#).is_err());
        let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
        assert!(decode_json(deep.as_bytes()).is_err());
    }

    #[test]
    fn problems_name_duplicates_then_unknown_fields() {
        let problems = field_problems(&["spec.table".into()], &["spec.x".into(), "spec.y".into()]);
        assert_eq!(
            problems,
            [
                r#"duplicate field "spec.table""#,
                r#"unknown field "spec.x""#,
                r#"unknown field "spec.y""#
            ]
        );
    }
}
