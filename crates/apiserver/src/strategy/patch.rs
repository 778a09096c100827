//! Patches: JSON, merge, strategic merge and server-side apply (which creates what is missing).
//! Each comes to an update (or a create) of the patched object, whose stages follow.

use apimachinery::{
    meta,
    patch::{self, ApplyRequest, PatchType},
    protobuf::GoType,
    resource::ResourceType,
    stored_form,
};
use serde_json::{Value, json};

use super::{
    decode::{check_body_identity, check_type_meta},
    managed_fields::with_object_schema,
};
use crate::{
    error::{Error, Result},
    store::{FieldValidation, WriteOptions, subject},
};

/// The options of a write whose managedFields server-side apply has already recorded (as an `Apply`
/// entry): no `Update` entry is added on top.
fn recorded_by_apply(options: &WriteOptions) -> WriteOptions {
    WriteOptions {
        field_manager: None,
        ..options.clone()
    }
}

/// What a patch comes to, against the current object or its absence.
pub enum Resolved {
    /// Server-side apply of an object that does not exist: its create, with these options.
    Create(Value, WriteOptions),
    /// The patched object, to store as an update with these options.
    Update(Value, WriteOptions),
}

/// What a patch request asks.
pub struct PatchRequest<'a> {
    pub rt: &'a ResourceType,
    pub namespace: &'a str,
    pub name: &'a str,
    pub patch_type: PatchType,
    pub body: &'a Value,
    pub options: &'a WriteOptions,
    pub status_only: bool,
}

impl PatchRequest<'_> {
    /// The text kube-apiserver quotes of a patched built-in object that does not decode (`decoded`, as
    /// decoding saw it): its JSON and merge patches keep the stored text's Go field order where they
    /// did not reach.
    pub fn written(&self, old: &Value, decoded: &str) -> String {
        let text_patch = matches!(self.patch_type, PatchType::Merge | PatchType::Json);
        let patched = serde_json::from_str::<Value>(decoded);
        match patched {
            Ok(patched) if text_patch && self.rt.is_builtin() => {
                let live = stored_form::present(self.rt, old);
                let go_type = GoType::of(&self.rt.api_version(), &self.rt.kind);
                patch::patched_text(&live, self.body, &patched, self.patch_type, &go_type)
            }
            _ => decoded.to_owned(),
        }
    }

    /// What the patch comes to over `current` (the object as the request's version shows it; none:
    /// there is no object).
    pub fn resolve(&self, current: Option<&Value>) -> Result<Resolved> {
        let Some(current) = current else {
            if self.patch_type != PatchType::Apply {
                return Err(Error::NotFound(subject(self.rt, self.name)));
            }
            // Server-side apply creates what is missing (P4).
            check_apply_identity(self.rt, self.body)?;
            let mut object = server_side_apply(self.rt, None, self.body, self.options, self.status_only)
                .map_err(|e| Error::from_machinery_about(e, self.rt, self.name))?;
            meta::metadata_mut(&mut object).insert("name".into(), json!(self.name));
            return Ok(Resolved::Create(object, recorded_by_apply(self.options)));
        };
        let (patched, options) = self.patched(current)?;
        Ok(Resolved::Update(patched, options))
    }

    /// The patched object, and the options of the update it becomes.
    fn patched(&self, old: &Value) -> Result<(Value, WriteOptions)> {
        let PatchRequest {
            rt,
            namespace,
            name,
            body,
            options,
            status_only,
            ..
        } = *self;
        let live = stored_form::present(rt, old);
        let patched = match self.patch_type {
            PatchType::Merge => patch::merge_patch(&live, body),
            PatchType::Json => patch::json_patch(&live, body),
            PatchType::Strategic if !rt.is_builtin() => {
                return Err(Error::UnsupportedMediaType(
                    "the body of the request was in an unknown format - accepted media types include: \
                     application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml"
                        .to_string(),
                ));
            }
            PatchType::Strategic => patch::strategic_merge_patch(&live, body, &rt.kind),
            PatchType::Apply => {
                check_apply_identity(rt, body)?;
                server_side_apply(rt, Some(&live), body, options, status_only)
            }
        }
        .map_err(|e| Error::from_machinery_about(e, rt, name))?;
        check_body_identity(rt, namespace, name, &patched)?;
        let options = match self.patch_type {
            PatchType::Apply => recorded_by_apply(options),
            _ => options.clone(),
        };
        Ok((patched, options))
    }
}

/// Server-side apply of `body` over `live` (none: apply creates), as the write's options and `rt`'s
/// type say.
fn server_side_apply(
    rt: &ResourceType,
    live: Option<&Value>,
    body: &Value,
    options: &WriteOptions,
    status_only: bool,
) -> apimachinery::Result<Value> {
    let now = meta::now_rfc3339();
    let applied = with_object_schema(rt, |schema| {
        patch::server_side_apply(&ApplyRequest {
            live,
            applied: body,
            manager: options.field_manager.as_deref().unwrap_or_default(),
            force: options.force,
            subresource: status_only.then_some("status"),
            schema,
            status_subresource: rt.status_subresource,
            now: &now,
        })
    })?;
    // The body is decoded strictly only after the apply succeeded, as kube-apiserver does.
    if options.field_validation == FieldValidation::Strict && !options.repeated_yaml_keys.is_empty() {
        return Err(apimachinery::Error::BadRequest(format!(
            "error strict decoding YAML: error converting YAML to JSON: yaml: unmarshal errors:\n  {}",
            options.repeated_yaml_keys.join("\n  ")
        )));
    }
    Ok(applied)
}

fn check_apply_identity(rt: &ResourceType, body: &Value) -> Result<()> {
    let kind = body.get("kind").and_then(Value::as_str);
    let api_version = body.get("apiVersion").and_then(Value::as_str);
    if kind.is_none() || api_version.is_none() {
        return Err(Error::BadRequest(
            "apiVersion and kind must be set in an apply request".into(),
        ));
    }
    check_type_meta(rt, body)
}
