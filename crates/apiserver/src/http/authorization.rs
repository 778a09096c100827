//! Who may do what, as kube-apiserver's authorizers answer it for a SubjectAccessReview: members of
//! `system:masters` may do everything (its privileged-group authorizer, which gives no reason);
//! anyone else what the RBAC objects stored here grant, with RBAC's reason naming the binding. The
//! embedded server has none of kube-apiserver's bootstrap roles, so only the Roles, ClusterRoles and
//! bindings clients created grant anything. Requests themselves are authorized by token alone (see
//! [`super::auth`]); this answers questions about others.

use serde_json::Value;

use crate::store::Store;

const RBAC: &str = "rbac.authorization.k8s.io";
const PRIVILEGED_GROUP: &str = "system:masters";

/// Who is asked about.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Requester {
    pub user: String,
    pub groups: Vec<String>,
}

/// What is asked about: a request on a resource or on a non-resource URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    Resource {
        verb: String,
        group: String,
        resource: String,
        subresource: String,
        namespace: String,
        name: String,
    },
    NonResource {
        verb: String,
        path: String,
    },
}

/// The decision: whether it is allowed, and RBAC's reason when a binding allows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision {
    pub allowed: bool,
    pub reason: String,
}

/// Decides `action` for `requester` by the RBAC objects in `store`.
pub fn decide(store: &Store, requester: &Requester, action: &Action) -> Decision {
    if requester.groups.iter().any(|g| g == PRIVILEGED_GROUP) {
        return Decision {
            allowed: true,
            reason: String::new(),
        };
    }
    let objects = |plural: &str, namespace: Option<&str>| -> Vec<Value> {
        store
            .resolve(RBAC, "v1", plural)
            .map(|rt| store.list(&rt, namespace).0)
            .unwrap_or_default()
    };
    let role_rules = |kind: &str, name: &str, namespace: &str| -> Vec<Value> {
        let found = match kind {
            "ClusterRole" => objects("clusterroles", None),
            _ => objects("roles", Some(namespace)),
        };
        found
            .into_iter()
            .find(|role| role.pointer("/metadata/name").and_then(Value::as_str) == Some(name))
            .and_then(|role| role.get("rules").and_then(Value::as_array).cloned())
            .unwrap_or_default()
    };
    let mut bindings: Vec<(Value, &str)> = objects("clusterrolebindings", None)
        .into_iter()
        .map(|b| (b, "ClusterRoleBinding"))
        .collect();
    if let Action::Resource { namespace, .. } = action
        && !namespace.is_empty()
    {
        bindings.extend(
            objects("rolebindings", Some(namespace))
                .into_iter()
                .map(|b| (b, "RoleBinding")),
        );
    }
    for (binding, binding_kind) in &bindings {
        let text = |pointer: &str| {
            binding
                .pointer(pointer)
                .and_then(Value::as_str)
                .unwrap_or_default()
        };
        let binding_namespace = text("/metadata/namespace");
        let Some(subject) = binding
            .get("subjects")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .find(|s| applies(s, requester, binding_namespace))
        else {
            continue;
        };
        let (role_kind, role_name) = (text("/roleRef/kind"), text("/roleRef/name"));
        let rules = role_rules(role_kind, role_name, binding_namespace);
        if rules.iter().any(|rule| allows(rule, action)) {
            let binding_name = match *binding_kind {
                "RoleBinding" => format!("{}/{binding_namespace}", text("/metadata/name")),
                _ => text("/metadata/name").to_owned(),
            };
            return Decision {
                allowed: true,
                reason: format!(
                    "RBAC: allowed by {binding_kind} {binding_name:?} of {role_kind} {role_name:?} to {}",
                    describe(subject, binding_namespace)
                ),
            };
        }
    }
    Decision {
        allowed: false,
        reason: String::new(),
    }
}

/// Whether a binding's `subject` names the requester.
fn applies(subject: &Value, requester: &Requester, binding_namespace: &str) -> bool {
    let text = |key: &str| subject.get(key).and_then(Value::as_str).unwrap_or_default();
    match text("kind") {
        "User" => text("name") == requester.user,
        "Group" => requester.groups.iter().any(|g| g == text("name")),
        "ServiceAccount" => {
            let namespace = match text("namespace") {
                "" => binding_namespace,
                given => given,
            };
            requester.user == format!("system:serviceaccount:{namespace}:{}", text("name"))
        }
        _ => false,
    }
}

/// A subject as RBAC's reason names it: `User "alice"`, `ServiceAccount "name/namespace"`.
fn describe(subject: &Value, binding_namespace: &str) -> String {
    let text = |key: &str| subject.get(key).and_then(Value::as_str).unwrap_or_default();
    match text("kind") {
        "ServiceAccount" => {
            let namespace = match text("namespace") {
                "" => binding_namespace,
                given => given,
            };
            format!("ServiceAccount {:?}", format!("{}/{namespace}", text("name")))
        }
        kind => format!("{kind} {:?}", text("name")),
    }
}

/// Whether a PolicyRule allows `action`, as RBAC matches verbs, groups, resources (`pods/log`,
/// `*/scale`), names and non-resource URLs (a trailing `*` matches any suffix).
fn allows(rule: &Value, action: &Action) -> bool {
    let list = |key: &str| -> Vec<&str> {
        rule.get(key)
            .and_then(Value::as_array)
            .map(|items| items.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default()
    };
    let has = |key: &str, wanted: &str| list(key).iter().any(|item| *item == "*" || *item == wanted);
    match action {
        Action::Resource {
            verb,
            group,
            resource,
            subresource,
            name,
            ..
        } => {
            let combined = match subresource.as_str() {
                "" => resource.clone(),
                sub => format!("{resource}/{sub}"),
            };
            let resources = list("resources");
            let resource_matches = resources.iter().any(|r| {
                *r == "*" || *r == combined || (!subresource.is_empty() && *r == format!("*/{subresource}"))
            });
            let names = list("resourceNames");
            has("verbs", verb)
                && has("apiGroups", group)
                && resource_matches
                && (names.is_empty() || names.contains(&name.as_str()))
        }
        Action::NonResource { verb, path } => {
            has("verbs", verb)
                && list("nonResourceURLs").iter().any(|url| {
                    *url == "*"
                        || url == path
                        || url
                            .strip_suffix('*')
                            .is_some_and(|prefix| path.starts_with(prefix))
                })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn on_pods(verb: &str, subresource: &str, name: &str) -> Action {
        Action::Resource {
            verb: verb.into(),
            group: String::new(),
            resource: "pods".into(),
            subresource: subresource.into(),
            namespace: "default".into(),
            name: name.into(),
        }
    }

    #[test]
    fn rules_match_verbs_groups_resources_subresources_and_names() {
        let rule = json!({"verbs": ["get", "list"], "apiGroups": [""], "resources": ["pods", "pods/log"]});
        assert!(allows(&rule, &on_pods("get", "", "")));
        assert!(allows(&rule, &on_pods("get", "log", "")));
        assert!(!allows(&rule, &on_pods("delete", "", "")));
        assert!(!allows(&rule, &on_pods("get", "exec", "")));
        let named =
            json!({"verbs": ["*"], "apiGroups": ["*"], "resources": ["*/status"], "resourceNames": ["web"]});
        assert!(allows(&named, &on_pods("update", "status", "web")));
        assert!(!allows(&named, &on_pods("update", "status", "db")));
        assert!(!allows(&named, &on_pods("update", "", "web")));
        let urls = json!({"verbs": ["get"], "nonResourceURLs": ["/healthz", "/api/*"]});
        let path = |path: &str| Action::NonResource {
            verb: "get".into(),
            path: path.into(),
        };
        assert!(allows(&urls, &path("/healthz")));
        assert!(allows(&urls, &path("/api/v1")));
        assert!(!allows(&urls, &path("/metrics")));
    }

    #[test]
    fn subjects_are_named_as_rbac_names_them() {
        let requester = Requester {
            user: "system:serviceaccount:ops:robot".into(),
            groups: vec!["system:serviceaccounts".into()],
        };
        let account = json!({"kind": "ServiceAccount", "name": "robot"});
        assert!(applies(&account, &requester, "ops"));
        assert!(!applies(&account, &requester, "other"));
        assert_eq!(describe(&account, "ops"), r#"ServiceAccount "robot/ops""#);
        let group = json!({"kind": "Group", "name": "system:serviceaccounts", "apiGroup": RBAC});
        assert!(applies(&group, &requester, ""));
        assert_eq!(describe(&group, ""), r#"Group "system:serviceaccounts""#);
    }
}
