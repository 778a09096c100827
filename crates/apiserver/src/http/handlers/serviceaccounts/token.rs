//! `POST serviceaccounts/{name}/token` (authentication.k8s.io/v1 TokenRequest): a token that
//! authenticates its holder as the service account, for the audiences it names (the server's own by
//! default), until it expires (`expirationSeconds`, ten minutes at least) or the account is deleted,
//! or the Pod, Secret or Node it is bound to (`boundObjectRef`) is. The tokens are kept in memory
//! only (a restart forgets them, as a rotated signing key would) and never printed: the registry's
//! `Debug` shows how many there are, not what they are.

use std::{
    collections::BTreeMap,
    time::{Duration, SystemTime},
};

use apimachinery::{
    FieldCause, meta,
    patch::{ObjectSchema, UpdateWrite, record_update},
    resource::ResourceType,
};
use axum::{http::Method, response::Response};
use base64::Engine;
use serde_json::{Value, json};

use crate::admission;
use crate::error::{Error, Result, Subject};
use crate::http::handlers::subresource::{Admitted, Request};
use crate::http::{
    Shared,
    filters::authentication::{
        issued_tokens::{API_AUDIENCE, BoundObject, Issued},
        random_token,
    },
    request::{parse_body, write_options},
    respond,
};
use crate::store::WriteOptions;

/// The kind admission sees the subresource's object as.
const TOKEN_REQUEST: admission::Kind = admission::Kind {
    group: "authentication.k8s.io",
    version: "v1",
    kind: "TokenRequest",
};

const API_VERSION: &str = "authentication.k8s.io/v1";
const KIND: &str = "TokenRequest";
/// The issuer kube-apiserver's tokens name (its `--service-account-issuer`).
const ISSUER: &str = "https://kubernetes.default.svc";
const DEFAULT_EXPIRATION_SECONDS: i64 = 3600;
/// The shortest and longest lives kube-apiserver grants a token.
const MIN_EXPIRATION_SECONDS: i64 = 600;
const MAX_EXPIRATION_SECONDS: i64 = 1 << 32;

/// `serviceaccounts/token`.
pub const ENDPOINT: Admitted = Admitted {
    group: "",
    plural: "serviceaccounts",
    names: &["token"],
    serve: |r| Box::pin(request_token(r)),
};

/// Admission sees the TokenRequest as a CREATE through `serviceaccounts/token`, named as the account:
/// mutating admission as decoded (its lifetime defaulted), validating admission as the storage
/// completes it (audiences defaulted, name, namespace and creation time set, status cleared).
pub async fn request_token(r: &Request<'_>) -> Result<Response> {
    let (shared, accounts, namespace, name, call) = (r.shared, r.rt, r.namespace, r.name, r.call);
    if call.method != Method::POST {
        return Err(crate::http::handlers::pods::method_not_allowed());
    }
    let options = write_options(call, Vec::new())?;
    let request = decoded(parse_body(call, accounts)?.0, namespace, &options)?;
    let complete = |request| completed(shared, accounts, namespace, name, request);
    let (mut request, warnings) = r
        .target()
        .admit_completed_create(name, TOKEN_REQUEST, request, &options, complete)
        .await?;
    let account = shared.store.get(accounts, namespace, name)?;
    let seconds = expiration_seconds(&request);
    let audiences: Vec<String> = request
        .pointer("/spec/audiences")
        .and_then(Value::as_array)
        .map(|list| list.iter().filter_map(Value::as_str).map(str::to_owned).collect())
        .unwrap_or_default();
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
        audiences,
        bound: bound.map(|(object, _)| object),
        extra,
    });
    request["status"] = json!({"token": token, "expirationTimestamp": rfc3339(expires)});
    Ok(respond::with_warnings(respond::json(201, &request), &warnings))
}

/// The TokenRequest as kube-apiserver decodes a create's body: its kind named, its lifetime
/// defaulted, its namespace the path's (400 when the body names another), its managedFields entry
/// recorded (the subresource `token`'s), its empty fields shown as Go shows them.
fn decoded(request: Value, namespace: &str, options: &WriteOptions) -> Result<Value> {
    let sent = meta::str_at(&request, "/metadata/namespace").unwrap_or_default();
    if !sent.is_empty() && sent != namespace {
        return Err(Error::BadRequest(
            "the namespace of the provided object does not match the namespace sent on the request".into(),
        ));
    }
    let mut request = crate::http::handlers::pods::as_kind(request, API_VERSION, KIND, namespace);
    if request
        .pointer("/spec/expirationSeconds")
        .is_none_or(Value::is_null)
    {
        request["spec"]["expirationSeconds"] = json!(DEFAULT_EXPIRATION_SECONDS);
    }
    if let Some(manager) = &options.field_manager {
        let now = meta::now_rfc3339();
        let write = UpdateWrite {
            manager,
            subresource: Some("token"),
            schema: ObjectSchema::BuiltIn {
                api_version: API_VERSION,
                kind: KIND,
            },
            status_subresource: false,
            now: &now,
        };
        record_update(None, &mut request, &write);
    }
    if request.pointer("/spec/boundObjectRef").is_none() {
        request["spec"]["boundObjectRef"] = Value::Null;
    }
    if request.get("status").is_none_or(Value::is_null) {
        request["status"] = empty_status();
    }
    Ok(request)
}

/// A TokenRequest's status before a token is issued, as kube-apiserver shows it.
fn empty_status() -> Value {
    json!({"token": "", "expirationTimestamp": null})
}

/// What the storage makes of the TokenRequest once mutating admission is done, before validating
/// admission sees it: the name checked against the account's, the account looked up, the audiences
/// defaulted to the server's own, the creation time set and the status cleared; then validated.
fn completed(
    shared: &Shared,
    accounts: &ResourceType,
    namespace: &str,
    name: &str,
    mut request: Value,
) -> Result<Value> {
    let sent = meta::str_at(&request, "/metadata/name").unwrap_or_default();
    if !sent.is_empty() && sent != name {
        return Err(invalid(
            name,
            "metadata.name",
            format!("Invalid value: {sent:?}: must match the service account name if specified"),
        ));
    }
    shared.store.get(accounts, namespace, name)?;
    let no_audiences = request
        .pointer("/spec/audiences")
        .and_then(Value::as_array)
        .is_none_or(Vec::is_empty);
    if no_audiences {
        request["spec"]["audiences"] = json!([API_AUDIENCE]);
    }
    let metadata = meta::metadata_mut(&mut request);
    metadata.insert("name".into(), json!(name));
    metadata.insert("namespace".into(), json!(namespace));
    metadata.insert("creationTimestamp".into(), json!(rfc3339(SystemTime::now())));
    request["status"] = empty_status();
    let seconds = expiration_seconds(&request);
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
    Ok(request)
}

/// `spec.expirationSeconds`, defaulted when decoded (and so only missing if a webhook took it away).
fn expiration_seconds(request: &Value) -> i64 {
    match request.pointer("/spec/expirationSeconds") {
        None | Some(Value::Null) => DEFAULT_EXPIRATION_SECONDS,
        Some(value) => value.as_i64().unwrap_or(0),
    }
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
                    .find("", "v1", "nodes", "", node)
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
            namespace: scope.to_owned(),
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
