//! Pruning (V3): fields the structural schema does not specify are dropped, unless the node says
//! `x-kubernetes-preserve-unknown-fields: true` or allows them through `additionalProperties`.
//! Only the structural skeleton counts (`properties`, `additionalProperties`, `items`); junctors
//! never keep a field alive. `apiVersion`, `kind` and `metadata` survive at the root and in embedded
//! resources (`x-kubernetes-embedded-resource`), and the root `metadata` is not looked into at all.

use serde_json::Value;

use super::messages::{child, index};
use super::node::{Additional, Node};
use super::validate::is_root_meta_field;

/// Prunes `value` found at `path`, returning the dotted paths removed in document order.
/// `resource_root` is true for the object itself and for embedded resources.
pub(crate) fn prune_value(node: &Node, value: &mut Value, path: &str, resource_root: bool) -> Vec<String> {
    let mut removed = Vec::new();
    prune_into(node, value, path, resource_root, &mut removed);
    removed
}

fn prune_into(node: &Node, value: &mut Value, path: &str, resource_root: bool, removed: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            let keeps_meta = resource_root || node.embedded_resource;
            let mut unknown = Vec::new();
            for (name, field) in map.iter_mut() {
                let field_path = child(path, name);
                if let Some(prop) = node.properties.get(name) {
                    if keeps_meta && name == "metadata" && resource_root {
                        continue;
                    }
                    prune_into(prop, field, &field_path, false, removed);
                    continue;
                }
                if keeps_meta && is_root_meta_field(name) {
                    continue;
                }
                match &node.additional {
                    Additional::Schema(schema) => prune_into(schema, field, &field_path, false, removed),
                    Additional::Allowed(true) => {}
                    _ if node.preserve_unknown => {}
                    _ => {
                        unknown.push(name.clone());
                        removed.push(field_path);
                    }
                }
            }
            for name in unknown {
                map.remove(&name);
            }
        }
        Value::Array(items) => {
            if let Some(item_node) = &node.items {
                for (i, item) in items.iter_mut().enumerate() {
                    prune_into(item_node, item, &index(path, i), false, removed);
                }
            }
        }
        _ => {}
    }
}
