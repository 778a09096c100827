//! Self-subject reviews, which `kubectl auth can-i` and `kubectl auth whoami` send: the caller asks who
//! it is and what it may do, and the answer is computed, never stored, by the same authorizers that
//! decide its requests (see [`crate::rbac::authorizer`]): the holder of the
//! embedded server's token is a member of `system:masters` and may do everything, anyone else what
//! RBAC grants.

use apimachinery::{
    FieldCause,
    patch::{ObjectSchema, UpdateWrite, record_update},
    resource::ResourceType,
};
use axum::response::Response;
use serde_json::{Value, json};

use super::field_text;
use crate::error::{Error, Result, Subject};
use crate::http::{
    Shared,
    filters::{authentication::identity::Identity, authorization::mode::Authorization},
    respond,
};
use crate::rbac::authorizer::{self, Action, Requester};

use crate::token_holder::{GROUPS, USER};

/// The answer to `review`, of kind `rt` (201, as kube-apiserver answers), sent by `manager` as
/// `identity`.
pub fn answer(
    shared: &Shared,
    rt: &ResourceType,
    mut review: Value,
    manager: &str,
    identity: &Identity,
) -> Result<Response> {
    let requester = Requester {
        user: identity.username(),
        groups: identity.groups(),
    };
    let allow_all = shared.authorization == Authorization::AlwaysAllow;
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
            let now = apimachinery::meta::now_rfc3339();
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
            match allow_all {
                true => json!({"allowed": true}),
                false => access_status(shared, &requester, &review),
            }
        }
        "selfsubjectrulesreviews" if allow_all => json!({
            "resourceRules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}],
            "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}],
            "incomplete": false,
        }),
        "selfsubjectrulesreviews" => {
            let namespace = review
                .pointer("/spec/namespace")
                .and_then(Value::as_str)
                .filter(|n| !n.is_empty());
            rules_status(shared, &requester, namespace)
        }
        _ => {
            // A SelfSubjectReview is stamped with the time it was answered.
            review["metadata"] = json!({"creationTimestamp": apimachinery::meta::now_rfc3339()});
            json!({"userInfo": user_info(identity)})
        }
    };
    Ok(respond::json(201, &review))
}

/// Whether the requester may do what a SelfSubjectAccessReview's attributes name, with RBAC's reason.
fn access_status(shared: &Shared, requester: &Requester, review: &Value) -> Value {
    let attributes = |key: &str| review.pointer(&format!("/spec/{key}")).filter(|v| !v.is_null());
    let action = match attributes("resourceAttributes") {
        Some(r) => Action::Resource {
            verb: field_text(r, "verb"),
            group: field_text(r, "group"),
            resource: field_text(r, "resource"),
            subresource: field_text(r, "subresource"),
            namespace: field_text(r, "namespace"),
            name: field_text(r, "name"),
        },
        None => {
            let n = attributes("nonResourceAttributes").unwrap_or(&Value::Null);
            Action::NonResource {
                verb: field_text(n, "verb"),
                path: field_text(n, "path"),
            }
        }
    };
    let decision = authorizer::decide(&shared.store, requester, &action);
    let mut status = json!({"allowed": decision.allowed});
    if !decision.reason.is_empty() {
        status["reason"] = json!(decision.reason);
    }
    status
}

/// The rules the requester holds in `namespace` (and cluster-wide), as RBAC lists them for a
/// SelfSubjectRulesReview: resource rules and non-resource rules, in the order the bindings grant them.
fn rules_status(shared: &Shared, requester: &Requester, namespace: Option<&str>) -> Value {
    let (rules, errors) = authorizer::rules_for(&shared.store, requester, namespace);
    let mut resource_rules = Vec::new();
    let mut non_resource_rules = Vec::new();
    for rule in rules {
        let list = |key: &str| {
            rule.get(key)
                .filter(|v| v.as_array().is_some_and(|a| !a.is_empty()))
        };
        let mut converted = serde_json::Map::new();
        converted.insert(
            "verbs".into(),
            list("verbs").cloned().unwrap_or_else(|| json!([])),
        );
        if let Some(urls) = list("nonResourceURLs") {
            converted.insert("nonResourceURLs".into(), urls.clone());
            non_resource_rules.push(Value::Object(converted));
            continue;
        }
        for key in ["apiGroups", "resources", "resourceNames"] {
            if let Some(items) = list(key) {
                converted.insert(key.into(), items.clone());
            }
        }
        resource_rules.push(Value::Object(converted));
    }
    let mut status = json!({"resourceRules": resource_rules, "nonResourceRules": non_resource_rules,
        "incomplete": !errors.is_empty()});
    if !errors.is_empty() {
        status["evaluationError"] = json!(errors.join(", "));
    }
    status
}

/// Who `identity` is, as kube-apiserver's authenticators name the administrator and a service
/// account.
pub fn user_info(identity: &Identity) -> Value {
    match identity {
        Identity::Administrator => json!({"username": USER, "uid": USER, "groups": GROUPS}),
        Identity::ServiceAccount {
            namespace,
            name,
            uid,
            extra,
        } => {
            let mut info = json!({
                "username": format!("system:serviceaccount:{namespace}:{name}"),
                "uid": uid,
                "groups": ["system:serviceaccounts", format!("system:serviceaccounts:{namespace}"),
                    "system:authenticated"],
            });
            if !extra.is_empty() {
                info["extra"] = json!(extra);
            }
            info
        }
        Identity::User { name, groups } => json!({"username": name, "groups": groups}),
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
