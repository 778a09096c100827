//! The sizes kube-apiserver assumes for the values a schema node can hold: the bounds its cost
//! estimator reads (`maxItems`, `maxLength`, `maxProperties`), and where a bound is missing, the
//! most that fits in one request of [`MAX_REQUEST_BYTES`].

use super::super::super::node::{Additional, JsonType, Node};

/// The largest request kube-apiserver accepts; unbounded values are assumed to fill it.
pub(crate) const MAX_REQUEST_BYTES: u64 = 3 * 1024 * 1024;

/// The most elements (characters, items, properties) a value under `node` can have, as the real
/// server's declared types carry it. Objects and scalars have none (0): their size never enters an
/// estimate except through an equality, where kube-apiserver counts them as 0 too.
pub(crate) fn max_elements(node: &Node) -> u64 {
    let fill = MAX_REQUEST_BYTES - 2;
    if node.int_or_string {
        return fill;
    }
    match node.ty {
        Some(JsonType::Array) => match (node.max_items, node.items.as_deref()) {
            (Some(max), _) => max,
            (None, Some(items)) => fill / (min_serialized_size(items) + 1),
            (None, None) => 0,
        },
        Some(JsonType::Object) => match (&node.additional, node.max_properties) {
            (Additional::Schema(_), Some(max)) => max,
            // A key ("" and a colon), a comma and the smallest value.
            (Additional::Schema(values), None) => fill / (min_serialized_size(values) + 6),
            _ => 0,
        },
        Some(JsonType::String) => match node.format.as_deref() {
            Some("byte") => node.max_length.unwrap_or(fill),
            Some("duration") | Some("date-time") => 32,
            Some("date") => 12,
            // maxLength counts characters; a character may take four bytes.
            _ => match (node.max_length, &node.enum_values) {
                (Some(max), _) => max.saturating_mul(4),
                (None, Some(values)) if !values.is_empty() => values
                    .iter()
                    .filter_map(|v| v.as_str())
                    .map(|s| s.len() as u64)
                    .max()
                    .unwrap_or(0),
                _ => fill,
            },
        },
        _ => 0,
    }
}

/// The fewest bytes a value under `node` takes in JSON: `{}` plus its required fields that have no
/// default, `[]`, `""`, `true`, `0`.
pub(crate) fn min_serialized_size(node: &Node) -> u64 {
    if node.int_or_string {
        return 1;
    }
    match node.ty {
        Some(JsonType::Object) => {
            let required: u64 = node
                .properties
                .iter()
                .filter(|(name, property)| {
                    node.required.contains(name) && property.default.is_none() && has_type(property)
                })
                .map(|(name, property)| name.len() as u64 + min_serialized_size(property) + 4)
                .sum();
            2 + required
        }
        Some(JsonType::Array) => 2,
        Some(JsonType::String) => match node.format.as_deref() {
            Some("date") => 12,
            Some("date-time") => 21,
            Some("duration") => 3,
            _ => 2,
        },
        Some(JsonType::Boolean) => 4,
        Some(JsonType::Integer) | Some(JsonType::Number) => 1,
        None => 0,
    }
}

/// Whether CEL sees the node at all: fields without a type (preserved unknown fields) are not
/// declared to rules.
fn has_type(node: &Node) -> bool {
    node.ty.is_some() || node.int_or_string
}

/// How many values under a child of `parent` one object can hold, `None` when unbounded: a list's
/// `maxItems`, a map's `maxProperties`, one for anything else.
pub(crate) fn children_per_value(parent: &Node) -> Option<u64> {
    match parent.ty {
        Some(JsonType::Array) => parent.max_items,
        Some(JsonType::Object) if !matches!(parent.additional, Additional::Unspecified) => {
            parent.max_properties
        }
        _ => Some(1),
    }
}

/// How many times a node may occur in one request when some list or map above it is unbounded:
/// one per separator-and-smallest-value.
pub(crate) fn unbounded_cardinality(node: &Node) -> u64 {
    MAX_REQUEST_BYTES / (min_serialized_size(node) + 1)
}
