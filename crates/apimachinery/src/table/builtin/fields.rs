//! Reading an object's fields the way Go's zero values would: a missing string is "", a missing
//! number 0, a missing list empty.

use serde_json::{Value, json};

use crate::table::duration;

pub fn text<'a>(object: &'a Value, pointer: &str) -> &'a str {
    object
        .pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or_default()
}

pub fn int(object: &Value, pointer: &str) -> i64 {
    object
        .pointer(pointer)
        .and_then(Value::as_i64)
        .unwrap_or_default()
}

pub fn items<'a>(object: &'a Value, pointer: &str) -> &'a [Value] {
    object
        .pointer(pointer)
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default()
}

/// The number of entries of a map or a list.
pub fn count(object: &Value, pointer: &str) -> i64 {
    match object.pointer(pointer) {
        Some(Value::Object(map)) => map.len() as i64,
        Some(Value::Array(items)) => items.len() as i64,
        _ => 0,
    }
}

pub fn name(object: &Value) -> Value {
    json!(text(object, "/metadata/name"))
}

pub fn age(object: &Value, now: jiff::Timestamp) -> Value {
    json!(duration::since(
        object.pointer("/metadata/creationTimestamp"),
        now
    ))
}

/// `a,b` of a template's containers' names and of their images.
pub fn containers_and_images(object: &Value, containers: &str) -> (Value, Value) {
    let containers = items(object, containers);
    let join = |key: &str| {
        containers
            .iter()
            .map(|c| c.get(key).and_then(Value::as_str).unwrap_or_default())
            .collect::<Vec<_>>()
            .join(",")
    };
    (json!(join("name")), json!(join("image")))
}

/// A label map as `a=b,c=d`, keys sorted; `<none>` when empty.
pub fn labels(object: &Value, pointer: &str) -> String {
    let mut pairs: Vec<String> = object
        .pointer(pointer)
        .and_then(Value::as_object)
        .map(|map| {
            map.iter()
                .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or_default()))
                .collect()
        })
        .unwrap_or_default();
    pairs.sort();
    if pairs.is_empty() {
        "<none>".into()
    } else {
        pairs.join(",")
    }
}

/// `FormatLabelSelector`: `<none>` for a selector that is empty or missing, `<error>` for one that
/// does not parse.
pub fn formatted_selector(object: &Value, pointer: &str) -> String {
    match selector(object, pointer) {
        None => "<error>".into(),
        Some(s) if s.is_empty() => "<none>".into(),
        Some(s) => s,
    }
}

/// A quantity as written (`10Gi`), or as the number it was sent as; `0` for none, Go's zero quantity.
pub fn quantity(object: &Value, pointer: &str) -> String {
    match object.pointer(pointer) {
        Some(Value::String(text)) => text.clone(),
        Some(Value::Number(number)) => number.to_string(),
        _ => "0".into(),
    }
}

/// Go's `printBool`.
pub fn bool_word(value: bool) -> &'static str {
    if value { "True" } else { "False" }
}

/// A boolean field, or `default` where it is unset.
pub fn flag(object: &Value, pointer: &str, default: bool) -> bool {
    object
        .pointer(pointer)
        .and_then(Value::as_bool)
        .unwrap_or(default)
}

/// A string field, or `fallback` where it is unset (Go's nil pointer).
pub fn text_or<'a>(object: &'a Value, pointer: &str, fallback: &'a str) -> &'a str {
    object
        .pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or(fallback)
}

/// A `LabelSelector` as the label selector syntax (`app=web,tier in (a,b),!legacy`), requirements
/// sorted by key; "" when it selects everything or is missing; `None` for an unknown operator.
pub fn selector(object: &Value, pointer: &str) -> Option<String> {
    let Some(selector) = object.pointer(pointer) else {
        return Some(String::new());
    };
    let mut requirements: Vec<(String, String)> = Vec::new();
    if let Some(labels) = selector.get("matchLabels").and_then(Value::as_object) {
        for (key, value) in labels {
            requirements.push((
                key.clone(),
                format!("{key}={}", value.as_str().unwrap_or_default()),
            ));
        }
    }
    for expression in items(selector, "/matchExpressions") {
        let key = text(expression, "/key");
        let mut values: Vec<&str> = items(expression, "/values")
            .iter()
            .filter_map(Value::as_str)
            .collect();
        values.sort_unstable();
        let values = values.join(",");
        let requirement = match text(expression, "/operator") {
            "In" => format!("{key} in ({values})"),
            "NotIn" => format!("{key} notin ({values})"),
            "Exists" => key.to_owned(),
            "DoesNotExist" => format!("!{key}"),
            _ => return None,
        };
        requirements.push((key.to_owned(), requirement));
    }
    requirements.sort_by(|a, b| a.0.cmp(&b.0));
    Some(
        requirements
            .into_iter()
            .map(|(_, r)| r)
            .collect::<Vec<_>>()
            .join(","),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn t1_selectors_and_labels_print_as_kubectl_prints_them() {
        let object = json!({"spec": {
            "selector": {"matchLabels": {"tier": "web", "app": "a"},
                "matchExpressions": [{"key": "env", "operator": "In", "values": ["prod", "dev"]},
                                     {"key": "legacy", "operator": "DoesNotExist"}]},
            "labels": {"b": "2", "a": "1"},
        }});
        assert_eq!(
            selector(&object, "/spec/selector").unwrap(),
            "app=a,env in (dev,prod),!legacy,tier=web"
        );
        assert_eq!(selector(&object, "/spec/none").unwrap(), "");
        assert_eq!(labels(&object, "/spec/labels"), "a=1,b=2");
        assert_eq!(labels(&object, "/spec/none"), "<none>");
        let bad = json!({"s": {"matchExpressions": [{"key": "k", "operator": "Near"}]}});
        assert_eq!(selector(&bad, "/s"), None);
    }
}
