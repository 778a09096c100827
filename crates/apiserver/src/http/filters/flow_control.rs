//! The API Priority and Fairness filter's visible part: each authenticated request is classified by
//! the FlowSchemas (`crate::flowcontrol`), and its response names what it matched by uid in
//! `X-Kubernetes-PF-FlowSchema-UID` and `X-Kubernetes-PF-PriorityLevel-UID`, as kube-apiserver's
//! response does. Long-running requests other than watches (exec, attach, port-forward, proxy, logs)
//! are not classified, as kube-apiserver leaves them out too.

use std::sync::Arc;

use axum::{
    extract::{Request, State},
    http::HeaderValue,
    middleware::Next,
    response::Response,
};

use super::{
    audit::{self, Attributes},
    authentication::identity::Identity,
};
use crate::flowcontrol::{Target, User};
use crate::http::Shared;

const FLOW_SCHEMA_HEADER: &str = "x-kubernetes-pf-flowschema-uid";
const PRIORITY_LEVEL_HEADER: &str = "x-kubernetes-pf-prioritylevel-uid";

/// Subresources whose requests run as long as the client wants; they are not classified.
const LONG_RUNNING: &[&str] = &["attach", "exec", "proxy", "log", "portforward"];

/// Middleware, inside authentication: classifies the request and names the match on its response.
pub async fn classify(State(shared): State<Arc<Shared>>, request: Request, next: Next) -> Response {
    let identity = request
        .extensions()
        .get::<Identity>()
        .cloned()
        .unwrap_or_default();
    let target = match audit::attributes(request.method(), request.uri()) {
        Some(Attributes::Resource(attributes)) => {
            if attributes
                .subresource
                .as_deref()
                .is_some_and(|sub| LONG_RUNNING.contains(&sub))
            {
                return next.run(request).await;
            }
            Target::Resource {
                verb: attributes.verb.as_str().to_owned(),
                group: attributes.group,
                namespace: attributes.namespace,
                resource: attributes.resource,
                subresource: attributes.subresource,
            }
        }
        Some(Attributes::NonResource(attributes)) => Target::NonResource {
            verb: attributes.verb,
            path: attributes.path,
        },
        None => Target::NonResource {
            verb: request.method().as_str().to_ascii_lowercase(),
            path: request.uri().path().to_owned(),
        },
    };
    let changes = shared.controllers.flow_control_changes();
    let matched = shared
        .flow_control
        .classify(&shared.store, changes, &user_of(&identity), &target);
    let mut response = next.run(request).await;
    if let Some(matched) = matched {
        let headers = response.headers_mut();
        for (name, uid) in [
            (FLOW_SCHEMA_HEADER, matched.flow_schema_uid),
            (PRIORITY_LEVEL_HEADER, matched.priority_level_uid),
        ] {
            if let Ok(value) = HeaderValue::from_str(&uid) {
                headers.insert(name, value);
            }
        }
    }
    response
}

/// The user and groups an identity authenticates as.
fn user_of(identity: &Identity) -> User {
    User {
        name: identity.username(),
        groups: identity.groups(),
    }
}
