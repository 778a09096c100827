//! Decoding, the stage before mutating admission: the body checked against the path and the kind,
//! then pruned of unknown fields (warned of or refused, as `fieldValidation` says), decoded into a
//! built-in kind's Go type, and defaulted. Validation comes later, after mutating admission.

use apimachinery::{meta, resource::ResourceType};
use serde_json::Value;

use super::typed;
use crate::{
    error::{Error, Result},
    kinds,
    store::{FieldValidation, WriteOptions},
};

/// `object` pruned, decoded and defaulted as `rt`'s objects are stored, with the Warning texts of its
/// unknown and repeated fields; 400 when it does not decode (or, under Strict, has such fields).
pub fn decode(
    rt: &ResourceType,
    name: &str,
    mut object: Value,
    options: &WriteOptions,
) -> Result<(Value, Vec<String>)> {
    let mut warnings = Vec::new();
    if let Some(schema) = &rt.schema {
        let unknown = schema.prune(&mut object);
        warnings = field_problems(rt, options, &unknown, &object)?;
        schema.apply_defaults(&mut object);
        coerce_object_meta(&mut object);
    } else if rt.is_builtin() {
        let unknown = match typed::check(rt, &mut object) {
            Ok(unknown) => unknown,
            Err(typed::Problem::WrongType(message)) => {
                return Err(undecodable(rt, message, &object));
            }
        };
        warnings = field_problems(rt, options, &unknown, &object)?;
        apimachinery::defaults::apply_builtin_defaults(&rt.kind, &mut object)
            .map_err(|e| Error::from_machinery_about(e, rt, name))?;
        // Stored as its Go type prints it: the stored type's (Events written through events.k8s.io
        // are kept as core Events).
        let (api_version, kind) = apimachinery::stored_form::storage_type(rt);
        if let Some(mut shaped) = apimachinery::protobuf::go_shaped(&object, &api_version, kind) {
            // The version the client wrote names its managedFields entry.
            for field in ["apiVersion", "kind"] {
                if let (Some(sent), Some(map)) = (object.get(field), shaped.as_object_mut()) {
                    map.insert(field.into(), sent.clone());
                }
            }
            object = shaped;
        }
    }
    Ok((object, warnings))
}

/// The options to decode what a mutating webhook made of an object: pruned and defaulted again, its
/// unknown fields dropped without a word (the request's own were warned of already).
pub fn quietly() -> WriteOptions {
    WriteOptions {
        field_validation: FieldValidation::Ignore,
        ..WriteOptions::default()
    }
}

/// The duplicate and unknown fields of a write, as `fieldValidation` says: a 400 (Strict), the
/// `Warning` texts to send (Warn, the default) or nothing (Ignore).
fn field_problems(
    rt: &ResourceType,
    options: &WriteOptions,
    unknown: &[String],
    object: &Value,
) -> Result<Vec<String>> {
    // A built-in kind is decoded into its Go type, whose decoder notes each problem as it meets it;
    // a custom resource's repeated fields are found while decoding and its unknown ones by pruning.
    let in_document_order = match (&options.document, rt.schema.is_none()) {
        (Some(document), true) if !unknown.is_empty() || !options.duplicate_fields.is_empty() => {
            apimachinery::decoding::typed_field_problems(document, unknown)
        }
        _ => None,
    };
    let problems = in_document_order
        .unwrap_or_else(|| apimachinery::decoding::field_problems(&options.duplicate_fields, unknown));
    match options.field_validation {
        FieldValidation::Strict if !problems.is_empty() => Err(undecodable(
            rt,
            format!("strict decoding error: {}", problems.join(", ")),
            object,
        )),
        FieldValidation::Strict | FieldValidation::Ignore => Ok(Vec::new()),
        // The keys an apply body repeats are warned of as the YAML decoder words them.
        FieldValidation::Warn => Ok(problems
            .into_iter()
            .chain(options.repeated_yaml_keys.clone())
            .collect()),
    }
}

/// How kube-apiserver begins the message of a body it cannot decode into the kind's Go type.
fn undecodable(rt: &ResourceType, detail: String, object: &Value) -> Error {
    Error::Undecodable {
        kind: rt.kind.clone(),
        version: rt.version.clone(),
        detail,
        object: object.to_string(),
    }
}

pub fn check_type_meta(rt: &ResourceType, object: &Value) -> Result<()> {
    if let Some(kind) = object.get("kind").and_then(Value::as_str) {
        let api_version = object
            .get("apiVersion")
            .and_then(Value::as_str)
            .unwrap_or_default();
        // Asked only of a body that names another version: the kinds' table is not read on every write.
        let any_version =
            || kind == rt.kind && kinds::of(rt).is_some_and(|own| own.takes_either_api_version());
        if kind != rt.kind && rt.is_builtin() && apimachinery::protobuf::knows(api_version, kind) {
            // kube-apiserver decodes the body as the kind it names, then fails to convert it into the
            // path's internal type (Go package `core` for the core group, else the group's first label).
            let version = api_version.rsplit('/').next().unwrap_or(api_version);
            let internal = match rt.group.split('.').next().unwrap_or_default() {
                "" => "core",
                group => group,
            };
            return Err(Error::BadRequest(format!(
                "{kind} in version {version:?} cannot be handled as a {}: converting ({version}.{kind}) to ({internal}.{}): unknown conversion",
                rt.kind, rt.kind
            )));
        }
        if (kind != rt.kind || (api_version != rt.api_version() && !api_version.is_empty())) && !any_version()
        {
            return Err(Error::BadRequest(format!(
                "the API version in the data ({api_version}) does not match the expected API version ({})",
                rt.api_version()
            )));
        }
    }
    Ok(())
}

pub fn check_body_identity(rt: &ResourceType, namespace: &str, name: &str, object: &Value) -> Result<()> {
    let body_name = meta::str_at(object, "/metadata/name").unwrap_or(name);
    if body_name != name {
        return Err(Error::BadRequest(format!(
            "the name of the object ({body_name}) does not match the name on the URL ({name})"
        )));
    }
    if rt.namespaced {
        let body_namespace = meta::str_at(object, "/metadata/namespace").unwrap_or(namespace);
        if !body_namespace.is_empty() && body_namespace != namespace {
            return Err(Error::BadRequest(
                "the namespace of the provided object does not match the namespace sent on the request"
                    .into(),
            ));
        }
    }
    Ok(())
}

/// A custom resource's metadata as kube-apiserver keeps it: decoded into Go's ObjectMeta and printed
/// again, so that empty lists and maps (`finalizers: []`) and unknown fields are gone, as they are
/// before the real server records managedFields or stores the object. Metadata that does not fit
/// ObjectMeta is left for validation to refuse.
fn coerce_object_meta(object: &mut Value) {
    let Some(metadata) = object.get("metadata") else {
        return;
    };
    if let Some(Value::Object(mut shaped)) = apimachinery::protobuf::go_shaped(metadata, "v1", "ObjectMeta") {
        shaped.remove("apiVersion");
        shaped.remove("kind");
        // The zero time Go prints for a metadata without one is no creation time.
        if shaped.get("creationTimestamp").is_some_and(Value::is_null) {
            shaped.remove("creationTimestamp");
        }
        object["metadata"] = Value::Object(shaped);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_body_of_another_built_in_kind_is_refused_as_go_fails_to_convert_it() {
        let config_maps = apimachinery::resource::builtins()
            .into_iter()
            .find(|rt| rt.group.is_empty() && rt.kind == "ConfigMap")
            .expect("ConfigMaps are served");
        let secret = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}});
        let refused = check_type_meta(&config_maps, &secret).unwrap_err();
        assert_eq!(
            refused.to_string(),
            r#"Secret in version "v1" cannot be handled as a ConfigMap: converting (v1.Secret) to (core.ConfigMap): unknown conversion"#
        );
        let config_map = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}});
        assert!(check_type_meta(&config_maps, &config_map).is_ok());
    }
}
