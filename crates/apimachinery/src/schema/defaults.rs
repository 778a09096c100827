//! Structural defaulting (V3), as kube-apiserver does it on create, update and read.
//!
//! First, `null` in a non-nullable field is dropped (or replaced by the field's default): the
//! apiserver treats such a null as "unset" rather than rejecting it. Then, for every object node,
//! missing properties that have a `default` get a copy of it, and only afterwards the walk descends
//! into the children, so defaults nested inside a freshly defaulted parent apply too. Existing values
//! are never overwritten. Nothing under the root `metadata` is defaulted.

use serde_json::{Map, Value};

use super::node::{Additional, Node};

/// Defaults a whole object (the root node).
pub(crate) fn default_root(node: &Node, object: &mut Value) {
    if let Value::Object(map) = object {
        default_object(node, map, true);
    }
}

/// Defaults a value below the root.
pub(crate) fn default_value(node: &Node, value: &mut Value) {
    match value {
        Value::Object(map) => default_object(node, map, false),
        Value::Array(items) => {
            let Some(item_node) = &node.items else { return };
            for item in items.iter_mut() {
                if item.is_null()
                    && !item_node.nullable
                    && let Some(default) = &item_node.default
                {
                    *item = default.clone();
                }
                default_value(item_node, item);
            }
        }
        _ => {}
    }
}

/// At the root, `metadata` belongs to the apiserver, not to the schema: it is left alone.
fn default_object(node: &Node, map: &mut Map<String, Value>, root: bool) {
    let skip = |name: &str| root && name == "metadata";
    for (name, prop) in &node.properties {
        if !skip(name) {
            default_field(map, name, prop);
        }
    }
    if let Additional::Schema(additional) = &node.additional
        && let Some(default) = &additional.default
        && !additional.nullable
    {
        for (name, field) in map.iter_mut() {
            if !node.properties.contains_key(name) && field.is_null() {
                *field = default.clone();
            }
        }
    }
    map.retain(|name, field| skip(name) || !is_droppable_null(node, name, field));
    for (name, field) in map.iter_mut() {
        if !skip(name) {
            default_child(node, name, field);
        }
    }
}

/// Sets property `name` to its default when it is absent or a non-nullable null.
fn default_field(map: &mut Map<String, Value>, name: &str, prop: &Node) {
    let Some(default) = &prop.default else { return };
    let missing = match map.get(name) {
        None => true,
        Some(Value::Null) => !prop.nullable,
        Some(_) => false,
    };
    if missing {
        map.insert(name.to_owned(), default.clone());
    }
}

/// A null the apiserver drops before validating: non-nullable, and no default to replace it.
fn is_droppable_null(node: &Node, name: &str, field: &Value) -> bool {
    if !field.is_null() {
        return false;
    }
    let schema = match node.properties.get(name) {
        Some(prop) => Some(prop),
        None => match &node.additional {
            Additional::Schema(additional) => Some(additional.as_ref()),
            _ => None,
        },
    };
    schema.is_some_and(|s| !s.nullable && s.default.is_none())
}

fn default_child(node: &Node, name: &str, value: &mut Value) {
    if let Some(prop) = node.properties.get(name) {
        default_value(prop, value);
    } else if let Additional::Schema(additional) = &node.additional {
        default_value(additional, value);
    }
}
