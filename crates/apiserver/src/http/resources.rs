//! Resource endpoints: get, list (with selectors and pages), watch, create, update, patch, delete and
//! deletecollection, on the main resource and `/status`.

use std::sync::Arc;

use apimachinery::{
    patch::PatchType,
    resource::{Origin, ResourceType},
    selector::{FieldSelector, LabelSelector},
    table::{IncludeObject, Printer, has_table_convertor, in_version, render_table},
};
use axum::{http::Method, response::Response};
use serde_json::{Value, json};

use super::{
    Call, Shared, access_reviews, computed, continuation, eviction, kubelet, namespace_finalize,
    path::ResourcePath,
    pod_resize, pods, proxies,
    respond::{self, Encoding, Endpoint, Representation},
    reviews, scale, service_account_tokens, watch,
};
use crate::{
    admission::{self, Change},
    error::{Error, Result},
    store::{DeleteOptions, DeletePropagation, FieldValidation, ListKey, StoredObject, WriteOptions, meta},
    webhooks::Converter,
};

pub async fn handle(shared: &Arc<Shared>, target: ResourcePath, mut call: Call) -> Result<Response> {
    let deprecation = deprecation(&target);
    let resolved = shared
        .store
        .resolve(&target.group, &target.version, &target.plural);
    let builtin = resolved.as_ref().map(|rt| rt.is_builtin());
    // A kubelet's streams (logs, exec, proxies) are answered in whatever they carry.
    let streams = target
        .subresource
        .as_deref()
        .is_some_and(|sub| kubelet::SUBRESOURCES.contains(&sub));
    if let Some(rt) = &resolved
        && !streams
        && respond::negotiate(&call.accept) == Representation::Table
        && !has_table_convertor(rt, target.subresource.as_deref())
    {
        // What has no Table is answered in the next form the client lists, or not at all.
        let rest = respond::without_tables(&call.accept);
        if rest.trim().is_empty() {
            return Err(respond::negotiation_failed());
        }
        call.accept = rest;
    }
    let encoding = respond::encoding(&call.accept);
    if let (
        Encoding::Protobuf {
            json_acceptable: false,
        },
        Some(false),
    ) = (encoding, builtin)
    {
        // Custom resources have no protobuf form (D13).
        return Ok(respond::protobuf_not_acceptable());
    }
    match builtin {
        Some(true) if !streams => {
            let collection_read = call.method == Method::GET && target.name.is_none();
            respond::check_acceptable(&call.accept, Endpoint::BuiltIn { collection_read })?
        }
        Some(false) => respond::check_acceptable(&call.accept, Endpoint::Custom)?,
        _ => {}
    }
    let response = match (encoding, builtin) {
        (Encoding::Protobuf { .. }, Some(true)) => {
            let response = serve(shared, target, call)
                .await
                .unwrap_or_else(|error| respond::error(&error));
            respond::into_protobuf(response).await
        }
        _ => serve(shared, target, call).await?,
    };
    Ok(match deprecation {
        Some(warning) => respond::with_warnings(response, &[warning.to_owned()]),
        None => response,
    })
}

/// The warning kube-apiserver sends with every answer about a deprecated built-in resource.
fn deprecation(target: &ResourcePath) -> Option<&'static str> {
    match (
        target.group.as_str(),
        target.version.as_str(),
        target.plural.as_str(),
    ) {
        ("", "v1", "componentstatuses") => Some("v1 ComponentStatus is deprecated in v1.19+"),
        ("", "v1", "endpoints") => {
            Some("v1 Endpoints is deprecated in v1.33+; use discovery.k8s.io/v1 EndpointSlice")
        }
        _ => None,
    }
}

async fn serve(shared: &Arc<Shared>, target: ResourcePath, call: Call) -> Result<Response> {
    let rt = shared
        .store
        .resolve(&target.group, &target.version, &target.plural)
        .ok_or_else(|| {
            let served = shared
                .store
                .registry()
                .all()
                .iter()
                .any(|rt| rt.group == target.group && rt.version == target.version);
            if served {
                Error::UnknownResource
            } else {
                Error::PageNotFound
            }
        })?;
    if target.namespace.is_some() && !rt.namespaced {
        return Err(Error::UnknownResource);
    }
    if apimachinery::resource::is_review(&rt) {
        return match (&call.method, target.name.as_deref()) {
            (&Method::POST, None) if rt.plural == "bindings" => {
                let binding = parse_body(&call, &rt)?.0;
                let pod = meta::name(&binding).to_owned();
                let pods = shared
                    .store
                    .resolve("", "v1", "pods")
                    .ok_or(Error::UnknownResource)?;
                let namespace = target.namespace.clone().unwrap_or_default();
                pods::bind(shared, &pods, &namespace, &pod, &call)
            }
            (&Method::POST, None) if access_reviews::answers(&rt) => access_reviews::answer(
                shared,
                &rt,
                parse_body(&call, &rt)?.0,
                target.namespace.as_deref(),
            ),
            (&Method::POST, None) => {
                let manager = write_options(&call, Vec::new())?
                    .field_manager
                    .unwrap_or_default();
                reviews::answer(&rt, parse_body(&call, &rt)?.0, &manager, &call.identity)
            }
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
                body: parse_body(&call, &rt)?.0,
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
    let namespace = target.namespace.clone().unwrap_or_default();
    if computed::is_computed(&rt) {
        return match (
            &call.method,
            target.name.as_deref(),
            target.subresource.as_deref(),
        ) {
            (&Method::GET, None, None) => {
                let items = computed::list();
                let refs: Vec<&Value> = items.iter().collect();
                if respond::negotiate(&call.accept) == Representation::Table {
                    return Ok(respond::json(200, &table(&rt, &refs, "", None, &call)?));
                }
                let mut list = list_body(&rt, items, "", None);
                list["metadata"] = json!({});
                Ok(respond::json(200, &shaped_list(&list, &call)))
            }
            (&Method::GET, Some(name), None) => represent_one(&rt, computed::get(&rt, name)?, &call),
            (_, _, Some(_)) => Err(Error::UnknownResource),
            _ => Err(Error::MethodNotAllowed(
                "the server does not allow this method on the requested resource".into(),
            )),
        };
    }
    let is_pods = rt.is_builtin() && rt.group.is_empty() && rt.plural == "pods";
    let status_only = match (target.subresource.as_deref(), target.name.as_deref()) {
        (None, _) => false,
        (Some("status"), _) if rt.status_subresource => true,
        // An approval changes the conditions in the status alone, as a status write does.
        (Some("approval"), _) if rt.is_builtin() && rt.plural == "certificatesigningrequests" => true,
        (Some(sub), Some(name)) if is_pods && kubelet::SUBRESOURCES.contains(&sub) => {
            return kubelet::answer(&shared.store, &namespace, name, sub, &call.method);
        }
        (Some("ephemeralcontainers"), Some(name)) if is_pods => {
            return pods::ephemeral_containers(shared, &rt, &namespace, name, &call);
        }
        (Some("binding"), Some(name)) if is_pods => {
            return pods::bind(shared, &rt, &namespace, name, &call);
        }
        (Some("eviction"), Some(name)) if is_pods => {
            return eviction::evict(shared, &rt, &namespace, name, &call);
        }
        (Some("resize"), Some(name)) if is_pods => {
            return pod_resize::resize(shared, &rt, &namespace, name, &call);
        }
        (Some(sub), Some(name)) if rt.is_builtin() && rt.group.is_empty() => {
            match (rt.plural.as_str(), sub) {
                ("namespaces", "finalize") => {
                    return namespace_finalize::finalize(shared, &rt, name, &call);
                }
                ("services", "proxy") => {
                    return proxies::service(&shared.store, &namespace, name, &call.method);
                }
                ("nodes", "proxy") => return proxies::node(&shared.store, name, &call.method),
                ("serviceaccounts", "token") => {
                    return service_account_tokens::request_token(shared, &rt, &namespace, name, &call);
                }
                _ => return Err(Error::UnknownResource),
            }
        }
        (Some(_), _) => return Err(Error::UnknownResource),
    };
    let watching = matches!(call.query.get("watch").map(String::as_str), Some("true" | "1"));
    let writes = admission::Target {
        store: &shared.store,
        rt: &rt,
        namespace: &namespace,
        subresource: target.subresource.as_deref(),
        status_only,
    };
    match (&call.method, target.name.as_deref()) {
        (&Method::GET, None) if watching => watch::serve(shared, rt, target.namespace.as_deref(), &call),
        (&Method::GET, None) => list(shared, &rt, target.namespace.as_deref(), &call).await,
        (&Method::GET, Some(name)) => {
            let stored = shared.store.get_stored(&rt, &namespace, name)?;
            let converter = Converter::of(&shared.store, &rt);
            let object = admission::read(&shared.store, &rt, converter.as_ref(), vec![stored])
                .await?
                .pop()
                .unwrap_or(Value::Null);
            represent_one(&rt, object, &call)
        }
        (&Method::POST, None) => {
            if rt.namespaced && target.namespace.is_none() {
                return Err(Error::MethodNotAllowed(
                    "POST on a namespaced resource needs a namespace".into(),
                ));
            }
            let (body, duplicates) = parse_body(&call, &rt)?;
            let written = writes
                .write(Change::Create(body), &write_options(&call, duplicates)?)
                .await?;
            Ok(respond::with_warnings(
                represent_written(&rt, 201, &written.object, &call)?,
                &written.warnings,
            ))
        }
        (&Method::PUT, Some(name)) => {
            let (body, duplicates) = parse_body(&call, &rt)?;
            let options = write_options(&call, duplicates)?;
            let written = writes
                .write(Change::Update { name, object: body }, &options)
                .await?;
            Ok(respond::with_warnings(
                represent_written(&rt, 200, &written.object, &call)?,
                &written.warnings,
            ))
        }
        (&Method::PATCH, Some(name)) => {
            let patch_type = patch_type_of(&call)?;
            let (body, duplicates) = parse_patch(&call, patch_type)?;
            let options = write_options(&call, duplicates)?;
            if patch_type == PatchType::Apply && call.query.get("fieldManager").is_none_or(String::is_empty) {
                return Err(invalid_option(
                    "PatchOptions",
                    "FieldValueRequired",
                    "fieldManager",
                    "Required value: is required for apply patch".into(),
                ));
            }
            let patch = Change::Patch {
                name,
                patch_type,
                patch: &body,
            };
            let written = writes.write(patch, &options).await?;
            let code = if written.created { 201 } else { 200 };
            Ok(respond::with_warnings(
                represent_written(&rt, code, &written.object, &call)?,
                &written.warnings,
            ))
        }
        (&Method::DELETE, Some(name)) => {
            let object = writes.delete(name, &delete_options(&call, &rt)?).await?;
            Ok(respond::json(200, &deleted(&rt, name, object)))
        }
        (&Method::DELETE, None) => {
            let (labels, fields) = selectors(&rt, &call)?;
            let deleted = writes
                .delete_collection(
                    target.namespace.as_deref(),
                    |o| labels.matches(o) && fields.matches(o),
                    &delete_options(&call, &rt)?,
                )
                .await?;
            let rv = shared.store.current_resource_version().to_string();
            Ok(respond::json(200, &list_body(&rt, deleted, &rv, None)))
        }
        _ => Err(Error::MethodNotAllowed(
            "the server does not allow this method on the requested resource".to_string(),
        )),
    }
}

fn represent_one(rt: &ResourceType, object: Value, call: &Call) -> Result<Response> {
    if respond::negotiate(&call.accept) == Representation::Table {
        let rv = meta::resource_version(&object).unwrap_or_default().to_owned();
        return Ok(respond::json(200, &table(rt, &[&object], &rv, None, call)?));
    }
    if respond::negotiate(&call.accept) == Representation::Metadata {
        return Ok(respond::json(200, &respond::partial_metadata(&object)));
    }
    Ok(respond::json(200, &object))
}

/// `list`, or its `PartialObjectMetadataList` when the client asked for metadata alone.
fn shaped_list(list: &Value, call: &Call) -> Value {
    match respond::negotiate(&call.accept) {
        Representation::Metadata => respond::partial_metadata_list(list),
        _ => list.clone(),
    }
}

fn table(
    rt: &ResourceType,
    rows: &[&Value],
    resource_version: &str,
    token: Option<&str>,
    call: &Call,
) -> Result<Value> {
    let table = render_table(
        &Printer::for_type(rt),
        rows,
        true,
        include_object(call)?,
        resource_version,
        token,
        jiff::Timestamp::now(),
    );
    Ok(in_version(table, respond::table_version(&call.accept)))
}

/// What a create, update or patch answers with `code`: the object written, or its Table when the
/// client asked for one (a dry-run create has no resourceVersion yet, so neither has its Table).
fn represent_written(rt: &ResourceType, code: u16, object: &Value, call: &Call) -> Result<Response> {
    if respond::negotiate(&call.accept) == Representation::Table {
        let rv = meta::resource_version(object).unwrap_or_default().to_owned();
        return Ok(respond::json(code, &table(rt, &[object], &rv, None, call)?));
    }
    if respond::negotiate(&call.accept) == Representation::Metadata {
        return Ok(respond::json(code, &respond::partial_metadata(object)));
    }
    Ok(respond::json(code, object))
}

/// What a Table's rows carry of their objects, as the request's `includeObject` asks.
pub(super) fn include_object(call: &Call) -> Result<IncludeObject> {
    IncludeObject::parse(call.query.get("includeObject").map(String::as_str)).map_err(Error::BadRequest)
}

/// The body of a create or an update, and the fields it repeats (for `fieldValidation`).
pub(super) fn parse_body(call: &Call, rt: &ResourceType) -> Result<(Value, Vec<String>)> {
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

pub(super) fn patch_type_of(call: &Call) -> Result<PatchType> {
    let content_type = call.content_type.as_deref().unwrap_or("");
    PatchType::from_content_type(content_type).ok_or_else(|| {
        Error::UnsupportedMediaType(format!("the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml; got {content_type:?}"))
    })
}

/// A patch, and the fields it repeats (for `fieldValidation`).
pub(super) fn parse_patch(call: &Call, patch_type: PatchType) -> Result<(Value, Vec<String>)> {
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

pub(super) fn write_options(call: &Call, duplicate_fields: Vec<String>) -> Result<WriteOptions> {
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

fn delete_options(call: &Call, rt: &ResourceType) -> Result<DeleteOptions> {
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
    // kube-apiserver's ReplicationController registry orphans by default at v1, for compatibility
    // with clients from before garbage collection (every other kind deletes in the background).
    let orphans_by_default = rt.group.is_empty() && rt.plural == "replicationcontrollers";
    let orphan_named = body.get("orphanDependents").is_some_and(|o| !o.is_null())
        || call.query.contains_key("orphanDependents");
    if orphans_by_default && !options.propagation_named && !orphan_named {
        options.propagation = DeletePropagation::Orphan;
    }
    Ok(options)
}

/// The options of a delete written as `body` (a DeleteOptions object), with the query's beside them.
pub(super) fn delete_options_of(call: &Call, body: &Value) -> Result<DeleteOptions> {
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

/// The built-in resources whose kube-apiserver registry answers a DELETE with the deleted object
/// (`ReturnDeletedObject` in their storage), by group and plural. A fact of each registry's Go code,
/// not of the API types the build reads, hence listed here.
const RETURN_DELETED_OBJECT: &[(&str, &str)] = &[
    ("", "namespaces"),
    ("", "persistentvolumeclaims"),
    ("", "persistentvolumes"),
    ("", "pods"),
    ("", "podtemplates"),
    ("", "resourcequotas"),
    ("", "serviceaccounts"),
    ("", "services"),
    ("resource.k8s.io", "deviceclasses"),
    ("resource.k8s.io", "devicetaintrules"),
    ("resource.k8s.io", "resourceclaims"),
    ("resource.k8s.io", "resourceclaimtemplates"),
    ("resource.k8s.io", "resourceslices"),
    ("storage.k8s.io", "csidrivers"),
    ("storage.k8s.io", "csinodes"),
    ("storage.k8s.io", "storageclasses"),
    ("storage.k8s.io", "volumeattachments"),
    ("storage.k8s.io", "volumeattributesclasses"),
];

/// What a DELETE of one object answers: the object while it is still there (finalizers, foreground
/// deletion) or when its kind's registry returns deleted objects, and otherwise a `Success` Status,
/// as the real server's registries do for built-in kinds and custom resources alike.
fn deleted(rt: &ResourceType, name: &str, object: Value) -> Value {
    let returns_object = RETURN_DELETED_OBJECT.iter().any(|(group, plural)| {
        *group == rt.group && *plural == rt.plural && matches!(rt.origin, Origin::BuiltIn)
    });
    if meta::is_deleting(&object) || returns_object {
        return object;
    }
    let mut details = crate::error::status_details(name, &rt.group, &rt.plural);
    if let Some(uid) = object.pointer("/metadata/uid") {
        details["uid"] = uid.clone();
    }
    json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "details": details})
}

fn list_body(
    rt: &ResourceType,
    items: Vec<Value>,
    resource_version: &str,
    page: Option<(&str, Option<usize>)>,
) -> Value {
    let mut metadata = json!({"resourceVersion": resource_version});
    match page {
        Some((token, remaining)) => {
            metadata["continue"] = json!(token);
            if let Some(remaining) = remaining {
                metadata["remainingItemCount"] = json!(remaining);
            }
        }
        // Lists of custom resources always carry the (empty) continue token.
        None if !rt.is_builtin() => metadata["continue"] = json!(""),
        None => {}
    }
    json!({"apiVersion": rt.api_version(), "kind": rt.list_kind(), "metadata": metadata, "items": list_items(rt, items)})
}

/// A list's items as the real server writes them: built-in objects without `apiVersion` and `kind`
/// (the list says both once), custom resources with them (each is a whole unstructured object).
fn list_items(rt: &ResourceType, mut items: Vec<Value>) -> Vec<Value> {
    if rt.is_builtin() {
        for item in &mut items {
            if let Some(map) = item.as_object_mut() {
                map.remove("apiVersion");
                map.remove("kind");
            }
        }
    }
    items
}

/// How many objects a list with selectors reads at a time, at least.
const SELECTED_CHUNK: usize = 500;

/// Lists (W1-W4). A `limit` cuts the list into pages that all show the state of the first one and
/// carry its resourceVersion, as etcd-backed pagination does; the continue token says where the last
/// page stopped and at which resourceVersion.
async fn list(
    shared: &Shared,
    rt: &Arc<ResourceType>,
    namespace: Option<&str>,
    call: &Call,
) -> Result<Response> {
    let (labels, fields) = selectors(rt, call)?;
    let has = |key: &str| call.query.get(key).is_some_and(|v| !v.is_empty());
    if has("resourceVersionMatch") && !has("resourceVersion") {
        return Err(invalid_option(
            "ListOptions",
            "FieldValueForbidden",
            "resourceVersionMatch",
            "Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided".into(),
        ));
    }
    let limit = match call.query.get("limit").filter(|l| !l.is_empty()) {
        Some(text) => match text.parse::<i64>() {
            Ok(limit) => usize::try_from(limit).ok().filter(|l| *l > 0),
            Err(_) => {
                return Err(Error::BadRequest(format!(
                    "strconv.ParseInt: parsing {text:?}: invalid syntax"
                )));
            }
        },
        None => None,
    };
    // A list at resourceVersion 0 is served whole from the real server's watch cache, which does not
    // paginate: the limit is ignored there.
    let from_cache = call.query.get("resourceVersion").is_some_and(|rv| rv == "0");
    let wanted = limit.filter(|_| !from_cache).unwrap_or(usize::MAX);
    let (mut at, mut after) = match call.query.get("continue").filter(|t| !t.is_empty()) {
        Some(token) => {
            let (rv, last) = continuation::decode(token)?;
            (Some(rv), Some(last))
        }
        None => (None, None),
    };
    // The real server counts what remains only when no selector filters the list.
    let selected = has("labelSelector") || has("fieldSelector");
    let converter = Converter::of(&shared.store, rt);
    let mut page: Vec<Value> = Vec::new();
    let (resource_version, remaining) = loop {
        // Selectors may pass over many objects for a page: they are read a chunk at a time.
        let take = if selected {
            (wanted - page.len()).max(SELECTED_CHUNK)
        } else {
            wanted - page.len()
        };
        let chunk = shared.store.list_chunk(rt, namespace, at, after.as_ref(), take)?;
        at = Some(chunk.resource_version);
        let (keys, listed): (Vec<ListKey>, Vec<StoredObject>) = chunk.items.into_iter().unzip();
        let stored: Vec<Value> = listed.iter().map(StoredObject::decode).collect();
        let objects = admission::read(&shared.store, rt, converter.as_ref(), stored).await?;
        let mut unread = chunk.remaining;
        for (index, (key, object)) in keys.iter().zip(objects).enumerate() {
            if page.len() == wanted {
                unread += keys.len() - index;
                break;
            }
            after = Some(key.clone());
            if labels.matches(&object) && fields.matches(&object) {
                page.push(object);
            }
        }
        if page.len() == wanted || unread == 0 {
            break (chunk.resource_version, unread);
        }
    };
    let token = (remaining > 0)
        .then(|| {
            after
                .as_ref()
                .map(|last| continuation::encode(resource_version, last))
        })
        .flatten();
    let remaining = (!selected).then_some(remaining);
    let resource_version = resource_version.to_string();
    if respond::negotiate(&call.accept) == Representation::Table {
        let refs: Vec<&Value> = page.iter().collect();
        let table = table(rt, &refs, &resource_version, token.as_deref(), call)?;
        return Ok(respond::json(200, &table));
    }
    let list = list_body(
        rt,
        page,
        &resource_version,
        token.as_deref().map(|t| (t, remaining)),
    );
    if respond::negotiate(&call.accept) == Representation::Metadata {
        return Ok(respond::json(200, &respond::partial_metadata_list(&list)));
    }
    Ok(respond::json(200, &list))
}
