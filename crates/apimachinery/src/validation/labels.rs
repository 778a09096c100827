//! Label, annotation and finalizer syntax (V5): qualified names and label values, with the messages
//! of `k8s.io/apimachinery/pkg/util/validation`.

use std::sync::LazyLock;

use regex::Regex;
use serde_json::{Map, Value};

use super::names::{LABEL_MAX_LENGTH, dns1123_subdomain, max_len_error, regex_error};
use crate::FieldCause;
use crate::schema::messages;

const QUALIFIED_NAME_FMT: &str = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";
const QUALIFIED_NAME_MSG: &str = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const LABEL_VALUE_FMT: &str = "(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?";
const LABEL_VALUE_MSG: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
/// `TotalAnnotationSizeLimitB`: keys and values together.
pub const TOTAL_ANNOTATION_SIZE_LIMIT: usize = 256 * 1024;

static QUALIFIED_NAME: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(&format!("^(?:{QUALIFIED_NAME_FMT})$")).expect("constant regex compiles"));
static LABEL_VALUE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(&format!("^(?:{LABEL_VALUE_FMT})$")).expect("constant regex compiles"));

/// `IsQualifiedName`: an optional DNS subdomain prefix and `/`, then a name of at most 63 characters.
pub fn qualified_name(value: &str) -> Vec<String> {
    let mut errors = Vec::new();
    let parts: Vec<&str> = value.split('/').collect();
    let name = match parts.as_slice() {
        [name] => *name,
        [prefix, name] => {
            if prefix.is_empty() {
                errors.push("prefix part must be non-empty".to_owned());
            } else {
                errors.extend(
                    dns1123_subdomain(prefix)
                        .into_iter()
                        .map(|m| format!("prefix part {m}")),
                );
            }
            *name
        }
        _ => {
            let base = regex_error(
                QUALIFIED_NAME_MSG,
                QUALIFIED_NAME_FMT,
                &["MyName", "my.name", "123-abc"],
            );
            errors.push(format!(
                "a qualified name {base} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
            ));
            return errors;
        }
    };
    if name.is_empty() {
        errors.push("name part must be non-empty".to_owned());
    } else if name.len() > LABEL_MAX_LENGTH {
        errors.push(format!("name part {}", max_len_error(LABEL_MAX_LENGTH)));
    }
    if !QUALIFIED_NAME.is_match(name) {
        let base = regex_error(
            QUALIFIED_NAME_MSG,
            QUALIFIED_NAME_FMT,
            &["MyName", "my.name", "123-abc"],
        );
        errors.push(format!("name part {base}"));
    }
    errors
}

/// `IsValidLabelValue`: empty, or at most 63 alphanumerics, `-`, `_`, `.`, alphanumeric at both ends.
pub fn label_value(value: &str) -> Vec<String> {
    let mut errors = Vec::new();
    if value.len() > LABEL_MAX_LENGTH {
        errors.push(max_len_error(LABEL_MAX_LENGTH));
    }
    if !LABEL_VALUE.is_match(value) {
        errors.push(regex_error(
            LABEL_VALUE_MSG,
            LABEL_VALUE_FMT,
            &["MyValue", "my_value", "12345"],
        ));
    }
    errors
}

fn string_map<'a>(value: &'a Value, path: &str, out: &mut Vec<FieldCause>) -> Option<&'a Map<String, Value>> {
    match value {
        Value::Null => None,
        Value::Object(map) => {
            for (key, v) in map {
                if !v.is_string() {
                    out.push(messages::invalid(
                        path,
                        v,
                        &format!("value of {key:?} must be a string"),
                    ));
                }
            }
            Some(map)
        }
        other => {
            out.push(messages::invalid(path, other, "must be a map of strings"));
            None
        }
    }
}

/// `ValidateLabels`: every cause names `metadata.labels`, with the offending key or value.
pub fn validate_labels(labels: &Value, path: &str, out: &mut Vec<FieldCause>) {
    let Some(map) = string_map(labels, path, out) else {
        return;
    };
    for (key, value) in map {
        for message in qualified_name(key) {
            out.push(messages::invalid(path, &Value::String(key.clone()), &message));
        }
        if let Some(text) = value.as_str() {
            for message in label_value(text) {
                out.push(messages::invalid(path, value, &message));
            }
        }
    }
}

/// `ValidateAnnotations`: keys are qualified names in any case; keys and values total at most 256 KiB.
pub fn validate_annotations(annotations: &Value, path: &str, out: &mut Vec<FieldCause>) {
    let Some(map) = string_map(annotations, path, out) else {
        return;
    };
    let mut total = 0;
    for (key, value) in map {
        for message in qualified_name(&key.to_lowercase()) {
            out.push(messages::invalid(path, &Value::String(key.clone()), &message));
        }
        total += key.len() + value.as_str().map_or(0, str::len);
    }
    if total > TOTAL_ANNOTATION_SIZE_LIMIT {
        out.push(messages::too_long_bytes(path, TOTAL_ANNOTATION_SIZE_LIMIT));
    }
}

/// Finalizers are qualified names (`example.com/cleanup`).
pub fn validate_finalizers(finalizers: &Value, path: &str, out: &mut Vec<FieldCause>) {
    let Some(list) = finalizers.as_array() else {
        if !finalizers.is_null() {
            out.push(messages::invalid(path, finalizers, "must be a list of strings"));
        }
        return;
    };
    for item in list {
        match item.as_str() {
            Some(name) => {
                for message in qualified_name(name) {
                    out.push(messages::invalid(path, item, &message));
                }
            }
            None => out.push(messages::invalid(path, item, "must be a string")),
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn v5_label_keys_accept_prefixed_names() {
        assert!(qualified_name("app.kubernetes.io/name").is_empty());
        assert!(qualified_name("tier").is_empty());
        assert_eq!(qualified_name("/x"), ["prefix part must be non-empty"]);
        assert_eq!(
            qualified_name(&"a".repeat(64)),
            ["name part must be no more than 63 characters"]
        );
        assert!(qualified_name("a/b/c")[0].starts_with("a qualified name must consist of"));
        assert!(qualified_name("Bad_Prefix/x")[0].starts_with("prefix part a lowercase RFC 1123 subdomain"));
    }

    #[test]
    fn v5_bad_label_key_message_matches_kubernetes() {
        assert_eq!(
            qualified_name("-bad"),
            [
                "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
            ]
        );
    }

    #[test]
    fn v5_label_values_are_short_and_alphanumeric_at_the_ends() {
        assert!(label_value("").is_empty());
        assert!(label_value("v1.2_3-x").is_empty());
        assert_eq!(
            label_value(&"a".repeat(64)),
            ["must be no more than 63 characters"]
        );
        assert_eq!(
            label_value("bad!"),
            [
                "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
            ]
        );
    }

    #[test]
    fn v5_label_causes_name_the_labels_field_and_the_offender() {
        let mut out = Vec::new();
        validate_labels(
            &json!({"ok": "yes", "bad key": "v", "k": "-v"}),
            "metadata.labels",
            &mut out,
        );
        assert_eq!(out.len(), 2);
        assert!(
            out.iter()
                .all(|c| c.field == "metadata.labels" && c.reason == "FieldValueInvalid")
        );
        assert!(
            out.iter()
                .any(|c| c.message.starts_with("Invalid value: \"bad key\": name part"))
        );
        assert!(
            out.iter()
                .any(|c| c.message.starts_with("Invalid value: \"-v\": a valid label"))
        );
    }

    #[test]
    fn v5_annotation_keys_ignore_case_and_total_size_is_limited() {
        let mut out = Vec::new();
        validate_annotations(&json!({"Example.COM/Key": "x"}), "metadata.annotations", &mut out);
        assert!(out.is_empty(), "{out:?}");
        let big = "x".repeat(TOTAL_ANNOTATION_SIZE_LIMIT);
        validate_annotations(&json!({"k": big}), "metadata.annotations", &mut out);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].reason, "FieldValueTooLong");
        assert_eq!(out[0].message, "Too long: must have at most 262144 bytes");
    }

    #[test]
    fn v5_finalizers_are_qualified_names() {
        let mut out = Vec::new();
        validate_finalizers(
            &json!(["example.com/cleanup", "kubernetes", "bad/name/x"]),
            "metadata.finalizers",
            &mut out,
        );
        assert_eq!(out.len(), 1);
        assert!(out[0].message.starts_with("Invalid value: \"bad/name/x\""));
    }
}
