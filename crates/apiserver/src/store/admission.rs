//! Admission of a write: type and identity checks, field validation, pruning, defaulting and
//! validation, and the kind-specific steps that set server-owned fields. Each says 4xx or lets the
//! object through as it will be stored.

use std::sync::Arc;

use apimachinery::resource::ResourceType;
use serde_json::Value;

use super::{FieldValidation, Refusal, State, Store, WriteOptions, generated_name, lifecycle, meta, subject};
use crate::error::{Error, Result};

pub(super) fn kind_group(rt: &ResourceType) -> String {
    if rt.group.is_empty() {
        rt.kind.clone()
    } else {
        format!("{}.{}", rt.kind, rt.group)
    }
}

pub(super) fn invalid(rt: &ResourceType, name: &str, causes: Vec<apimachinery::FieldCause>) -> Error {
    Error::Invalid {
        kind_group: kind_group(rt),
        subject: subject(rt, name),
        causes,
    }
}

pub(super) fn machinery(rt: &ResourceType, name: &str, error: apimachinery::Error) -> Error {
    Error::from_machinery(error, &kind_group(rt), &subject(rt, name))
}

impl Store {
    /// Validation, defaulting and pruning (V2, V3, V5, B4, B5): the object as it will be stored, or 422.
    pub(super) fn admit(
        &self,
        rt: &Arc<ResourceType>,
        name: &str,
        mut object: Value,
        old: Option<&Value>,
        options: &WriteOptions,
    ) -> Result<(Value, Vec<String>)> {
        let mut warnings = Vec::new();
        if let Some(schema) = &rt.schema {
            let unknown = schema.prune(&mut object);
            warnings = field_problems(rt, options, &unknown, &object)?;
            schema.apply_defaults(&mut object);
            coerce_object_meta(&mut object);
            // The stored object feeds the CRD's transition rules (`oldSelf`, V4).
            let causes = match options.before_mutation {
                true => Vec::new(),
                false => schema.validate_update(&object, old),
            };
            if !causes.is_empty() {
                return Err(invalid(rt, name, causes));
            }
        } else if rt.is_builtin() {
            let unknown = match super::typed::check(rt, &mut object) {
                Ok(unknown) => unknown,
                Err(super::typed::Problem::WrongType(message)) => {
                    return Err(undecodable(rt, message, &object));
                }
            };
            warnings = field_problems(rt, options, &unknown, &object)?;
            apimachinery::defaults::apply_builtin_defaults(&rt.kind, &mut object)
                .map_err(|e| machinery(rt, name, e))?;
            // Stored as its Go type prints it: the stored type's (Events written through
            // events.k8s.io are kept as core Events).
            let (api_version, kind) = lifecycle::storage_type(rt);
            if let Some(mut shaped) = apimachinery::protobuf::go_shaped(&object, &api_version, kind) {
                // The version the client wrote names its managedFields entry.
                for field in ["apiVersion", "kind"] {
                    if let (Some(sent), Some(map)) = (object.get(field), shaped.as_object_mut()) {
                        map.insert(field.into(), sent.clone());
                    }
                }
                object = shaped;
            }
            if let Some(old) = old.filter(|_| !options.before_mutation) {
                apimachinery::defaults::check_immutable(&rt.kind, old, &object)
                    .map_err(|e| machinery(rt, name, e))?;
            }
        }
        let causes = match options.before_mutation {
            true => Vec::new(),
            false => lifecycle::validate_common(rt, &object),
        };
        if !causes.is_empty() {
            return Err(invalid(rt, name, causes));
        }
        Ok((object, warnings))
    }

    pub(super) fn require_active_namespace(
        &self,
        state: &State,
        namespace: &str,
        rt: &ResourceType,
        name: &str,
    ) -> Result<()> {
        let stored = state
            .objects
            .get("/namespaces")
            .and_then(|all| all.get(&(String::new(), namespace.to_owned())));
        match stored {
            None => Err(Error::NotFound(crate::error::Subject {
                qualified_plural: "namespaces".into(),
                group: String::new(),
                plural: "namespaces".into(),
                name: namespace.to_owned(),
            })),
            Some(ns) if ns.is_deleting() => Err(Error::NamespaceTerminating {
                subject: subject(rt, name),
                namespace: namespace.to_owned(),
            }),
            Some(_) => Ok(()),
        }
    }

    /// Kind-specific steps on create (CRDs register, namespaces get their finalizer, Services an IP).
    pub(super) fn on_create(&self, state: &mut State, rt: &ResourceType, object: &mut Value) -> Result<()> {
        self.hooks
            .admit(state, rt, None, object, None)
            .map_err(|refusal| refused(rt, object, true, refusal))
    }

    pub(super) fn on_update(
        &self,
        state: &mut State,
        rt: &ResourceType,
        old: &Value,
        object: &mut Value,
        subresource: Option<&str>,
    ) -> Result<()> {
        self.hooks
            .admit(state, rt, Some(old), object, subresource)
            .map_err(|refusal| refused(rt, object, false, refusal))
    }
}

/// The error of a write (a create when `created`) the hooks refused: an invalid object is named by
/// its name, as validation names it; a policy's refusal of a create by its generateName (see
/// [`admitted_name`]).
fn refused(rt: &ResourceType, object: &Value, created: bool, refusal: Refusal) -> Error {
    match refusal {
        Refusal::Invalid(causes) => invalid(rt, meta::name(object), causes),
        Refusal::Forbidden(message) => Error::AdmissionForbidden {
            subject: subject(
                rt,
                if created {
                    admitted_name(object)
                } else {
                    meta::name(object)
                },
            ),
            message,
        },
    }
}

/// The name kube-apiserver's admission errors give a created object: its generateName when the name
/// is generated from it, for admission runs before the name is generated there (so a controller's
/// refused creates all read alike, as a ReplicaSet's FailedCreate Events do).
fn admitted_name(object: &Value) -> &str {
    let name = meta::name(object);
    let generated_from = meta::str_at(object, "/metadata/generateName").filter(|prefix| {
        name.strip_prefix(prefix)
            .is_some_and(|suffix| suffix.len() == generated_name::SUFFIX_LEN)
    });
    generated_from.unwrap_or(name)
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

pub(super) fn check_type_meta(rt: &ResourceType, object: &Value) -> Result<()> {
    if let Some(kind) = object.get("kind").and_then(Value::as_str) {
        let api_version = object
            .get("apiVersion")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let events_alias = rt.plural == "events" && kind == "Event";
        if kind != rt.kind
            && !events_alias
            && rt.is_builtin()
            && apimachinery::protobuf::knows(api_version, kind)
        {
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
        if (kind != rt.kind || (api_version != rt.api_version() && !api_version.is_empty())) && !events_alias
        {
            return Err(Error::BadRequest(format!(
                "the API version in the data ({api_version}) does not match the expected API version ({})",
                rt.api_version()
            )));
        }
    }
    Ok(())
}

pub(super) fn check_body_identity(
    rt: &ResourceType,
    namespace: &str,
    name: &str,
    object: &Value,
) -> Result<()> {
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
