//! Resource endpoints: get, list (with selectors and pages), watch, create, update, patch, delete and
//! deletecollection, on the main resource and `/status`.

use std::sync::Arc;

use apimachinery::{
    patch::PatchType,
    resource::ResourceType,
    selector::{FieldSelector, LabelSelector},
    table::{Printer, render_table},
};
use axum::{http::Method, response::Response};
use serde_json::{Value, json};

use super::{
    Call, Shared,
    path::ResourcePath,
    respond::{self, Representation},
    reviews, scale, watch,
};
use crate::{
    error::{Error, Result},
    store::{DeleteOptions, DeletePropagation, FieldValidation, WriteOptions, meta},
};

pub async fn handle(shared: &Arc<Shared>, target: ResourcePath, call: Call) -> Result<Response> {
    let rt = shared
        .store
        .resolve(&target.group, &target.version, &target.plural)
        .ok_or(Error::UnknownResource)?;
    if target.namespace.is_some() && !rt.namespaced {
        return Err(Error::UnknownResource);
    }
    if apimachinery::resource::is_review(&rt) {
        return match (&call.method, target.name.as_deref()) {
            (&Method::POST, None) => reviews::answer(&rt, parse_body(&call)?.0),
            _ => Err(Error::MethodNotAllowed("a review is only created".into())),
        };
    }
    if let (Some("scale"), Some(paths), Some(name)) =
        (target.subresource.as_deref(), &rt.scale, target.name.as_deref())
    {
        let namespace = target.namespace.clone().unwrap_or_default();
        let write = match call.method {
            Method::GET => None,
            Method::PUT => Some(scale::ScaleWrite {
                body: parse_body(&call)?.0,
                patch_type: None,
                options: write_options(&call, Vec::new())?,
            }),
            Method::PATCH => {
                let patch_type = patch_type_of(&call)?;
                Some(scale::ScaleWrite {
                    body: parse_patch(&call, patch_type)?.0,
                    patch_type: Some(patch_type),
                    options: write_options(&call, Vec::new())?,
                })
            }
            _ => {
                return Err(Error::MethodNotAllowed(
                    "the scale subresource serves get, update and patch".into(),
                ));
            }
        };
        return scale::handle(shared, &rt, paths, &namespace, name, write);
    }
    let status_only = match target.subresource.as_deref() {
        None => false,
        Some("status") if rt.status_subresource => true,
        Some(_) => return Err(Error::UnknownResource),
    };
    let namespace = target.namespace.clone().unwrap_or_default();
    let watching = matches!(call.query.get("watch").map(String::as_str), Some("true" | "1"));
    match (&call.method, target.name.as_deref()) {
        (&Method::GET, None) if watching => watch::serve(shared, rt, target.namespace.as_deref(), &call),
        (&Method::GET, None) => list(shared, &rt, target.namespace.as_deref(), &call),
        (&Method::GET, Some(name)) => {
            let object = shared.store.get(&rt, &namespace, name)?;
            Ok(represent_one(&rt, object, &call))
        }
        (&Method::POST, None) => {
            if rt.namespaced && target.namespace.is_none() {
                return Err(Error::MethodNotAllowed(
                    "POST on a namespaced resource needs a namespace".into(),
                ));
            }
            let (body, duplicates) = parse_body(&call)?;
            let written = shared
                .store
                .create(&rt, &namespace, body, &write_options(&call, duplicates)?)?;
            Ok(respond::with_warnings(
                respond::json(201, &written.object),
                &written.warnings,
            ))
        }
        (&Method::PUT, Some(name)) => {
            let (body, duplicates) = parse_body(&call)?;
            let options = write_options(&call, duplicates)?;
            let written = shared
                .store
                .update(&rt, &namespace, name, body, &options, status_only)?;
            Ok(respond::with_warnings(
                respond::json(200, &written.object),
                &written.warnings,
            ))
        }
        (&Method::PATCH, Some(name)) => {
            let patch_type = patch_type_of(&call)?;
            let (body, duplicates) = parse_patch(&call, patch_type)?;
            let options = write_options(&call, duplicates)?;
            if patch_type == PatchType::Apply && call.query.get("fieldManager").is_none_or(String::is_empty) {
                return Err(Error::Invalid {
                    kind_group: rt.kind.clone(),
                    subject: crate::store::subject(&rt, name),
                    causes: vec![apimachinery::FieldCause::new(
                        "FieldValueRequired",
                        "fieldManager",
                        "Required value: is required for apply patch",
                    )],
                });
            }
            let written =
                shared
                    .store
                    .patch(&rt, &namespace, name, patch_type, &body, &options, status_only)?;
            let code = if written.created { 201 } else { 200 };
            Ok(respond::with_warnings(
                respond::json(code, &written.object),
                &written.warnings,
            ))
        }
        (&Method::DELETE, Some(name)) => {
            let object = shared
                .store
                .delete(&rt, &namespace, name, &delete_options(&call)?)?;
            Ok(respond::json(200, &object))
        }
        (&Method::DELETE, None) => {
            let (labels, fields) = selectors(&rt, &call)?;
            let deleted = shared.store.delete_collection(
                &rt,
                target.namespace.as_deref(),
                |o| labels.matches(o) && fields.matches(o),
                &delete_options(&call)?,
            )?;
            let rv = shared.store.current_resource_version().to_string();
            Ok(respond::json(200, &list_body(&rt, deleted, &rv, None)))
        }
        _ => Err(Error::MethodNotAllowed(
            "the server does not allow this method on the requested resource".to_string(),
        )),
    }
}

fn represent_one(rt: &ResourceType, object: Value, call: &Call) -> Response {
    if respond::negotiate(&call.accept) == Representation::Table {
        let rv = meta::resource_version(&object).unwrap_or_default().to_owned();
        let table = render_table(
            &Printer::for_type(rt),
            &[&object],
            true,
            &rv,
            None,
            jiff::Timestamp::now(),
        );
        return respond::json(200, &table);
    }
    respond::json(200, &object)
}

/// The body of a create or an update, and the fields it repeats (for `fieldValidation`).
fn parse_body(call: &Call) -> Result<(Value, Vec<String>)> {
    let content_type = call.content_type.as_deref().unwrap_or("application/json");
    if content_type.contains("protobuf") || content_type.contains("cbor") {
        // Only JSON and YAML are served; client-go retries with JSON on 415.
        return Err(Error::UnsupportedMediaType(format!(
            "the body of the request was in an unknown format - accepted media types include: application/json, application/yaml; got {content_type:?}"
        )));
    }
    let (value, duplicates) = if content_type.contains("yaml") {
        // A YAML mapping with a repeated key does not decode at all, as in kube-apiserver.
        let value: Value = serde_yaml::from_slice(&call.body)
            .map_err(|e| Error::BadRequest(format!("error decoding YAML: {e}")))?;
        (value, Vec::new())
    } else {
        // No Content-Type (the Python client) means JSON (D10).
        let decoded = apimachinery::decoding::decode_json(&call.body)
            .map_err(|e| Error::BadRequest(format!("error decoding JSON: {e}")))?;
        (decoded.value, decoded.duplicate_fields)
    };
    if !value.is_object() {
        return Err(Error::BadRequest(
            "the body of the request must be an object".into(),
        ));
    }
    Ok((value, duplicates))
}

fn patch_type_of(call: &Call) -> Result<PatchType> {
    let content_type = call.content_type.as_deref().unwrap_or("");
    PatchType::from_content_type(content_type).ok_or_else(|| {
        Error::UnsupportedMediaType(format!("the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml; got {content_type:?}"))
    })
}

/// A patch, and the fields it repeats (for `fieldValidation`).
fn parse_patch(call: &Call, patch_type: PatchType) -> Result<(Value, Vec<String>)> {
    if patch_type == PatchType::Apply {
        let value = serde_yaml::from_slice(&call.body)
            .map_err(|e| Error::BadRequest(format!("error decoding YAML: {e}")))?;
        return Ok((value, Vec::new()));
    }
    let decoded = apimachinery::decoding::decode_json(&call.body)
        .map_err(|e| Error::BadRequest(format!("error decoding patch: {e}")))?;
    // A JSON patch is a list of operations, not an object: its repeated keys are not fields.
    let duplicates = match patch_type {
        PatchType::Json => Vec::new(),
        _ => decoded.duplicate_fields,
    };
    Ok((decoded.value, duplicates))
}

fn dry_run(call: &Call) -> Result<bool> {
    match call.query.get("dryRun").map(String::as_str) {
        None | Some("") => Ok(false),
        Some("All") => Ok(true),
        Some(other) => Err(Error::BadRequest(format!(
            "Invalid dryRun value: {other:?}: supported values: \"All\""
        ))),
    }
}

fn write_options(call: &Call, duplicate_fields: Vec<String>) -> Result<WriteOptions> {
    let field_validation = match call.query.get("fieldValidation").map(String::as_str) {
        None | Some("") | Some("Warn") => FieldValidation::Warn,
        Some("Strict") => FieldValidation::Strict,
        Some("Ignore") => FieldValidation::Ignore,
        Some(other) => {
            return Err(Error::BadRequest(format!(
                "fieldValidation {other:?} is invalid: supported values are \"Ignore\", \"Warn\" and \"Strict\""
            )));
        }
    };
    Ok(WriteOptions {
        dry_run: dry_run(call)?,
        field_manager: call
            .query
            .get("fieldManager")
            .filter(|m| !m.is_empty())
            .cloned()
            .or_else(|| manager_from_user_agent(call)),
        field_validation,
        duplicate_fields,
        force: call.query.get("force").map(String::as_str) == Some("true"),
    })
}

/// The manager of a write that names none: the user agent up to its first `/`, as kube-apiserver
/// derives it (`kubectl/v1.32.4 (linux/amd64) ...` is `kubectl`).
fn manager_from_user_agent(call: &Call) -> Option<String> {
    let agent = call.user_agent.as_deref()?;
    let prefix = agent.split('/').next().unwrap_or(agent).trim();
    (!prefix.is_empty()).then(|| prefix.chars().take(128).collect())
}

fn delete_options(call: &Call) -> Result<DeleteOptions> {
    let body: Value = if call.body.is_empty() {
        json!({})
    } else {
        serde_json::from_slice(&call.body)
            .map_err(|e| Error::BadRequest(format!("error decoding DeleteOptions: {e}")))?
    };
    let policy = body
        .get("propagationPolicy")
        .and_then(Value::as_str)
        .map(str::to_owned)
        .or_else(|| call.query.get("propagationPolicy").cloned());
    let propagation = match policy.as_deref() {
        None | Some("") | Some("Background") => DeletePropagation::Background,
        Some("Foreground") => DeletePropagation::Foreground,
        Some("Orphan") => DeletePropagation::Orphan,
        Some(other) => {
            return Err(Error::BadRequest(format!(
                "propagationPolicy {other:?} is not supported"
            )));
        }
    };
    let body_dry_run = body
        .get("dryRun")
        .and_then(Value::as_array)
        .is_some_and(|d| d.iter().any(|v| v == "All"));
    Ok(DeleteOptions {
        dry_run: dry_run(call)? || body_dry_run,
        propagation,
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

fn list_body(
    rt: &ResourceType,
    items: Vec<Value>,
    resource_version: &str,
    continue_token: Option<&str>,
) -> Value {
    let mut metadata = json!({"resourceVersion": resource_version});
    if let Some(token) = continue_token {
        metadata["continue"] = json!(token);
    }
    json!({"apiVersion": rt.api_version(), "kind": rt.list_kind(), "metadata": metadata, "items": items})
}

/// Lists (W1-W4). A `limit` cuts the list into pages taken from one snapshot, so every page shows the
/// same state and carries the same resourceVersion, as etcd-backed pagination does.
fn list(shared: &Shared, rt: &Arc<ResourceType>, namespace: Option<&str>, call: &Call) -> Result<Response> {
    let (labels, fields) = selectors(rt, call)?;
    let limit = call
        .query
        .get("limit")
        .and_then(|l| l.parse::<usize>().ok())
        .filter(|l| *l > 0);
    let (items, resource_version, offset) = match call.query.get("continue").filter(|t| !t.is_empty()) {
        Some(token) => {
            let (snapshot, offset) = shared.pages.resume(token)?;
            (snapshot.items.clone(), snapshot.resource_version.clone(), offset)
        }
        None => {
            let (objects, rv) = shared.store.list(rt, namespace);
            let items: Vec<Value> = objects
                .into_iter()
                .filter(|o| labels.matches(o) && fields.matches(o))
                .collect();
            (Arc::new(items), rv.to_string(), 0)
        }
    };
    let end = limit.map_or(items.len(), |l| (offset + l).min(items.len()));
    let page: Vec<Value> = items[offset.min(items.len())..end].to_vec();
    let token = (end < items.len()).then(|| shared.pages.keep(items.clone(), &resource_version, end));
    if respond::negotiate(&call.accept) == Representation::Table {
        let refs: Vec<&Value> = page.iter().collect();
        let table = render_table(
            &Printer::for_type(rt),
            &refs,
            true,
            &resource_version,
            token.as_deref(),
            jiff::Timestamp::now(),
        );
        return Ok(respond::json(200, &table));
    }
    Ok(respond::json(
        200,
        &list_body(rt, page, &resource_version, token.as_deref()),
    ))
}
