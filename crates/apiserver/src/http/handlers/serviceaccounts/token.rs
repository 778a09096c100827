//! `POST serviceaccounts/{name}/token` (authentication.k8s.io/v1 TokenRequest): a token that
//! authenticates its holder as the service account, for the audiences it names (the server's own by
//! default), until it expires (`expirationSeconds`, ten minutes at least) or the account is deleted,
//! or the Pod, Secret or Node it is bound to (`boundObjectRef`) is. The tokens are kept in memory
//! only (a restart forgets them, as a rotated signing key would) and never printed: the registry's
//! `Debug` shows how many there are, not what they are.

use std::{
    collections::BTreeMap,
    sync::Arc,
    time::{Duration, SystemTime},
};

use apimachinery::{FieldCause, meta, resource::ResourceType};
use axum::{http::Method, response::Response};
use base64::Engine;
use serde_json::{Value, json};

use crate::error::{Error, Result, Subject};
use crate::http::handlers::subresource::Subresource;
use crate::http::{
    Shared,
    filters::authentication::{
        issued_tokens::{API_AUDIENCE, BoundObject, Issued},
        random_token,
    },
    request::{Call, parse_body},
    respond,
};

/// The issuer kube-apiserver's tokens name (its `--service-account-issuer`).
const ISSUER: &str = "https://kubernetes.default.svc";
const DEFAULT_EXPIRATION_SECONDS: i64 = 3600;
/// The shortest and longest lives kube-apiserver grants a token.
const MIN_EXPIRATION_SECONDS: i64 = 600;
const MAX_EXPIRATION_SECONDS: i64 = 1 << 32;

/// `serviceaccounts/token`.
pub const ENDPOINT: Subresource = Subresource {
    group: "",
    plural: "serviceaccounts",
    names: &["token"],
    serve: |r| request_token(r.shared, r.rt, r.namespace, r.name, r.call),
};

pub fn request_token(
    shared: &Arc<Shared>,
    accounts: &Arc<ResourceType>,
    namespace: &str,
    name: &str,
    call: &Call,
) -> Result<Response> {
    if call.method != Method::POST {
        return Err(crate::http::handlers::pods::method_not_allowed());
    }
    let mut request = parse_body(call, accounts)?.0;
    for (field, wanted, what) in [("name", name, "name"), ("namespace", namespace, "namespace")] {
        let sent = meta::str_at(&request, &format!("/metadata/{field}")).unwrap_or_default();
        if !sent.is_empty() && sent != wanted {
            return Err(invalid(
                name,
                &format!("metadata.{field}"),
                format!("Invalid value: {sent:?}: must match the service account {what} if specified"),
            ));
        }
    }
    let account = shared.store.get(accounts, namespace, name)?;
    let seconds = match request.pointer("/spec/expirationSeconds") {
        None | Some(Value::Null) => DEFAULT_EXPIRATION_SECONDS,
        Some(value) => value.as_i64().unwrap_or(0),
    };
    if seconds < MIN_EXPIRATION_SECONDS {
        return Err(invalid(
            "",
            "spec.expirationSeconds",
            format!("Invalid value: {seconds}: may not specify a duration less than 10 minutes"),
        ));
    }
    if seconds > MAX_EXPIRATION_SECONDS {
        return Err(invalid(
            "",
            "spec.expirationSeconds",
            format!("Invalid value: {seconds}: may not specify a duration larger than 2^32 seconds"),
        ));
    }
    let audiences: Vec<String> = request
        .pointer("/spec/audiences")
        .and_then(Value::as_array)
        .map(|list| list.iter().filter_map(Value::as_str).map(str::to_owned).collect())
        .filter(|list: &Vec<String>| !list.is_empty())
        .unwrap_or_else(|| vec![API_AUDIENCE.to_owned()]);
    let bound = match request.pointer("/spec/boundObjectRef").filter(|r| !r.is_null()) {
        Some(reference) => Some(bound_object(shared, namespace, name, reference)?),
        None => None,
    };
    let now = SystemTime::now();
    let expires = now + Duration::from_secs(seconds.unsigned_abs());
    let jti = uuid::Uuid::new_v4().to_string();
    let token = new_token(&account, &json!(audiences), &jti, now, expires);
    let mut extra = BTreeMap::new();
    extra.insert(
        "authentication.kubernetes.io/credential-id".to_owned(),
        vec![format!("JTI={jti}")],
    );
    if let Some((_, bound_extra)) = &bound {
        extra.extend(bound_extra.clone());
    }
    shared.service_account_tokens.issue(Issued {
        token: token.clone(),
        namespace: namespace.to_owned(),
        name: name.to_owned(),
        uid: meta::uid(&account).to_owned(),
        expires,
        audiences: audiences.clone(),
        bound: bound.map(|(object, _)| object),
        extra,
    });
    request["apiVersion"] = json!("authentication.k8s.io/v1");
    request["kind"] = json!("TokenRequest");
    request["metadata"] = json!({"name": name, "namespace": namespace,
        "creationTimestamp": rfc3339(now)});
    request["spec"]["audiences"] = json!(audiences);
    request["spec"]["expirationSeconds"] = json!(seconds);
    if request.pointer("/spec/boundObjectRef").is_none() {
        request["spec"]["boundObjectRef"] = Value::Null;
    }
    request["status"] = json!({"token": token, "expirationTimestamp": rfc3339(expires)});
    Ok(respond::json(201, &request))
}

/// A token shaped as kube-apiserver's are (a JWT, which some clients read the expiry and subject
/// of), whose last part is random rather than a signature: the server recognises the whole token,
/// it does not verify it.
fn new_token(account: &Value, audiences: &Value, jti: &str, now: SystemTime, expires: SystemTime) -> String {
    let encode = |value: &Value| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(value.to_string());
    let seconds = |time: SystemTime| {
        time.duration_since(SystemTime::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or_default()
    };
    let namespace = meta::namespace(account);
    let name = meta::name(account);
    let header = json!({"alg": "none", "typ": "JWT"});
    let claims = json!({
        "aud": audiences, "exp": seconds(expires), "iat": seconds(now), "nbf": seconds(now),
        "iss": ISSUER, "jti": jti,
        "sub": format!("system:serviceaccount:{namespace}:{name}"),
        "kubernetes.io": {"namespace": namespace,
            "serviceaccount": {"name": name, "uid": meta::uid(account)}},
    });
    format!(
        "{}.{}.{}",
        encode(&header),
        encode(&claims),
        random_token::generate_token()
    )
}

/// The object `reference` (a TokenRequest's `boundObjectRef`) names, which the token of the service
/// account `account` in `namespace` is bound to, with what a TokenReview reports of it; kube-apiserver's
/// refusal when it cannot be bound: a kind other than Pod, Secret or Node, a missing object, another uid,
/// a Pod run as another service account.
fn bound_object(
    shared: &Shared,
    namespace: &str,
    account: &str,
    reference: &Value,
) -> Result<(BoundObject, BTreeMap<String, Vec<String>>)> {
    let text = |key: &str| reference.get(key).and_then(Value::as_str).unwrap_or_default();
    let (kind, api_version, name) = (text("kind"), text("apiVersion"), text("name"));
    let plural = match (api_version, kind) {
        ("v1", "Pod") => "pods",
        ("v1", "Secret") => "secrets",
        ("v1", "Node") => "nodes",
        _ => {
            let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
            return Err(Error::BadRequest(format!(
                "cannot bind token to object of type {group}/{version}, Kind={kind}"
            )));
        }
    };
    let rt = shared
        .store
        .resolve("", "v1", plural)
        .ok_or(Error::UnknownResource)?;
    let scope = if plural == "nodes" { "" } else { namespace };
    let object = shared.store.get(&rt, scope, name)?;
    let uid = meta::uid(&object).to_owned();
    let mut extra = BTreeMap::new();
    let mut note = |key: &str, value: &str| {
        extra.insert(
            format!("authentication.kubernetes.io/{key}"),
            vec![value.to_owned()],
        );
    };
    match plural {
        "pods" => {
            let runs_as = meta::str_at(&object, "/spec/serviceAccountName").unwrap_or_default();
            if runs_as != account {
                return Err(Error::BadRequest(format!(
                    "cannot bind token for serviceaccount {account:?} to pod running with different serviceaccount name."
                )));
            }
            note("pod-name", name);
            note("pod-uid", &uid);
            if let Some(node) = meta::str_at(&object, "/spec/nodeName").filter(|n| !n.is_empty()) {
                note("node-name", node);
                let node_uid = shared
                    .store
                    .resolve("", "v1", "nodes")
                    .and_then(|nodes| shared.store.get(&nodes, "", node).ok())
                    .map(|n| meta::uid(&n).to_owned());
                if let Some(node_uid) = node_uid {
                    note("node-uid", &node_uid);
                }
            }
        }
        "nodes" => {
            note("node-name", name);
            note("node-uid", &uid);
        }
        _ => {}
    }
    let wanted_uid = text("uid");
    if !wanted_uid.is_empty() && wanted_uid != uid {
        return Err(Error::Conflict {
            subject: Subject {
                qualified_plural: kind.to_owned(),
                group: String::new(),
                plural: kind.to_owned(),
                name: name.to_owned(),
            },
            reason: format!(
                "the UID in the bound object reference ({wanted_uid}) does not match the UID in record. The object might have been deleted and then recreated"
            ),
        });
    }
    Ok((
        BoundObject {
            plural,
            name: name.to_owned(),
            uid,
        },
        extra,
    ))
}

fn rfc3339(time: SystemTime) -> String {
    jiff::Timestamp::try_from(time)
        .map(|t| t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string())
        .unwrap_or_default()
}

fn invalid(name: &str, field: &str, message: String) -> Error {
    Error::Invalid {
        kind_group: "TokenRequest.authentication.k8s.io".into(),
        subject: Subject {
            qualified_plural: "tokenrequests.authentication.k8s.io".into(),
            group: "authentication.k8s.io".into(),
            plural: "tokenrequests".into(),
            name: name.to_owned(),
        },
        causes: vec![FieldCause::new("FieldValueInvalid", field, message)],
    }
}
