//! Who may do what, as kube-apiserver's authorizers decide it for every request (see
//! [`crate::http::filters::authorization`], the filter) and for a SubjectAccessReview: members of
//! `system:masters` may do everything (its privileged-group authorizer, which gives no reason);
//! anyone else what the RBAC objects stored here grant (kube-apiserver's bootstrap policy among them, see [`super::bootstrap`]), with RBAC's
//! reason naming the binding.

use serde_json::Value;

use crate::store::Store;

const RBAC: &str = "rbac.authorization.k8s.io";
pub const PRIVILEGED_GROUP: &str = "system:masters";

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
    let namespace = match action {
        Action::Resource { namespace, .. } if !namespace.is_empty() => Some(namespace.as_str()),
        _ => None,
    };
    let mut errors = Vec::new();
    let mut reason = None;
    visit_bindings(store, requester, namespace, |granted| match granted {
        Granted::Rules { rules, binding } => {
            if rules.iter().any(|rule| allows(rule, action)) {
                reason = Some(format!("RBAC: allowed by {binding}"));
                return false;
            }
            true
        }
        Granted::MissingRole(error) => {
            errors.push(error);
            true
        }
    });
    match reason {
        Some(reason) => Decision {
            allowed: true,
            reason,
        },
        // RBAC's reason for a denial names the roles bindings refer to that do not exist.
        None => Decision {
            allowed: false,
            reason: match errors.as_slice() {
                [] => String::new(),
                [one] => format!("RBAC: {one}"),
                many => format!("RBAC: [{}]", many.join(", ")),
            },
        },
    }
}

/// Every rule the bindings grant `requester` (the ClusterRoleBindings', and the RoleBindings' of
/// `namespace`), and the roles bindings refer to that do not exist, as RBAC's rule resolver lists
/// them for escalation checks and SelfSubjectRulesReviews.
pub fn rules_for(store: &Store, requester: &Requester, namespace: Option<&str>) -> (Vec<Value>, Vec<String>) {
    let mut all = Vec::new();
    let mut errors = Vec::new();
    visit_bindings(store, requester, namespace, |granted| {
        match granted {
            Granted::Rules { rules, .. } => all.extend(rules),
            Granted::MissingRole(error) => errors.push(error),
        }
        true
    });
    (all, errors)
}

/// What one binding that names the requester grants.
enum Granted {
    /// The rules of its role, and how RBAC's reason names the grant.
    Rules { rules: Vec<Value>, binding: String },
    /// Its role does not exist: `clusterroles.rbac.authorization.k8s.io "x" not found`.
    MissingRole(String),
}

/// Calls `visit` for each binding naming `requester`: the ClusterRoleBindings, then the RoleBindings
/// of `namespace`, until `visit` answers false.
fn visit_bindings(
    store: &Store,
    requester: &Requester,
    namespace: Option<&str>,
    mut visit: impl FnMut(Granted) -> bool,
) {
    let objects = |plural: &str, namespace: Option<&str>| -> Vec<Value> {
        store
            .resolve(RBAC, "v1", plural)
            .map(|rt| store.list(&rt, namespace).0)
            .unwrap_or_default()
    };
    let mut bindings: Vec<(Value, &str)> = objects("clusterrolebindings", None)
        .into_iter()
        .map(|b| (b, "ClusterRoleBinding"))
        .collect();
    if let Some(namespace) = namespace {
        bindings.extend(
            objects("rolebindings", Some(namespace))
                .into_iter()
                .map(|b| (b, "RoleBinding")),
        );
    }
    let mut cluster_roles: Option<Vec<Value>> = None;
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
        let role = match role_kind {
            "ClusterRole" => cluster_roles
                .get_or_insert_with(|| objects("clusterroles", None))
                .iter()
                .find(|role| role.pointer("/metadata/name").and_then(Value::as_str) == Some(role_name))
                .cloned(),
            _ => objects("roles", Some(binding_namespace))
                .into_iter()
                .find(|role| role.pointer("/metadata/name").and_then(Value::as_str) == Some(role_name)),
        };
        let granted = match role {
            None => {
                let plural = match role_kind {
                    "ClusterRole" => "clusterrole",
                    _ => "role",
                };
                Granted::MissingRole(format!("{plural}.{RBAC} {role_name:?} not found"))
            }
            Some(role) => {
                let binding_name = match *binding_kind {
                    "RoleBinding" => format!("{}/{binding_namespace}", text("/metadata/name")),
                    _ => text("/metadata/name").to_owned(),
                };
                Granted::Rules {
                    rules: role
                        .get("rules")
                        .and_then(Value::as_array)
                        .cloned()
                        .unwrap_or_default(),
                    binding: format!(
                        "{binding_kind} {binding_name:?} of {role_kind} {role_name:?} to {}",
                        describe(subject, binding_namespace)
                    ),
                }
            }
        };
        if !visit(granted) {
            return;
        }
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
pub fn allows(rule: &Value, action: &Action) -> bool {
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
