//! Authorization of every request, as kube-apiserver's authorization filter does it: after
//! authentication, impersonation and flow control, before any handler, each request is decided by
//! its attributes (verb, API group, resource, subresource, namespace, name; or verb and path for a
//! non-resource URL) for the user it authenticated as. Members of `system:masters` (the holder of the
//! server's token) may do everything; anyone else what RBAC grants (see [`crate::rbac::authorizer`]).
//! A refusal is kube-apiserver's 403 Status:
//! `deployments.apps is forbidden: User "alice" cannot list resource "deployments" in API group "apps" in the namespace "default"`.
//!
//! What the server does itself (its emulated controllers, its start-up objects) writes to the store
//! directly and is never authorized as a client.

pub mod mode;
mod owner_reference_permissions;
mod sent_object;

use std::sync::Arc;

use axum::{
    extract::{Request, State},
    middleware::Next,
    response::Response,
};

use super::{
    audit::{self, Attributes, ResourceAttributes, Verb},
    authentication::identity::Identity,
};
use crate::rbac::{
    authorizer::{self, Action, Requester},
    escalation,
};
use crate::{
    error::{Error, Subject},
    http::{Shared, respond},
};
use mode::Authorization;

/// Middleware: passes the request on when its user may make it, otherwise answers 403.
pub(in crate::http) async fn authorize(
    State(shared): State<Arc<Shared>>,
    request: Request,
    next: Next,
) -> Response {
    if shared.authorization == Authorization::AlwaysAllow {
        return next.run(request).await;
    }
    let identity = request
        .extensions()
        .get::<Identity>()
        .cloned()
        .unwrap_or_default();
    let requester = Requester {
        user: identity.username(),
        groups: identity.groups(),
    };
    // A method no resource is served with authorizes as no verb, which no rule but `*` grants.
    let attributes = audit::attributes(request.method(), request.uri()).unwrap_or_else(|| {
        Attributes::NonResource(audit::NonResourceAttributes {
            verb: request.method().as_str().to_ascii_lowercase(),
            path: request.uri().path().to_owned(),
        })
    });
    let action = action_of(&attributes);
    let decision = authorizer::decide(&shared.store, &requester, &action);
    if !decision.allowed {
        tracing::debug!(user = %requester.user, ?action, "request forbidden");
        return respond::error(&forbidden(&requester.user, &attributes, &decision.reason));
    }
    match attributes {
        Attributes::Resource(attributes)
            if attributes.subresource.is_none()
                && matches!(attributes.verb, Verb::Create | Verb::Update | Verb::Patch)
                && escalation::applies(&attributes.group, &attributes.resource, &requester) =>
        {
            sent_object::confirmed(&shared, request, next, |sent| {
                let target = sent_object::target(&shared, &attributes, sent);
                let write = escalation::Write {
                    resource: &attributes.resource,
                    namespace: &target.namespace,
                    name: &target.name,
                    stored: target.stored.as_ref(),
                    sent,
                };
                escalation::confirm_no_escalation(&shared.store, &requester, &write)
            })
            .await
        }
        Attributes::Resource(attributes)
            if owner_reference_permissions::applies(&shared, &attributes, &requester) =>
        {
            sent_object::confirmed(&shared, request, next, |sent| {
                owner_reference_permissions::confirm_permitted(&shared, &requester, &attributes, sent)
            })
            .await
        }
        _ => next.run(request).await,
    }
}

/// The authorizer's view of `attributes`.
pub(super) fn action_of(attributes: &Attributes) -> Action {
    match attributes {
        Attributes::Resource(r) => Action::Resource {
            verb: r.verb.as_str().to_owned(),
            group: r.group.clone(),
            resource: r.resource.clone(),
            subresource: r.subresource.clone().unwrap_or_default(),
            namespace: r.namespace.clone().unwrap_or_default(),
            name: r.name.clone().unwrap_or_default(),
        },
        Attributes::NonResource(n) => Action::NonResource {
            verb: n.verb.clone(),
            path: n.path.clone(),
        },
    }
}

/// kube-apiserver's 403 for a request its authorizers refused, `reason` (RBAC's, if any) appended.
pub(super) fn forbidden(user: &str, attributes: &Attributes, reason: &str) -> Error {
    let (subject, what) = match attributes {
        Attributes::NonResource(n) => (
            Subject::default(),
            format!("User {user:?} cannot {} path {:?}", n.verb, n.path),
        ),
        Attributes::Resource(r) => (subject_of(r), cannot(user, r)),
    };
    let what = match reason {
        "" => what,
        reason => format!("{what}: {reason}"),
    };
    let message = match (subject.qualified_plural.as_str(), subject.name.as_str()) {
        ("", _) => format!("forbidden: {what}"),
        (resource, "") => format!("{resource} is forbidden: {what}"),
        (resource, name) => format!("{resource} {name:?} is forbidden: {what}"),
    };
    Error::RequestForbidden { subject, message }
}

/// `User "alice" cannot list resource "deployments" in API group "apps" in the namespace "default"`.
fn cannot(user: &str, r: &ResourceAttributes) -> String {
    let scope = match &r.namespace {
        Some(namespace) => format!("in the namespace {namespace:?}"),
        None => "at the cluster scope".to_owned(),
    };
    format!(
        "User {user:?} cannot {} resource {:?} in API group {:?} {scope}",
        r.verb,
        r.rbac_resource(),
        r.group
    )
}

/// The resource a refusal names: `deployments.apps` (its group resource, never the subresource).
pub(super) fn subject_of(r: &ResourceAttributes) -> Subject {
    Subject {
        qualified_plural: match r.group.as_str() {
            "" => r.resource.clone(),
            group => format!("{}.{group}", r.resource),
        },
        group: r.group.clone(),
        plural: r.resource.clone(),
        name: r.name.clone().unwrap_or_default(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::{Method, Uri};

    fn message(method: Method, uri: &str) -> String {
        let uri: Uri = uri.parse().expect("a URI");
        let attributes = audit::attributes(&method, &uri).expect("attributes");
        forbidden("alice", &attributes, "").to_string()
    }

    #[test]
    fn refusals_read_as_kube_apiservers() {
        assert_eq!(
            message(Method::GET, "/apis/apps/v1/namespaces/default/deployments"),
            r#"deployments.apps is forbidden: User "alice" cannot list resource "deployments" in API group "apps" in the namespace "default""#
        );
        assert_eq!(
            message(Method::GET, "/api/v1/nodes/n1"),
            r#"nodes "n1" is forbidden: User "alice" cannot get resource "nodes" in API group "" at the cluster scope"#
        );
        assert_eq!(
            message(Method::GET, "/api/v1/namespaces/ns"),
            r#"namespaces "ns" is forbidden: User "alice" cannot get resource "namespaces" in API group "" in the namespace "ns""#
        );
        assert_eq!(
            message(Method::PUT, "/api/v1/namespaces/ns/pods/p/status"),
            r#"pods "p" is forbidden: User "alice" cannot update resource "pods/status" in API group "" in the namespace "ns""#
        );
        assert_eq!(
            message(Method::GET, "/metrics"),
            r#"forbidden: User "alice" cannot get path "/metrics""#
        );
    }
}
