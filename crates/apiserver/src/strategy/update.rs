//! An update in two stages around mutating admission, as a create is. [`prepare`]: the object the
//! request makes of the current one (what a `/status` write takes, the server's fields kept, decoded
//! and defaulted, the generation counted, the managedFields entry recorded), what mutating webhooks
//! see. [`finish`]: decoded again when a webhook changed it, and validated against the current object.

use apimachinery::{meta, resource::ResourceType, stored_form};
use serde_json::{Value, json};

use super::{decode, managed_fields, server_fields, validate};
use crate::{
    error::{Error, Result},
    store::{WriteOptions, subject},
};

/// What an update request must say of itself before anything is prepared: the name and namespace of
/// the path, and for a custom resource the resourceVersion it replaces.
pub fn check_request(rt: &ResourceType, namespace: &str, name: &str, object: &Value) -> Result<()> {
    decode::check_body_identity(rt, namespace, name, object)?;
    if meta::resource_version(object).is_none() && !rt.is_builtin() {
        // The custom resource handler names the resource here (`widgets.group`), not the kind.
        return Err(Error::Invalid {
            kind_group: rt.qualified_plural(),
            subject: subject(rt, name),
            causes: vec![apimachinery::FieldCause::new(
                "FieldValueInvalid",
                "metadata.resourceVersion",
                "Invalid value: 0x0: must be specified for an update",
            )],
        });
    }
    Ok(())
}

/// The first stage of an update of `old` (the current object, as the request's version shows it) by
/// `new`: the object it would store, and the Warning texts of the request.
#[allow(clippy::too_many_arguments)]
pub fn prepare(
    rt: &ResourceType,
    namespace: &str,
    name: &str,
    old: &Value,
    new: Value,
    options: &WriteOptions,
    status_only: bool,
) -> Result<(Value, Vec<String>)> {
    if !new.is_object() {
        return Err(Error::BadRequest(
            "the body of the request must be a JSON object".into(),
        ));
    }
    decode::check_type_meta(rt, &new)?;
    if let Some(rv) = meta::resource_version(&new)
        && Some(rv) != meta::resource_version(old)
    {
        return Err(Error::Conflict {
            subject: subject(rt, name),
            reason:
                "the object has been modified; please apply your changes to the latest version and try again"
                    .into(),
        });
    }
    let new = stored_form::to_storage(rt, new);
    let mut next = if status_only {
        // `/status` takes the status and, as the kind's strategy allows, the metadata (C7).
        let mut next = apimachinery::status_update::status_update(rt, old, &new);
        if crate::kinds::of(rt).is_some_and(|kind| kind.status_takes_annotations()) {
            let annotations = new.pointer("/metadata/annotations").cloned();
            let metadata = meta::metadata_mut(&mut next);
            match annotations {
                Some(annotations) => metadata.insert("annotations".into(), annotations),
                None => metadata.remove("annotations"),
            };
        }
        next
    } else {
        let mut next = new;
        if rt.status_subresource {
            match old.get("status") {
                Some(status) => next["status"] = status.clone(),
                None => {
                    if let Some(map) = next.as_object_mut() {
                        map.remove("status");
                    }
                }
            }
        }
        next
    };
    server_fields::keep_server_fields(&mut next, old);
    let metadata = meta::metadata_mut(&mut next);
    metadata.insert("name".into(), json!(name));
    if rt.namespaced {
        metadata.insert("namespace".into(), json!(namespace));
    }
    let (mut next, warnings) = decode::decode(rt, name, next, options)?;
    count_generation(rt, old, &mut next, status_only);
    if let Some(manager) = &options.field_manager {
        let subresource = options.subresource.or(status_only.then_some("status"));
        managed_fields::record_update(rt, Some(old), &mut next, manager, subresource);
    }
    Ok((next, warnings))
}

/// The last stage of an update of `old` to `next`: `mutated` when a mutating webhook changed it.
pub fn finish(
    rt: &ResourceType,
    name: &str,
    old: &Value,
    next: &mut Value,
    mutated: bool,
    status_only: bool,
) -> Result<()> {
    if mutated {
        let mut decoded = decode::decode(rt, name, std::mem::take(next), &decode::quietly())?.0;
        // What only the server sets stays as it was, whatever a webhook made of it.
        server_fields::keep_server_fields(&mut decoded, old);
        count_generation(rt, old, &mut decoded, status_only);
        *next = decoded;
    }
    validate::validate(rt, name, next, Some(old))
}

/// One more generation when what the kind counts changed (a custom resource's spec), except
/// through `/status`.
fn count_generation(rt: &ResourceType, old: &Value, next: &mut Value, status_only: bool) {
    if !status_only && server_fields::counts_generation(rt, old, next) {
        let generation = meta::generation(old) + 1;
        meta::metadata_mut(next).insert("generation".into(), json!(generation));
    }
}
