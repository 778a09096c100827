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

/// Sets the rules of each aggregated ClusterRole to those its selectors gather, where they differ,
/// until a pass changes nothing: an aggregated role may itself be gathered by another (`edit` into
/// `admin`). Its own updates are made paused, so that each does not start a reconcile of every role
/// again; the passes cover what they would have.
fn reconcile(store: &Store, state: &mut State) {
    let Some(rt) = state.registry.resolve(GROUP, "v1", PLURAL) else {
        return;
    };
    let was_paused = std::mem::replace(&mut state.extensions.get::<Paused>().0, true);
    // Rules only grow towards the union of what is gathered, so passes end; the bound guards
    // against a pass that keeps changing what it wrote.
    let mut passes = 0;
    while aggregate_once(store, state, &rt) && passes < MAX_PASSES {
        passes += 1;
    }
    state.extensions.get::<Paused>().0 = was_paused;
}

/// More passes than any chain of aggregated roles needs (`view` into `edit` into `admin`).
const MAX_PASSES: usize = 16;

/// One pass over the aggregated ClusterRoles; whether it updated any.
fn aggregate_once(store: &Store, state: &mut State, rt: &std::sync::Arc<ResourceType>) -> bool {
    let roles: Vec<Value> = state
        .objects
        .get(&storage_key(rt))
        .map(|all| all.values().map(|stored| stored.decode()).collect())
        .unwrap_or_default();
    let options = WriteOptions {
        field_manager: Some("clusterrole-aggregation-controller".to_owned()),
        ..WriteOptions::default()
    };
    let mut updated = false;
    for role in roles.iter().filter(|r| r.get("aggregationRule").is_some()) {
        let rules = Value::Array(gathered_rules(role, &roles));
        if role.get("rules").unwrap_or(&Value::Null) == &rules
            || (rules.as_array().is_some_and(Vec::is_empty) && role.get("rules").is_none_or(Value::is_null))
        {
            continue;
        }
        // Read again: an earlier update of this pass may have changed it.
        let name = meta::name(role);
        let Some(current) = store.stored(state, rt, "", name) else {
            continue;
        };
        let mut next = current.clone();
        next["rules"] = rules;
        match crate::strategy::writes::update_locked(
            store, state, rt, "", name, current, next, &options, false,
        ) {
            Ok(_) => updated = true,
            Err(error) => tracing::warn!(%error, name, "aggregating a ClusterRole's rules"),
        }
    }
    updated
}

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
