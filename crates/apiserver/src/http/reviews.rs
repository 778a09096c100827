//! Self-subject reviews, which `kubectl auth can-i` and `kubectl auth whoami` send: the caller asks who
//! it is and what it may do, and the answer is computed, never stored. Whoever holds the embedded
//! server's token may do everything, like a member of `system:masters` on a real cluster, and the
//! answers say exactly that.

use apimachinery::{FieldCause, resource::ResourceType};
use axum::response::Response;
use serde_json::{Value, json};

use super::respond;
use crate::error::{Error, Result, Subject};

/// Who the holder of the token is, in the words of a real cluster's administrator.
pub const USER: &str = "admin";
pub const GROUPS: [&str; 2] = ["system:masters", "system:authenticated"];

/// The answer to `review`, of kind `rt` (201, as kube-apiserver answers).
pub fn answer(rt: &ResourceType, mut review: Value) -> Result<Response> {
    review["apiVersion"] = json!(rt.api_version());
    review["kind"] = json!(rt.kind);
    review["metadata"] = json!({"creationTimestamp": null});
    review["status"] = match rt.plural.as_str() {
        "selfsubjectaccessreviews" => {
            check_attributes(rt, &review)?;
            json!({"allowed": true})
        }
        "selfsubjectrulesreviews" => json!({
            "resourceRules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}],
            "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}],
            "incomplete": false,
        }),
        _ => json!({"userInfo": {"username": USER, "uid": USER, "groups": GROUPS}}),
    };
    Ok(respond::json(201, &review))
}

/// An access review asks about a resource or a non-resource URL, exactly one of the two.
fn check_attributes(rt: &ResourceType, review: &Value) -> Result<()> {
    let has = |key: &str| {
        review
            .pointer(&format!("/spec/{key}"))
            .is_some_and(|v| !v.is_null())
    };
    if has("resourceAttributes") != has("nonResourceAttributes") {
        return Ok(());
    }
    Err(Error::Invalid {
        kind_group: format!("{}.{}", rt.kind, rt.group),
        subject: Subject::default(),
        causes: vec![FieldCause::new(
            "FieldValueInvalid",
            "spec.resourceAttributes",
            "Invalid value: \"null\": exactly one of nonResourceAttributes or resourceAttributes must be specified",
        )],
    })
}
