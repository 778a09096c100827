//! Patches: JSON, merge, strategic merge and server-side apply (which creates what is missing).
//! Each ends as an update (or a create) of the patched object, computed outside the store lock and
//! committed under it, as updates are.

use std::sync::Arc;

use apimachinery::{
    patch::{self, ApplyRequest, PatchType},
    protobuf::GoType,
    resource::ResourceType,
};
use serde_json::{Value, json};

use super::{
    FieldValidation, State, Store, WriteOptions, Written,
    admission::{check_body_identity, check_type_meta, machinery},
    lifecycle, meta, subject,
    write::with_object_schema,
};
use crate::error::{Error, Result};

/// The options of a write whose managedFields server-side apply has already recorded (as an `Apply`
/// entry): no `Update` entry is added on top.
fn recorded_by_apply(options: &WriteOptions) -> WriteOptions {
    WriteOptions {
        field_manager: None,
        ..options.clone()
    }
}

impl Store {
    /// A patch, computed and admitted outside the lock as an update is: against the object read under
    /// a first lock, stored under a second if no other write came between, computed again otherwise.
    #[allow(clippy::too_many_arguments)]
    pub fn patch(
        &self,
        rt: &Arc<ResourceType>,
        namespace: &str,
        name: &str,
        patch_type: PatchType,
        body: &Value,
        options: &WriteOptions,
        status_only: bool,
    ) -> Result<Written> {
        let request = PatchRequest {
            rt,
            namespace,
            name,
            patch_type,
            body,
            options,
            status_only,
        };
        loop {
            let Some(read) = Self::stored_object(&self.lock(), rt, namespace, name).cloned() else {
                // Nothing to patch: apply creates it (under the lock, as any create may), the others
                // are 404.
                let mut state = self.write_lock();
                let result = self.patch_locked(&mut state, &request);
                return self.settle(state, result);
            };
            let old = options.current.clone().unwrap_or_else(|| read.decode());
            let (patched, options) = request.patched(&old)?;
            let live = || options.current.clone().unwrap_or_else(|| read.decode());
            let prepared = self
                .prepare_update(rt, namespace, name, old, patched, &options, status_only)
                .map_err(|e| e.for_patch(|object| request.written(&live(), object)))?;
            let mut state = self.write_lock();
            if !Self::stored_object(&state, rt, namespace, name).is_some_and(|now| now.is_same_version(&read))
            {
                continue;
            }
            let result = self
                .commit_update(&mut state, rt, namespace, name, prepared, &options)
                .map_err(|e| e.for_patch(|object| request.written(&live(), object)));
            return self.settle(state, result);
        }
    }

    /// A patch under the lock: of the stored object, or apply's create of a missing one.
    fn patch_locked(&self, state: &mut State, request: &PatchRequest<'_>) -> Result<Written> {
        let PatchRequest {
            rt,
            namespace,
            name,
            options,
            ..
        } = *request;
        let old = self
            .stored(state, rt, namespace, name)
            .map(|stored| options.current.clone().unwrap_or(stored));
        let Some(old) = old else {
            if request.patch_type != PatchType::Apply {
                return Err(Error::NotFound(subject(rt, name)));
            }
            // Server-side apply creates what is missing (P4).
            check_apply_identity(rt, request.body)?;
            let mut object = server_side_apply(rt, None, request.body, options, request.status_only)
                .map_err(|e| machinery(rt, name, e))?;
            meta::metadata_mut(&mut object).insert("name".into(), json!(name));
            return self.create_locked(state, rt, namespace, object, &recorded_by_apply(options));
        };
        let (patched, options) = request.patched(&old)?;
        let result = self.update_locked(
            state,
            rt,
            namespace,
            name,
            old,
            patched,
            &options,
            request.status_only,
        );
        result.map_err(|e| {
            e.for_patch(|object| {
                let live = options
                    .current
                    .clone()
                    .or_else(|| self.stored(state, rt, namespace, name));
                request.written(&live.unwrap_or_default(), object)
            })
        })
    }
}

/// What a patch request asks.
struct PatchRequest<'a> {
    rt: &'a Arc<ResourceType>,
    namespace: &'a str,
    name: &'a str,
    patch_type: PatchType,
    body: &'a Value,
    options: &'a WriteOptions,
    status_only: bool,
}

impl PatchRequest<'_> {
    /// The text kube-apiserver quotes of a patched built-in object that does not decode (`decoded`, as
    /// decoding saw it): its JSON and merge patches keep the stored text's Go field order where they
    /// did not reach.
    fn written(&self, old: &Value, decoded: &str) -> String {
        let text_patch = matches!(self.patch_type, PatchType::Merge | PatchType::Json);
        let patched = serde_json::from_str::<Value>(decoded);
        match patched {
            Ok(patched) if text_patch && self.rt.is_builtin() => {
                let live = lifecycle::present(self.rt, old);
                let go_type = GoType::of(&self.rt.api_version(), &self.rt.kind);
                patch::patched_text(&live, self.body, &patched, self.patch_type, &go_type)
            }
            _ => decoded.to_owned(),
        }
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
        let live = lifecycle::present(rt, old);
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
        .map_err(|e| machinery(rt, name, e))?;
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
