//! The object a write's body sends, for the checks that read it before the handler does (RBAC's
//! escalation check, OwnerReferencesPermissionEnforcement): the body is read once, checked, and
//! handed on to the handler whole.

use axum::{body::Body, extract::Request, http::header, middleware::Next, response::Response};
use serde_json::Value;

use crate::error::Error;
use crate::http::{Shared, filters::audit::ResourceAttributes, respond};

/// What a write names and what is stored under that name now, as both checks compare them.
pub(super) struct Target {
    /// The request's namespace (empty for a cluster-scoped object).
    pub(super) namespace: String,
    /// The request's name, or for a create (whose path names none) the body's `metadata.name`.
    pub(super) name: String,
    /// The object stored under that name, if any: `None` for a create.
    pub(super) stored: Option<Value>,
}

/// The target of a write with `attributes` that sends `sent`.
pub(super) fn target(shared: &Shared, attributes: &ResourceAttributes, sent: &Value) -> Target {
    let namespace = attributes.namespace.clone().unwrap_or_default();
    let name = attributes
        .name
        .clone()
        .or_else(|| {
            sent.pointer("/metadata/name")
                .and_then(Value::as_str)
                .map(str::to_owned)
        })
        .unwrap_or_default();
    let stored = shared.store.find(
        &attributes.group,
        &attributes.version,
        &attributes.resource,
        &namespace,
        &name,
    );
    Target {
        namespace,
        name,
        stored,
    }
}

/// Reads the request's body and runs `confirm` on the object it sends: answers the error `confirm`
/// gives (a 403), or passes the request on with its body. What does not decode is left to the
/// handler, which answers it with its own 400.
pub(super) async fn confirmed(
    shared: &Shared,
    request: Request,
    next: Next,
    confirm: impl FnOnce(&Value) -> Result<(), Error>,
) -> Response {
    let (parts, body) = request.into_parts();
    let Ok(bytes) = axum::body::to_bytes(body, shared.max_body_bytes).await else {
        return respond::error(&Error::TooLarge(shared.max_body_bytes));
    };
    let content_type = parts
        .headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    if let Some(sent) = sent_object(content_type, &bytes)
        && let Err(error) = confirm(&sent)
    {
        return respond::error(&error);
    }
    next.run(Request::from_parts(parts, Body::from(bytes))).await
}

/// The object a request body of `content_type` sends (JSON or YAML); `None` for protobuf, a JSON
/// patch's list of operations, or what does not decode.
fn sent_object(content_type: &str, bytes: &[u8]) -> Option<Value> {
    let sent: Option<Value> = if content_type.contains("yaml") {
        serde_yaml::from_slice(bytes).ok()
    } else if content_type.contains("protobuf") {
        None
    } else {
        serde_json::from_slice(bytes).ok()
    };
    sent.filter(Value::is_object)
}
