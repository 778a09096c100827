//! A pod's subresources (B8): [`eviction`], [`resize`], the [`kubelet`]'s streams, and here those
//! that write the pod: `ephemeralcontainers`, which changes `spec.ephemeralContainers` and nothing
//! else, and `binding`, which assigns a node as a scheduler does.

pub(super) mod eviction;
pub(super) mod kubelet;
pub(super) mod resize;

use std::sync::Arc;

use apimachinery::{meta, resource::ResourceType};
use axum::{http::Method, response::Response};
use serde_json::{Value, json};

use super::subresource::{Admitted, Request};
use crate::http::{
    Shared,
    request::Call,
    request::{parse_body, parse_patch, patch_type_of, write_options},
    respond,
};
use crate::{
    admission::{self, Change},
    error::{Error, Result, Subject},
    store::WriteOptions,
};

/// The kind admission sees the subresource's object as.
const BINDING_KIND: admission::Kind = admission::Kind {
    group: "",
    version: "v1",
    kind: "Binding",
};

/// What a request to a subresource that writes part of a pod asks: the pod to read (GET), or the
/// stored pod and the whole pod the PUT or PATCH asks for (a patch applies to the whole pod, as
/// kube-apiserver applies it), of which the subresource keeps its part.
pub enum PodPart {
    Read(Value),
    Write { current: Value, wanted: Value },
}

pub fn pod_part_request(
    shared: &Arc<Shared>,
    rt: &Arc<ResourceType>,
    namespace: &str,
    name: &str,
    call: &Call,
) -> Result<PodPart> {
    let current = shared.store.get(rt, namespace, name)?;
    let wanted = match call.method {
        Method::GET => return Ok(PodPart::Read(current)),
        Method::PUT => parse_body(call, rt)?.0,
        Method::PATCH => {
            let patch_type = patch_type_of(call)?;
            let (body, duplicates) = parse_patch(call, patch_type)?;
            let mut options = write_options(call, duplicates)?;
            options.dry_run = true;
            let mut patched = crate::strategy::writes::patch(
                &shared.store,
                rt,
                namespace,
                name,
                patch_type,
                &body,
                &options,
                false,
            )?
            .object;
            meta::metadata_mut(&mut patched).insert(
                "resourceVersion".into(),
                current["metadata"]["resourceVersion"].clone(),
            );
            patched
        }
        _ => return Err(method_not_allowed()),
    };
    Ok(PodPart::Write { current, wanted })
}

/// 405, worded as kube-apiserver words it.
pub fn method_not_allowed() -> Error {
    Error::MethodNotAllowed("the server does not allow this method on the requested resource".into())
}

/// `pods/ephemeralcontainers`.
pub const EPHEMERAL_CONTAINERS: Admitted = Admitted {
    group: "",
    plural: "pods",
    names: &["ephemeralcontainers"],
    serve: |r| Box::pin(ephemeral_containers(r)),
};

/// `pods/binding`.
pub const BINDING: Admitted = Admitted {
    group: "",
    plural: "pods",
    names: &["binding"],
    serve: |r| Box::pin(bind_subresource(r)),
};

async fn bind_subresource(r: &Request<'_>) -> Result<Response> {
    bind(r.shared, r.rt, r.name, r.call, &r.target()).await
}

/// Writes the pod's ephemeral containers, through admission as an UPDATE of the whole pod made
/// through `ephemeralcontainers`.
pub async fn ephemeral_containers(r: &Request<'_>) -> Result<Response> {
    let (current, wanted) = match pod_part_request(r.shared, r.rt, r.namespace, r.name, r.call)? {
        PodPart::Read(pod) => return Ok(respond::json(200, &pod)),
        PodPart::Write { current, wanted } => (current, wanted),
    };
    let mut next = current.clone();
    next["spec"]["ephemeralContainers"] = wanted
        .pointer("/spec/ephemeralContainers")
        .cloned()
        .unwrap_or_else(|| json!([]));
    if let Some(rv) = wanted.pointer("/metadata/resourceVersion") {
        meta::metadata_mut(&mut next).insert("resourceVersion".into(), rv.clone());
    }
    if next["spec"]["ephemeralContainers"]
        .as_array()
        .is_some_and(Vec::is_empty)
        && let Some(spec) = next["spec"].as_object_mut()
    {
        spec.remove("ephemeralContainers");
    }
    let options = WriteOptions {
        subresource: Some("ephemeralcontainers"),
        ..write_options(r.call, Vec::new())?
    };
    let change = Change::Update {
        name: r.name,
        object: next,
    };
    let written = r.target().write(change, &options).await?;
    Ok(respond::with_warnings(
        respond::json(200, &written.object),
        &written.warnings,
    ))
}

/// A create of `bindings` (`rt`) in `namespace`: binds the pod the Binding names, admitted as what it
/// is, a `bindings` create, not a pod's subresource.
pub async fn bind_created(
    shared: &Arc<Shared>,
    rt: &Arc<ResourceType>,
    namespace: &str,
    call: &Call,
) -> Result<Response> {
    let binding = parse_body(call, rt)?.0;
    let pod = meta::name(&binding).to_owned();
    let pods = shared
        .store
        .resolve("", "v1", "pods")
        .ok_or(Error::UnknownResource)?;
    let admitted_as = admission::Target {
        store: &shared.store,
        rt,
        namespace,
        subresource: None,
        status_only: false,
    };
    bind(shared, &pods, &pod, call, &admitted_as).await
}

/// `POST pods/{name}/binding` (or a `bindings` create naming the pod): sets the pod's node, once, as
/// the scheduler does. Admission sees the Binding as a CREATE through `admitted_as`; the pod's node
/// is then written without admission, as kube-apiserver's pod storage writes it straight to storage.
pub async fn bind(
    shared: &Arc<Shared>,
    rt: &Arc<ResourceType>,
    name: &str,
    call: &Call,
    admitted_as: &admission::Target<'_>,
) -> Result<Response> {
    if call.method != Method::POST {
        return Err(method_not_allowed());
    }
    let namespace = admitted_as.namespace;
    let binding = as_kind(parse_body(call, rt)?.0, "v1", "Binding", namespace);
    let binding_subject = Subject {
        qualified_plural: "pods/binding".into(),
        group: String::new(),
        plural: "pods/binding".into(),
        name: name.to_owned(),
    };
    let target_required = |binding: &Value| match binding.pointer("/target/name").and_then(Value::as_str) {
        Some(node) if !node.is_empty() => Ok(()),
        _ => Err(Error::Invalid {
            kind_group: "Binding".into(),
            subject: binding_subject.clone(),
            causes: vec![apimachinery::FieldCause::new(
                "FieldValueRequired",
                "target.name",
                "Required value",
            )],
        }),
    };
    let options = write_options(call, Vec::new())?;
    let (binding, warnings) = admitted_as
        .admit_create(name, BINDING_KIND, binding, &options, target_required)
        .await?;
    let node = binding
        .pointer("/target/name")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    let current = shared.store.get(rt, namespace, name)?;
    if let Some(assigned) = meta::str_at(&current, "/spec/nodeName").filter(|n| !n.is_empty()) {
        return Err(Error::Conflict {
            subject: binding_subject,
            reason: format!("pod {name} is already assigned to node {assigned:?}"),
        });
    }
    let mut next = current.clone();
    next["spec"]["nodeName"] = json!(node);
    crate::strategy::writes::update(&shared.store, rt, namespace, name, next, &options, false)?;
    let status =
        json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201});
    Ok(respond::with_warnings(respond::json(201, &status), &warnings))
}

/// A subresource's own object as admission sees it: of the kind it is written as (an older version
/// of it is read as this one), in the request's namespace.
pub fn as_kind(mut object: Value, api_version: &str, kind: &str, namespace: &str) -> Value {
    if let Some(map) = object.as_object_mut() {
        map.insert("apiVersion".into(), json!(api_version));
        map.insert("kind".into(), json!(kind));
    }
    let metadata = meta::metadata_mut(&mut object);
    if metadata
        .get("namespace")
        .and_then(Value::as_str)
        .is_none_or(str::is_empty)
    {
        metadata.insert("namespace".into(), json!(namespace));
    }
    object
}
