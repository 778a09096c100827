//! The managedFields entry a write records: an `Update` by its field manager, over the type of the
//! object as managedFields see it.

use apimachinery::{meta, patch, resource::ResourceType};
use serde_json::Value;

/// Records a write in `new`'s managedFields as an Update by `manager`, by the type of `rt`'s objects.
pub(crate) fn record_update(
    rt: &ResourceType,
    old: Option<&Value>,
    new: &mut Value,
    manager: &str,
    subresource: Option<&str>,
) {
    let now = meta::now_rfc3339();
    with_object_schema(rt, |schema| {
        let write = patch::UpdateWrite {
            manager,
            subresource,
            schema,
            status_subresource: rt.status_subresource,
            now: &now,
        };
        patch::record_update(old, new, &write);
    });
}

/// Runs `f` with the type of `rt`'s objects as managedFields see it: a built-in's Go type at the
/// version it is stored in, a custom resource's schema.
pub(crate) fn with_object_schema<R>(rt: &ResourceType, f: impl FnOnce(patch::ObjectSchema<'_>) -> R) -> R {
    let (api_version, kind) = apimachinery::stored_form::storage_type(rt);
    if rt.is_builtin() {
        f(patch::ObjectSchema::BuiltIn {
            api_version: &api_version,
            kind,
        })
    } else {
        f(patch::ObjectSchema::Custom(rt.schema.as_deref()))
    }
}
