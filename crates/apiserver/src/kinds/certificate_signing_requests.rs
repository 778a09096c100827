//! CertificateSigningRequests' strategy: who asked, filled in by the server, the times of their
//! conditions, and their `approval` written as their status is.

use apimachinery::{FieldCause, meta};
use serde_json::Value;

use super::Kind;
use crate::store::Preparing;

/// CertificateSigningRequests: who asked, and their conditions' times.
pub(super) struct CertificateSigningRequests;

impl Kind for CertificateSigningRequests {
    fn prepare(&self, write: Preparing<'_>) -> Result<(), Vec<FieldCause>> {
        prepare(write.old, write.object);
        Ok(())
    }

    /// An approval changes the conditions in the status alone, as a status write does.
    fn status_subresources(&self) -> &'static [&'static str] {
        &["approval"]
    }
}

/// Sets what the server sets on a create (`old` = None) or an update.
fn prepare(old: Option<&Value>, object: &mut Value) {
    match old {
        None => requested_by_the_token_holder(object),
        Some(old) => stamp_conditions(old, object),
    }
}

/// A new certificate signing request names who asked for it, as kube-apiserver fills it in from the
/// request's user, whatever the body says: here the one holder of the token.
fn requested_by_the_token_holder(object: &mut Value) {
    use crate::token_holder::{GROUPS, USER};
    if let Some(spec) = object.get_mut("spec").and_then(Value::as_object_mut) {
        spec.insert("username".into(), USER.into());
        spec.insert("uid".into(), USER.into());
        spec.insert("groups".into(), serde_json::json!(GROUPS));
    }
    // The status is always written, empty until a signer or an approver fills it.
    if let Some(map) = object.as_object_mut() {
        map.entry("status").or_insert_with(|| serde_json::json!({}));
    }
}

/// A CSR's conditions without times get them, as kube-apiserver stamps them: updated now, and in
/// transition since now unless the condition held the same status before.
fn stamp_conditions(old: &Value, object: &mut Value) {
    let now = meta::now_rfc3339();
    let before = old
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let Some(conditions) = object
        .pointer_mut("/status/conditions")
        .and_then(Value::as_array_mut)
    else {
        return;
    };
    for condition in conditions.iter_mut() {
        let held = before
            .iter()
            .find(|c| c["type"] == condition["type"] && c["status"] == condition["status"])
            .and_then(|c| c.get("lastTransitionTime"))
            .filter(|t| !t.is_null())
            .cloned();
        let Some(condition) = condition.as_object_mut() else {
            continue;
        };
        // A zero time (Go prints it `null`) is no time: stamped as if left out.
        if condition.get("lastUpdateTime").is_none_or(Value::is_null) {
            condition.insert("lastUpdateTime".into(), Value::from(now.clone()));
        }
        if condition.get("lastTransitionTime").is_none_or(Value::is_null) {
            condition.insert(
                "lastTransitionTime".into(),
                held.unwrap_or_else(|| Value::from(now.clone())),
            );
        }
    }
}
