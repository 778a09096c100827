//! Validation of a value against a compiled schema node (V2).
//!
//! Hand-written rather than delegated to a JSON-Schema crate: the Kubernetes dialect (`nullable`,
//! `x-kubernetes-int-or-string`, list types, integral floats accepted as integers) differs from
//! draft-04, and the observable contract is the exact kube-apiserver cause (reason, message, and a
//! field path such as `spec.options[1].id`), which a translation layer over another validator's
//! error model could only approximate. The checks run in kube-openapi's order: type, junctors,
//! format and string rules, numbers, arrays, enum, objects.

use serde_json::{Map, Number, Value};

use super::formats;
use super::messages::{self, child, go_float, go_json, index};
use super::node::{Additional, JsonType, ListType, Node};
use crate::FieldCause;

/// Validates `value` found at `path` (dotted, `""` for the root) against `node`.
pub(crate) fn validate_value(node: &Node, value: &Value, path: &str) -> Vec<FieldCause> {
    validate_update(node, value, None, path)
}

/// [`validate_value`] of an update whose stored value is `old`, with ratcheting (on by default
/// since Kubernetes 1.30): a value equal to the one it correlates with in `old` (the same property,
/// map entry, or item of a `map` list by its keys) is not validated again, so that a schema made
/// stricter does not refuse every later update of an object that no longer meets it. Items of
/// atomic and set lists correlate with nothing; a whole list unchanged still does.
pub(crate) fn validate_update(
    node: &Node,
    value: &Value,
    old: Option<&Value>,
    path: &str,
) -> Vec<FieldCause> {
    let mut causes = Vec::new();
    validate_into(node, value, old, path, &mut causes);
    causes
}

/// `spec.age in body`, as kube-openapi names the subject of a message.
fn subject(path: &str) -> String {
    if path.is_empty() {
        "in body".to_owned()
    } else {
        format!("{path} in body")
    }
}

fn validate_into(node: &Node, value: &Value, old: Option<&Value>, path: &str, out: &mut Vec<FieldCause>) {
    if old.is_some_and(|old| json_eq(old, value)) {
        return;
    }
    if !check_type(node, value, path, out) {
        return;
    }
    if value.is_null() {
        return;
    }
    check_junctors(node, value, old, path, out);
    match value {
        Value::String(s) => check_string(node, s, value, path, out),
        Value::Number(n) => check_number(node, n, value, path, out),
        Value::Array(items) => check_array(node, items, value, old, path, out),
        _ => {}
    }
    if let Some(allowed) = &node.enum_values
        && !allowed.iter().any(|a| json_eq(a, value))
    {
        let names: Vec<String> = allowed
            .iter()
            .map(|a| a.as_str().map(str::to_owned).unwrap_or_else(|| go_json(a)))
            .collect();
        out.push(messages::not_supported(path, value, &names));
    }
    if let Value::Object(map) = value {
        check_object(node, map, old, path, out);
        if node.embedded_resource {
            check_embedded_type_meta(map, path, out);
        }
    }
}

/// `x-kubernetes-embedded-resource`: the embedded object names its own `apiVersion` and `kind`.
fn check_embedded_type_meta(map: &Map<String, Value>, path: &str, out: &mut Vec<FieldCause>) {
    for name in ["apiVersion", "kind"] {
        let field_path = child(path, name);
        match map.get(name) {
            None => out.push(messages::required(field_path, "must not be empty")),
            Some(Value::String(text)) if text.is_empty() => out.push(messages::invalid(
                field_path,
                &Value::String(String::new()),
                "must not be empty",
            )),
            Some(Value::String(_)) => {}
            Some(other) => out.push(messages::invalid(field_path, other, "must be a string")),
        }
    }
}

/// The JSON type name kube-openapi infers for a decoded value.
fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_f64() => "number",
        Value::Number(_) => "integer",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// Returns false when the value has the wrong type, after reporting it; nothing else is checked then.
fn check_type(node: &Node, value: &Value, path: &str, out: &mut Vec<FieldCause>) -> bool {
    let expected: Vec<&str> = if node.int_or_string {
        vec!["integer", "string"]
    } else {
        node.ty.map(|t| vec![t.name()]).unwrap_or_default()
    };
    if expected.is_empty() {
        return true;
    }
    let actual = type_name(value);
    let ok = match value {
        Value::Null => node.nullable,
        Value::Number(n) => {
            expected.contains(&actual)
                || (actual == "integer" && expected.contains(&"number"))
                || (actual == "number"
                    && expected.contains(&"integer")
                    && n.as_f64().is_some_and(|f| f.fract() == 0.0))
        }
        _ => expected.contains(&actual),
    };
    if !ok {
        let detail = format!(
            "{} must be of type {}: {}",
            subject(path),
            expected.join(","),
            messages::go_quote(actual)
        );
        out.push(messages::type_invalid(
            path,
            &Value::String(actual.to_owned()),
            &detail,
        ));
    }
    ok
}

fn check_junctors(node: &Node, value: &Value, old: Option<&Value>, path: &str, out: &mut Vec<FieldCause>) {
    let empty = Value::String(String::new());
    if !node.all_of.is_empty() {
        let mut failures = Vec::new();
        for sub in &node.all_of {
            validate_into(sub, value, old, path, &mut failures);
        }
        if !failures.is_empty() {
            out.extend(failures);
            let detail = format!("{path} must validate all the schemas (allOf)");
            out.push(messages::invalid(path, &empty, detail.trim_start()));
        }
    }
    if !node.any_of.is_empty()
        && !node
            .any_of
            .iter()
            .any(|sub| validate_value(sub, value, path).is_empty())
    {
        let detail = format!("{path} must validate at least one schema (anyOf)");
        out.push(messages::invalid(path, &empty, detail.trim_start()));
    }
    if !node.one_of.is_empty() {
        let passing = node
            .one_of
            .iter()
            .filter(|sub| validate_value(sub, value, path).is_empty())
            .count();
        if passing != 1 {
            let detail = format!("{path} must validate one and only one schema (oneOf)");
            out.push(messages::invalid(path, &empty, detail.trim_start()));
        }
    }
    if let Some(not) = &node.not
        && validate_value(not, value, path).is_empty()
    {
        let detail = format!("{path} must not validate the schema (not)");
        out.push(messages::invalid(path, &empty, detail.trim_start()));
    }
}

fn check_string(node: &Node, s: &str, value: &Value, path: &str, out: &mut Vec<FieldCause>) {
    // kube-openapi counts runes, not bytes.
    let length = s.chars().count() as u64;
    if let Some(max) = node.max_length
        && length > max
    {
        out.push(messages::too_long_max_length(path, max));
    }
    if let Some(min) = node.min_length
        && length < min
    {
        let detail = format!("{} should be at least {min} chars long", subject(path));
        out.push(messages::invalid(path, value, &detail));
    }
    if let Some(pattern) = &node.pattern
        && !pattern.regex.is_match(s)
    {
        let detail = format!("{} should match '{}'", subject(path), pattern.source);
        out.push(messages::invalid(path, value, &detail));
    }
    if let Some(format) = &node.format
        && !formats::string_matches(format, s)
    {
        let detail = format!(
            "{} must be of type {format}: {}",
            subject(path),
            messages::go_quote(s)
        );
        out.push(messages::type_invalid(path, value, &detail));
    }
}

fn check_number(node: &Node, n: &Number, value: &Value, path: &str, out: &mut Vec<FieldCause>) {
    let Some(f) = n.as_f64() else { return };
    // Bounds print as integers when the value is one (kube-openapi's MinimumNativeType).
    let bound = |b: f64| {
        if n.is_f64() {
            go_float(b)
        } else {
            format!("{}", b as i64)
        }
    };
    if let Some(format) = &node.format
        && !formats::number_in_range(format, n)
    {
        let ty = node.ty.map(JsonType::name).unwrap_or("integer");
        let detail = format!("Checked value must be of type {ty} with format {format} in {path}");
        out.push(messages::invalid(path, value, &detail));
    }
    if let Some(max) = node.maximum {
        let exceeded = if node.exclusive_maximum { f >= max } else { f > max };
        if exceeded {
            let relation = if node.exclusive_maximum {
                "less than"
            } else {
                "less than or equal to"
            };
            let detail = format!("{} should be {relation} {}", subject(path), bound(max));
            out.push(messages::invalid(path, value, &detail));
        }
    }
    if let Some(min) = node.minimum {
        let exceeded = if node.exclusive_minimum { f <= min } else { f < min };
        if exceeded {
            let relation = if node.exclusive_minimum {
                "greater than"
            } else {
                "greater than or equal to"
            };
            let detail = format!("{} should be {relation} {}", subject(path), bound(min));
            out.push(messages::invalid(path, value, &detail));
        }
    }
    if let Some(factor) = node.multiple_of
        && factor > 0.0
        && ((f / factor) - (f / factor).round()).abs() > 1e-9
    {
        let detail = format!("{} should be a multiple of {}", subject(path), bound(factor));
        out.push(messages::invalid(path, value, &detail));
    }
}

fn check_array(
    node: &Node,
    items: &[Value],
    value: &Value,
    old: Option<&Value>,
    path: &str,
    out: &mut Vec<FieldCause>,
) {
    if let Some(item_node) = &node.items {
        for (i, item) in items.iter().enumerate() {
            let old_item = correlated_item(node, item, old);
            validate_into(item_node, item, old_item, &index(path, i), out);
        }
    }
    if let Some(min) = node.min_items
        && (items.len() as u64) < min
    {
        let detail = format!("{} should have at least {min} items", subject(path));
        out.push(messages::invalid(path, value, &detail));
    }
    if let Some(max) = node.max_items
        && (items.len() as u64) > max
    {
        out.push(messages::too_many(path, items.len(), max));
    }
    match node.list_type {
        Some(ListType::Set) => {
            for (i, item) in items.iter().enumerate() {
                if items[..i].iter().any(|earlier| json_eq(earlier, item)) {
                    out.push(messages::duplicate(index(path, i), item));
                }
            }
        }
        Some(ListType::Map) => check_list_map(node, items, path, out),
        _ => {}
    }
}

/// `x-kubernetes-list-type: map`: no two items may share their key fields (a missing key falls back
/// to its schema default, as in the apiextensions list-type validation).
fn check_list_map(node: &Node, items: &[Value], path: &str, out: &mut Vec<FieldCause>) {
    let key_of = |item: &Value| -> Map<String, Value> {
        let mut keys = Map::new();
        for name in &node.list_map_keys {
            let found = item.get(name).cloned().or_else(|| {
                node.items
                    .as_ref()
                    .and_then(|items| items.properties.get(name))
                    .and_then(|p| p.default.clone())
            });
            if let Some(v) = found {
                keys.insert(name.clone(), v);
            }
        }
        keys
    };
    let keys: Vec<Value> = items.iter().map(|item| Value::Object(key_of(item))).collect();
    for (i, k) in keys.iter().enumerate() {
        if keys[..i].iter().any(|earlier| json_eq(earlier, k)) {
            out.push(messages::duplicate(index(path, i), k));
        }
    }
}

fn check_object(
    node: &Node,
    map: &Map<String, Value>,
    old: Option<&Value>,
    path: &str,
    out: &mut Vec<FieldCause>,
) {
    let count = map.len() as u64;
    if let Some(max) = node.max_properties
        && count > max
    {
        // kube-apiserver reports maxProperties with field.TooMany, whose wording counts "items".
        out.push(messages::too_many(path, map.len(), max));
    }
    if let Some(min) = node.min_properties
        && count < min
    {
        let detail = format!("{} should have at least {min} properties", subject(path));
        out.push(messages::invalid(path, &Value::from(count), &detail));
    }
    for name in &node.required {
        if !map.contains_key(name) {
            out.push(messages::required(child(path, name), ""));
        }
    }
    for (name, field) in map {
        let field_path = child(path, name);
        let old_field = old.and_then(|o| o.get(name));
        if let Some(prop) = node.properties.get(name) {
            validate_into(prop, field, old_field, &field_path, out);
            continue;
        }
        match &node.additional {
            Additional::Schema(schema) => validate_into(schema, field, old_field, &field_path, out),
            Additional::Allowed(false) if !(path.is_empty() && is_root_meta_field(name)) => {
                let detail = format!("{field_path} in body is a forbidden property");
                out.push(messages::invalid(path, &Value::String(name.clone()), &detail));
            }
            _ => {}
        }
    }
}

/// The item of `old` (a `map` list) with the keys of `item`; items of other lists correlate with none.
pub(crate) fn correlated_item<'o>(node: &Node, item: &Value, old: Option<&'o Value>) -> Option<&'o Value> {
    if node.list_type != Some(ListType::Map) {
        return None;
    }
    let keys = &node.list_map_keys;
    old?.as_array()?
        .iter()
        .find(|candidate| keys.iter().all(|k| candidate.get(k) == item.get(k)))
}

/// `apiVersion`, `kind` and `metadata` exist on every resource whatever its schema says.
pub(crate) fn is_root_meta_field(name: &str) -> bool {
    matches!(name, "apiVersion" | "kind" | "metadata")
}

/// JSON equality with numbers compared by value (`1` equals `1.0`), as Go's decoded values compare.
pub(crate) fn json_eq(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => match (x.as_i64(), y.as_i64()) {
            (Some(i), Some(j)) => i == j,
            _ => x.as_f64() == y.as_f64(),
        },
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| json_eq(p, q))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| json_eq(v, w)))
        }
        _ => a == b,
    }
}
