//! Impersonation: a request with `Impersonate-User` (and `Impersonate-Group`, `Impersonate-Uid`,
//! `Impersonate-Extra-<key>`) acts as that user from then on (its flow-control classification, its
//! SelfSubjectReview), as kube-apiserver's impersonation filter has it right after authentication.
//! The requester must be allowed the `impersonate` verb on each: the administrator (`system:masters`)
//! always is, a service account as the stored RBAC objects grant it.

use axum::http::HeaderMap;

use super::authentication::identity::Identity;
use crate::{
    error::Error,
    rbac::authorizer::{self, Action, Requester},
    store::Store,
};

const USER_HEADER: &str = "impersonate-user";
const GROUP_HEADER: &str = "impersonate-group";
const UID_HEADER: &str = "impersonate-uid";
const EXTRA_PREFIX: &str = "impersonate-extra-";
const SERVICE_ACCOUNT_PREFIX: &str = "system:serviceaccount:";
const ANONYMOUS: &str = "system:anonymous";

/// One thing the requester asks to act as, which it must be allowed to impersonate.
struct Ask {
    group: &'static str,
    resource: &'static str,
    subresource: String,
    namespace: String,
    name: String,
}

impl Ask {
    fn core(resource: &'static str, name: &str) -> Ask {
        Ask {
            group: "",
            resource,
            subresource: String::new(),
            namespace: String::new(),
            name: name.to_owned(),
        }
    }
}

/// Whom a request from `requester` acts as: `requester` itself without impersonation headers,
/// otherwise the impersonated user, or why not (403, or 500 for groups without a user, as upstream).
pub fn act_as(store: &Store, requester: Identity, headers: &HeaderMap) -> Result<Identity, Error> {
    let values = |name: &str| -> Vec<String> {
        headers
            .get_all(name)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .map(str::to_owned)
            .collect()
    };
    let user = values(USER_HEADER).into_iter().next();
    let groups_given = values(GROUP_HEADER);
    let uid = values(UID_HEADER).into_iter().next();
    let extras: Vec<(String, String)> = headers
        .iter()
        .filter_map(|(name, value)| {
            let key = name.as_str().strip_prefix(EXTRA_PREFIX)?;
            Some((key.to_owned(), value.to_str().ok()?.to_owned()))
        })
        .collect();
    let Some(user) = user else {
        if groups_given.is_empty() && uid.is_none() && extras.is_empty() {
            return Ok(requester);
        }
        return Err(Error::Internal(
            "requested impersonation of groups, a uid or extras without impersonating a user".into(),
        ));
    };
    let mut asks = Vec::new();
    let mut groups = Vec::new();
    match user
        .strip_prefix(SERVICE_ACCOUNT_PREFIX)
        .and_then(|rest| rest.split_once(':'))
    {
        Some((namespace, name)) => {
            asks.push(Ask {
                namespace: namespace.to_owned(),
                ..Ask::core("serviceaccounts", name)
            });
            if groups_given.is_empty() {
                groups = vec![
                    "system:serviceaccounts".to_owned(),
                    format!("system:serviceaccounts:{namespace}"),
                ];
            }
        }
        None => asks.push(Ask::core("users", &user)),
    }
    for group in &groups_given {
        asks.push(Ask::core("groups", group));
        groups.push(group.clone());
    }
    for (key, value) in &extras {
        asks.push(Ask {
            group: "authentication.k8s.io",
            subresource: key.clone(),
            ..Ask::core("userextras", value)
        });
    }
    if let Some(uid) = &uid {
        asks.push(Ask {
            group: "authentication.k8s.io",
            ..Ask::core("uids", uid)
        });
    }
    for ask in &asks {
        allowed(store, &requester, ask)?;
    }
    // Everyone but the anonymous user is authenticated, whatever groups were asked for.
    let implied = if user == ANONYMOUS {
        "system:unauthenticated"
    } else {
        "system:authenticated"
    };
    if !groups
        .iter()
        .any(|g| g == implied || g == "system:unauthenticated")
    {
        groups.push(implied.to_owned());
    }
    Ok(Identity::Impersonated {
        user,
        uid: uid.unwrap_or_default(),
        groups,
    })
}

/// Whether `requester` may impersonate what `ask` names; kube-apiserver's 403 otherwise.
fn allowed(store: &Store, requester: &Identity, ask: &Ask) -> Result<(), Error> {
    let who = Requester {
        user: requester.username(),
        groups: requester.groups(),
    };
    let action = Action::Resource {
        verb: "impersonate".into(),
        group: ask.group.into(),
        resource: ask.resource.into(),
        subresource: ask.subresource.clone(),
        namespace: ask.namespace.clone(),
        name: ask.name.clone(),
    };
    let decision = authorizer::decide(store, &who, &action);
    if decision.allowed {
        return Ok(());
    }
    let resource = match ask.subresource.as_str() {
        "" => ask.resource.to_owned(),
        sub => format!("{}/{sub}", ask.resource),
    };
    let qualified = match ask.group {
        "" => ask.resource.to_owned(),
        group => format!("{}.{group}", ask.resource),
    };
    let scope = match ask.namespace.as_str() {
        "" => "at the cluster scope".to_owned(),
        namespace => format!("in the namespace {namespace:?}"),
    };
    Err(Error::Forbidden(format!(
        "{qualified} {:?} is forbidden: User {:?} cannot impersonate resource {resource:?} in API group {:?} {scope}",
        ask.name, who.user, ask.group
    )))
}
