//! kube-apiserver's bootstrap RBAC policy, created at start-up as its storage-rbac post-start hook
//! creates it: the default ClusterRoles (`cluster-admin`, `admin`, `edit`, `view`, `system:*`), their
//! ClusterRoleBindings, and the Roles and RoleBindings of `kube-system` and `kube-public`, with
//! upstream's labels (`kubernetes.io/bootstrapping: rbac-defaults`) and annotations
//! (`rbac.authorization.kubernetes.io/autoupdate: "true"`). The policy is upstream's own generated
//! policy, copied by `scripts/bootstrap-policy.py` into `bootstrap-policy.json`.
//!
//! An object already stored is reconciled as upstream's hook reconciles it: while its `autoupdate`
//! annotation is not `"false"`, the rules, subjects, labels and annotations the policy has and it
//! lacks are added back; what a user added stays.

use std::sync::Arc;

use apimachinery::meta;
use serde_json::{Map, Value};

use crate::store::{State, Store, WriteOptions};

const POLICY: &str = include_str!("bootstrap-policy.json");
const GROUP: &str = "rbac.authorization.k8s.io";
const AUTOUPDATE: &str = "rbac.authorization.kubernetes.io/autoupdate";

/// The objects of the bootstrap policy, in the order they are created.
pub(crate) fn policy() -> Vec<Value> {
    match serde_json::from_str::<Value>(POLICY) {
        Ok(Value::Object(mut document)) => match document.remove("items") {
            Some(Value::Array(items)) => items,
            _ => Vec::new(),
        },
        _ => {
            tracing::error!("the built-in RBAC bootstrap policy does not parse");
            Vec::new()
        }
    }
}

/// Creates what of the policy is missing and tops up what is stored and may be updated.
pub(crate) fn ensure_policy(store: &Store, state: &mut State) {
    let options = WriteOptions {
        field_manager: Some("kube-apiserver".to_owned()),
        ..WriteOptions::default()
    };
    for object in policy() {
        let plural = match object.get("kind").and_then(Value::as_str) {
            Some("ClusterRole") => "clusterroles",
            Some("ClusterRoleBinding") => "clusterrolebindings",
            Some("Role") => "roles",
            Some("RoleBinding") => "rolebindings",
            _ => continue,
        };
        let Some(rt) = state.registry.resolve(GROUP, "v1", plural) else {
            continue;
        };
        let namespace = meta::namespace(&object).to_owned();
        let name = meta::name(&object).to_owned();
        let result = match store.stored(state, &rt, &namespace, &name) {
            None => crate::strategy::writes::create_locked(
                store,
                state,
                &Arc::clone(&rt),
                &namespace,
                object,
                &options,
            )
            .map(drop),
            Some(current) => match topped_up(&current, &object) {
                Some(next) => crate::strategy::writes::update_locked(
                    store, state, &rt, &namespace, &name, current, next, &options, false,
                )
                .map(drop),
                None => Ok(()),
            },
        };
        if let Err(error) = result {
            tracing::error!(%error, plural, namespace, name, "keeping the RBAC bootstrap policy");
        }
    }
}

/// `current` with what `wanted` has and it lacks, or `None` when nothing is missing or the object
/// opted out of updates (`autoupdate: "false"`).
fn topped_up(current: &Value, wanted: &Value) -> Option<Value> {
    let opted_out = current
        .pointer("/metadata/annotations")
        .and_then(|a| a.get(AUTOUPDATE))
        .and_then(Value::as_str)
        == Some("false");
    if opted_out {
        return None;
    }
    let mut next = current.clone();
    for map in ["labels", "annotations"] {
        if let Some(Value::Object(wanted)) = wanted.pointer(&format!("/metadata/{map}")) {
            let entries = next["metadata"]
                .as_object_mut()
                .map(|m| m.entry(map).or_insert_with(|| Value::Object(Map::new())));
            if let Some(Value::Object(entries)) = entries {
                for (key, value) in wanted {
                    entries.entry(key.clone()).or_insert_with(|| value.clone());
                }
            }
        }
    }
    // Aggregated roles get their rules from the aggregation, not from the policy.
    let lists: &[&str] = if wanted.get("aggregationRule").is_some() {
        &["subjects"]
    } else {
        &["rules", "subjects"]
    };
    for list in lists {
        let Some(Value::Array(wanted)) = wanted.get(*list) else {
            continue;
        };
        let have = next
            .as_object_mut()
            .map(|o| o.entry(*list).or_insert_with(|| Value::Array(Vec::new())));
        if let Some(Value::Array(have)) = have {
            for item in wanted {
                if !have.contains(item) {
                    have.push(item.clone());
                }
            }
        }
    }
    if next.get("aggregationRule").is_none()
        && let Some(rule) = wanted.get("aggregationRule")
    {
        next["aggregationRule"] = rule.clone();
    }
    (next != *current).then_some(next)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_policy_has_upstreams_default_roles_and_bindings() {
        let policy = policy();
        let named = |kind: &str, name: &str| {
            policy
                .iter()
                .find(|o| o["kind"] == kind && meta::name(o) == name)
                .cloned()
        };
        for role in [
            "cluster-admin",
            "admin",
            "edit",
            "view",
            "system:discovery",
            "system:basic-user",
        ] {
            let role = named("ClusterRole", role).unwrap_or_else(|| panic!("{role}"));
            assert_eq!(
                role.pointer("/metadata/annotations/rbac.authorization.kubernetes.io~1autoupdate"),
                Some(&json!("true"))
            );
        }
        let masters = named("ClusterRoleBinding", "cluster-admin").expect("cluster-admin binding");
        assert_eq!(masters["subjects"][0]["name"], "system:masters");
        assert!(named("ClusterRole", "system:controller:deployment-controller").is_some());
        assert!(
            policy
                .iter()
                .any(|o| o["kind"] == "Role" && meta::namespace(o) == "kube-system")
        );
    }

    #[test]
    fn a_stored_role_gets_back_what_it_lost_and_keeps_what_was_added() {
        let wanted = json!({"metadata": {"name": "r", "labels": {"a": "1"}},
            "rules": [{"verbs": ["get"]}, {"verbs": ["list"]}]});
        let current = json!({"metadata": {"name": "r", "annotations": {AUTOUPDATE: "true"}},
            "rules": [{"verbs": ["list"]}, {"verbs": ["delete"]}]});
        let next = topped_up(&current, &wanted).expect("changed");
        assert_eq!(
            next["rules"],
            json!([{"verbs": ["list"]}, {"verbs": ["delete"]}, {"verbs": ["get"]}])
        );
        assert_eq!(next["metadata"]["labels"], json!({"a": "1"}));
        assert_eq!(topped_up(&next, &wanted), None);
        let opted_out = json!({"metadata": {"name": "r", "annotations": {AUTOUPDATE: "false"}}});
        assert_eq!(topped_up(&opted_out, &wanted), None);
    }
}
