//! JSON values as CEL sees them, typed by the schema: an `integer` field is a CEL `int`, a `number`
//! field a `double` even when the JSON says `2`, as kube-apiserver's structural-schema bindings do.

use std::collections::HashMap;
use std::sync::Arc;

use cel::Value as Cel;
use cel::objects::Key;
use serde_json::Value;

use super::super::node::{Additional, JsonType, Node};

/// `value` under `node` (`None` where the schema says nothing: preserved unknown fields).
pub(crate) fn to_cel(node: Option<&Node>, value: &Value) -> Cel {
    match value {
        Value::Null => Cel::Null,
        Value::Bool(b) => Cel::Bool(*b),
        Value::Number(n) => {
            let wants_double = node.is_some_and(|n| n.ty == Some(JsonType::Number));
            match (n.as_i64(), n.as_u64(), n.as_f64()) {
                (Some(i), _, _) if !wants_double => Cel::Int(i),
                (None, Some(u), _) if !wants_double => Cel::UInt(u),
                (_, _, Some(f)) => Cel::Float(f),
                _ => Cel::Null,
            }
        }
        Value::String(s) => Cel::String(Arc::new(s.clone())),
        Value::Array(items) => {
            let item_node = node.and_then(|n| n.items.as_deref());
            Cel::List(Arc::new(items.iter().map(|v| to_cel(item_node, v)).collect()))
        }
        Value::Object(map) => {
            let entries: HashMap<Key, Cel> = map
                .iter()
                .map(|(name, v)| (Key::from(name.clone()), to_cel(field_node(node, name), v)))
                .collect();
            Cel::from(entries)
        }
    }
}

/// The root object as a rule on the root sees it: kube-apiserver exposes only `metadata.name` and
/// `metadata.generateName` of the object's metadata to rules.
pub(crate) fn root_to_cel(node: &Node, value: &Value) -> Cel {
    let Value::Object(map) = value else {
        return to_cel(Some(node), value);
    };
    let mut object = map.clone();
    if let Some(Value::Object(metadata)) = map.get("metadata") {
        let kept: serde_json::Map<String, Value> = metadata
            .iter()
            .filter(|(k, _)| matches!(k.as_str(), "name" | "generateName"))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        object.insert("metadata".to_owned(), Value::Object(kept));
    }
    to_cel(Some(node), &Value::Object(object))
}

/// The schema of a field of an object node: a declared property, else `additionalProperties`.
pub(crate) fn field_node<'n>(node: Option<&'n Node>, name: &str) -> Option<&'n Node> {
    let node = node?;
    node.properties.get(name).or(match &node.additional {
        Additional::Schema(schema) => Some(schema.as_ref()),
        _ => None,
    })
}
