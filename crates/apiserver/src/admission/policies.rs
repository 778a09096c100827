//! ValidatingAdmissionPolicies (A10): each binding whose policy takes in the request (its
//! `matchConstraints`, then the binding's `matchResources`) has the policy's expressions evaluated
//! (`apimachinery::admission_policy`); a failure is refused (`Deny`, 422 unless the validation names
//! another reason) or warned of (`Warn`), as the binding's `validationActions` say. They run before
//! the validating webhooks, as kube-apiserver's admission plugins do.

use apimachinery::admission_policy::{self, Failure, Inputs};
use serde_json::{Value, json};

use super::{
    attributes::{Attributes, Kind},
    matching,
};
use crate::{
    error::{Error, Result},
    store::{Store, subject},
    token_holder,
};

const GROUP: &str = "admissionregistration.k8s.io";

/// Whether any policy is bound, so that writes must go through admission.
pub(super) fn any_bound(store: &Store) -> bool {
    store
        .resolve(GROUP, "v1", "validatingadmissionpolicybindings")
        .is_some_and(|rt| store.holds_any(&rt))
}

/// Evaluates every bound policy that takes in the request: the first denial is the answer, every
/// warning is added to `warnings`.
pub(super) fn validate(store: &Store, attributes: &Attributes, warnings: &mut Vec<String>) -> Result<()> {
    // Policies and webhook configurations are never subject to policies, or a broken policy could
    // never be removed.
    if attributes.rt.group == GROUP {
        return Ok(());
    }
    let list = |plural: &str| {
        store
            .resolve(GROUP, "v1", plural)
            .map(|rt| store.list(&rt, None).0)
            .unwrap_or_default()
    };
    let policies = list("validatingadmissionpolicies");
    let mut bindings = list("validatingadmissionpolicybindings");
    let policy_of = |binding: &Value| {
        let name = binding.pointer("/spec/policyName").and_then(Value::as_str)?;
        policies
            .iter()
            .find(|p| p.pointer("/metadata/name").and_then(Value::as_str) == Some(name))
    };
    let name_of = |object: &Value| {
        object
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    bindings.sort_by_key(|binding| {
        (
            binding.pointer("/spec/policyName").map(Value::to_string),
            name_of(binding),
        )
    });
    let request = request_of(attributes);
    let namespace = namespace_of(store, attributes);
    let inputs = Inputs {
        object: attributes.object.as_ref().unwrap_or(&Value::Null),
        old_object: attributes.old.as_ref().unwrap_or(&Value::Null),
        request: &request,
        namespace_object: &namespace,
    };
    let mut denied: Option<(String, Failure)> = None;
    for binding in &bindings {
        let Some(policy) = policy_of(binding) else {
            continue;
        };
        let constraints = policy.pointer("/spec/matchConstraints").unwrap_or(&Value::Null);
        if matching::match_resources(store, constraints, attributes, true).is_none() {
            continue;
        }
        if let Some(resources) = binding.pointer("/spec/matchResources")
            && matching::match_resources(store, resources, attributes, false).is_none()
        {
            continue;
        }
        let failures = admission_policy::failures(&policy["spec"], &inputs);
        let (policy_name, binding_name) = (name_of(policy), name_of(binding));
        let actions = binding
            .pointer("/spec/validationActions")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        for failure in failures {
            if actions.iter().any(|a| a == "Warn") {
                warnings.push(format!(
                    "Validation failed for ValidatingAdmissionPolicy '{policy_name}' with binding \
                     '{binding_name}': {}",
                    failure.message
                ));
            }
            if actions.iter().any(|a| a == "Deny") && denied.is_none() {
                let message = format!(
                    "ValidatingAdmissionPolicy '{policy_name}' with binding '{binding_name}' denied request: {}",
                    failure.message
                );
                denied = Some((message, failure));
            }
        }
    }
    match denied {
        Some((message, failure)) => Err(Error::DeniedByPolicy {
            subject: subject(&attributes.rt, &attributes.name),
            reason: failure.reason,
            message,
        }),
        None => Ok(()),
    }
}

/// The admission request as the expressions' `request` sees it: as a webhook's review has it.
fn request_of(attributes: &Attributes) -> Value {
    let rt = &attributes.rt;
    let kind = Kind::of(attributes.kind.as_ref(), rt);
    let mut request = json!({
        "kind": kind,
        "resource": {"group": rt.group, "version": rt.version, "resource": rt.plural},
        "requestKind": kind,
        "requestResource": {"group": rt.group, "version": rt.version, "resource": rt.plural},
        "name": attributes.name,
        "namespace": attributes.namespace,
        "operation": super::attributes::operation_name(&attributes.operation),
        "userInfo": {"username": token_holder::USER, "uid": token_holder::USER, "groups": token_holder::GROUPS},
        "dryRun": attributes.dry_run,
        "options": attributes.options,
    });
    if let Some(subresource) = &attributes.subresource {
        request["subResource"] = json!(subresource);
        request["requestSubResource"] = json!(subresource);
    }
    request
}

/// The namespace of a namespaced request, as `namespaceObject` (null for cluster-scoped ones).
fn namespace_of(store: &Store, attributes: &Attributes) -> Value {
    if !attributes.rt.namespaced || attributes.namespace.is_empty() {
        return Value::Null;
    }
    let namespace = crate::kinds::namespaces::stored(store, &attributes.namespace);
    match namespace {
        Some(mut namespace) => {
            if let Some(metadata) = namespace.get_mut("metadata").and_then(Value::as_object_mut) {
                metadata.remove("managedFields");
            }
            namespace
        }
        None => Value::Null,
    }
}
