//! The `/scale` subresource (`autoscaling/v1` Scale) of Deployments, StatefulSets, ReplicaSets and
//! custom resources whose CRD declares one: `kubectl scale` and autoscalers read and write replicas
//! through it. The view and the write-back are apimachinery's; this is the HTTP around them.

use std::sync::Arc;

use apimachinery::{
    patch::{self, PatchType},
    resource::{ResourceType, ScalePaths},
    scale,
};
use axum::response::Response;
use serde_json::{Value, json};

use super::{Shared, respond};
use crate::{
    error::{Error, Result, Subject},
    store::{FieldValidation, WriteOptions},
};

/// How often a write retries when the object changed between reading it and writing it back, as
/// kube-apiserver's own read-modify-write does for a request that named no resourceVersion.
const RETRIES: usize = 5;

/// A write to a Scale: its body, and how it applies (`None`: a whole Scale, as PUT sends it).
pub struct ScaleWrite {
    pub body: Value,
    pub patch_type: Option<PatchType>,
    pub options: WriteOptions,
}

/// GET (`write` is `None`), PUT or PATCH of the Scale of `name`.
pub fn handle(
    shared: &Arc<Shared>,
    rt: &Arc<ResourceType>,
    paths: &ScalePaths,
    namespace: &str,
    name: &str,
    write: Option<ScaleWrite>,
) -> Result<Response> {
    let Some(ScaleWrite {
        body,
        patch_type,
        options,
    }) = write
    else {
        let object = shared.store.get(rt, namespace, name)?;
        return Ok(respond::json(200, &scale::scale_of(paths, &object)));
    };
    let mut attempt = 0;
    loop {
        attempt += 1;
        let object = shared.store.get(rt, namespace, name)?;
        let current = scale::scale_of(paths, &object);
        let patched = match patch_type {
            None => Ok(body.clone()),
            Some(PatchType::Merge) => patch::merge_patch(&current, &body),
            Some(PatchType::Json) => patch::json_patch(&current, &body),
            Some(PatchType::Strategic) => patch::strategic_merge_patch(&current, &body, "Scale"),
            Some(PatchType::Apply) => {
                return Err(Error::UnsupportedMediaType(
                    "apply patches are not supported on the scale subresource here".into(),
                ));
            }
        };
        let desired =
            patched.map_err(|e| Error::from_machinery(e, "Scale.autoscaling", &Subject::default()))?;
        let replicas = scale::validate(&desired).map_err(|cause| Error::Invalid {
            kind_group: "Scale.autoscaling".into(),
            subject: Subject {
                name: name.to_owned(),
                ..Subject::default()
            },
            causes: vec![cause],
        })?;
        // A resourceVersion the client sent is a precondition; otherwise the one just read is, so that
        // a write in between is retried rather than overwritten.
        let sent = desired
            .pointer("/metadata/resourceVersion")
            .and_then(Value::as_str)
            .filter(|v| !v.is_empty() && patch_type.is_none());
        let precondition = sent.or_else(|| {
            object
                .pointer("/metadata/resourceVersion")
                .and_then(Value::as_str)
        });
        let mut write = scale::replicas_patch(paths, replicas);
        if let Some(version) = precondition {
            write["metadata"] = json!({"resourceVersion": version});
        }
        let options = WriteOptions {
            field_validation: FieldValidation::Ignore,
            subresource: Some("scale"),
            ..options.clone()
        };
        match crate::strategy::writes::patch(
            &shared.store,
            rt,
            namespace,
            name,
            PatchType::Merge,
            &write,
            &options,
            false,
        ) {
            Ok(written) => return Ok(respond::json(200, &scale::scale_of(paths, &written.object))),
            Err(Error::Conflict { .. }) if sent.is_none() && attempt < RETRIES => continue,
            Err(error) => return Err(error),
        }
    }
}
