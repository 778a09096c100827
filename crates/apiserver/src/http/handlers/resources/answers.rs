//! What resource endpoints answer with: an object, a list, or their Table or metadata forms, as the
//! client asked; a deleted object or the `Success` Status.

use apimachinery::{
    meta,
    resource::ResourceType,
    table::{Printer, in_version, render_table},
};
use axum::response::Response;
use serde_json::{Value, json};

use crate::error::Result;
use crate::http::{
    request::{Call, include_object},
    respond::{self, Representation},
};

pub fn represent_one(rt: &ResourceType, object: Value, call: &Call) -> Result<Response> {
    if respond::negotiate(&call.accept) == Representation::Table {
        let rv = meta::resource_version(&object).unwrap_or_default().to_owned();
        return Ok(respond::json(200, &table(rt, &[&object], &rv, None, call)?));
    }
    if respond::negotiate(&call.accept) == Representation::Metadata {
        return Ok(respond::json(200, &respond::partial_metadata(&object)));
    }
    Ok(respond::json(200, &object))
}

/// `list`, or its `PartialObjectMetadataList` when the client asked for metadata alone.
pub fn shaped_list(list: &Value, call: &Call) -> Value {
    match respond::negotiate(&call.accept) {
        Representation::Metadata => respond::partial_metadata_list(list),
        _ => list.clone(),
    }
}

pub fn table(
    rt: &ResourceType,
    rows: &[&Value],
    resource_version: &str,
    token: Option<&str>,
    call: &Call,
) -> Result<Value> {
    let table = render_table(
        &Printer::for_type(rt),
        rows,
        true,
        include_object(call)?,
        resource_version,
        token,
        jiff::Timestamp::now(),
    );
    Ok(in_version(table, respond::table_version(&call.accept)))
}

/// What a create, update or patch answers with `code`: the object written, or its Table when the
/// client asked for one (a dry-run create has no resourceVersion yet, so neither has its Table).
pub fn represent_written(rt: &ResourceType, code: u16, object: &Value, call: &Call) -> Result<Response> {
    if respond::negotiate(&call.accept) == Representation::Table {
        let rv = meta::resource_version(object).unwrap_or_default().to_owned();
        return Ok(respond::json(code, &table(rt, &[object], &rv, None, call)?));
    }
    if respond::negotiate(&call.accept) == Representation::Metadata {
        return Ok(respond::json(code, &respond::partial_metadata(object)));
    }
    Ok(respond::json(code, object))
}

/// What a DELETE of one object answers: the object while it is still there (finalizers, foreground
/// deletion) or when its kind's registry returns deleted objects (as the kinds' table says), and
/// otherwise a `Success` Status, as the real server's registries do for built-in kinds and custom
/// resources alike.
pub fn deleted(rt: &ResourceType, name: &str, object: Value) -> Value {
    let returns_object =
        rt.is_builtin() && crate::kinds::of(rt).is_some_and(|kind| kind.returns_deleted_object());
    if meta::is_deleting(&object) || returns_object {
        return object;
    }
    let mut details = crate::error::status_details(name, &rt.group, &rt.plural);
    if let Some(uid) = object.pointer("/metadata/uid") {
        details["uid"] = uid.clone();
    }
    json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "details": details})
}

pub fn list_body(
    rt: &ResourceType,
    items: Vec<Value>,
    resource_version: &str,
    page: Option<(&str, Option<usize>)>,
) -> Value {
    let mut metadata = json!({"resourceVersion": resource_version});
    match page {
        Some((token, remaining)) => {
            metadata["continue"] = json!(token);
            if let Some(remaining) = remaining {
                metadata["remainingItemCount"] = json!(remaining);
            }
        }
        // Lists of custom resources always carry the (empty) continue token.
        None if !rt.is_builtin() => metadata["continue"] = json!(""),
        None => {}
    }
    json!({"apiVersion": rt.api_version(), "kind": rt.list_kind(), "metadata": metadata, "items": list_items(rt, items)})
}

/// A list's items as the real server writes them: built-in objects without `apiVersion` and `kind`
/// (the list says both once), custom resources with them (each is a whole unstructured object).
fn list_items(rt: &ResourceType, mut items: Vec<Value>) -> Vec<Value> {
    if rt.is_builtin() {
        for item in &mut items {
            if let Some(map) = item.as_object_mut() {
                map.remove("apiVersion");
                map.remove("kind");
            }
        }
    }
    items
}
