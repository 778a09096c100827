//! Which FlowSchema a request matches, as kube-apiserver's APF filter decides it: the FlowSchemas
//! whose priority level exists, by `matchingPrecedence` then name, the first with a rule whose
//! subjects include the user and whose resource rules (or non-resource rules, for other paths) match
//! the request. The classification is built from the stored objects and built again when they change.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
};

use k8s_openapi::api::flowcontrol::v1::{
    FlowSchema, NonResourcePolicyRule, PolicyRulesWithSubjects, ResourcePolicyRule, Subject,
};
use serde_json::Value;

use super::{FLOW_SCHEMAS, GROUP, PRIORITY_LEVELS};
use crate::store::Store;

/// Who sends a request.
#[derive(Debug, Clone)]
pub struct User {
    pub name: String,
    pub groups: Vec<String>,
}

/// What a request asks for, as kube-apiserver's request info names it.
#[derive(Debug, Clone)]
pub enum Target {
    Resource {
        verb: String,
        group: String,
        /// `None` for a cluster-scoped request.
        namespace: Option<String>,
        resource: String,
        subresource: Option<String>,
    },
    NonResource {
        verb: String,
        path: String,
    },
}

/// The FlowSchema and priority level a request matched, by uid.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Matched {
    pub flow_schema_uid: String,
    pub priority_level_uid: String,
}

/// The FlowSchemas in matching order, each with the uid of its priority level.
#[derive(Debug, Default)]
struct Classification {
    flow_schemas: Vec<(FlowSchema, String)>,
}

/// The classification of the moment, built again after the configuration changes.
#[derive(Debug, Default)]
pub struct Classifier {
    built: Mutex<Option<(u64, Arc<Classification>)>>,
}

impl Classifier {
    /// The FlowSchema `user`'s request for `target` matches; `None` when none does (the mandatory
    /// `catch-all` was deleted and not yet created again). `changes` counts the changes of the
    /// configuration so far (read before the objects, so that a change made meanwhile builds the
    /// classification again next time).
    pub fn classify(&self, store: &Store, changes: u64, user: &User, target: &Target) -> Option<Matched> {
        let classification = self.current(store, changes);
        classification
            .flow_schemas
            .iter()
            .find(|(flow_schema, _)| matches(flow_schema, user, target))
            .map(|(flow_schema, level_uid)| Matched {
                flow_schema_uid: flow_schema.metadata.uid.clone().unwrap_or_default(),
                priority_level_uid: level_uid.clone(),
            })
    }

    fn current(&self, store: &Store, changes: u64) -> Arc<Classification> {
        let mut built = self
            .built
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        match &*built {
            Some((at, classification)) if *at == changes => classification.clone(),
            _ => {
                let classification = Arc::new(build(store));
                *built = Some((changes, classification.clone()));
                classification
            }
        }
    }
}

fn build(store: &Store) -> Classification {
    let list = |plural: &str| {
        store
            .resolve(GROUP, "v1", plural)
            .map(|rt| store.list_stored(&rt, None).0)
            .unwrap_or_default()
    };
    let level_uids: HashMap<String, String> = list(PRIORITY_LEVELS)
        .iter()
        .map(|level| {
            let text = |pointer: &str| level.pointer(pointer).and_then(Value::as_str).unwrap_or_default();
            (
                text("/metadata/name").to_owned(),
                text("/metadata/uid").to_owned(),
            )
        })
        .collect();
    let mut flow_schemas: Vec<(FlowSchema, String)> = list(FLOW_SCHEMAS)
        .into_iter()
        .filter_map(|object| serde_json::from_value::<FlowSchema>(object).ok())
        .filter_map(|flow_schema| {
            let level = &flow_schema.spec.as_ref()?.priority_level_configuration.name;
            // A FlowSchema whose priority level is missing (Dangling) is passed over.
            let level_uid = level_uids.get(level)?.clone();
            Some((flow_schema, level_uid))
        })
        .collect();
    flow_schemas.sort_by_cached_key(|(flow_schema, _)| {
        let precedence = flow_schema
            .spec
            .as_ref()
            .and_then(|s| s.matching_precedence)
            .unwrap_or(1000);
        (precedence, flow_schema.metadata.name.clone().unwrap_or_default())
    });
    Classification { flow_schemas }
}

fn matches(flow_schema: &FlowSchema, user: &User, target: &Target) -> bool {
    let rules = flow_schema.spec.as_ref().and_then(|spec| spec.rules.as_ref());
    rules.is_some_and(|rules| rules.iter().any(|rule| rule_matches(rule, user, target)))
}

fn rule_matches(rule: &PolicyRulesWithSubjects, user: &User, target: &Target) -> bool {
    if !rule.subjects.iter().any(|subject| subject_matches(subject, user)) {
        return false;
    }
    match target {
        Target::Resource { .. } => rule
            .resource_rules
            .iter()
            .flatten()
            .any(|rule| resource_rule_matches(rule, target)),
        Target::NonResource { verb, path } => rule
            .non_resource_rules
            .iter()
            .flatten()
            .any(|rule| non_resource_rule_matches(rule, verb, path)),
    }
}

const SERVICE_ACCOUNT_PREFIX: &str = "system:serviceaccount:";

fn subject_matches(subject: &Subject, user: &User) -> bool {
    match subject.kind.as_str() {
        "User" => subject
            .user
            .as_ref()
            .is_some_and(|u| u.name == "*" || u.name == user.name),
        "Group" => subject
            .group
            .as_ref()
            .is_some_and(|g| g.name == "*" || user.groups.contains(&g.name)),
        "ServiceAccount" => subject.service_account.as_ref().is_some_and(|account| {
            let Some(rest) = user.name.strip_prefix(SERVICE_ACCOUNT_PREFIX) else {
                return false;
            };
            match rest.split_once(':') {
                Some((namespace, name)) => {
                    namespace == account.namespace && (account.name == "*" || account.name == name)
                }
                None => false,
            }
        }),
        _ => false,
    }
}

fn resource_rule_matches(rule: &ResourcePolicyRule, target: &Target) -> bool {
    let Target::Resource {
        verb,
        group,
        namespace,
        resource,
        subresource,
    } = target
    else {
        return false;
    };
    let resource = match subresource {
        Some(subresource) => format!("{resource}/{subresource}"),
        None => resource.clone(),
    };
    if !(listed(verb, &rule.verbs, "*")
        && listed(&resource, &rule.resources, "*")
        && listed(group, &rule.api_groups, "*"))
    {
        return false;
    }
    match namespace.as_deref().filter(|ns| !ns.is_empty()) {
        None => rule.cluster_scope.unwrap_or(false),
        Some(namespace) => rule
            .namespaces
            .as_deref()
            .is_some_and(|namespaces| listed(namespace, namespaces, "*")),
    }
}

fn non_resource_rule_matches(rule: &NonResourcePolicyRule, verb: &str, path: &str) -> bool {
    listed(verb, &rule.verbs, "*")
        && rule.non_resource_urls.iter().any(|url| {
            if url == "*" || url == path {
                return true;
            }
            // `/healthz/*` and `/healthz` both match everything below `/healthz/`.
            let prefix = url.strip_suffix('*').unwrap_or(url);
            let prefix = match prefix.ends_with('/') {
                true => prefix.to_owned(),
                false => format!("{prefix}/"),
            };
            path.starts_with(&prefix)
        })
}

/// Whether `value` is in `list`, or `list` is the wildcard alone (validation keeps it alone).
fn listed(value: &str, list: &[String], wildcard: &str) -> bool {
    matches!(list, [only] if only == wildcard) || list.iter().any(|item| item == value)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn flow_schema(rules: Value) -> FlowSchema {
        serde_json::from_value(json!({"metadata": {"name": "f", "uid": "u"},
            "spec": {"priorityLevelConfiguration": {"name": "p"}, "rules": rules}}))
        .unwrap()
    }

    fn service_account(namespace: &str, name: &str) -> User {
        User {
            name: format!("system:serviceaccount:{namespace}:{name}"),
            groups: vec!["system:serviceaccounts".into(), "system:authenticated".into()],
        }
    }

    #[test]
    fn a_service_account_subject_matches_by_namespace_and_name_or_any_name() {
        let schema = |name: &str| {
            flow_schema(json!([{"subjects": [{"kind": "ServiceAccount",
                "serviceAccount": {"namespace": "ns", "name": name}}],
                "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}]}]))
        };
        let target = Target::NonResource {
            verb: "get".into(),
            path: "/version".into(),
        };
        assert!(matches(&schema("sa"), &service_account("ns", "sa"), &target));
        assert!(matches(&schema("*"), &service_account("ns", "other"), &target));
        assert!(!matches(&schema("sa"), &service_account("ns2", "sa"), &target));
        assert!(!matches(&schema("*"), &service_account("n", "s"), &target));
    }

    #[test]
    fn resource_rules_match_verb_group_resource_and_scope() {
        let schema = flow_schema(
            json!([{"subjects": [{"kind": "Group", "group": {"name": "system:authenticated"}}],
            "resourceRules": [{"verbs": ["get", "list"], "apiGroups": [""], "resources": ["pods/log"],
                "namespaces": ["*"]}]}]),
        );
        let user = service_account("ns", "sa");
        let target = |verb: &str, namespace: Option<&str>, subresource: Option<&str>| Target::Resource {
            verb: verb.into(),
            group: String::new(),
            namespace: namespace.map(str::to_owned),
            resource: "pods".into(),
            subresource: subresource.map(str::to_owned),
        };
        assert!(matches(&schema, &user, &target("get", Some("ns"), Some("log"))));
        assert!(!matches(&schema, &user, &target("get", Some("ns"), None)));
        assert!(!matches(
            &schema,
            &user,
            &target("delete", Some("ns"), Some("log"))
        ));
        // Cluster-scoped requests need clusterScope.
        assert!(!matches(&schema, &user, &target("list", None, Some("log"))));
    }

    #[test]
    fn non_resource_urls_match_exactly_or_by_prefix() {
        let rule = |url: &str| NonResourcePolicyRule {
            verbs: vec!["get".into()],
            non_resource_urls: vec![url.into()],
        };
        assert!(non_resource_rule_matches(&rule("/healthz"), "get", "/healthz"));
        assert!(non_resource_rule_matches(
            &rule("/healthz"),
            "get",
            "/healthz/etcd"
        ));
        assert!(non_resource_rule_matches(&rule("/apis/*"), "get", "/apis/apps"));
        assert!(!non_resource_rule_matches(&rule("/healthz"), "get", "/healthzz"));
        assert!(!non_resource_rule_matches(&rule("/healthz"), "post", "/healthz"));
    }
}
