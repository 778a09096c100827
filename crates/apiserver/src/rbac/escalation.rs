//! RBAC's escalation prevention, as kube-apiserver's RBAC storage applies it to writes of Roles,
//! ClusterRoles and their bindings: a user may write a role only with rules it holds itself (where it
//! holds them: in the role's namespace, or cluster-wide), or when it may `escalate` that role; and a
//! binding only to a role whose rules it holds, or when it may `bind` that role. A role with an
//! `aggregationRule` takes every right. Members of `system:masters` are never checked.
//!
//! The check reads the object the request sends: a create's or update's body, or a merge or apply
//! patch's (whose `rules` or `roleRef`, when present, replace the stored ones). A JSON patch (a list of
//! operations) or a protobuf body is not read and passes unchecked.

use std::collections::BTreeSet;

use apimachinery::meta::strings_at;

use serde_json::{Value, json};

use super::authorizer::{self, Action, PRIVILEGED_GROUP, Requester};
use crate::error::{Error, Subject};
use crate::store::Store;

const RBAC: &str = "rbac.authorization.k8s.io";

/// A write of a role or a binding, as the check reads it.
pub(crate) struct Write<'a> {
    /// `roles`, `clusterroles`, `rolebindings` or `clusterrolebindings`.
    pub resource: &'a str,
    /// The object's namespace (empty for a cluster-scoped one).
    pub namespace: &'a str,
    /// The object's name (for a create, the body's).
    pub name: &'a str,
    /// The object stored under that name now, if any.
    pub stored: Option<&'a Value>,
    /// The object the request sends.
    pub sent: &'a Value,
}

/// Whether a write of `resource` in `group` by `requester` is one the check applies to: a role or a
/// binding itself (not a subresource of one), by anyone but a member of `system:masters`.
pub(crate) fn applies(group: &str, resource: &str, requester: &Requester) -> bool {
    group == RBAC
        && matches!(
            resource,
            "roles" | "clusterroles" | "rolebindings" | "clusterrolebindings"
        )
        && !requester.groups.iter().any(|g| g == PRIVILEGED_GROUP)
}

/// Refuses (403) a write by `requester` that would grant more than `requester` holds.
pub(crate) fn confirm_no_escalation(
    store: &Store,
    requester: &Requester,
    write: &Write<'_>,
) -> Result<(), Error> {
    let Write {
        resource,
        namespace,
        name,
        stored,
        sent,
    } = *write;
    let may = |verb: &str, resource: &str, name: &str| {
        let action = Action::Resource {
            verb: verb.to_owned(),
            group: RBAC.to_owned(),
            resource: resource.to_owned(),
            subresource: String::new(),
            namespace: namespace.to_owned(),
            name: name.to_owned(),
        };
        authorizer::decide(store, requester, &action).allowed
    };
    let wanted = match resource {
        "roles" | "clusterroles" => {
            let aggregated = sent.get("aggregationRule").is_some_and(|r| !r.is_null());
            let rules = match (aggregated, sent.get("rules")) {
                (true, _) => json!([{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]},
                    {"nonResourceURLs": ["*"], "verbs": ["*"]}]),
                (false, Some(rules)) => rules.clone(),
                (false, None) => return Ok(()),
            };
            // An update that leaves the rules as they are grants nothing new.
            let unchanged =
                stored.is_some_and(|s| s.get("rules").unwrap_or(&Value::Null) == &rules && !aggregated);
            if unchanged || may("escalate", resource, name) {
                return Ok(());
            }
            rules.as_array().cloned().unwrap_or_default()
        }
        _ => {
            let Some(role_ref) = sent.get("roleRef").filter(|r| r.is_object()) else {
                return Ok(());
            };
            if stored.is_some_and(|s| s.get("roleRef") == Some(role_ref)) {
                return Ok(());
            }
            let text = |key: &str| role_ref.get(key).and_then(Value::as_str).unwrap_or_default();
            let role_resource = match text("kind") {
                "ClusterRole" => "clusterroles",
                _ => "roles",
            };
            if may("bind", role_resource, text("name")) {
                return Ok(());
            }
            match referenced_rules(store, role_resource, namespace, text("name")) {
                Ok(rules) => rules,
                Err(why) => return Err(refusal(resource, name, why)),
            }
        }
    };
    let scope = Some(namespace).filter(|n| !n.is_empty());
    let (held, errors) = authorizer::rules_for(store, requester, scope);
    let missing = uncovered(&held, &wanted);
    if missing.is_empty() {
        return Ok(());
    }
    let groups: Vec<String> = requester.groups.iter().map(|g| format!("{g:?}")).collect();
    let mut why = format!(
        "user {:?} (groups=[{}]) is attempting to grant RBAC permissions not currently held:\n{}",
        requester.user,
        groups.join(" "),
        compact_descriptions(&missing).join("\n")
    );
    if !errors.is_empty() {
        why.push_str(&format!("; resolution errors: [{}]", errors.join(" ")));
    }
    Err(refusal(resource, name, why))
}

/// The rules of the role a binding refers to; RBAC's lister's error when it does not exist.
fn referenced_rules(
    store: &Store,
    resource: &str,
    namespace: &str,
    name: &str,
) -> Result<Vec<Value>, String> {
    let (namespace, singular) = match resource {
        "clusterroles" => ("", "clusterrole"),
        _ => (namespace, "role"),
    };
    store
        .find(RBAC, "v1", resource, namespace, name)
        .map(|role| {
            role.get("rules")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default()
        })
        .ok_or_else(|| format!("{singular}.{RBAC} {name:?} not found"))
}

fn refusal(resource: &str, name: &str, why: String) -> Error {
    let subject = Subject {
        qualified_plural: format!("{resource}.{RBAC}"),
        group: RBAC.to_owned(),
        plural: resource.to_owned(),
        name: name.to_owned(),
    };
    let message = match name {
        "" => format!("{} is forbidden: {why}", subject.qualified_plural),
        name => format!("{} {name:?} is forbidden: {why}", subject.qualified_plural),
    };
    Error::RequestForbidden { subject, message }
}

/// One rule as RBAC reads it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Rule {
    verbs: Vec<String>,
    api_groups: Vec<String>,
    resources: Vec<String>,
    resource_names: Vec<String>,
    non_resource_urls: Vec<String>,
}

impl Rule {
    fn of(rule: &Value) -> Rule {
        Rule {
            verbs: strings_at(rule, "/verbs"),
            api_groups: strings_at(rule, "/apiGroups"),
            resources: strings_at(rule, "/resources"),
            resource_names: strings_at(rule, "/resourceNames"),
            non_resource_urls: strings_at(rule, "/nonResourceURLs"),
        }
    }

    /// The rule broken down into rules of one verb, group, resource (and name) or URL each.
    fn breakdown(&self) -> Vec<Rule> {
        let one = |s: &String| vec![s.clone()];
        let mut atoms = Vec::new();
        for group in &self.api_groups {
            for resource in &self.resources {
                for verb in &self.verbs {
                    let atom = Rule {
                        verbs: one(verb),
                        api_groups: one(group),
                        resources: one(resource),
                        ..Rule::default()
                    };
                    for name in &self.resource_names {
                        atoms.push(Rule {
                            resource_names: one(name),
                            ..atom.clone()
                        });
                    }
                    if self.resource_names.is_empty() {
                        atoms.push(atom);
                    }
                }
            }
        }
        for url in &self.non_resource_urls {
            for verb in &self.verbs {
                atoms.push(Rule {
                    verbs: one(verb),
                    non_resource_urls: one(url),
                    ..Rule::default()
                });
            }
        }
        atoms
    }

    /// Whether this rule grants everything `other` does.
    fn covers(&self, other: &Rule) -> bool {
        let has = |set: &[String], item: &str| set.iter().any(|s| s == item);
        let has_all = |set: &[String], items: &[String]| items.iter().all(|i| has(set, i));
        let verbs = has(&self.verbs, "*") || has_all(&self.verbs, &other.verbs);
        let groups = has(&self.api_groups, "*") || has_all(&self.api_groups, &other.api_groups);
        let resources = has(&self.resources, "*")
            || other.resources.iter().all(|r| {
                has(&self.resources, r)
                    || r.split_once('/')
                        .is_some_and(|(_, sub)| has(&self.resources, &format!("*/{sub}")))
            });
        let urls = other.non_resource_urls.iter().all(|wanted| {
            self.non_resource_urls.iter().any(|url| {
                url == wanted
                    || url
                        .strip_suffix('*')
                        .is_some_and(|prefix| wanted.starts_with(prefix))
            })
        });
        let names = self.resource_names.is_empty()
            || (!other.resource_names.is_empty() && has_all(&self.resource_names, &other.resource_names));
        verbs && groups && resources && urls && names
    }
}

/// The parts of `wanted` that no rule of `held` covers, one verb, resource and name each.
fn uncovered(held: &[Value], wanted: &[Value]) -> Vec<Rule> {
    let held: Vec<Rule> = held.iter().map(Rule::of).collect();
    wanted
        .iter()
        .flat_map(|rule| Rule::of(rule).breakdown())
        .filter(|atom| !held.iter().any(|rule| rule.covers(atom)))
        .collect()
}

/// The missing rules as RBAC's message lists them: the verbs of one group, resource and name
/// merged, each rule written `{APIGroups:["apps"], Resources:["deployments"], Verbs:["get" "list"]}`,
/// sorted.
fn compact_descriptions(missing: &[Rule]) -> Vec<String> {
    let mut merged: Vec<Rule> = Vec::new();
    for atom in missing {
        let simple = atom.non_resource_urls.is_empty();
        let same = merged.iter_mut().find(|m| {
            simple
                && m.non_resource_urls.is_empty()
                && m.api_groups == atom.api_groups
                && m.resources == atom.resources
                && m.resource_names == atom.resource_names
        });
        match same {
            Some(rule) => rule.verbs.extend(atom.verbs.iter().cloned()),
            None => merged.push(atom.clone()),
        }
    }
    let quoted = |items: &[String]| {
        let items: Vec<String> = items.iter().map(|i| format!("{i:?}")).collect();
        format!("[{}]", items.join(" "))
    };
    let described: BTreeSet<String> = merged
        .iter()
        .map(|rule| {
            let parts: Vec<String> = [
                ("APIGroups", &rule.api_groups),
                ("Resources", &rule.resources),
                ("NonResourceURLs", &rule.non_resource_urls),
                ("ResourceNames", &rule.resource_names),
                ("Verbs", &rule.verbs),
            ]
            .into_iter()
            .filter(|(_, items)| !items.is_empty())
            .map(|(label, items)| format!("{label}:{}", quoted(items)))
            .collect();
            format!("{{{}}}", parts.join(", "))
        })
        .collect();
    described.into_iter().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_is_not_held_is_listed_as_rbac_lists_it() {
        let held = [
            json!({"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list"]}),
            json!({"apiGroups": ["*"], "resources": ["*/status"], "verbs": ["get"]}),
        ];
        let wanted = [
            json!({"apiGroups": [""], "resources": ["pods", "pods/status", "secrets"], "verbs": ["get", "delete"]}),
            json!({"nonResourceURLs": ["/metrics"], "verbs": ["get"]}),
        ];
        assert_eq!(
            compact_descriptions(&uncovered(&held, &wanted)),
            vec![
                r#"{APIGroups:[""], Resources:["pods"], Verbs:["delete"]}"#,
                r#"{APIGroups:[""], Resources:["pods/status"], Verbs:["delete"]}"#,
                r#"{APIGroups:[""], Resources:["secrets"], Verbs:["get" "delete"]}"#,
                r#"{NonResourceURLs:["/metrics"], Verbs:["get"]}"#,
            ]
        );
        let everything = [json!({"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]})];
        assert!(uncovered(&everything, &wanted[..1]).is_empty());
    }

    #[test]
    fn named_rules_cover_only_their_names() {
        let held = [
            json!({"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"], "resourceNames": ["a"]}),
        ];
        let named = |name: &str| json!({"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"], "resourceNames": [name]});
        assert!(uncovered(&held, &[named("a")]).is_empty());
        assert_eq!(uncovered(&held, &[named("b")]).len(), 1);
        let unnamed = json!({"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"]});
        assert_eq!(uncovered(&held, &[unnamed]).len(), 1);
    }
}
