//! An applied configuration must fit its type: structured-merge-diff converts it to a typed value
//! before merging, and a field the type does not declare (where the type keeps no unknown fields)
//! fails the apply, whatever `fieldValidation` says. kube-apiserver walks its Go maps in random order
//! and stops at an object's first undeclared key, so which of several it names varies from one
//! request to the next; every one of them is named here, in sorted order, one of its possible answers.

use serde_json::Value;

use super::{
    conflicts::print_path,
    field_set::{Path, field_key},
    typed::{Shape, Type},
};
use crate::protobuf::ListType;

/// The paths (as structured-merge-diff prints them) of the fields of `value` its type lacks.
pub(super) fn undeclared_fields(ty: &Type<'_>, value: &Value) -> Vec<String> {
    let mut found = Vec::new();
    walk(ty, value, &mut Vec::new(), &mut found);
    found
}

fn walk(ty: &Type<'_>, value: &Value, path: &mut Path, found: &mut Vec<String>) {
    match (ty.shape(Some(value)), value) {
        (Shape::Object { .. }, Value::Object(map)) => {
            for (key, child) in map {
                path.push(field_key(key));
                match ty.admits(key) {
                    true => walk(&ty.child(key), child, path, found),
                    false => found.push(print_path(path)),
                }
                path.pop();
            }
        }
        (Shape::List(list), Value::Array(items)) => {
            let item_type = ty.item();
            for (index, item) in items.iter().enumerate() {
                let key = match list {
                    ListType::Atomic => None,
                    _ => ty.item_key(&list, item),
                };
                path.push(key.unwrap_or_else(|| format!("i:{index}")));
                walk(&item_type, item, path, found);
                path.pop();
            }
        }
        _ => {}
    }
}

/// How kube-apiserver answers an apply whose configuration does not fit its type.
pub(super) fn undeclared_message(applied: &Value, undeclared: &[String]) -> String {
    let text = |pointer: &str| {
        applied
            .pointer(pointer)
            .and_then(Value::as_str)
            .unwrap_or_default()
    };
    let (group, version) = text("/apiVersion")
        .rsplit_once('/')
        .unwrap_or(("", text("/apiVersion")));
    let errors: Vec<String> = undeclared
        .iter()
        .map(|path| format!("{path}: field not declared in schema"))
        .collect();
    let errors = match errors.as_slice() {
        [one] => one.clone(),
        many => format!("errors:\n  {}", many.join("\n  ")),
    };
    format!(
        "failed to create typed patch object ({}/{}; {group}/{version}, Kind={}): {errors}",
        text("/metadata/namespace"),
        text("/metadata/name"),
        text("/kind"),
    )
}
