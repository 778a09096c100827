//! Label and field selectors (W2). Hand-written: the grammar is small and no crate parses Kubernetes'
//! selector syntax with its error messages.

use std::collections::BTreeSet;

use serde_json::Value;

use crate::{Error, Result};

#[derive(Debug, Clone, PartialEq)]
enum LabelRequirement {
    Equals(String, String),
    NotEquals(String, String),
    In(String, BTreeSet<String>),
    NotIn(String, BTreeSet<String>),
    Exists(String),
    DoesNotExist(String),
}

/// A parsed `labelSelector` query parameter.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LabelSelector {
    requirements: Vec<LabelRequirement>,
}

/// Splits on commas that are not inside `( ... )`.
fn split_top_level(text: &str) -> Vec<String> {
    let mut parts = Vec::new();
    let mut depth = 0;
    let mut current = String::new();
    for c in text.chars() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(std::mem::take(&mut current));
                continue;
            }
            _ => {}
        }
        current.push(c);
    }
    parts.push(current);
    parts
        .into_iter()
        .map(|p| p.trim().to_owned())
        .filter(|p| !p.is_empty())
        .collect()
}

fn valid_key(key: &str) -> bool {
    let name = key.rsplit_once('/').map_or(key, |(_, name)| name);
    !name.is_empty()
        && name.len() <= 63
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./".contains(c))
        && name.starts_with(|c: char| c.is_ascii_alphanumeric())
        && name.ends_with(|c: char| c.is_ascii_alphanumeric())
}

fn valid_value(value: &str) -> bool {
    value.is_empty()
        || (value.len() <= 63
            && value
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
            && value.starts_with(|c: char| c.is_ascii_alphanumeric())
            && value.ends_with(|c: char| c.is_ascii_alphanumeric()))
}

fn parse_error(requirement: &str, why: &str) -> Error {
    Error::BadRequest(format!("unable to parse requirement: {why}: {requirement:?}"))
}

fn parse_set(requirement: &str, rest: &str) -> Result<BTreeSet<String>> {
    let inner = rest
        .trim()
        .strip_prefix('(')
        .and_then(|r| r.strip_suffix(')'))
        .ok_or_else(|| parse_error(requirement, "expected a parenthesised set of values"))?;
    let values: BTreeSet<String> = inner.split(',').map(|v| v.trim().to_owned()).collect();
    if let Some(bad) = values.iter().find(|v| !valid_value(v)) {
        return Err(parse_error(requirement, &format!("invalid label value: {bad:?}")));
    }
    Ok(values)
}

/// The characters kube-apiserver's selector lexer reads as operators, and the operators they make.
const SYMBOLS: &[char] = &['=', '!', '(', ')', ',', '>', '<'];
const OPERATORS: &[&str] = &["!", "!=", "(", ")", ",", "=", "==", ">", "<"];

/// The operator the lexer reads at the start of `text`: the longest run of symbols that is one,
/// stopping at the first symbol that would make it none (`===` is `==`, then `=`).
fn leading_operator(text: &str) -> Option<&str> {
    let mut longest = None;
    for (end, c) in text.char_indices() {
        if !SYMBOLS.contains(&c) {
            break;
        }
        let run = &text[..end + c.len_utf8()];
        if OPERATORS.contains(&run) {
            longest = Some(run);
        } else if longest.is_some() {
            break;
        }
    }
    longest
}

/// An operator where a value must be is refused as the lexer reads it, as kube-apiserver's parser
/// words it: `tier===b` reads `tier`, `==`, `=`, and `=` is no value.
fn value_not_operator(value: &str) -> Result<()> {
    match leading_operator(value.trim_start()) {
        Some(operator) => Err(Error::BadRequest(format!(
            "unable to parse requirement: found '{operator}', expected: identifier"
        ))),
        None => Ok(()),
    }
}

fn parse_label_requirement(text: &str) -> Result<LabelRequirement> {
    let checked_key = |key: &str| -> Result<String> {
        let key = key.trim();
        if valid_key(key) {
            Ok(key.to_owned())
        } else {
            Err(parse_error(text, &format!("invalid label key {key:?}")))
        }
    };
    let checked_value = |value: &str| -> Result<String> {
        value_not_operator(value)?;
        let value = value.trim();
        if valid_value(value) {
            Ok(value.to_owned())
        } else {
            Err(parse_error(text, &format!("invalid label value: {value:?}")))
        }
    };
    if let Some(key) = text.strip_prefix('!') {
        return Ok(LabelRequirement::DoesNotExist(checked_key(key)?));
    }
    if let Some((key, value)) = text.split_once("!=") {
        return Ok(LabelRequirement::NotEquals(
            checked_key(key)?,
            checked_value(value)?,
        ));
    }
    if let Some((key, value)) = text.split_once("==") {
        return Ok(LabelRequirement::Equals(checked_key(key)?, checked_value(value)?));
    }
    if let Some((key, value)) = text.split_once('=') {
        return Ok(LabelRequirement::Equals(checked_key(key)?, checked_value(value)?));
    }
    let words: Vec<&str> = text.splitn(2, char::is_whitespace).collect();
    if words.len() == 2 {
        let rest = words[1].trim_start();
        if let Some(set) = rest.strip_prefix("notin") {
            return Ok(LabelRequirement::NotIn(
                checked_key(words[0])?,
                parse_set(text, set)?,
            ));
        }
        if let Some(set) = rest.strip_prefix("in") {
            return Ok(LabelRequirement::In(
                checked_key(words[0])?,
                parse_set(text, set)?,
            ));
        }
        return Err(parse_error(
            text,
            "found unexpected operator, expected one of =, ==, !=, in, notin",
        ));
    }
    Ok(LabelRequirement::Exists(checked_key(text)?))
}

impl LabelSelector {
    /// Parses `=`, `==`, `!=`, `in`, `notin`, `key`, `!key`; a syntax error is 400 BadRequest.
    pub fn parse(text: &str) -> Result<Self> {
        let requirements = split_top_level(text)
            .iter()
            .map(|part| parse_label_requirement(part))
            .collect::<Result<Vec<_>>>()?;
        Ok(Self { requirements })
    }

    /// Whether it has no requirement, and so selects every object.
    pub fn is_empty(&self) -> bool {
        self.requirements.is_empty()
    }

    /// A selector written as an object (`matchLabels`, `matchExpressions`), as webhooks and
    /// workloads carry it; an empty or missing one selects everything.
    pub fn from_object(selector: &Value) -> Result<Self> {
        Self::parse(&crate::scale::selector_string(selector))
    }

    /// Whether the object's `metadata.labels` satisfy every requirement.
    pub fn matches(&self, object: &Value) -> bool {
        let label = |key: &str| {
            object
                .pointer("/metadata/labels")
                .and_then(|l| l.get(key))
                .and_then(Value::as_str)
        };
        self.requirements.iter().all(|requirement| match requirement {
            LabelRequirement::Equals(k, v) => label(k) == Some(v.as_str()),
            LabelRequirement::NotEquals(k, v) => label(k) != Some(v.as_str()),
            LabelRequirement::In(k, set) => label(k).is_some_and(|v| set.contains(v)),
            LabelRequirement::NotIn(k, set) => label(k).is_none_or(|v| !set.contains(v)),
            LabelRequirement::Exists(k) => label(k).is_some(),
            LabelRequirement::DoesNotExist(k) => label(k).is_none(),
        })
    }
}

#[derive(Debug, Clone, PartialEq)]
struct FieldRequirement {
    field: String,
    value: String,
    equals: bool,
}

/// A parsed `fieldSelector` query parameter.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FieldSelector {
    requirements: Vec<FieldRequirement>,
}

impl FieldSelector {
    /// Parses `field=value`, `field==value`, `field!=value`, comma-separated. `supported_fields` lists
    /// the field labels the kind allows besides `metadata.name` and `metadata.namespace`; any other
    /// field is 400 `field label not supported: <field>`.
    pub fn parse(text: &str, supported_fields: &[&str]) -> Result<Self> {
        let mut requirements = Vec::new();
        for part in split_top_level(text) {
            let (field, value, equals) = if let Some((f, v)) = part.split_once("!=") {
                (f, v, false)
            } else if let Some((f, v)) = part.split_once("==") {
                (f, v, true)
            } else if let Some((f, v)) = part.split_once('=') {
                (f, v, true)
            } else {
                return Err(Error::BadRequest(format!(
                    "invalid selector: '{part}'; can't understand '{part}'"
                )));
            };
            let field = field.trim();
            if !matches!(field, "metadata.name" | "metadata.namespace") && !supported_fields.contains(&field)
            {
                // A kind with field labels of its own has its own conversion, with its own words.
                return Err(Error::BadRequest(if supported_fields.is_empty() {
                    format!(
                        "{field:?} is not a known field selector: only \"metadata.name\", \"metadata.namespace\""
                    )
                } else {
                    format!("field label not supported: {field}")
                }));
            }
            requirements.push(FieldRequirement {
                field: field.to_owned(),
                value: value.trim().to_owned(),
                equals,
            });
        }
        Ok(Self { requirements })
    }

    /// Whether it has no requirement, and so selects every object.
    pub fn is_empty(&self) -> bool {
        self.requirements.is_empty()
    }

    /// The name this selector pins with `metadata.name=`, if any (lets a server skip a scan).
    pub fn required_name(&self) -> Option<&str> {
        self.requirements
            .iter()
            .find(|r| r.equals && r.field == "metadata.name")
            .map(|r| r.value.as_str())
    }

    /// Whether the object satisfies every requirement (values read by dotted path; missing reads as "").
    pub fn matches(&self, object: &Value) -> bool {
        self.requirements.iter().all(|r| {
            let pointer = format!("/{}", r.field.replace('.', "/"));
            let actual = match object.pointer(&pointer) {
                Some(Value::String(s)) => s.clone(),
                Some(Value::Null) | None => String::new(),
                Some(other) => other.to_string(),
            };
            (actual == r.value) == r.equals
        })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn labelled(labels: Value) -> Value {
        json!({"metadata": {"name": "a", "namespace": "ns", "labels": labels}})
    }

    #[test]
    fn w2_label_selector_operators() {
        let object = labelled(json!({"app": "web", "tier": "front"}));
        for (selector, expected) in [
            ("app=web", true),
            ("app==web", true),
            ("app!=web", false),
            ("app in (web, db)", true),
            ("app notin (web)", false),
            ("tier", true),
            ("!tier", false),
            ("!missing", true),
            ("app=web,tier=back", false),
            ("app in (web,db),tier", true),
            ("", true),
        ] {
            assert_eq!(
                LabelSelector::parse(selector).unwrap().matches(&object),
                expected,
                "{selector}"
            );
        }
    }

    #[test]
    fn w2_bad_label_selectors_are_bad_requests() {
        for selector in ["app=web!", "app in web", "-app", "app=="] {
            let result = LabelSelector::parse(selector);
            if selector == "app==" {
                // An empty value is valid: `app==` selects objects whose label is empty.
                assert!(result.is_ok());
                continue;
            }
            assert!(
                matches!(result, Err(Error::BadRequest(_))),
                "{selector}: {result:?}"
            );
        }
    }

    #[test]
    fn w2_an_operator_where_a_value_must_be_is_named_as_the_lexer_reads_it() {
        for (selector, operator) in [("tier===b", "="), ("a=(b", "("), ("a!==b", "=")] {
            assert_eq!(
                LabelSelector::parse(selector).unwrap_err().to_string(),
                format!("unable to parse requirement: found '{operator}', expected: identifier"),
                "{selector}"
            );
        }
    }

    #[test]
    fn w2_field_selectors_name_namespace_and_extra_fields() {
        let event = json!({"metadata": {"name": "e", "namespace": "ns"}, "involvedObject": {"kind": "Pod", "name": "p"}});
        let extra = ["involvedObject.kind", "involvedObject.name"];
        assert!(
            FieldSelector::parse("metadata.name=e", &extra)
                .unwrap()
                .matches(&event)
        );
        assert!(
            !FieldSelector::parse("metadata.name!=e", &extra)
                .unwrap()
                .matches(&event)
        );
        assert!(
            FieldSelector::parse("involvedObject.kind==Pod,involvedObject.name=p", &extra)
                .unwrap()
                .matches(&event)
        );
        let unsupported = FieldSelector::parse("spec.nodeName=x", &extra).unwrap_err();
        assert_eq!(
            unsupported.to_string(),
            "field label not supported: spec.nodeName"
        );
        assert_eq!(
            FieldSelector::parse("metadata.name=e", &[])
                .unwrap()
                .required_name(),
            Some("e")
        );
    }
}
