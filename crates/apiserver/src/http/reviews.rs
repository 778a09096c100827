//! Self-subject reviews, which `kubectl auth can-i` and `kubectl auth whoami` send: the caller asks who
//! it is and what it may do, and the answer is computed, never stored. Whoever holds the embedded
//! server's token may do everything, like a member of `system:masters` on a real cluster, and the
//! answers say exactly that.

use apimachinery::{
    FieldCause,
    patch::{ObjectSchema, UpdateWrite, record_update},
    resource::ResourceType,
};
use axum::response::Response;
use serde_json::{Value, json};

use super::{identity::Identity, respond};
use crate::error::{Error, Result, Subject};

use crate::token_holder::{GROUPS, USER};

/// The answer to `review`, of kind `rt` (201, as kube-apiserver answers), sent by `manager` as
/// `identity`.
pub fn answer(rt: &ResourceType, mut review: Value, manager: &str, identity: &Identity) -> Result<Response> {
    let api_version = rt.api_version();
    review["apiVersion"] = json!(api_version);
    review["kind"] = json!(rt.kind);
    review["metadata"] = json!({"creationTimestamp": null});
    review["status"] = match rt.plural.as_str() {
        "selfsubjectaccessreviews" => {
            check_attributes(rt, &review)?;
            // kube-apiserver records the create's managedFields before the review is answered, and
            // an access review answers with the object it was sent; the other reviews answer with
            // objects of their own, which carry none.
            let now = crate::store::meta::now_rfc3339();
            let write = UpdateWrite {
                manager,
                subresource: None,
                schema: ObjectSchema::BuiltIn {
                    api_version: &api_version,
                    kind: &rt.kind,
                },
                status_subresource: false,
                now: &now,
            };
            record_update(None, &mut review, &write);
            json!({"allowed": true})
        }
        "selfsubjectrulesreviews" => json!({
            "resourceRules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}],
            "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}],
            "incomplete": false,
        }),
        _ => {
            // A SelfSubjectReview is stamped with the time it was answered.
            review["metadata"] = json!({"creationTimestamp": crate::store::meta::now_rfc3339()});
            json!({"userInfo": user_info(identity)})
        }
    };
    Ok(respond::json(201, &review))
}

/// Who `identity` is, as kube-apiserver's authenticators name the administrator and a service
/// account.
pub fn user_info(identity: &Identity) -> Value {
    match identity {
        Identity::Administrator => json!({"username": USER, "uid": USER, "groups": GROUPS}),
        Identity::ServiceAccount { namespace, name, uid } => json!({
            "username": format!("system:serviceaccount:{namespace}:{name}"),
            "uid": uid,
            "groups": ["system:serviceaccounts", format!("system:serviceaccounts:{namespace}"),
                "system:authenticated"],
        }),
        Identity::Impersonated { user, uid, groups } => {
            let mut info = json!({"username": user, "groups": groups});
            if !uid.is_empty() {
                info["uid"] = json!(uid);
            }
            info
        }
    }
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
