//! `POST serviceaccounts/{name}/token` (authentication.k8s.io/v1 TokenRequest): a token that
//! authenticates its holder as the service account until it expires or the account is deleted. The
//! tokens are kept in memory only (a restart forgets them, as a rotated signing key would) and never
//! printed: the registry's `Debug` shows how many there are, not what they are.

use std::{
    sync::Arc,
    time::{Duration, SystemTime},
};

use apimachinery::{FieldCause, resource::ResourceType};
use axum::{http::Method, response::Response};
use base64::Engine;
use serde_json::{Value, json};

use super::subresource::Subresource;
use super::{
    Shared,
    issued_tokens::Issued,
    random_token,
    request::{Call, parse_body},
    respond,
};
use crate::{
    error::{Error, Result, Subject},
    store::meta,
};

/// The audience kube-apiserver's tokens name by default: its issuer.
const DEFAULT_AUDIENCE: &str = "https://kubernetes.default.svc";
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
        return Err(super::pods::method_not_allowed());
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
    let audiences = match request.pointer("/spec/audiences").and_then(Value::as_array) {
        Some(list) if !list.is_empty() => Value::Array(list.clone()),
        _ => json!([DEFAULT_AUDIENCE]),
    };
    let now = SystemTime::now();
    let expires = now + Duration::from_secs(seconds.unsigned_abs());
    let token = new_token(&account, &audiences, now, expires);
    shared.service_account_tokens.issue(Issued {
        token: token.clone(),
        namespace: namespace.to_owned(),
        name: name.to_owned(),
        uid: meta::uid(&account).to_owned(),
        expires,
    });
    request["apiVersion"] = json!("authentication.k8s.io/v1");
    request["kind"] = json!("TokenRequest");
    request["metadata"] = json!({"name": name, "namespace": namespace,
        "creationTimestamp": rfc3339(now)});
    request["spec"]["audiences"] = audiences;
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
fn new_token(account: &Value, audiences: &Value, now: SystemTime, expires: SystemTime) -> String {
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
        "iss": DEFAULT_AUDIENCE, "jti": uuid::Uuid::new_v4().to_string(),
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
