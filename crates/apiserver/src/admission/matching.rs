//! Which admission webhooks a request goes to: the configurations' rules (operations, groups,
//! versions, resources with subresources, scope), their namespace and object selectors and their
//! `matchPolicy` (A2, A3).

use apimachinery::{meta, resource::ResourceType, selector::LabelSelector};
use serde_json::Value;

use super::attributes::Attributes;
use crate::store::Store;

/// Mutating or validating.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    Mutating,
    Validating,
}

impl Phase {
    fn plural(self) -> &'static str {
        match self {
            Phase::Mutating => "mutatingwebhookconfigurations",
            Phase::Validating => "validatingwebhookconfigurations",
        }
    }
}

/// One webhook of a configuration, and the version of the resource it is to see the object at.
#[derive(Debug, Clone)]
pub struct Matched {
    pub webhook: Value,
    /// The served type the webhook's rules name: the request's own, or under `matchPolicy:
    /// Equivalent` another version of the same resource.
    pub as_type: std::sync::Arc<ResourceType>,
}

impl Matched {
    pub fn name(&self) -> &str {
        self.webhook
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or_default()
    }

    fn text(&self, key: &str, default: &'static str) -> String {
        self.webhook
            .get(key)
            .and_then(Value::as_str)
            .unwrap_or(default)
            .to_owned()
    }

    /// `Fail` (the default) or `Ignore`.
    pub fn ignores_failures(&self) -> bool {
        self.text("failurePolicy", "Fail") == "Ignore"
    }

    /// `timeoutSeconds`, 10 by default.
    pub fn timeout(&self) -> std::time::Duration {
        let seconds = self
            .webhook
            .get("timeoutSeconds")
            .and_then(Value::as_u64)
            .unwrap_or(10);
        std::time::Duration::from_secs(seconds.clamp(1, 30))
    }

    /// Whether it may be called for a dry run: `sideEffects` None or NoneOnDryRun.
    pub fn safe_for_dry_run(&self) -> bool {
        matches!(
            self.text("sideEffects", "Unknown").as_str(),
            "None" | "NoneOnDryRun"
        )
    }

    pub fn reinvoked_if_needed(&self) -> bool {
        self.text("reinvocationPolicy", "Never") == "IfNeeded"
    }
}

/// The webhooks of `phase` that `attributes` goes to, in the order they are called: configurations
/// by name, webhooks in their configuration's order.
pub fn webhooks(store: &Store, phase: Phase, attributes: &Attributes) -> Vec<Matched> {
    // Requests about the webhook configurations themselves never go to webhooks, or a broken webhook
    // could never be removed.
    if attributes.rt.group == "admissionregistration.k8s.io" {
        return Vec::new();
    }
    let Some(configurations_type) = store.resolve("admissionregistration.k8s.io", "v1", phase.plural())
    else {
        return Vec::new();
    };
    let (configurations, _) = store.list(&configurations_type, None);
    let mut found = Vec::new();
    for configuration in configurations {
        for webhook in configuration
            .get("webhooks")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            if let Some(as_type) = matching_type(store, webhook, attributes)
                && selectors_match(store, webhook, attributes)
            {
                found.push(Matched {
                    webhook: webhook.clone(),
                    as_type,
                });
            }
        }
    }
    found
}

/// Whether a ValidatingAdmissionPolicy's `matchConstraints` or a binding's `matchResources` take in
/// the request: its resource rules (a binding's may be left out: its policy's then decide alone), not
/// its excluded ones, its selectors; `Some` type the rules name it as.
pub fn match_resources(
    store: &Store,
    match_resources: &Value,
    attributes: &Attributes,
    rules_required: bool,
) -> Option<std::sync::Arc<ResourceType>> {
    let rules = match match_resources.get("resourceRules") {
        Some(rules) => rules.clone(),
        None if rules_required => return None,
        None => serde_json::json!([{"operations": ["*"], "apiGroups": ["*"], "apiVersions": ["*"],
            "resources": ["*/*"]}]),
    };
    let mut as_webhook = match_resources.clone();
    as_webhook["rules"] = rules;
    let as_type = matching_type(store, &as_webhook, attributes)?;
    let excluded = match_resources
        .get("excludeResourceRules")
        .and_then(Value::as_array)
        .is_some_and(|rules| {
            rules
                .iter()
                .any(|rule| rule_matches(rule, &attributes.rt, attributes))
        });
    (!excluded && selectors_match(store, &as_webhook, attributes)).then_some(as_type)
}

/// The type a webhook's rules match the request as: the request's own type, or with `matchPolicy:
/// Equivalent` (the default) another served version of the same group and resource.
fn matching_type(
    store: &Store,
    webhook: &Value,
    attributes: &Attributes,
) -> Option<std::sync::Arc<ResourceType>> {
    let rules = webhook.get("rules").and_then(Value::as_array)?;
    let matches = |rt: &ResourceType| rules.iter().any(|rule| rule_matches(rule, rt, attributes));
    if matches(&attributes.rt) {
        return Some(attributes.rt.clone());
    }
    if webhook.get("matchPolicy").and_then(Value::as_str) == Some("Exact") {
        return None;
    }
    let registry = store.registry();
    let mut versions: Vec<ResourceType> = registry
        .all()
        .into_iter()
        .filter(|rt| rt.group == attributes.rt.group && rt.plural == attributes.rt.plural)
        .collect();
    versions.sort_by(|a, b| a.version.cmp(&b.version));
    let equivalent = versions.into_iter().find(|rt| matches(rt))?;
    registry.resolve(&equivalent.group, &equivalent.version, &equivalent.plural)
}

fn rule_matches(rule: &Value, rt: &ResourceType, attributes: &Attributes) -> bool {
    let listed = |key: &str, value: &str| {
        rule.get(key)
            .and_then(Value::as_array)
            .is_some_and(|items| items.iter().any(|item| item == "*" || item == value))
    };
    let scope = rule.get("scope").and_then(Value::as_str).unwrap_or("*");
    let scope_matches = match scope {
        "Cluster" => !rt.namespaced,
        "Namespaced" => rt.namespaced,
        _ => true,
    };
    // A policy's rule may name the objects it is about; a webhook's never does.
    let named = rule
        .get("resourceNames")
        .and_then(Value::as_array)
        .is_none_or(|names| names.is_empty() || names.iter().any(|n| n == attributes.name.as_str()));
    named
        && listed(
            "operations",
            super::attributes::operation_name(&attributes.operation),
        )
        && listed("apiGroups", &rt.group)
        && listed("apiVersions", &rt.version)
        && scope_matches
        && rule
            .get("resources")
            .and_then(Value::as_array)
            .is_some_and(|items| {
                items
                    .iter()
                    .filter_map(Value::as_str)
                    .any(|pattern| resource_matches(pattern, &rt.plural, attributes.subresource.as_deref()))
            })
}

/// `widgets` names the resource, `widgets/status` one subresource, `*` every resource (without
/// subresources), `*/*` everything, `widgets/*` every subresource of widgets, `*/status` every
/// status subresource.
fn resource_matches(pattern: &str, plural: &str, subresource: Option<&str>) -> bool {
    let (resource, sub) = pattern
        .split_once('/')
        .map_or((pattern, None), |(r, s)| (r, Some(s)));
    let resource_ok = resource == "*" || resource == plural;
    match (sub, subresource) {
        (None, None) => resource_ok,
        (None, Some(_)) => false,
        (Some(wanted), Some(actual)) => resource_ok && (wanted == "*" || wanted == actual),
        (Some(wanted), None) => resource_ok && wanted == "*" && resource == "*",
    }
}

fn selectors_match(store: &Store, webhook: &Value, attributes: &Attributes) -> bool {
    let selector =
        |key: &str| LabelSelector::from_object(webhook.get(key).unwrap_or(&Value::Null)).unwrap_or_default();
    let objects = [attributes.object.as_ref(), attributes.old.as_ref()];
    let object_selector = selector("objectSelector");
    let object_ok = object_selector.is_empty()
        || objects
            .iter()
            .flatten()
            .any(|object| object_selector.matches(object));
    object_ok && namespace_matches(store, &selector("namespaceSelector"), attributes)
}

/// A namespaced object's namespace (a Namespace itself) must match; cluster-scoped objects always do.
fn namespace_matches(store: &Store, selector: &LabelSelector, attributes: &Attributes) -> bool {
    if selector.is_empty() {
        return true;
    }
    if crate::kinds::of(&attributes.rt).is_some_and(|kind| kind.is_its_own_namespace()) {
        return [attributes.object.as_ref(), attributes.old.as_ref()]
            .into_iter()
            .flatten()
            .any(|object| selector.matches(object));
    }
    if !attributes.rt.namespaced {
        return true;
    }
    let namespace = crate::kinds::namespaces::stored(store, &attributes.namespace);
    namespace.is_some_and(|namespace| {
        meta::str_at(&namespace, "/metadata/name").is_some() && selector.matches(&namespace)
    })
}

#[cfg(test)]
mod tests {
    use super::resource_matches;

    #[test]
    fn a2_resource_patterns_name_resources_and_subresources() {
        assert!(resource_matches("widgets", "widgets", None));
        assert!(!resource_matches("widgets", "widgets", Some("status")));
        assert!(resource_matches("widgets/status", "widgets", Some("status")));
        assert!(resource_matches("*", "widgets", None));
        assert!(!resource_matches("*", "widgets", Some("status")));
        assert!(resource_matches("*/*", "widgets", Some("status")));
        assert!(resource_matches("*/*", "widgets", None));
        assert!(resource_matches("*/status", "gadgets", Some("status")));
        assert!(!resource_matches("widgets/*", "widgets", None));
    }
}
