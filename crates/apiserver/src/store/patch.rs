//! Patches: JSON, merge, strategic merge and server-side apply (which creates what is missing).
//! Each ends as an update (or a create) of the patched object, under the store lock.

use std::sync::Arc;

use apimachinery::{
    patch::{self, ApplyRequest, PatchType},
    resource::ResourceType,
};
use serde_json::{Value, json};

use super::{
    State, Store, WriteOptions, Written,
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
        let mut state = self.write_lock();
        let result = self.patch_checked(
            &mut state,
            rt,
            namespace,
            name,
            patch_type,
            body,
            options,
            status_only,
        );
        self.settle(state, result)
    }

    #[allow(clippy::too_many_arguments)]
    fn patch_checked(
        &self,
        state: &mut State,
        rt: &Arc<ResourceType>,
        namespace: &str,
        name: &str,
        patch_type: PatchType,
        body: &Value,
        options: &WriteOptions,
        status_only: bool,
    ) -> Result<Written> {
        let old = self
            .stored(state, rt, namespace, name)
            .map(|stored| options.current.clone().unwrap_or(stored));
        let Some(old) = old else {
            if patch_type != PatchType::Apply {
                return Err(Error::NotFound(subject(rt, name)));
            }
            // Server-side apply creates what is missing (P4).
            check_apply_identity(rt, body)?;
            let mut object = server_side_apply(rt, None, body, options, status_only)
                .map_err(|e| machinery(rt, name, e))?;
            meta::metadata_mut(&mut object).insert("name".into(), json!(name));
            return self.create_locked(state, rt, namespace, object, &recorded_by_apply(options));
        };
        let live = lifecycle::present(rt, &old);
        let patched = match patch_type {
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
        let options = match patch_type {
            PatchType::Apply => &recorded_by_apply(options),
            _ => options,
        };
        self.update_locked(state, rt, namespace, name, old, patched, options, status_only)
            .map_err(Error::for_patch)
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
    with_object_schema(rt, |schema| {
        patch::server_side_apply(&ApplyRequest {
            live,
            applied: body,
            manager: options.field_manager.as_deref().unwrap_or_default(),
            force: options.force,
            subresource: status_only.then_some("status"),
            builtin_kind: rt.is_builtin().then_some(rt.kind.as_str()),
            schema,
            status_subresource: rt.status_subresource,
            now: &now,
        })
    })
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
