//! `pods/{name}/resize` (get, update, patch): an in-place resize writes the containers' `resources`
//! and `resizePolicy` and nothing else of the pod, as kube-apiserver's resize strategy keeps the rest
//! as stored. Containers may not be added, removed, renamed or reordered, and the pod's
//! quality-of-service class may not change.

use apimachinery::{FieldCause, meta};
use axum::response::Response;
use serde_json::Value;

use crate::http::handlers::{
    pods,
    subresource::{Admitted, Request},
};
use crate::http::{request::write_options, respond};
use crate::{
    admission::Change,
    error::{Error, Result},
    kinds::pods::qos::qos_class,
    store::{WriteOptions, subject},
};

/// The container lists a resize may change the resources of.
const CONTAINER_LISTS: [&str; 2] = ["containers", "initContainers"];

/// `pods/resize`.
pub const ENDPOINT: Admitted = Admitted {
    group: "",
    plural: "pods",
    names: &["resize"],
    serve: |r| Box::pin(resize(r)),
};

/// Writes the containers' resources, through admission as an UPDATE of the whole pod made through
/// `resize`.
pub async fn resize(r: &Request<'_>) -> Result<Response> {
    let (rt, name, call) = (r.rt, r.name, r.call);
    let (current, wanted) = match pods::pod_part_request(r.shared, rt, r.namespace, name, call)? {
        pods::PodPart::Read(pod) => return Ok(respond::json(200, &pod)),
        pods::PodPart::Write { current, wanted } => (current, wanted),
    };
    let next = resized(&current, &wanted).map_err(|causes| Error::Invalid {
        kind_group: "Pod".into(),
        subject: subject(rt, name),
        causes,
    })?;
    let options = WriteOptions {
        subresource: Some("resize"),
        ..write_options(call, Vec::new())?
    };
    let written = r
        .target()
        .write(Change::Update { name, object: next }, &options)
        .await?;
    Ok(respond::with_warnings(
        respond::json(200, &written.object),
        &written.warnings,
    ))
}

/// The stored pod with the resources of `wanted`'s containers, or why the resize is refused.
fn resized(current: &Value, wanted: &Value) -> Result<Value, Vec<FieldCause>> {
    let mut next = current.clone();
    if let Some(rv) = wanted.pointer("/metadata/resourceVersion") {
        meta::metadata_mut(&mut next).insert("resourceVersion".into(), rv.clone());
    }
    let mut causes = Vec::new();
    for list in CONTAINER_LISTS {
        let pointer = format!("/spec/{list}");
        let old = current
            .pointer(&pointer)
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        let new = wanted
            .pointer(&pointer)
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        if old.len() != new.len() {
            causes.push(FieldCause::new(
                "FieldValueForbidden",
                format!("spec.{list}"),
                "Forbidden: containers may not be added or removed on resize",
            ));
            continue;
        }
        for (index, (old, new)) in old.iter().zip(&new).enumerate() {
            if old["name"] != new["name"] {
                causes.push(FieldCause::new(
                    "FieldValueForbidden",
                    format!("spec.{list}[{index}].name"),
                    "Forbidden: containers may not be renamed or reordered on resize",
                ));
                continue;
            }
            let Some(container) = next.pointer_mut(&format!("{pointer}/{index}")) else {
                continue;
            };
            for field in ["resources", "resizePolicy"] {
                match (new.get(field), container.as_object_mut()) {
                    (Some(value), Some(map)) => {
                        map.insert(field.into(), value.clone());
                    }
                    (None, Some(map)) => {
                        map.remove(field);
                    }
                    _ => {}
                }
            }
        }
    }
    if causes.is_empty() && qos_class(&next) != qos_class(current) {
        let class = meta::str_at(current, "/status/qosClass").unwrap_or_default();
        causes.push(FieldCause::new(
            "FieldValueInvalid",
            "spec",
            format!("Invalid value: {class:?}: Pod QOS Class may not change as a result of resizing"),
        ));
    }
    if causes.is_empty() { Ok(next) } else { Err(causes) }
}
