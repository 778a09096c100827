//! Patches (P1-P5): each function takes the live object and the patch body, and returns the new object.
//! The API server stores the result only after validation, so a failing patch changes nothing.

mod apply;
mod compare;
mod conflicts;
mod declared;
mod field_set;
mod fields;
mod merge;
mod prune;
mod reset;
mod strategic;
mod typed;
mod update;
mod written;

use serde_json::Value;

pub use apply::{ApplyRequest, server_side_apply};
pub use typed::ObjectSchema;
pub use update::{UpdateWrite, record_update};
pub use written::patched_text;

use crate::{Error, Result};

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
    /// The patch type a request's Content-Type names, its parameters (`; charset=utf-8`) ignored;
    /// `None` for any other media type (kube-apiserver answers those 415).
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
/// A failed `test` or operation is 422 Invalid (without causes, as kube-apiserver answers it); an
/// undecodable patch 400.
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
        json_patch::patch(&mut patched, std::slice::from_ref(operation))
            .map_err(|e| Error::PatchNotApplicable(e.to_string()))?;
    }
    Ok(patched)
}

/// Strategic merge patch (P3) for the built-in `kind` (merge keys and `$patch` directives).
pub fn strategic_merge_patch(live: &Value, patch: &Value, kind: &str) -> Result<Value> {
    strategic::apply(live, patch, kind)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn p1_merge_patch_sets_keys_and_null_deletes() {
        let live = json!({"spec": {"a": 1, "b": 2}, "metadata": {"name": "w"}});
        let out = merge_patch(&live, &json!({"spec": {"a": 5, "b": null}})).unwrap();
        assert_eq!(out, json!({"spec": {"a": 5}, "metadata": {"name": "w"}}));
    }

    #[test]
    fn p1_merge_patch_that_is_not_an_object_is_a_bad_request() {
        let err = merge_patch(&json!({}), &json!([1])).unwrap_err();
        assert!(matches!(err, Error::BadRequest(_)), "{err:?}");
    }

    #[test]
    fn p2_test_of_a_missing_path_against_null_passes_then_add_applies() {
        // kube-runtime's finalizer helper sends exactly this pair.
        let live = json!({"metadata": {"name": "w"}});
        let patch = json!([
            {"op": "test", "path": "/metadata/finalizers", "value": null},
            {"op": "add", "path": "/metadata/finalizers", "value": ["demo.yash.com/cleanup"]}
        ]);
        let out = json_patch(&live, &patch).unwrap();
        assert_eq!(out["metadata"]["finalizers"], json!(["demo.yash.com/cleanup"]));
    }

    #[test]
    fn p2_failed_test_is_invalid_and_changes_nothing() {
        let live = json!({"spec": {"table": "a"}});
        let patch = json!([
            {"op": "replace", "path": "/spec/table", "value": "b"},
            {"op": "test", "path": "/spec/table", "value": "zzz"}
        ]);
        let err = json_patch(&live, &patch).unwrap_err();
        assert!(
            err.to_string()
                .ends_with("at path '/spec/table': value did not match"),
            "{err}"
        );
        assert!(matches!(err, Error::PatchNotApplicable(_)), "{err:?}");
        assert_eq!(live["spec"]["table"], "a");
    }

    #[test]
    fn p2_all_six_operations_apply_in_order() {
        let live = json!({"a": 1, "b": {"c": 2}, "l": [1, 2]});
        let patch = json!([
            {"op": "add", "path": "/l/-", "value": 3},
            {"op": "remove", "path": "/a"},
            {"op": "replace", "path": "/b/c", "value": 4},
            {"op": "copy", "from": "/b", "path": "/d"},
            {"op": "move", "from": "/l", "path": "/m"},
            {"op": "test", "path": "/m", "value": [1, 2, 3]}
        ]);
        let out = json_patch(&live, &patch).unwrap();
        assert_eq!(out, json!({"b": {"c": 4}, "d": {"c": 4}, "m": [1, 2, 3]}));
    }

    #[test]
    fn p2_body_that_is_not_an_array_of_ops_is_a_bad_request() {
        for body in [json!({"op": "add"}), json!([{"op": "frobnicate", "path": "/a"}])] {
            let err = json_patch(&json!({}), &body).unwrap_err();
            assert!(matches!(err, Error::BadRequest(_)), "{body}: {err:?}");
        }
    }

    #[test]
    fn p2_operation_on_a_missing_path_is_invalid() {
        let err = json_patch(&json!({}), &json!([{"op": "remove", "path": "/nope"}])).unwrap_err();
        assert!(matches!(err, Error::PatchNotApplicable(_)), "{err:?}");
    }

    #[test]
    fn p4_status_subresource_apply_changes_only_status() {
        let live =
            json!({"apiVersion": "v1", "kind": "X", "metadata": {"name": "w"}, "spec": {"table": "a"}});
        let applied = json!({"apiVersion": "v1", "kind": "X", "metadata": {"name": "w"},
            "spec": {"table": "changed"}, "status": {"ready": true}});
        let out = server_side_apply(&ApplyRequest {
            live: Some(&live),
            applied: &applied,
            manager: "ctrl",
            force: false,
            subresource: Some("status"),
            schema: crate::patch::ObjectSchema::Custom(None),
            status_subresource: false,
            now: "2026-11-22T00:00:00Z",
        })
        .unwrap();
        assert_eq!(out["spec"]["table"], "a");
        assert_eq!(out["status"]["ready"], true);
        let entry = &out["metadata"]["managedFields"][0];
        assert_eq!(entry["subresource"], "status");
        assert_eq!(entry["fieldsV1"], json!({"f:status": {".": {}, "f:ready": {}}}));
    }
}
