//! The reviews a client sends about someone else, which webhooks and proxies in front of a cluster
//! ask: a TokenReview (whose is this token?) and a SubjectAccessReview or LocalSubjectAccessReview
//! (may this user do that?). Answered, never stored, as kube-apiserver answers them.

use apimachinery::{FieldCause, resource::ResourceType};
use axum::response::Response;
use serde_json::{Value, json};

use super::field_text;
use crate::error::{Error, Result, Subject};
use crate::http::{
    Shared,
    filters::authentication::issued_tokens::{self, Verdict},
    respond,
};
use crate::rbac::authorizer::{self, Action, Requester};

/// Whether `rt` is one of the reviews answered here.
pub fn answers(rt: &ResourceType) -> bool {
    rt.is_builtin()
        && matches!(
            rt.plural.as_str(),
            "tokenreviews" | "subjectaccessreviews" | "localsubjectaccessreviews"
        )
}

/// The answer to `review` of kind `rt`, sent to `namespace` (a LocalSubjectAccessReview's).
pub fn answer(
    shared: &Shared,
    rt: &ResourceType,
    mut review: Value,
    namespace: Option<&str>,
) -> Result<Response> {
    review["apiVersion"] = json!(rt.api_version());
    review["kind"] = json!(rt.kind);
    if review.get("metadata").is_none_or(|m| !m.is_object()) {
        review["metadata"] = json!({});
    }
    review["metadata"]["creationTimestamp"] = Value::Null;
    review["status"] = match rt.plural.as_str() {
        "tokenreviews" => token_review(shared, &review)?,
        _ => access_review(shared, rt, &mut review, namespace)?,
    };
    Ok(respond::json(201, &review))
}

/// Who the token of a TokenReview belongs to, as the request authenticator would say.
fn token_review(shared: &Shared, review: &Value) -> Result<Value> {
    let token = review
        .pointer("/spec/token")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if token.is_empty() {
        return Err(Error::BadRequest(
            "token is required for TokenReview in authentication".into(),
        ));
    }
    // Without audiences, the review asks for the server's own, as a request would be authenticated.
    let audiences: Vec<String> = review
        .pointer("/spec/audiences")
        .and_then(Value::as_array)
        .map(|list| list.iter().filter_map(Value::as_str).map(str::to_owned).collect())
        .filter(|list: &Vec<String>| !list.is_empty())
        .unwrap_or_else(|| vec![issued_tokens::API_AUDIENCE.to_owned()]);
    let verdict = shared
        .credentials()
        .map(|credentials| credentials.identify_for(token, &audiences));
    Ok(match verdict {
        Some(Verdict::Authenticated(identity, audiences)) => {
            let mut user = super::self_subject::user_info(&identity);
            if user.get("extra").is_none() {
                user["extra"] = json!({});
            }
            json!({"authenticated": true, "user": user, "audiences": audiences})
        }
        // kube-apiserver's union of authenticators reports the bearer-token authenticator's refusal
        // beside the service-account authenticator's reason.
        Some(Verdict::Refused(reason)) => {
            json!({"user": {}, "error": format!("[invalid bearer token, {reason}]")})
        }
        Some(Verdict::NotIssued) => json!({"user": {}, "error": "invalid bearer token"}),
        // A server without authentication knows no token.
        None => json!({"user": {}}),
    })
}

/// Whether the reviewed user may do what the review asks, as kube-apiserver's authorizers decide.
fn access_review(
    shared: &Shared,
    rt: &ResourceType,
    review: &mut Value,
    namespace: Option<&str>,
) -> Result<Value> {
    let spec = review.get("spec").cloned().unwrap_or(Value::Null);
    let resource = spec.get("resourceAttributes").filter(|v| !v.is_null());
    let non_resource = spec.get("nonResourceAttributes").filter(|v| !v.is_null());
    let requester = Requester {
        user: field_text(&spec, "user"),
        groups: spec
            .get("groups")
            .and_then(Value::as_array)
            .map(|groups| {
                groups
                    .iter()
                    .filter_map(Value::as_str)
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default(),
    };
    let mut causes = Vec::new();
    match (resource, non_resource) {
        (Some(_), Some(attributes)) => causes.push(invalid(
            "spec.nonResourceAttributes",
            attributes,
            "cannot be specified in combination with resourceAttributes",
        )),
        (None, None) => causes.push(invalid(
            "spec.resourceAttributes",
            &Value::Null,
            "exactly one of nonResourceAttributes or resourceAttributes must be specified",
        )),
        _ => {}
    }
    if requester.user.is_empty() && requester.groups.is_empty() {
        causes.push(invalid(
            "spec.user",
            &json!(""),
            "at least one of user or group must be specified",
        ));
    }
    // A LocalSubjectAccessReview asks about its own namespace and no other.
    if let (Some(namespace), Some(attributes)) = (namespace, resource) {
        let asked = field_text(attributes, "namespace");
        if !asked.is_empty() && asked != namespace {
            causes.push(invalid(
                "spec.resourceAttributes.namespace",
                &json!(asked),
                "must match metadata.namespace",
            ));
        }
    }
    if !causes.is_empty() {
        return Err(Error::Invalid {
            kind_group: format!("{}.{}", rt.kind, rt.group),
            subject: Subject {
                group: rt.group.clone(),
                ..Default::default()
            },
            causes,
        });
    }
    if let Some(namespace) = namespace {
        review["metadata"]["namespace"] = json!(namespace);
    }
    let action = match resource {
        Some(attributes) => Action::Resource {
            verb: field_text(attributes, "verb"),
            group: field_text(attributes, "group"),
            resource: field_text(attributes, "resource"),
            subresource: field_text(attributes, "subresource"),
            namespace: namespace.map_or_else(|| field_text(attributes, "namespace"), str::to_owned),
            name: field_text(attributes, "name"),
        },
        None => {
            let attributes = non_resource.unwrap_or(&Value::Null);
            Action::NonResource {
                verb: field_text(attributes, "verb"),
                path: field_text(attributes, "path"),
            }
        }
    };
    let decision = authorizer::decide(&shared.store, &requester, &action);
    let mut status = json!({"allowed": decision.allowed});
    if !decision.reason.is_empty() {
        status["reason"] = json!(decision.reason);
    }
    Ok(status)
}

fn invalid(field: &str, value: &Value, detail: &str) -> FieldCause {
    let shown = match value {
        Value::Null => "null".to_owned(),
        Value::String(text) => text.clone(),
        other => other.to_string(),
    };
    FieldCause::new(
        "FieldValueInvalid",
        field,
        format!("Invalid value: {}: {detail}", json!(shown)),
    )
}
