//! Resource endpoints: get, list (with selectors and pages), watch, create, update, patch, delete and
//! deletecollection, on the main resource and `/status`.

use std::sync::Arc;

use apimachinery::{
    patch::PatchType,
    resource::{Origin, ResourceType},
    table::{Printer, has_table_convertor, in_version, render_table},
};
use axum::{http::Method, response::Response};
use serde_json::{Value, json};

use super::{
    Shared, access_reviews, computed, continuation, eviction, kubelet, namespace_finalize,
    path::ResourcePath,
    pod_resize, pods, proxies,
    request::{
        Call, delete_options, include_object, invalid_option, parse_body, parse_patch, patch_type_of,
        selectors, write_options,
    },
    respond::{self, Encoding, Endpoint, Representation},
    reviews, scale, service_account_tokens, watch,
};
use crate::{
    admission::{self, Change},
    error::{Error, Result},
    store::{ListKey, StoredObject, meta},
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
        stages: &shared.write_stages,
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
