//! Pod subresources that write the pod (B8): `ephemeralcontainers`, which changes
//! `spec.ephemeralContainers` and nothing else, and `binding`, which assigns a node as a scheduler does.

use std::sync::Arc;

use apimachinery::resource::ResourceType;
use axum::{http::Method, response::Response};
use serde_json::{Value, json};

use super::subresource::Subresource;
use super::{
    Shared,
    request::Call,
    request::{parse_body, parse_patch, patch_type_of, write_options},
    respond,
};
use crate::{
    error::{Error, Result, Subject},
    store::{WriteOptions, meta},
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
pub const EPHEMERAL_CONTAINERS: Subresource = Subresource {
    group: "",
    plural: "pods",
    names: &["ephemeralcontainers"],
    serve: |r| ephemeral_containers(r.shared, r.rt, r.namespace, r.name, r.call),
};

/// `pods/binding`.
pub const BINDING: Subresource = Subresource {
    group: "",
    plural: "pods",
    names: &["binding"],
    serve: |r| bind(r.shared, r.rt, r.namespace, r.name, r.call),
};

pub fn ephemeral_containers(
    shared: &Arc<Shared>,
    rt: &Arc<ResourceType>,
    namespace: &str,
    name: &str,
    call: &Call,
) -> Result<Response> {
    let (current, wanted) = match pod_part_request(shared, rt, namespace, name, call)? {
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
        ..write_options(call, Vec::new())?
    };
    let written = crate::strategy::writes::update(&shared.store, rt, namespace, name, next, &options, false)?;
    Ok(respond::with_warnings(
        respond::json(200, &written.object),
        &written.warnings,
    ))
}

/// `POST pods/{name}/binding`: sets the pod's node, once, as the scheduler does.
pub fn bind(
    shared: &Arc<Shared>,
    rt: &Arc<ResourceType>,
    namespace: &str,
    name: &str,
    call: &Call,
) -> Result<Response> {
    if call.method != Method::POST {
        return Err(method_not_allowed());
    }
    let binding = parse_body(call, rt)?.0;
    let node = binding
        .pointer("/target/name")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    let current = shared.store.get(rt, namespace, name)?;
    let binding_subject = Subject {
        qualified_plural: "pods/binding".into(),
        group: String::new(),
        plural: "pods/binding".into(),
        name: name.to_owned(),
    };
    if let Some(assigned) = meta::str_at(&current, "/spec/nodeName").filter(|n| !n.is_empty()) {
        return Err(Error::Conflict {
            subject: binding_subject,
            reason: format!("pod {name} is already assigned to node {assigned:?}"),
        });
    }
    if node.is_empty() {
        return Err(Error::Invalid {
            kind_group: "Binding".into(),
            subject: binding_subject,
            causes: vec![apimachinery::FieldCause::new(
                "FieldValueRequired",
                "target.name",
                "Required value",
            )],
        });
    }
    let mut next = current.clone();
    next["spec"]["nodeName"] = json!(node);
    crate::strategy::writes::update(
        &shared.store,
        rt,
        namespace,
        name,
        next,
        &write_options(call, Vec::new())?,
        false,
    )?;
    Ok(respond::json(
        201,
        &json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}),
    ))
}
