//! Name syntax (V5), with the messages of `k8s.io/apimachinery/pkg/util/validation`. Each function
//! returns the messages for one value; an empty list means valid.

use std::sync::LazyLock;

use regex::Regex;

/// How a kind's names are checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NameRule {
    /// DNS-1123 subdomain (most kinds).
    Subdomain,
    /// DNS-1123 label (Namespace).
    Label,
    /// DNS-1035 label (Service).
    Dns1035Label,
    /// A segment of a URL path (APIService, whose name is `version.group`, the group maybe empty).
    PathSegment,
}

const DNS1123_LABEL_FMT: &str = "[a-z0-9]([-a-z0-9]*[a-z0-9])?";
const DNS1123_LABEL_MSG: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character";
const DNS1123_SUBDOMAIN_FMT: &str = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*";
const DNS1123_SUBDOMAIN_MSG: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character";
const DNS1035_LABEL_FMT: &str = "[a-z]([-a-z0-9]*[a-z0-9])?";
const DNS1035_LABEL_MSG: &str = "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character";

pub(crate) const LABEL_MAX_LENGTH: usize = 63;
pub(crate) const SUBDOMAIN_MAX_LENGTH: usize = 253;

/// The formats are constants known to compile; a failure here is a programming error caught by tests.
fn anchored(format: &str) -> Regex {
    Regex::new(&format!("^(?:{format})$")).expect("constant name regex compiles")
}

static DNS1123_LABEL: LazyLock<Regex> = LazyLock::new(|| anchored(DNS1123_LABEL_FMT));
static DNS1123_SUBDOMAIN: LazyLock<Regex> = LazyLock::new(|| anchored(DNS1123_SUBDOMAIN_FMT));
static DNS1035_LABEL: LazyLock<Regex> = LazyLock::new(|| anchored(DNS1035_LABEL_FMT));

/// `must be no more than 63 characters`.
pub(crate) fn max_len_error(length: usize) -> String {
    format!("must be no more than {length} characters")
}

/// `<msg> (e.g. 'a',  or 'b', regex used for validation is '<fmt>')`, double spaces included.
pub(crate) fn regex_error(message: &str, format: &str, examples: &[&str]) -> String {
    if examples.is_empty() {
        return format!("{message} (regex used for validation is '{format}')");
    }
    let listed: Vec<String> = examples.iter().map(|e| format!("'{e}', ")).collect();
    format!(
        "{message} (e.g. {}regex used for validation is '{format}')",
        listed.join(" or ")
    )
}

/// `IsDNS1123Subdomain`: most object names.
pub fn dns1123_subdomain(value: &str) -> Vec<String> {
    let mut errors = Vec::new();
    if value.len() > SUBDOMAIN_MAX_LENGTH {
        errors.push(max_len_error(SUBDOMAIN_MAX_LENGTH));
    }
    if !DNS1123_SUBDOMAIN.is_match(value) {
        errors.push(regex_error(
            DNS1123_SUBDOMAIN_MSG,
            DNS1123_SUBDOMAIN_FMT,
            &["example.com"],
        ));
    }
    errors
}

/// `IsDNS1123Label`: Namespace names.
pub fn dns1123_label(value: &str) -> Vec<String> {
    let mut errors = Vec::new();
    if value.len() > LABEL_MAX_LENGTH {
        errors.push(max_len_error(LABEL_MAX_LENGTH));
    }
    if !DNS1123_LABEL.is_match(value) {
        if DNS1123_SUBDOMAIN.is_match(value) {
            // A valid subdomain that is no label: the length was checked, so it has dots.
            errors.push("must not contain dots".to_owned());
        } else {
            errors.push(regex_error(
                DNS1123_LABEL_MSG,
                DNS1123_LABEL_FMT,
                &["my-name", "123-abc"],
            ));
        }
    }
    errors
}

/// `IsDNS1035Label`: Service names, CRD plural/singular/version names.
pub fn dns1035_label(value: &str) -> Vec<String> {
    let mut errors = Vec::new();
    if value.len() > LABEL_MAX_LENGTH {
        errors.push(max_len_error(LABEL_MAX_LENGTH));
    }
    if !DNS1035_LABEL.is_match(value) {
        errors.push(regex_error(
            DNS1035_LABEL_MSG,
            DNS1035_LABEL_FMT,
            &["my-name", "abc-123"],
        ));
    }
    errors
}

/// Checks a name, or a `generateName` prefix (`prefix`), whose trailing dash is allowed because
/// random characters follow it.
pub fn name_errors(rule: NameRule, value: &str, prefix: bool) -> Vec<String> {
    let masked;
    let value = if prefix && value.len() > 1 && value.ends_with('-') {
        masked = format!("{}a", &value[..value.len() - 1]);
        masked.as_str()
    } else {
        value
    };
    match rule {
        NameRule::Subdomain => dns1123_subdomain(value),
        NameRule::Label => dns1123_label(value),
        NameRule::Dns1035Label => dns1035_label(value),
        NameRule::PathSegment => path_segment(value),
    }
}

/// Go's `IsValidPathSegmentName`: a name that can stand in a URL path as one segment.
pub fn path_segment(value: &str) -> Vec<String> {
    if value == "." || value == ".." {
        return vec![format!("may not be '{value}'")];
    }
    ["/", "%"]
        .iter()
        .filter(|illegal| value.contains(**illegal))
        .map(|illegal| format!("may not contain '{illegal}'"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn v5_subdomain_message_matches_kubernetes() {
        assert!(dns1123_subdomain("my-app.example.com").is_empty());
        assert_eq!(
            dns1123_subdomain("My_App"),
            [
                r"a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
            ]
        );
        assert_eq!(
            dns1123_subdomain(&"a".repeat(254))[0],
            "must be no more than 253 characters"
        );
    }

    #[test]
    fn v5_label_rejects_dots_and_long_names() {
        assert!(dns1123_label("kube-system").is_empty());
        assert_eq!(dns1123_label("a.b"), ["must not contain dots"]);
        assert_eq!(
            dns1123_label(&"a".repeat(64)),
            ["must be no more than 63 characters"]
        );
        assert_eq!(
            dns1123_label("-x"),
            [
                "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
            ]
        );
    }

    #[test]
    fn v5_dns1035_label_must_start_with_a_letter() {
        assert!(dns1035_label("web").is_empty());
        assert_eq!(
            dns1035_label("1web"),
            [
                "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"
            ]
        );
    }

    #[test]
    fn v5_generate_name_prefix_may_end_with_a_dash() {
        assert!(name_errors(NameRule::Subdomain, "web-", true).is_empty());
        assert!(!name_errors(NameRule::Subdomain, "web-", false).is_empty());
    }
}
