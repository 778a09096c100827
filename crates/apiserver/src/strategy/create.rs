//! A create in two stages around mutating admission. [`prepare`]: the object as the request makes it
//! (checked against the path, named, its stored form decoded and defaulted, its managedFields entry
//! recorded), what mutating webhooks see. [`finish`]: decoded again when a webhook changed it,
//! validated, and given the identity the server sets (uid, creation time, generation).

use apimachinery::{meta, resource::ResourceType, stored_form};
use serde_json::{Value, json};

use super::{decode, managed_fields, server_fields, validate};
use crate::{
    error::{Error, Result},
    kinds,
    store::{Create, WriteOptions, generated_name},
};

/// The first stage of a create of `object` in `namespace`.
pub fn prepare(
    rt: &ResourceType,
    namespace: &str,
    mut object: Value,
    options: &WriteOptions,
) -> Result<Create> {
    if !object.is_object() {
        return Err(Error::BadRequest(
            "the body of the request must be a JSON object".into(),
        ));
    }
    decode::check_type_meta(rt, &object)?;
    let namespace = if rt.namespaced { namespace } else { "" };
    if rt.namespaced {
        let body_namespace = meta::str_at(&object, "/metadata/namespace").unwrap_or("");
        if !body_namespace.is_empty() && body_namespace != namespace {
            return Err(Error::BadRequest(
                "the namespace of the provided object does not match the namespace sent on the request"
                    .into(),
            ));
        }
    }
    let metadata = meta::metadata_mut(&mut object);
    if rt.namespaced {
        metadata.insert("namespace".into(), json!(namespace));
    } else {
        metadata.remove("namespace");
    }
    let has_name = metadata
        .get("name")
        .and_then(Value::as_str)
        .is_some_and(|n| !n.is_empty());
    if !has_name
        && let Some(prefix) = metadata
            .get("generateName")
            .and_then(Value::as_str)
            .map(str::to_owned)
    {
        metadata.insert(
            "name".into(),
            json!(format!("{prefix}{}", generated_name::random_suffix())),
        );
    }
    for field in [
        "uid",
        "resourceVersion",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "generation",
    ] {
        metadata.remove(field);
    }
    let name = meta::name(&object).to_owned();
    // managedFields name the fields of the version the client wrote, not of the stored one.
    let sent_as_events_v1 = stored_form::is_events_v1(rt).then(|| object.clone());
    let object = stored_form::to_storage(rt, object);
    let (mut object, warnings) = decode::decode(rt, &name, object, options)?;
    if let Some(manager) = &options.field_manager {
        match sent_as_events_v1 {
            Some(sent) => kinds::events::record_create_v1(sent, &mut object, manager),
            None => managed_fields::record_update(rt, None, &mut object, manager, None),
        }
    }
    Ok(Create {
        namespace: namespace.to_owned(),
        name,
        object,
        warnings,
    })
}

/// The last stage of a create: `mutated` when a mutating webhook changed the prepared object.
pub fn finish(rt: &ResourceType, create: &mut Create, mutated: bool) -> Result<()> {
    let object = &mut create.object;
    if mutated {
        *object = decode::decode(rt, &create.name, std::mem::take(object), &decode::quietly())?.0;
    }
    if rt.status_subresource
        && !rt.is_builtin()
        && let Some(map) = object.as_object_mut()
    {
        // A custom resource's status is written through `/status` only.
        map.remove("status");
    }
    validate::validate(rt, &create.name, object, None)?;
    let metadata = meta::metadata_mut(object);
    metadata.insert("uid".into(), json!(uuid::Uuid::new_v4().to_string()));
    metadata.insert("creationTimestamp".into(), json!(meta::now_rfc3339()));
    server_fields::set_generation(rt, object, 1);
    Ok(())
}
