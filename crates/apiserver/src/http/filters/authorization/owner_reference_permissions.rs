//! kube-apiserver's OwnerReferencesPermissionEnforcement admission plugin, which hardened clusters
//! enable (`Config::owner_reference_permissions`; off by default, as in kube-apiserver): whoever
//! changes an object's `ownerReferences` other than by creating it must be allowed to delete the
//! object, and whoever sets `blockOwnerDeletion: true` on a reference (a new one, or one that had it
//! unset or false) must be allowed to `update` the owner's `finalizers` subresource, or every
//! resource's. `pods/status` is exempt, as upstream. Members of `system:masters` are never checked.
//!
//! Like [`crate::rbac::escalation`], the check reads the object the request sends: a create's or
//! update's body, or a merge or apply patch's (whose `ownerReferences`, when present, replace the
//! stored ones). A JSON patch or a protobuf body is not read and passes unchecked.

use serde_json::Value;

use super::sent_object::{Target, target};
use crate::error::{Error, Subject};
use crate::http::{
    Shared,
    filters::audit::{ResourceAttributes, Verb},
};
use crate::rbac::authorizer::{self, Action, PRIVILEGED_GROUP, Requester};

/// Whether a request with `attributes` from `requester` is one the plugin checks.
pub(super) fn applies(shared: &Shared, attributes: &ResourceAttributes, requester: &Requester) -> bool {
    shared.owner_reference_permissions
        && matches!(attributes.verb, Verb::Create | Verb::Update | Verb::Patch)
        && !(attributes.subresource.as_deref() == Some("status")
            && crate::kinds::named(&attributes.group, &attributes.resource)
                .is_some_and(|kind| kind.status_skips_owner_reference_check()))
        && !requester.groups.iter().any(|g| g == PRIVILEGED_GROUP)
}

/// Refuses (403) an object sent by `requester` that sets owner references its sender may not.
pub(super) fn confirm_permitted(
    shared: &Shared,
    requester: &Requester,
    attributes: &ResourceAttributes,
    sent: &Value,
) -> Result<(), Error> {
    // A merge or apply patch without ownerReferences leaves them as they are.
    let Some(new_refs) = sent.pointer("/metadata/ownerReferences") else {
        return Ok(());
    };
    let new_refs = new_refs.as_array().cloned().unwrap_or_default();
    let Target {
        namespace,
        name,
        stored,
    } = target(shared, attributes, sent);
    let old_refs = stored
        .as_ref()
        .and_then(|s| s.pointer("/metadata/ownerReferences"))
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    if stored.is_none() && new_refs.is_empty() || stored.is_some() && same_references(&old_refs, &new_refs) {
        return Ok(());
    }
    let refused = |why: &str, reason: &str| {
        let resource = match attributes.group.as_str() {
            "" => attributes.resource.clone(),
            group => format!("{}.{group}", attributes.resource),
        };
        Error::RequestForbidden {
            message: format!("{resource} {name:?} is forbidden: {why}: {reason}, <nil>"),
            subject: Subject {
                qualified_plural: resource,
                group: attributes.group.clone(),
                plural: attributes.resource.clone(),
                name: name.clone(),
            },
        }
    };
    let decide = |verb: &str, group: &str, resource: &str, subresource: &str, namespace: &str, name: &str| {
        let action = Action::Resource {
            verb: verb.to_owned(),
            group: group.to_owned(),
            resource: resource.to_owned(),
            subresource: subresource.to_owned(),
            namespace: namespace.to_owned(),
            name: name.to_owned(),
        };
        authorizer::decide(&shared.store, requester, &action)
    };
    // Whoever could not have created the object with these references must be able to delete it.
    if stored.is_some() && verb_is_not_create(attributes) {
        let subresource = attributes.subresource.clone().unwrap_or_default();
        let decision = decide(
            "delete",
            &attributes.group,
            &attributes.resource,
            &subresource,
            &namespace,
            &name,
        );
        if !decision.allowed {
            return Err(refused(
                "cannot set an ownerRef on a resource you can't delete",
                &decision.reason,
            ));
        }
    }
    let newly_blocking: Vec<&Value> = new_refs
        .iter()
        .filter(|r| blocks(r))
        .filter(|r| {
            !old_refs
                .iter()
                .any(|old| old.get("uid") == r.get("uid") && blocks(old))
        })
        .collect();
    if newly_blocking.is_empty() || decide("update", "*", "*", "finalizers", "", "*").allowed {
        return Ok(());
    }
    let registry = shared.store.registry();
    for reference in newly_blocking {
        let text = |key: &str| reference.get(key).and_then(Value::as_str).unwrap_or_default();
        let Some(owner) = registry.by_kind(text("apiVersion"), text("kind")) else {
            return Err(refused(
                &format!(
                    "cannot set blockOwnerDeletion in this case because cannot find RESTMapping for APIVersion {} Kind {}",
                    text("apiVersion"),
                    text("kind")
                ),
                "no matches",
            ));
        };
        // A namespaced owner is in the dependent's namespace.
        let scope = if owner.namespaced { namespace.as_str() } else { "" };
        let decision = decide(
            "update",
            &owner.group,
            &owner.plural,
            "finalizers",
            scope,
            text("name"),
        );
        if !decision.allowed {
            return Err(refused(
                "cannot set blockOwnerDeletion if an ownerReference refers to a resource you can't set finalizers on",
                &decision.reason,
            ));
        }
    }
    Ok(())
}

/// Whether a write of an existing object is an update or a patch (an apply that creates the object
/// found nothing stored).
fn verb_is_not_create(attributes: &ResourceAttributes) -> bool {
    !matches!(attributes.verb, Verb::Create)
}

/// Whether `sent` names the references `stored` holds: as many, each with the uid of a stored one and
/// no field that differs from it. A field the body leaves out (an apply's `controller: false`, say)
/// is the stored one's, as the write would keep it.
fn same_references(stored: &[Value], sent: &[Value]) -> bool {
    stored.len() == sent.len()
        && sent.iter().all(|reference| {
            stored.iter().any(|old| {
                old.get("uid") == reference.get("uid")
                    && reference
                        .as_object()
                        .is_some_and(|fields| fields.iter().all(|(key, value)| old.get(key) == Some(value)))
            })
        })
}

fn blocks(reference: &Value) -> bool {
    reference.get("blockOwnerDeletion") == Some(&Value::Bool(true))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn references_sent_as_stored_or_with_fields_left_out_are_the_same() {
        let stored = vec![
            json!({"apiVersion": "v1", "kind": "ConfigMap", "name": "a", "uid": "1",
            "controller": true, "blockOwnerDeletion": true}),
        ];
        assert!(same_references(&stored, &stored));
        let fewer_fields = vec![json!({"apiVersion": "v1", "kind": "ConfigMap", "name": "a", "uid": "1"})];
        assert!(same_references(&stored, &fewer_fields));
        let another_owner = vec![json!({"apiVersion": "v1", "kind": "ConfigMap", "name": "b", "uid": "2"})];
        assert!(!same_references(&stored, &another_owner));
        let unblocked = vec![json!({"uid": "1", "blockOwnerDeletion": false})];
        assert!(!same_references(&stored, &unblocked));
        assert!(!same_references(&stored, &[]));
    }
}
