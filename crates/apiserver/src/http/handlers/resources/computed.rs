//! Kinds answered from what the server knows of itself rather than from stored objects (component
//! statuses, whose objects their kind computes): get and list only.

use apimachinery::resource::ResourceType;
use axum::{http::Method, response::Response};
use serde_json::{Value, json};

use super::answers::{list_body, represent_one, shaped_list, table};
use crate::{
    error::{Error, Result},
    http::{
        path::ResourcePath,
        request::Call,
        respond::{self, Representation},
    },
    kinds,
    store::subject,
};

/// Every object of the built-in `rt`, when its kind computes them rather than stores them.
pub fn objects(rt: &ResourceType) -> Option<Vec<Value>> {
    if !rt.is_builtin() {
        return None;
    }
    kinds::of(rt).and_then(|kind| kind.computed_objects())
}

/// Answers a request for the computed `objects` of `rt`: read only.
pub fn serve(rt: &ResourceType, objects: Vec<Value>, target: &ResourcePath, call: &Call) -> Result<Response> {
    match (
        &call.method,
        target.name.as_deref(),
        target.subresource.as_deref(),
    ) {
        (&Method::GET, None, None) => {
            let refs: Vec<&Value> = objects.iter().collect();
            if respond::negotiate(&call.accept) == Representation::Table {
                return Ok(respond::json(200, &table(rt, &refs, "", None, call)?));
            }
            let mut list = list_body(rt, objects, "", None);
            list["metadata"] = json!({});
            Ok(respond::json(200, &shaped_list(&list, call)))
        }
        (&Method::GET, Some(name), None) => {
            let object = objects
                .into_iter()
                .find(|o| o.pointer("/metadata/name").and_then(Value::as_str) == Some(name))
                .ok_or_else(|| Error::NotFound(subject(rt, name)))?;
            represent_one(rt, object, call)
        }
        (_, _, Some(_)) => Err(Error::UnknownResource),
        _ => Err(Error::MethodNotAllowed(
            "the server does not allow this method on the requested resource".into(),
        )),
    }
}
