//! The one place a request is read: its parts, body and query options (dry run, field validation
//! and manager, delete options, selectors), each checked as kube-apiserver checks it. Every endpoint
//! and subresource reads its request through these.

use std::collections::HashMap;

use apimachinery::{
    patch::PatchType,
    resource::ResourceType,
    selector::{FieldSelector, LabelSelector},
    table::IncludeObject,
};
use axum::{
    body::Body,
    http::{Method, Request, header},
};
use serde_json::{Value, json};

use super::filters::authentication::identity;
use crate::{
    error::{Error, Result},
    store::{DeleteOptions, DeletePropagation, FieldValidation, WriteOptions},
};

/// The parts of a request handlers look at.
pub struct Call {
    pub method: Method,
    pub query: HashMap<String, String>,
    pub accept: String,
    pub content_type: Option<String>,
    pub user_agent: Option<String>,
    pub body: bytes::Bytes,
    /// Who sent the request, as its token says.
    pub identity: identity::Identity,
}

/// The parts of `request` handlers look at, with its body read whole: 413 past `max_body_bytes`.
pub(super) async fn read_call(request: Request<Body>, max_body_bytes: usize) -> Result<Call, Error> {
    let (parts, body) = request.into_parts();
    let identity = parts
        .extensions
        .get::<identity::Identity>()
        .cloned()
        .unwrap_or_default();
    let query = parts.uri.query().map(url_decode_pairs).unwrap_or_default();
    let header = |name: header::HeaderName| {
        parts
            .headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
    };
    let body = axum::body::to_bytes(body, max_body_bytes)
        .await
        .map_err(|_| Error::TooLarge(max_body_bytes))?;
    Ok(Call {
        method: parts.method,
        query,
        accept: header(header::ACCEPT).unwrap_or_default(),
        content_type: header(header::CONTENT_TYPE),
        user_agent: header(header::USER_AGENT),
        body,
        identity,
    })
}

pub(super) fn url_decode_pairs(query: &str) -> HashMap<String, String> {
    serde_urlencoded::from_str::<Vec<(String, String)>>(query)
        .unwrap_or_default()
        .into_iter()
        .collect()
}

/// What a Table's rows carry of their objects, as the request's `includeObject` asks.
pub fn include_object(call: &Call) -> Result<IncludeObject> {
    IncludeObject::parse(call.query.get("includeObject").map(String::as_str)).map_err(Error::BadRequest)
}

/// The body of a create or an update, and the fields it repeats (for `fieldValidation`).
pub fn parse_body(call: &Call, rt: &ResourceType) -> Result<(Value, Vec<String>)> {
    let content_type = call.content_type.as_deref().unwrap_or("application/json");
    let essence = content_type.split(';').next().unwrap_or_default().trim();
    if apimachinery::protobuf::is_protobuf(essence) {
        return Ok((decode_protobuf(call, rt, &rt.kind)?, Vec::new()));
    }
    if !matches!(essence, "application/json" | "application/yaml" | "") {
        // client-go retries with JSON on 415.
        return Err(Error::UnsupportedMediaType(format!(
            "the body of the request was in an unknown format - accepted media types include: {}",
            accepted_bodies(rt)
        )));
    }
    let (value, duplicates) = if content_type.contains("yaml") {
        // A YAML mapping with a repeated key does not decode at all, as in kube-apiserver.
        let value: Value = serde_yaml::from_slice(&call.body)
            .map_err(|e| Error::BadRequest(format!("error decoding YAML: {e}")))?;
        (value, Vec::new())
    } else {
        // No Content-Type (the Python client) means JSON (D10).
        let decoded = apimachinery::decoding::decode_json(&call.body).map_err(|e| {
            match apimachinery::json_syntax::go_syntax_error(&call.body) {
                // kube-apiserver looks for the body's kind first, so a body that is not JSON fails
                // there, and its message quotes Go's decoder and the start of the body.
                Some(why) => Error::BadRequest(format!(
                    "the object provided is unrecognized (must be of type {}): couldn't get version/kind; \
                     json parse error: {why} ({})",
                    rt.kind,
                    summary(&call.body)
                )),
                None => Error::BadRequest(format!("error decoding JSON: {e}")),
            }
        })?;
        (decoded.value, decoded.duplicate_fields)
    };
    if !value.is_object() {
        return Err(Error::BadRequest(
            "the body of the request must be an object".into(),
        ));
    }
    Ok((value, duplicates))
}

/// The start of a body, as kube-apiserver quotes one it cannot read: at most 30 bytes.
fn summary(body: &[u8]) -> String {
    const SHOWN: usize = 30;
    match body {
        [] => "<empty>".to_owned(),
        [0, ..] => format!("<binary {} bytes>", body.len()),
        _ if body.len() > SHOWN => format!("{} ...", String::from_utf8_lossy(&body[..SHOWN])),
        _ => String::from_utf8_lossy(body).into_owned(),
    }
}

/// The media types a body of `rt` may come in: protobuf for the built-in kinds alone (D9).
fn accepted_bodies(rt: &ResourceType) -> &'static str {
    if rt.is_builtin() {
        "application/json, application/yaml, application/vnd.kubernetes.protobuf"
    } else {
        "application/json, application/yaml"
    }
}

/// A protobuf body (D9), as the JSON object the rest of the request works on; the envelope names its
/// kind, `kind` (of `rt`'s group version) stands in when it does not. Custom resources have no
/// protobuf form.
fn decode_protobuf(call: &Call, rt: &ResourceType, kind: &str) -> Result<Value> {
    if !rt.is_builtin() {
        return Err(Error::UnsupportedMediaType(format!(
            "the body of the request was in an unknown format - accepted media types include: {}",
            accepted_bodies(rt)
        )));
    }
    apimachinery::protobuf::decode(&call.body, &rt.api_version(), kind).map_err(|error| {
        Error::BadRequest(format!(
            "the object provided is unrecognized (must be of type {kind}): {error}"
        ))
    })
}

pub fn patch_type_of(call: &Call) -> Result<PatchType> {
    let content_type = call.content_type.as_deref().unwrap_or("");
    PatchType::from_content_type(content_type).ok_or_else(|| {
        Error::UnsupportedMediaType(format!("the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml; got {content_type:?}"))
    })
}

/// A patch, and the fields it repeats (for `fieldValidation`).
pub fn parse_patch(call: &Call, patch_type: PatchType) -> Result<(Value, Vec<String>)> {
    if patch_type == PatchType::Apply {
        let value = serde_yaml::from_slice(&call.body)
            .map_err(|e| Error::BadRequest(format!("error decoding YAML: {e}")))?;
        return Ok((value, Vec::new()));
    }
    // The message quotes Go's JSON decoder, as kube-apiserver's does.
    let decoded = apimachinery::decoding::decode_json(&call.body).map_err(|e| {
        let why = apimachinery::json_syntax::go_syntax_error(&call.body).unwrap_or_else(|| e.to_string());
        Error::BadRequest(format!("error decoding patch: {why}"))
    })?;
    // A JSON patch is a list of operations, not an object: its repeated keys are not fields.
    let duplicates = match patch_type {
        PatchType::Json => Vec::new(),
        _ => decoded.duplicate_fields,
    };
    Ok((decoded.value, duplicates))
}

/// The kind of options a request carries in its query (`CreateOptions`, ...), which the real server
/// names when one of them is invalid.
fn options_kind(call: &Call) -> &'static str {
    match call.method {
        Method::POST => "CreateOptions",
        Method::PUT => "UpdateOptions",
        Method::PATCH => "PatchOptions",
        Method::DELETE => "DeleteOptions",
        _ => "ListOptions",
    }
}

/// 422 for a query option out of its range: `CreateOptions.meta.k8s.io "" is invalid: dryRun: ...`.
pub fn invalid_option(options_kind: &str, reason: &str, field: &str, message: String) -> Error {
    Error::Invalid {
        kind_group: format!("{options_kind}.meta.k8s.io"),
        subject: crate::error::Subject {
            group: "meta.k8s.io".into(),
            ..Default::default()
        },
        causes: vec![apimachinery::FieldCause::new(reason, field, message)],
    }
}

fn dry_run(call: &Call) -> Result<bool> {
    match call.query.get("dryRun").map(String::as_str) {
        None | Some("") => Ok(false),
        Some("All") => Ok(true),
        Some(other) => Err(invalid_option(
            options_kind(call),
            "FieldValueNotSupported",
            "dryRun",
            format!("Unsupported value: []string{{{other:?}}}: supported values: \"All\""),
        )),
    }
}

pub fn write_options(call: &Call, duplicate_fields: Vec<String>) -> Result<WriteOptions> {
    let field_validation = match call.query.get("fieldValidation").map(String::as_str) {
        None | Some("") | Some("Warn") => FieldValidation::Warn,
        Some("Strict") => FieldValidation::Strict,
        Some("Ignore") => FieldValidation::Ignore,
        Some(other) => {
            return Err(invalid_option(
                options_kind(call),
                "FieldValueNotSupported",
                "fieldValidation",
                format!(
                    "Unsupported value: {other:?}: supported values: \"\", \"Ignore\", \"Strict\", \"Warn\""
                ),
            ));
        }
    };
    Ok(WriteOptions {
        dry_run: dry_run(call)?,
        field_manager_named: call.query.get("fieldManager").is_some_and(|m| !m.is_empty()),
        field_manager: call
            .query
            .get("fieldManager")
            .filter(|m| !m.is_empty())
            .cloned()
            .or_else(|| manager_from_user_agent(call)),
        field_validation,
        duplicate_fields,
        document: json_document(call),
        repeated_yaml_keys: repeated_apply_keys(call),
        force: call.query.get("force").map(String::as_str) == Some("true"),
        ..WriteOptions::default()
    })
}

/// The body of a create or update sent as JSON (no Content-Type means JSON).
fn json_document(call: &Call) -> Option<bytes::Bytes> {
    let content_type = call.content_type.as_deref().unwrap_or("");
    let json = content_type.is_empty() || content_type.starts_with("application/json");
    (json && matches!(call.method, Method::POST | Method::PUT)).then(|| call.body.clone())
}

/// The keys an apply body repeats (a YAML document, or JSON, which is YAML too).
fn repeated_apply_keys(call: &Call) -> Vec<String> {
    let apply = call.method == Method::PATCH
        && call
            .content_type
            .as_deref()
            .and_then(PatchType::from_content_type)
            == Some(PatchType::Apply);
    match std::str::from_utf8(&call.body) {
        Ok(text) if apply => apimachinery::decoding::repeated_yaml_keys(text),
        _ => Vec::new(),
    }
}

/// The manager of a write that names none: the user agent up to its first `/`, as kube-apiserver
/// derives it (`kubectl/v1.32.4 (linux/amd64) ...` is `kubectl`), and `unknown` without one.
fn manager_from_user_agent(call: &Call) -> Option<String> {
    let agent = call.user_agent.as_deref().unwrap_or_default();
    let prefix = agent.split('/').next().unwrap_or(agent).trim();
    Some(if prefix.is_empty() {
        "unknown".into()
    } else {
        prefix.chars().take(128).collect()
    })
}

pub fn delete_options(call: &Call, rt: &ResourceType) -> Result<DeleteOptions> {
    let protobuf = call
        .content_type
        .as_deref()
        .is_some_and(apimachinery::protobuf::is_protobuf);
    let body: Value = if call.body.is_empty() {
        json!({})
    } else if protobuf {
        // Typed client-go clients send their DeleteOptions as protobuf (D9).
        decode_protobuf(call, rt, "DeleteOptions")?
    } else {
        serde_json::from_slice(&call.body)
            .map_err(|e| Error::BadRequest(format!("error decoding DeleteOptions: {e}")))?
    };
    let mut options = delete_options_of(call, &body)?;
    let orphans_by_default = crate::kinds::of(rt).is_some_and(|kind| kind.orphans_dependents_by_default());
    let orphan_named = body.get("orphanDependents").is_some_and(|o| !o.is_null())
        || call.query.contains_key("orphanDependents");
    if orphans_by_default && !options.propagation_named && !orphan_named {
        options.propagation = DeletePropagation::Orphan;
    }
    Ok(options)
}

/// The options of a delete written as `body` (a DeleteOptions object), with the query's beside them.
pub fn delete_options_of(call: &Call, body: &Value) -> Result<DeleteOptions> {
    let policy = body
        .get("propagationPolicy")
        .and_then(Value::as_str)
        .map(str::to_owned)
        .or_else(|| call.query.get("propagationPolicy").cloned());
    // The deprecated `orphanDependents` speaks when no policy does.
    let orphan_dependents = body
        .get("orphanDependents")
        .and_then(Value::as_bool)
        .or_else(|| call.query.get("orphanDependents").and_then(|o| o.parse().ok()));
    let propagation = match policy.as_deref() {
        None | Some("") if orphan_dependents == Some(true) => DeletePropagation::Orphan,
        None | Some("") | Some("Background") => DeletePropagation::Background,
        Some("Foreground") => DeletePropagation::Foreground,
        Some("Orphan") => DeletePropagation::Orphan,
        Some(other) => {
            return Err(invalid_option(
                "DeleteOptions",
                "FieldValueNotSupported",
                "propagationPolicy",
                format!(
                    "Unsupported value: {other:?}: supported values: \"Foreground\", \"Background\", \"Orphan\", \"nil\""
                ),
            ));
        }
    };
    let body_dry_run = body
        .get("dryRun")
        .and_then(Value::as_array)
        .is_some_and(|d| d.iter().any(|v| v == "All"));
    Ok(DeleteOptions {
        dry_run: dry_run(call)? || body_dry_run,
        propagation,
        propagation_named: policy.as_deref().is_some_and(|p| !p.is_empty()),
        precondition_uid: body
            .pointer("/preconditions/uid")
            .and_then(Value::as_str)
            .map(str::to_owned),
        precondition_resource_version: body
            .pointer("/preconditions/resourceVersion")
            .and_then(Value::as_str)
            .map(str::to_owned),
    })
}

pub fn selectors(rt: &ResourceType, call: &Call) -> Result<(LabelSelector, FieldSelector)> {
    let labels = LabelSelector::parse(call.query.get("labelSelector").map(String::as_str).unwrap_or(""))
        .map_err(|e| Error::BadRequest(e.to_string()))?;
    let supported: Vec<&str> = rt.field_labels.iter().map(String::as_str).collect();
    let fields = FieldSelector::parse(
        call.query.get("fieldSelector").map(String::as_str).unwrap_or(""),
        &supported,
    )
    .map_err(|e| Error::BadRequest(e.to_string()))?;
    Ok((labels, fields))
}
