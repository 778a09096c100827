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

use crate::http::{Shared, respond};
use crate::{
    admission,
    error::{Error, Result, Subject},
    store::{FieldValidation, WriteOptions},
};

/// The kind admission sees the subresource's object as.
const SCALE: admission::Kind = admission::Kind {
    group: "autoscaling",
    version: "v1",
    kind: "Scale",
};

/// A write to a Scale: its body, and how it applies (`None`: a whole Scale, as PUT sends it).
pub struct ScaleWrite {
    pub body: Value,
    pub patch_type: Option<PatchType>,
    pub options: WriteOptions,
}

/// GET (`write` is `None`), PUT or PATCH of the Scale of `name`. A write passes admission as the
/// Scale it is (autoscaling/v1, subresource `scale`), then the strategy's stages as an update of the
/// replicas of the object.
pub async fn handle(
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
    if patch_type == Some(PatchType::Apply) {
        return Err(Error::UnsupportedMediaType(
            "apply patches are not supported on the scale subresource here".into(),
        ));
    }
    let wanted = |current: &Value| -> Result<Value> {
        let patched = match patch_type {
            None => Ok(body.clone()),
            Some(PatchType::Merge) => patch::merge_patch(current, &body),
            Some(PatchType::Json) => patch::json_patch(current, &body),
            Some(PatchType::Strategic | PatchType::Apply) => {
                patch::strategic_merge_patch(current, &body, "Scale")
            }
        };
        patched.map_err(|e| Error::from_machinery(e, "Scale.autoscaling", &Subject::default()))
    };
    let view = ScaleView {
        paths,
        name,
        // A resourceVersion a PUT sends is a precondition; otherwise the one just read is, so that a
        // write in between is made again rather than overwritten.
        sent_version_holds: patch_type.is_none(),
    };
    let options = WriteOptions {
        field_validation: FieldValidation::Ignore,
        subresource: Some("scale"),
        ..options
    };
    let target = admission::Target {
        store: &shared.store,
        rt,
        namespace,
        subresource: Some("scale"),
        status_only: false,
    };
    let written = target.write_view(name, &view, &wanted, &options).await?;
    Ok(respond::with_warnings(
        respond::json(200, &scale::scale_of(paths, &written.object)),
        &written.warnings,
    ))
}

/// An object seen as its Scale.
struct ScaleView<'a> {
    paths: &'a ScalePaths,
    name: &'a str,
    /// Whether the resourceVersion the written Scale names is a precondition (a PUT's).
    sent_version_holds: bool,
}

impl admission::View for ScaleView<'_> {
    fn kind(&self) -> admission::Kind {
        SCALE
    }

    fn of(&self, object: &Value) -> Value {
        scale::scale_of(self.paths, object)
    }

    fn apply(&self, current: &Value, viewed: &Value) -> Result<Value> {
        let replicas = scale::validate(viewed).map_err(|cause| Error::Invalid {
            kind_group: "Scale.autoscaling".into(),
            subject: Subject {
                name: self.name.to_owned(),
                ..Subject::default()
            },
            causes: vec![cause],
        })?;
        let sent = viewed
            .pointer("/metadata/resourceVersion")
            .and_then(Value::as_str)
            .filter(|v| !v.is_empty() && self.sent_version_holds);
        let precondition = sent.or_else(|| {
            current
                .pointer("/metadata/resourceVersion")
                .and_then(Value::as_str)
        });
        let mut write = scale::replicas_patch(self.paths, replicas);
        if let Some(version) = precondition {
            write["metadata"] = json!({"resourceVersion": version});
        }
        patch::merge_patch(current, &write)
            .map_err(|e| Error::from_machinery(e, "Scale.autoscaling", &Subject::default()))
    }
}
