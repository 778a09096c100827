//! MutatingWebhookConfiguration and ValidatingWebhookConfiguration (admissionregistration.k8s.io/v1):
//! the defaults kube-apiserver stores with each webhook, and its validation, causes worded as it
//! words them.

use serde_json::{Map, Value, json};

use crate::{
    FieldCause,
    schema::messages,
    validation::{labels, names},
};

const MUTATING: &str = "MutatingWebhookConfiguration";
const VALIDATING: &str = "ValidatingWebhookConfiguration";

/// Whether `kind` is one of the two webhook configuration kinds.
pub fn is_webhook_configuration(kind: &str) -> bool {
    kind == MUTATING || kind == VALIDATING
}

fn webhooks_mut(object: &mut Value) -> impl Iterator<Item = &mut Map<String, Value>> {
    object
        .get_mut("webhooks")
        .and_then(Value::as_array_mut)
        .into_iter()
        .flatten()
        .filter_map(Value::as_object_mut)
}

/// The v1 defaults: `failurePolicy: Fail`, `matchPolicy: Equivalent`, empty selectors,
/// `timeoutSeconds: 10`, each rule's `scope: "*"`, a Service's port 443, and for mutating webhooks
/// `reinvocationPolicy: Never`. `sideEffects` has none: v1 requires it.
pub fn apply_defaults(kind: &str, object: &mut Value) {
    let mutating = kind == MUTATING;
    for webhook in webhooks_mut(object) {
        let mut set = |key: &str, value: Value| {
            webhook.entry(key).or_insert(value);
        };
        set("failurePolicy", json!("Fail"));
        set("matchPolicy", json!("Equivalent"));
        set("namespaceSelector", json!({}));
        set("objectSelector", json!({}));
        set("timeoutSeconds", json!(10));
        if mutating {
            set("reinvocationPolicy", json!("Never"));
        }
        let rules = webhook.get_mut("rules").and_then(Value::as_array_mut);
        for rule in rules.into_iter().flatten().filter_map(Value::as_object_mut) {
            rule.entry("scope").or_insert(json!("*"));
        }
        if let Some(service) = webhook
            .get_mut("clientConfig")
            .and_then(|c| c.get_mut("service"))
            .and_then(Value::as_object_mut)
        {
            service.entry("port").or_insert(json!(443));
        }
    }
}

fn strings(values: &[&str]) -> Vec<String> {
    values.iter().map(|v| (*v).to_owned()).collect()
}

/// One of `supported` when set: an unsupported value is a cause.
fn one_of(webhook: &Value, key: &str, path: &str, supported: &[&str], out: &mut Vec<FieldCause>) {
    if let Some(value) = webhook.get(key).filter(|v| !v.is_null())
        && !value.as_str().is_some_and(|v| supported.contains(&v))
    {
        out.push(messages::not_supported(
            format!("{path}.{key}"),
            value,
            &strings(supported),
        ));
    }
}

/// Validation of a webhook configuration, in kube-apiserver's order: the names (at least three DNS
/// segments, unique), each webhook's rules, policies, side effects, timeout, selectors, review
/// versions and client config. Empty when valid.
pub fn validate(kind: &str, object: &Value) -> Vec<FieldCause> {
    let mut out = Vec::new();
    let mutating = kind == MUTATING;
    let webhooks = object.get("webhooks").and_then(Value::as_array);
    let mut seen = std::collections::HashSet::new();
    for (i, webhook) in webhooks.into_iter().flatten().enumerate() {
        let path = format!("webhooks[{i}]");
        let name = webhook.get("name").and_then(Value::as_str).unwrap_or_default();
        if !seen.insert(name.to_owned()) {
            out.push(messages::duplicate(format!("{path}.name"), &json!(name)));
        }
        validate_webhook(webhook, &path, mutating, &mut out);
    }
    out
}

fn validate_webhook(webhook: &Value, path: &str, mutating: bool, out: &mut Vec<FieldCause>) {
    let name = webhook.get("name").and_then(Value::as_str).unwrap_or_default();
    let name_path = format!("{path}.name");
    if name.is_empty() {
        out.push(messages::required(name_path, ""));
    } else {
        for message in names::dns1123_subdomain(name) {
            out.push(messages::invalid(&name_path, &json!(name), &message));
        }
        if name.split('.').count() < 3 {
            out.push(messages::invalid(
                &name_path,
                &json!(name),
                "should be a domain with at least three segments separated by dots",
            ));
        }
    }
    let rules = webhook.get("rules").and_then(Value::as_array);
    for (i, rule) in rules.into_iter().flatten().enumerate() {
        validate_rule(rule, &format!("{path}.rules[{i}]"), out);
    }
    one_of(webhook, "failurePolicy", path, &["Fail", "Ignore"], out);
    one_of(webhook, "matchPolicy", path, &["Equivalent", "Exact"], out);
    if mutating {
        one_of(webhook, "reinvocationPolicy", path, &["IfNeeded", "Never"], out);
    }
    const SIDE_EFFECTS: [&str; 2] = ["None", "NoneOnDryRun"];
    match webhook.get("sideEffects").filter(|v| !v.is_null()) {
        None => out.push(messages::required(
            format!("{path}.sideEffects"),
            "must specify one of None, NoneOnDryRun",
        )),
        Some(_) => one_of(webhook, "sideEffects", path, &SIDE_EFFECTS, out),
    }
    if let Some(timeout) = webhook.get("timeoutSeconds").filter(|v| !v.is_null())
        && !timeout.as_i64().is_some_and(|t| (1..=30).contains(&t))
    {
        out.push(messages::invalid(
            format!("{path}.timeoutSeconds"),
            timeout,
            "the timeout value must be between 1 and 30 seconds",
        ));
    }
    for selector in ["namespaceSelector", "objectSelector"] {
        validate_selector(
            webhook.get(selector).unwrap_or(&Value::Null),
            &format!("{path}.{selector}"),
            out,
        );
    }
    let versions = webhook.get("admissionReviewVersions").and_then(Value::as_array);
    let known = |v: &Value| v == "v1" || v == "v1beta1";
    if !versions.is_some_and(|versions| versions.iter().any(known)) {
        out.push(messages::required(
            format!("{path}.admissionReviewVersions"),
            "must specify one of v1, v1beta1",
        ));
    }
    validate_client_config(webhook.get("clientConfig").unwrap_or(&Value::Null), path, out);
}

fn validate_rule(rule: &Value, path: &str, out: &mut Vec<FieldCause>) {
    const OPERATIONS: [&str; 5] = ["*", "CONNECT", "CREATE", "DELETE", "UPDATE"];
    let list = |key: &str| {
        rule.get(key)
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
    };
    let operations = list("operations");
    if operations.is_empty() {
        out.push(messages::required(format!("{path}.operations"), ""));
    }
    for (i, operation) in operations.iter().enumerate() {
        if !operation.as_str().is_some_and(|o| OPERATIONS.contains(&o)) {
            out.push(messages::not_supported(
                format!("{path}.operations[{i}]"),
                operation,
                &strings(&OPERATIONS),
            ));
        }
    }
    for key in ["apiGroups", "apiVersions", "resources"] {
        if list(key).is_empty() {
            out.push(messages::required(format!("{path}.{key}"), ""));
        }
    }
    one_of(rule, "scope", path, &["*", "Cluster", "Namespaced"], out);
}

/// A label selector's keys are qualified names and its values label values.
fn validate_selector(selector: &Value, path: &str, out: &mut Vec<FieldCause>) {
    if let Some(match_labels) = selector.get("matchLabels").filter(|v| !v.is_null()) {
        labels::validate_labels(match_labels, &format!("{path}.matchLabels"), out);
    }
}

fn validate_client_config(config: &Value, path: &str, out: &mut Vec<FieldCause>) {
    let path = format!("{path}.clientConfig");
    let url = config.get("url").filter(|v| !v.is_null());
    let service = config.get("service").filter(|v| !v.is_null());
    match (url, service) {
        (Some(url), None) => {
            let text = url.as_str().unwrap_or_default();
            let scheme = text.split_once("://").map_or("", |(scheme, _)| scheme);
            if scheme != "https" {
                out.push(messages::invalid(
                    format!("{path}.url"),
                    &json!(scheme),
                    "'https' is the only allowed URL scheme; desired format: https://host[/path]",
                ));
            }
        }
        (None, Some(_)) => {}
        _ => out.push(messages::required(
            &path,
            "exactly one of url or service is required",
        )),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::{apply_defaults, validate};

    #[test]
    fn a_mutating_webhook_gets_every_v1_default() {
        let mut object = json!({"webhooks": [{"name": "a.example.com",
            "clientConfig": {"service": {"name": "s", "namespace": "n"}},
            "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods"]}],
            "sideEffects": "None", "admissionReviewVersions": ["v1"]}]});
        apply_defaults("MutatingWebhookConfiguration", &mut object);
        let webhook = &object["webhooks"][0];
        assert_eq!(webhook["failurePolicy"], "Fail");
        assert_eq!(webhook["matchPolicy"], "Equivalent");
        assert_eq!(webhook["reinvocationPolicy"], "Never");
        assert_eq!(webhook["timeoutSeconds"], 10);
        assert_eq!(webhook["namespaceSelector"], json!({}));
        assert_eq!(webhook["rules"][0]["scope"], "*");
        assert_eq!(webhook["clientConfig"]["service"]["port"], 443);
    }

    #[test]
    fn a_valid_configuration_has_no_causes() {
        let object = json!({"webhooks": [{"name": "a.example.com", "clientConfig": {"url": "https://h/p"},
            "sideEffects": "NoneOnDryRun", "admissionReviewVersions": ["v1"], "timeoutSeconds": 30}]});
        assert!(validate("ValidatingWebhookConfiguration", &object).is_empty());
    }
}
