//! The reviews, answered and never stored: those a client sends about itself ([`self_subject`]:
//! `kubectl auth can-i` and `whoami`) and those about someone else ([`access`]: TokenReview,
//! SubjectAccessReview, LocalSubjectAccessReview).

pub(super) mod access;
pub(crate) mod self_subject;

use serde_json::Value;

/// The string at `key` of a review's spec or of its attributes (`resourceAttributes`,
/// `nonResourceAttributes`): empty when it is missing or not a string, as Go reads an unset field.
fn field_text(value: &Value, key: &str) -> String {
    value
        .get(key)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_missing_or_non_string_field_reads_as_empty() {
        let attributes = json!({"verb": "get", "group": null, "name": 3});
        assert_eq!(field_text(&attributes, "verb"), "get");
        assert_eq!(field_text(&attributes, "group"), "");
        assert_eq!(field_text(&attributes, "name"), "");
        assert_eq!(field_text(&attributes, "resource"), "");
        assert_eq!(field_text(&Value::Null, "verb"), "");
    }
}
