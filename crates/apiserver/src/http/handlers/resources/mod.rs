//! Resource endpoints: the request negotiated (Table, protobuf, deprecation warnings), then routed to
//! what serves it: reviews, `scale`, the computed kinds, a subresource's own endpoint
//! ([`subresources`]), or one of the resource's verbs ([`verbs`], [`list`], watch).

mod answers;
mod computed;
mod continuation;
mod list;
mod subresources;
mod verbs;
mod watch;

use std::sync::Arc;

use apimachinery::{resource::ResourceType, table::has_table_convertor};
use axum::{http::Method, response::Response};

use super::{
    pods::{self, kubelet},
    reviews::{access, self_subject},
    scale,
    subresource::Request,
};
use crate::http::{
    Shared,
    path::ResourcePath,
    request::{Call, parse_body, parse_patch, patch_type_of, write_options},
    respond::{self, Encoding, Endpoint, Representation},
};
use crate::{
    admission,
    error::{Error, Result},
    kinds,
};
use verbs::Verb;

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
    kinds::named(&target.group, &target.plural).and_then(|kind| kind.deprecation(&target.version))
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
        return review(shared, &rt, &target, &call).await;
    }
    if let (Some("scale"), Some(paths), Some(name)) =
        (target.subresource.as_deref(), &rt.scale, target.name.as_deref())
    {
        let namespace = target.namespace.as_deref().unwrap_or_default();
        return scale::handle(shared, &rt, paths, namespace, name, scale_write(&rt, &call)?).await;
    }
    if let Some(objects) = computed::objects(&rt) {
        return computed::serve(&rt, objects, &target, &call);
    }
    let namespace = target.namespace.clone().unwrap_or_default();
    let status_only = match (target.subresource.as_deref(), target.name.as_deref()) {
        (None, _) => false,
        (Some("status"), _) if rt.status_subresource => true,
        (Some(subresource), _) if writes_status_alone(&rt, subresource) => true,
        (Some(subresource), Some(name)) => {
            let request = Request {
                shared,
                rt: &rt,
                namespace: &namespace,
                name,
                subresource,
                call: &call,
            };
            if let Some(endpoint) = subresources::find_admitted(&rt, subresource) {
                return (endpoint.serve)(&request).await;
            }
            let endpoint = subresources::find(&rt, subresource).ok_or(Error::UnknownResource)?;
            return (endpoint.serve)(&request);
        }
        (Some(_), None) => return Err(Error::UnknownResource),
    };
    let verb = Verb {
        shared,
        rt: &rt,
        namespace: target.namespace.as_deref(),
        call: &call,
        writes: admission::Target {
            store: &shared.store,
            rt: &rt,
            namespace: &namespace,
            subresource: target.subresource.as_deref(),
            status_only,
        },
    };
    let watching = matches!(call.query.get("watch").map(String::as_str), Some("true" | "1"));
    match (&call.method, target.name.as_deref()) {
        (&Method::GET, None) if watching => {
            watch::serve(shared, rt.clone(), target.namespace.as_deref(), &call)
        }
        (&Method::GET, None) => list::list(shared, &rt, target.namespace.as_deref(), &call).await,
        (&Method::GET, Some(name)) => verb.get(name).await,
        (&Method::POST, None) => verb.create().await,
        (&Method::PUT, Some(name)) => verb.update(name).await,
        (&Method::PATCH, Some(name)) => verb.patch(name).await,
        (&Method::DELETE, Some(name)) => verb.delete(name).await,
        (&Method::DELETE, None) => verb.delete_collection().await,
        _ => Err(Error::MethodNotAllowed(
            "the server does not allow this method on the requested resource".to_string(),
        )),
    }
}

/// Whether a write to the built-in `rt`'s `subresource` (besides `status`) changes its status alone,
/// as a CSR's approval does.
fn writes_status_alone(rt: &ResourceType, subresource: &str) -> bool {
    rt.is_builtin() && kinds::of(rt).is_some_and(|kind| kind.status_subresources().contains(&subresource))
}

/// A review (access, token, subject) or a binding: only ever created, answered and not stored.
async fn review(
    shared: &Arc<Shared>,
    rt: &Arc<ResourceType>,
    target: &ResourcePath,
    call: &Call,
) -> Result<Response> {
    match (&call.method, target.name.as_deref()) {
        (&Method::POST, None) if kinds::of(rt).is_some_and(|kind| kind.binds_pods()) => {
            pods::bind_created(shared, rt, target.namespace.as_deref().unwrap_or_default(), call).await
        }
        (&Method::POST, None) if access::answers(rt) => {
            access::answer(shared, rt, parse_body(call, rt)?.0, target.namespace.as_deref())
        }
        (&Method::POST, None) => {
            let manager = write_options(call, Vec::new())?.field_manager.unwrap_or_default();
            self_subject::answer(shared, rt, parse_body(call, rt)?.0, &manager, &call.identity)
        }
        _ => Err(Error::MethodNotAllowed("a review is only created".into())),
    }
}

/// What a request to `scale` writes: nothing for a read.
fn scale_write(rt: &ResourceType, call: &Call) -> Result<Option<scale::ScaleWrite>> {
    Ok(match call.method {
        Method::GET => None,
        Method::PUT => Some(scale::ScaleWrite {
            body: parse_body(call, rt)?.0,
            patch_type: None,
            options: write_options(call, Vec::new())?,
        }),
        Method::PATCH => {
            let patch_type = patch_type_of(call)?;
            Some(scale::ScaleWrite {
                body: parse_patch(call, patch_type)?.0,
                patch_type: Some(patch_type),
                options: write_options(call, Vec::new())?,
            })
        }
        _ => {
            return Err(Error::MethodNotAllowed(
                "the scale subresource serves get, update and patch".into(),
            ));
        }
    })
}
