//! Create and update (main resource and `/status`), and what they set in motion (the hooks' follow-up
//! writes). Each write is prepared outside the store lock (decoding, admission, the
//! managedFields entry: what depends on the request and the object it replaces alone) and committed
//! under it, where it is checked against the store and becomes one atomic step with its own
//! resourceVersion; an update whose object changed in between is prepared again. Each public method
//! ends in [`Store::settle`], which with a data dir answers only once the step is on disk.

use std::sync::Arc;

use apimachinery::{patch, resource::ResourceType};
use serde_json::{Value, json};

use super::{
    State, Store, WriteOptions, Written,
    admission::{check_body_identity, check_type_meta, invalid},
    generated_name, lifecycle, meta, subject,
};
use crate::error::{Error, Result};

impl Store {
    pub fn create(
        &self,
        rt: &Arc<ResourceType>,
        namespace: &str,
        object: Value,
        options: &WriteOptions,
    ) -> Result<Written> {
        // Admission depends on the request alone, so it runs before the write lock is taken: concurrent
        // writers decode, validate and record managedFields in parallel, and the lock covers only what
        // reads or changes the store. The namespace is looked at first, as NamespaceLifecycle admits
        // before validation does, and again under the lock.
        if rt.namespaced {
            self.require_active_namespace(&self.lock(), namespace, rt, meta::name(&object))?;
        }
        let prepared = self.prepare_create(rt, namespace, object, options)?;
        let mut state = self.write_lock();
        let result = self.commit_create(&mut state, rt, prepared, options);
        self.settle(state, result)
    }

    pub fn update(
        &self,
        rt: &Arc<ResourceType>,
        namespace: &str,
        name: &str,
        object: Value,
        options: &WriteOptions,
        status_only: bool,
    ) -> Result<Written> {
        // As a create, admitted outside the lock: against the object as read under a first lock, and
        // stored under a second if no other write came between; otherwise admitted again against
        // the newer object. Under contention on one object the loop repeats what was admitted, but
        // never holds the lock while it admits.
        loop {
            let read = Self::stored_object(&self.lock(), rt, namespace, name)
                .cloned()
                .ok_or_else(|| Error::NotFound(subject(rt, name)))?;
            let old = options.current.clone().unwrap_or_else(|| read.decode());
            check_body_identity(rt, namespace, name, &object)?;
            if meta::resource_version(&object).is_none() && !rt.is_builtin() {
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
            let prepared =
                self.prepare_update(rt, namespace, name, old, object.clone(), options, status_only)?;
            let mut state = self.write_lock();
            if !Self::stored_object(&state, rt, namespace, name).is_some_and(|now| now.is_same_version(&read))
            {
                continue;
            }
            let result = self.commit_update(&mut state, rt, namespace, name, prepared, options);
            return self.settle(state, result);
        }
    }

    /// A create under the lock the caller holds (emulated controllers, apply creating an object).
    pub(crate) fn create_locked(
        &self,
        state: &mut State,
        rt: &Arc<ResourceType>,
        namespace: &str,
        object: Value,
        options: &WriteOptions,
    ) -> Result<Written> {
        if rt.namespaced {
            self.require_active_namespace(state, namespace, rt, meta::name(&object))?;
        }
        let prepared = self.prepare_create(rt, namespace, object, options)?;
        self.commit_create(state, rt, prepared, options)
    }

    /// Everything of a create that does not read the store: identity, admission, the server's
    /// metadata and the managedFields entry.
    fn prepare_create(
        &self,
        rt: &Arc<ResourceType>,
        namespace: &str,
        object: Value,
        options: &WriteOptions,
    ) -> Result<PreparedCreate> {
        let mut object = object;
        if !object.is_object() {
            return Err(Error::BadRequest(
                "the body of the request must be a JSON object".into(),
            ));
        }
        check_type_meta(rt, &object)?;
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
        {
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
        }
        let name = meta::name(&object).to_owned();
        // managedFields name the fields of the version the client wrote, not of the stored one.
        let sent_as_events_v1 = lifecycle::is_events_v1(rt).then(|| object.clone());
        let object = lifecycle::to_storage(rt, object);
        let (mut object, warnings) = self.admit(rt, &name, object, None, options)?;
        if rt.status_subresource
            && !rt.is_builtin()
            && let Some(map) = object.as_object_mut()
        {
            map.remove("status");
        }
        let metadata = meta::metadata_mut(&mut object);
        metadata.insert("uid".into(), json!(uuid::Uuid::new_v4().to_string()));
        metadata.insert("creationTimestamp".into(), json!(meta::now_rfc3339()));
        lifecycle::set_generation(rt, &mut object, 1);
        if let Some(manager) = &options.field_manager {
            match sent_as_events_v1 {
                Some(sent) => record_event_v1(sent, &mut object, manager),
                None => record_update(rt, None, &mut object, manager, None),
            }
        }
        Ok(PreparedCreate {
            namespace: namespace.to_owned(),
            name,
            object,
            warnings,
        })
    }

    /// The steps of a create that read or change the store.
    fn commit_create(
        &self,
        state: &mut State,
        rt: &Arc<ResourceType>,
        prepared: PreparedCreate,
        options: &WriteOptions,
    ) -> Result<Written> {
        let PreparedCreate {
            namespace,
            name,
            mut object,
            warnings,
        } = prepared;
        if rt.namespaced {
            self.require_active_namespace(state, &namespace, rt, &name)?;
        }
        if Self::stored_object(state, rt, &namespace, &name).is_some() {
            return Err(Error::AlreadyExists(subject(rt, &name)));
        }
        self.on_create(state, rt, &mut object)?;
        if options.dry_run {
            return Ok(Written {
                object: lifecycle::present(rt, &object),
                warnings,
                created: true,
            });
        }
        let stored = self.put(state, rt, &namespace, &name, object, None);
        self.hooks
            .after_write(self, state, rt, &namespace, &name, &[], &stored);
        Ok(Written {
            object: lifecycle::present(rt, &stored),
            warnings,
            created: true,
        })
    }

    /// An update under the lock the caller holds (patches, emulated controllers).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn update_locked(
        &self,
        state: &mut State,
        rt: &Arc<ResourceType>,
        namespace: &str,
        name: &str,
        old: Value,
        new: Value,
        options: &WriteOptions,
        status_only: bool,
    ) -> Result<Written> {
        let prepared = self.prepare_update(rt, namespace, name, old, new, options, status_only)?;
        self.commit_update(state, rt, namespace, name, prepared, options)
    }

    /// Everything of an update that depends on the object it replaces alone: the stored fields kept,
    /// admission, generation and the managedFields entry.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn prepare_update(
        &self,
        rt: &Arc<ResourceType>,
        namespace: &str,
        name: &str,
        old: Value,
        new: Value,
        options: &WriteOptions,
        status_only: bool,
    ) -> Result<PreparedUpdate> {
        if !new.is_object() {
            return Err(Error::BadRequest(
                "the body of the request must be a JSON object".into(),
            ));
        }
        check_type_meta(rt, &new)?;
        if let Some(rv) = meta::resource_version(&new)
            && Some(rv) != meta::resource_version(&old)
        {
            return Err(Error::Conflict {
                    subject: subject(rt, name),
                    reason: "the object has been modified; please apply your changes to the latest version and try again"
                        .into(),
                });
        }
        let new = lifecycle::to_storage(rt, new);
        let mut next = if status_only {
            // `/status` takes the status and, as the kind's strategy allows, the metadata (C7).
            let mut next = apimachinery::status_update::status_update(rt, &old, &new);
            lifecycle::keep_server_fields(&mut next, &old);
            let metadata = meta::metadata_mut(&mut next);
            metadata.insert("name".into(), json!(name));
            if rt.namespaced {
                metadata.insert("namespace".into(), json!(namespace));
            }
            if lifecycle::status_takes_annotations(rt) {
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
            lifecycle::keep_server_fields(&mut next, &old);
            let metadata = meta::metadata_mut(&mut next);
            metadata.insert("name".into(), json!(name));
            if rt.namespaced {
                metadata.insert("namespace".into(), json!(namespace));
            }
            next
        };
        if meta::is_deleting(&old) {
            let before = meta::finalizers(&old);
            let added: Vec<String> = meta::finalizers(&next)
                .into_iter()
                .filter(|f| !before.contains(f))
                .collect();
            if !added.is_empty() {
                let quoted: Vec<String> = added.iter().map(|f| format!("{f:?}")).collect();
                let cause = apimachinery::FieldCause::new(
                    "FieldValueForbidden",
                    "metadata.finalizers",
                    format!(
                        "Forbidden: no new finalizers can be added if the object is being deleted, found new finalizers []string{{{}}}",
                        quoted.join(", ")
                    ),
                );
                // kube-apiserver's validation reports it twice (once for the object, once for its
                // metadata), and so does its answer.
                return Err(invalid(rt, name, vec![cause.clone(), cause]));
            }
        }
        let (admitted, warnings) = self.admit(rt, name, next, Some(&old), options)?;
        next = admitted;
        if !status_only && meta::spec_part(&next) != meta::spec_part(&old) {
            lifecycle::set_generation(rt, &mut next, meta::generation(&old) + 1);
        }
        if let Some(manager) = &options.field_manager {
            let subresource = options.subresource.or(status_only.then_some("status"));
            record_update(rt, Some(&old), &mut next, manager, subresource);
        }
        Ok(PreparedUpdate { old, next, warnings })
    }

    /// The steps of an update that read or change the store.
    pub(super) fn commit_update(
        &self,
        state: &mut State,
        rt: &Arc<ResourceType>,
        namespace: &str,
        name: &str,
        prepared: PreparedUpdate,
        options: &WriteOptions,
    ) -> Result<Written> {
        let PreparedUpdate {
            old,
            mut next,
            warnings,
        } = prepared;
        self.on_update(state, rt, &old, &mut next, options.subresource)?;
        if unchanged(&old, &next) {
            // kube-apiserver skips no-op writes: no new resourceVersion, no event.
            return Ok(Written {
                object: lifecycle::present(rt, &old),
                warnings,
                created: false,
            });
        }
        if options.dry_run {
            return Ok(Written {
                object: lifecycle::present(rt, &next),
                warnings,
                created: false,
            });
        }
        if meta::is_deleting(&next) && meta::finalizers(&next).is_empty() && self.hooks.may_go(rt, &next) {
            let removed = self.remove(state, rt, namespace, name, next);
            return Ok(Written {
                object: lifecycle::present(rt, &removed),
                warnings,
                created: false,
            });
        }
        let previous_references = meta::owner_references(&old);
        let stored = self.put(state, rt, namespace, name, next, Some(old));
        self.hooks
            .after_write(self, state, rt, namespace, name, &previous_references, &stored);
        Ok(Written {
            object: lifecycle::present(rt, &stored),
            warnings,
            created: false,
        })
    }

    /// Lets the hooks set up what every cluster holds, on a store just opened.
    pub(super) fn populate(&self) {
        let _ = self.write_step(|state| {
            self.hooks.populate(self, state);
            Ok(())
        });
    }

    /// One step of writes made outside a request (a controller's, a timer's), under the lock and
    /// settled as a request's: with a data dir, it returns once the step is on disk.
    pub(crate) fn write_step<T>(&self, step: impl FnOnce(&mut State) -> Result<T>) -> Result<T> {
        let mut state = self.write_lock();
        let result = step(&mut state);
        self.settle(state, result)
    }
}

/// A create admitted outside the lock, waiting for it.
struct PreparedCreate {
    namespace: String,
    name: String,
    object: Value,
    warnings: Vec<String>,
}

/// An update admitted outside the lock, waiting for it.
pub(super) struct PreparedUpdate {
    old: Value,
    next: Value,
    warnings: Vec<String>,
}

/// Whether a write changes nothing but managedFields' times, which kube-apiserver does not store on
/// their own. A change of who owns what (a second applier of the same values) is a write.
fn unchanged(old: &Value, new: &Value) -> bool {
    let strip = |object: &Value| {
        let mut copy = object.clone();
        let metadata = meta::metadata_mut(&mut copy);
        metadata.remove("resourceVersion");
        if let Some(entries) = metadata.get_mut("managedFields").and_then(Value::as_array_mut) {
            for entry in entries.iter_mut().filter_map(Value::as_object_mut) {
                entry.remove("time");
            }
        }
        copy
    };
    strip(old) == strip(new)
}

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

/// Records the create of an events.k8s.io Event, stored as a core Event, by the fields of the
/// events.k8s.io Event the client sent.
fn record_event_v1(sent: Value, stored: &mut Value, manager: &str) {
    const API_VERSION: &str = "events.k8s.io/v1";
    let mut sent = apimachinery::protobuf::go_shaped(&sent, API_VERSION, "Event").unwrap_or(sent);
    let now = meta::now_rfc3339();
    let write = patch::UpdateWrite {
        manager,
        subresource: None,
        schema: patch::ObjectSchema::BuiltIn {
            api_version: API_VERSION,
            kind: "Event",
        },
        status_subresource: false,
        now: &now,
    };
    patch::record_update(None, &mut sent, &write);
    if let Some(entries) = sent.pointer("/metadata/managedFields").cloned() {
        meta::metadata_mut(stored).insert("managedFields".into(), entries);
    }
}

/// Runs `f` with the type of `rt`'s objects as managedFields see it: a built-in's Go type at the
/// version it is stored in, a custom resource's schema.
pub(super) fn with_object_schema<R>(rt: &ResourceType, f: impl FnOnce(patch::ObjectSchema<'_>) -> R) -> R {
    let (api_version, kind) = lifecycle::storage_type(rt);
    if rt.is_builtin() {
        f(patch::ObjectSchema::BuiltIn {
            api_version: &api_version,
            kind,
        })
    } else {
        f(patch::ObjectSchema::Custom(rt.schema.as_deref()))
    }
}
