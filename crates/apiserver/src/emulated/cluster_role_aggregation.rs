//! kube-controller-manager's ClusterRole aggregation controller: a ClusterRole with an
//! `aggregationRule` has as rules the union of the rules of every other ClusterRole its
//! `clusterRoleSelectors` match (by name order, each rule once), kept so after every change of a
//! ClusterRole. This is how `admin`, `edit` and `view` grow the rules of roles labelled
//! `rbac.authorization.k8s.io/aggregate-to-edit: "true"` and the like.

use apimachinery::{meta, resource::ResourceType, selector::LabelSelector};
use serde_json::Value;

use crate::store::{State, Store, WriteOptions, storage_key};

const GROUP: &str = "rbac.authorization.k8s.io";
const PLURAL: &str = "clusterroles";

/// Set while the bootstrap policy is created: one aggregation after it rather than one per role.
#[derive(Default)]
struct Paused(bool);

/// After a ClusterRole was written or removed: every aggregated ClusterRole gets its rules again.
pub(super) fn after_change(store: &Store, state: &mut State, rt: &ResourceType) {
    if rt.group == GROUP && rt.plural == PLURAL && !state.extensions.get::<Paused>().0 {
        reconcile(store, state);
    }
}

/// Creates the bootstrap policy (see [`crate::rbac::bootstrap`]), then aggregates its roles.
pub(super) fn bootstrap(store: &Store, state: &mut State) {
    state.extensions.get::<Paused>().0 = true;
    crate::rbac::bootstrap::ensure_policy(store, state);
    state.extensions.get::<Paused>().0 = false;
    reconcile(store, state);
}

/// Sets the rules of each aggregated ClusterRole to those its selectors gather, where they differ.
/// An aggregated role may itself be gathered by another (`view` into `edit` into `admin`), so the
/// rules are gathered in memory until they settle, then each role that changed is written once. Its
/// own updates are made paused, so that each does not start a reconcile of every role again.
fn reconcile(store: &Store, state: &mut State) {
    let Some(rt) = state.registry.resolve(GROUP, "v1", PLURAL) else {
        return;
    };
    let mut roles: Vec<Value> = state
        .objects
        .get(&storage_key(&rt))
        .map(|all| all.values().map(|stored| stored.decode()).collect())
        .unwrap_or_default();
    let changed = settle(&mut roles);
    let was_paused = std::mem::replace(&mut state.extensions.get::<Paused>().0, true);
    let options = WriteOptions {
        field_manager: Some("clusterrole-aggregation-controller".to_owned()),
        ..WriteOptions::default()
    };
    for role in changed.into_iter().map(|index| &roles[index]) {
        let name = meta::name(role);
        let Some(current) = store.stored(state, &rt, "", name) else {
            continue;
        };
        let mut next = current.clone();
        next["rules"] = role["rules"].clone();
        let updated = crate::strategy::writes::update_locked(
            store, state, &rt, "", name, current, next, &options, false,
        );
        if let Err(error) = updated {
            tracing::warn!(%error, name, "aggregating a ClusterRole's rules");
        }
    }
    state.extensions.get::<Paused>().0 = was_paused;
}

/// Gathers the rules of every aggregated role among `roles` until no role's rules change; the
/// indexes of the roles whose rules did.
fn settle(roles: &mut [Value]) -> std::collections::BTreeSet<usize> {
    let aggregated: Vec<usize> = (0..roles.len())
        .filter(|index| roles[*index].get("aggregationRule").is_some())
        .collect();
    let mut changed = std::collections::BTreeSet::new();
    // Rules only grow towards the union of what is gathered, so passes end; the bound guards
    // against selectors that keep feeding each other.
    for _ in 0..MAX_PASSES {
        let mut moved = false;
        for &index in &aggregated {
            let rules = gathered_rules(&roles[index], roles);
            let current = roles[index].get("rules").unwrap_or(&Value::Null);
            let same = current.as_array() == Some(&rules) || (rules.is_empty() && current.is_null());
            if !same {
                roles[index]["rules"] = Value::Array(rules);
                changed.insert(index);
                moved = true;
            }
        }
        if !moved {
            break;
        }
    }
    changed
}

/// More passes than any chain of aggregated roles needs (`view` into `edit` into `admin`).
const MAX_PASSES: usize = 16;

/// The rules of the ClusterRoles (other than `aggregated` itself) that its selectors match, in
/// name order, each rule once.
fn gathered_rules(aggregated: &Value, roles: &[Value]) -> Vec<Value> {
    let selectors: Vec<LabelSelector> = aggregated
        .pointer("/aggregationRule/clusterRoleSelectors")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|selector| LabelSelector::from_object(selector).ok())
        .collect();
    let mut matched: Vec<&Value> = roles
        .iter()
        .filter(|role| meta::name(role) != meta::name(aggregated))
        .filter(|role| selectors.iter().any(|selector| selector.matches(role)))
        .collect();
    matched.sort_by_key(|role| meta::name(role));
    let mut rules: Vec<Value> = Vec::new();
    for rule in matched
        .iter()
        .filter_map(|role| role.get("rules").and_then(Value::as_array))
        .flatten()
    {
        if !rules.contains(rule) {
            rules.push(rule.clone());
        }
    }
    rules
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn aggregated_roles_gathered_by_others_settle_in_memory_each_changed_once() {
        let rule = |verb: &str| json!({"verbs": [verb], "apiGroups": [""], "resources": ["pods"]});
        let aggregating = |name: &str, to: &str, labels: Value| {
            json!({"metadata": {"name": name, "labels": labels}, "aggregationRule": {"clusterRoleSelectors": [
                {"matchLabels": {format!("aggregate-to-{to}"): "true"}}]}})
        };
        let mut roles = vec![
            aggregating("admin", "admin", json!({})),
            aggregating("edit", "edit", json!({"aggregate-to-admin": "true"})),
            aggregating("view", "view", json!({"aggregate-to-edit": "true"})),
            json!({"metadata": {"name": "reads", "labels": {"aggregate-to-view": "true"}}, "rules": [rule("get")]}),
            json!({"metadata": {"name": "writes", "labels": {"aggregate-to-edit": "true"}}, "rules": [rule("create")]}),
            json!({"metadata": {"name": "settled", "labels": {}}, "rules": [rule("delete")]}),
        ];
        let changed = settle(&mut roles);
        assert_eq!(changed.into_iter().collect::<Vec<_>>(), vec![0, 1, 2]);
        assert_eq!(roles[2]["rules"], json!([rule("get")]));
        // In name order: `view`'s, then `writes`'.
        assert_eq!(roles[1]["rules"], json!([rule("get"), rule("create")]));
        assert_eq!(roles[0]["rules"], json!([rule("get"), rule("create")]));
        assert!(
            settle(&mut roles).is_empty(),
            "a second settle finds nothing to change"
        );
    }

    #[test]
    fn an_aggregated_role_gathers_the_rules_of_the_roles_its_selectors_match() {
        let edit = json!({"metadata": {"name": "edit"}, "aggregationRule": {"clusterRoleSelectors": [
            {"matchLabels": {"aggregate-to-edit": "true"}}]}});
        let rule = |verb: &str| json!({"verbs": [verb], "apiGroups": [""], "resources": ["pods"]});
        let roles = vec![
            edit.clone(),
            json!({"metadata": {"name": "z", "labels": {"aggregate-to-edit": "true"}}, "rules": [rule("get"), rule("list")]}),
            json!({"metadata": {"name": "a", "labels": {"aggregate-to-edit": "true"}}, "rules": [rule("list"), rule("create")]}),
            json!({"metadata": {"name": "other", "labels": {"aggregate-to-view": "true"}}, "rules": [rule("delete")]}),
        ];
        assert_eq!(
            gathered_rules(&edit, &roles),
            vec![rule("list"), rule("create"), rule("get")]
        );
    }
}
