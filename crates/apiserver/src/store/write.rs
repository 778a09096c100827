//! Every write: create, update (main resource and `/status`), patch, delete, and what they set in
//! motion (finalizers, garbage collection, namespace and CRD teardown). All of it runs under the store
//! lock, so each request is one atomic step with its own resourceVersion(s). Each public method ends
//! in [`Store::settle`], which with a data dir answers only once the step is on disk.

use std::sync::{Arc, OnceLock};

use apimachinery::{
    patch::{self, ApplyRequest, PatchType},
    resource::ResourceType,
};
use serde_json::{Value, json};

use super::{
    EventType, State, Store, StoredEvent, lifecycle, meta, object::StoredObject, storage_key, subject,
};
use crate::{
    emulated,
    error::{Error, Result},
};

/// How unknown fields are treated, in custom resources (V3) and built-ins alike.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum FieldValidation {
    Ignore,
    #[default]
    Warn,
    Strict,
}

/// The options of a write whose managedFields server-side apply has already recorded (as an `Apply`
/// entry): no `Update` entry is added on top.
fn recorded_by_apply(options: &WriteOptions) -> WriteOptions {
    WriteOptions {
        field_manager: None,
        ..options.clone()
    }
}

#[derive(Debug, Clone, Default)]
pub struct WriteOptions {
    pub dry_run: bool,
    pub field_manager: Option<String>,
    pub field_validation: FieldValidation,
    /// The paths of the fields the request body repeats (found while decoding it).
    pub duplicate_fields: Vec<String>,
    /// Server-side apply: take ownership of conflicting fields.
    pub force: bool,
}

/// `propagationPolicy` of a delete (C9, L5).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Propagation {
    #[default]
    Background,
    Foreground,
    Orphan,
}

#[derive(Debug, Clone, Default)]
pub struct DeleteOptions {
    pub dry_run: bool,
    pub propagation: Propagation,
    pub precondition_uid: Option<String>,
    pub precondition_resource_version: Option<String>,
}

/// The result of a write: the object as stored, `Warning` headers, and whether it was created.
#[derive(Debug)]
pub struct Written {
    pub object: Value,
    pub warnings: Vec<String>,
    pub created: bool,
}

fn kind_group(rt: &ResourceType) -> String {
    if rt.group.is_empty() {
        rt.kind.clone()
    } else {
        format!("{}.{}", rt.kind, rt.group)
    }
}

fn invalid(rt: &ResourceType, name: &str, causes: Vec<apimachinery::FieldCause>) -> Error {
    Error::Invalid {
        kind_group: kind_group(rt),
        subject: subject(rt, name),
        causes,
    }
}

fn machinery(rt: &ResourceType, name: &str, error: apimachinery::Error) -> Error {
    Error::from_machinery(error, &kind_group(rt), &subject(rt, name))
}

impl Store {
    pub fn create(
        &self,
        rt: &Arc<ResourceType>,
        namespace: &str,
        object: Value,
        options: &WriteOptions,
    ) -> Result<Written> {
        let mut state = self.lock();
        let result = self.create_locked(&mut state, rt, namespace, object, options);
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
        let mut state = self.lock();
        let result = self.update_checked(&mut state, rt, namespace, name, object, options, status_only);
        self.settle(state, result)
    }

    #[allow(clippy::too_many_arguments)]
    fn update_checked(
        &self,
        state: &mut State,
        rt: &Arc<ResourceType>,
        namespace: &str,
        name: &str,
        object: Value,
        options: &WriteOptions,
        status_only: bool,
    ) -> Result<Written> {
        let old = self
            .stored(state, rt, namespace, name)
            .ok_or_else(|| Error::NotFound(subject(rt, name)))?;
        check_body_identity(rt, namespace, name, &object)?;
        if meta::resource_version(&object).is_none() && !rt.is_builtin() {
            return Err(invalid(
                rt,
                name,
                vec![apimachinery::FieldCause::new(
                    "FieldValueInvalid",
                    "metadata.resourceVersion",
                    "Invalid value: 0x0: must be specified for an update",
                )],
            ));
        }
        self.update_locked(state, rt, namespace, name, old, object, options, status_only)
    }

    #[allow(clippy::too_many_arguments)]
    pub fn patch(
        &self,
        rt: &Arc<ResourceType>,
        namespace: &str,
        name: &str,
        patch_type: PatchType,
        body: &Value,
        options: &WriteOptions,
        status_only: bool,
    ) -> Result<Written> {
        let mut state = self.lock();
        let result = self.patch_checked(
            &mut state,
            rt,
            namespace,
            name,
            patch_type,
            body,
            options,
            status_only,
        );
        self.settle(state, result)
    }

    #[allow(clippy::too_many_arguments)]
    fn patch_checked(
        &self,
        state: &mut State,
        rt: &Arc<ResourceType>,
        namespace: &str,
        name: &str,
        patch_type: PatchType,
        body: &Value,
        options: &WriteOptions,
        status_only: bool,
    ) -> Result<Written> {
        let old = self.stored(state, rt, namespace, name);
        let Some(old) = old else {
            if patch_type != PatchType::Apply {
                return Err(Error::NotFound(subject(rt, name)));
            }
            // Server-side apply creates what is missing (P4).
            check_apply_identity(rt, body)?;
            let manager = options.field_manager.as_deref().unwrap_or_default();
            let now = meta::now_rfc3339();
            let request = ApplyRequest {
                live: None,
                applied: body,
                manager,
                force: options.force,
                subresource: status_only.then_some("status"),
                builtin_kind: rt.is_builtin().then_some(rt.kind.as_str()),
                now: &now,
            };
            let mut object = patch::server_side_apply(&request).map_err(|e| machinery(rt, name, e))?;
            meta::metadata_mut(&mut object).insert("name".into(), json!(name));
            return self.create_locked(state, rt, namespace, object, &recorded_by_apply(options));
        };
        let live = lifecycle::present(rt, &old);
        let patched = match patch_type {
            PatchType::Merge => patch::merge_patch(&live, body),
            PatchType::Json => patch::json_patch(&live, body),
            PatchType::Strategic if !rt.is_builtin() => {
                return Err(Error::UnsupportedMediaType(
                    "the body of the request was in an unknown format - accepted media types include: \
                     application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml"
                        .to_string(),
                ));
            }
            PatchType::Strategic => patch::strategic_merge_patch(&live, body, &rt.kind),
            PatchType::Apply => {
                check_apply_identity(rt, body)?;
                let now = meta::now_rfc3339();
                patch::server_side_apply(&ApplyRequest {
                    live: Some(&live),
                    applied: body,
                    manager: options.field_manager.as_deref().unwrap_or_default(),
                    force: options.force,
                    subresource: status_only.then_some("status"),
                    builtin_kind: rt.is_builtin().then_some(rt.kind.as_str()),
                    now: &now,
                })
            }
        }
        .map_err(|e| machinery(rt, name, e))?;
        check_body_identity(rt, namespace, name, &patched)?;
        let options = match patch_type {
            PatchType::Apply => &recorded_by_apply(options),
            _ => options,
        };
        self.update_locked(state, rt, namespace, name, old, patched, options, status_only)
            .map_err(Error::for_patch)
    }

    pub fn delete(
        &self,
        rt: &Arc<ResourceType>,
        namespace: &str,
        name: &str,
        options: &DeleteOptions,
    ) -> Result<Value> {
        let mut state = self.lock();
        let result = self.delete_checked(&mut state, rt, namespace, name, options);
        self.settle(state, result)
    }

    fn delete_checked(
        &self,
        state: &mut State,
        rt: &Arc<ResourceType>,
        namespace: &str,
        name: &str,
        options: &DeleteOptions,
    ) -> Result<Value> {
        let old = self
            .stored(state, rt, namespace, name)
            .ok_or_else(|| Error::NotFound(subject(rt, name)))?;
        if let Some(uid) = &options.precondition_uid
            && uid != meta::uid(&old)
        {
            return Err(Error::Conflict {
                subject: subject(rt, name),
                reason: format!(
                    "Precondition failed: UID in precondition: {uid}, UID in object meta: {}",
                    meta::uid(&old)
                ),
            });
        }
        if let Some(rv) = &options.precondition_resource_version
            && Some(rv.as_str()) != meta::resource_version(&old)
        {
            return Err(Error::Conflict {
                subject: subject(rt, name),
                reason: format!(
                    "Precondition failed: ResourceVersion in precondition: {rv}, ResourceVersion in object meta: {}",
                    meta::resource_version(&old).unwrap_or_default()
                ),
            });
        }
        if options.dry_run {
            return Ok(lifecycle::present(rt, &old));
        }
        let result = self.delete_locked(state, rt, namespace, name, options.propagation);
        result.map(|object| lifecycle::present(rt, &object))
    }

    /// Deletes every object of `rt` in `namespace` (or everywhere) that `keep` selects (C10).
    pub fn delete_collection(
        &self,
        rt: &Arc<ResourceType>,
        namespace: Option<&str>,
        selects: impl Fn(&Value) -> bool,
        options: &DeleteOptions,
    ) -> Result<Vec<Value>> {
        let mut state = self.lock();
        let targets: Vec<(String, String)> = state
            .objects
            .get(&storage_key(rt))
            .map(|objects| {
                objects
                    .iter()
                    .filter(|((ns, _), object)| {
                        namespace.is_none_or(|wanted| wanted == ns)
                            && selects(&lifecycle::present_owned(rt, object.decode()))
                    })
                    .map(|(key, _)| key.clone())
                    .collect()
            })
            .unwrap_or_default();
        let mut deleted = Vec::new();
        for (ns, name) in targets {
            if options.dry_run {
                if let Some(object) = self.stored(&state, rt, &ns, &name) {
                    deleted.push(lifecycle::present(rt, &object));
                }
                continue;
            }
            if let Ok(object) = self.delete_locked(&mut state, rt, &ns, &name, options.propagation) {
                deleted.push(lifecycle::present(rt, &object));
            }
        }
        self.settle(state, Ok(deleted))
    }

    pub(crate) fn stored(
        &self,
        state: &State,
        rt: &ResourceType,
        namespace: &str,
        name: &str,
    ) -> Option<Value> {
        Self::stored_object(state, rt, namespace, name).map(StoredObject::decode)
    }

    /// The object as stored, for checks that need not decode it.
    pub(crate) fn stored_object<'s>(
        state: &'s State,
        rt: &ResourceType,
        namespace: &str,
        name: &str,
    ) -> Option<&'s StoredObject> {
        state
            .objects
            .get(&storage_key(rt))?
            .get(&(namespace.to_owned(), name.to_owned()))
    }

    pub(crate) fn create_locked(
        &self,
        state: &mut State,
        rt: &Arc<ResourceType>,
        namespace: &str,
        object: Value,
        options: &WriteOptions,
    ) -> Result<Written> {
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
            self.require_active_namespace(state, namespace, rt, meta::name(&object))?;
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
                metadata.insert("name".into(), json!(format!("{prefix}{}", random_suffix())));
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
        let object = lifecycle::to_storage(rt, object);
        let (mut object, warnings) = self.admit(state, rt, &name, object, None, options)?;
        if rt.status_subresource
            && !rt.is_builtin()
            && let Some(map) = object.as_object_mut()
        {
            map.remove("status");
        }
        if Self::stored_object(state, rt, namespace, &name).is_some() {
            return Err(Error::AlreadyExists(subject(rt, &name)));
        }
        let metadata = meta::metadata_mut(&mut object);
        metadata.insert("uid".into(), json!(uuid::Uuid::new_v4().to_string()));
        metadata.insert("creationTimestamp".into(), json!(meta::now_rfc3339()));
        lifecycle::set_generation(rt, &mut object, 1);
        if let Some(manager) = &options.field_manager {
            let now = meta::now_rfc3339();
            patch::record_update(None, &mut object, manager, None, &now);
        }
        self.on_create(state, rt, &mut object)?;
        if options.dry_run {
            return Ok(Written {
                object: lifecycle::present(rt, &object),
                warnings,
                created: true,
            });
        }
        let stored = self.put(state, rt, namespace, &name, object, None);
        self.after_write(state, rt, namespace, &name, &[], &stored);
        Ok(Written {
            object: lifecycle::present(rt, &stored),
            warnings,
            created: true,
        })
    }

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
            // `/status` takes only the status; everything else stays as stored (C7).
            let mut next = old.clone();
            match new.get("status") {
                Some(status) => next["status"] = status.clone(),
                None => {
                    if let Some(map) = next.as_object_mut() {
                        map.remove("status");
                    }
                }
            }
            if let Some(managed) = new.pointer("/metadata/managedFields") {
                meta::metadata_mut(&mut next).insert("managedFields".into(), managed.clone());
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
            if meta::finalizers(&next).iter().any(|f| !before.contains(f)) {
                return Err(invalid(
                    rt,
                    name,
                    vec![apimachinery::FieldCause::new(
                        "FieldValueForbidden",
                        "metadata.finalizers",
                        "Forbidden: no new finalizers can be added if the object is being deleted",
                    )],
                ));
            }
        }
        let (admitted, warnings) = self.admit(state, rt, name, next, Some(&old), options)?;
        next = admitted;
        if !status_only && meta::spec_part(&next) != meta::spec_part(&old) {
            lifecycle::set_generation(rt, &mut next, meta::generation(&old) + 1);
        }
        if let Some(manager) = &options.field_manager {
            let now = meta::now_rfc3339();
            patch::record_update(
                Some(&old),
                &mut next,
                manager,
                status_only.then_some("status"),
                &now,
            );
        }
        self.on_update(state, rt, &old, &mut next)?;
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
        if meta::is_deleting(&next) && meta::finalizers(&next).is_empty() {
            let removed = self.remove(state, rt, namespace, name, next);
            return Ok(Written {
                object: lifecycle::present(rt, &removed),
                warnings,
                created: false,
            });
        }
        let previous_references = meta::owner_references(&old);
        let stored = self.put(state, rt, namespace, name, next, Some(old));
        self.after_write(state, rt, namespace, name, &previous_references, &stored);
        Ok(Written {
            object: lifecycle::present(rt, &stored),
            warnings,
            created: false,
        })
    }

    /// Validation, defaulting and pruning (V2, V3, V5, B4, B5): the object as it will be stored, or 422.
    fn admit(
        &self,
        state: &State,
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
            let causes = schema.validate(&object);
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
            if let Some(old) = old {
                apimachinery::defaults::check_immutable(&rt.kind, old, &object)
                    .map_err(|e| machinery(rt, name, e))?;
            }
        }
        let causes = lifecycle::validate_common(rt, &object);
        if !causes.is_empty() {
            return Err(invalid(rt, name, causes));
        }
        let _ = state;
        Ok((object, warnings))
    }

    /// Stores `object` under a new resourceVersion and publishes the event.
    pub(crate) fn put(
        &self,
        state: &mut State,
        rt: &ResourceType,
        namespace: &str,
        name: &str,
        mut object: Value,
        previous: Option<Value>,
    ) -> Value {
        state.resource_version += 1;
        let rv = state.resource_version;
        let metadata = meta::metadata_mut(&mut object);
        metadata.insert("resourceVersion".into(), json!(rv.to_string()));
        meta::drop_empty_fields(metadata);
        let key = storage_key(rt);
        let stored = StoredObject::encode(&object);
        let mut size = stored.len();
        let replaced = state
            .objects
            .entry(key.clone())
            .or_default()
            .insert((namespace.to_owned(), name.to_owned()), stored);
        // The event carries the previous object too.
        size += replaced.as_ref().map_or(0, StoredObject::len);
        // The owner index needs the old object: the caller's copy, decoded only if it passed none.
        let replaced = match (&previous, replaced) {
            (None, Some(replaced)) => Some(replaced.decode()),
            _ => None,
        };
        state.owners.record(
            &key,
            namespace,
            name,
            previous.as_ref().or(replaced.as_ref()),
            Some(&object),
        );
        let event_type = if previous.is_some() {
            EventType::Modified
        } else {
            EventType::Added
        };
        self.publish(
            state,
            StoredEvent {
                event_type,
                resource: key,
                namespace: namespace.to_owned(),
                object: object.clone(),
                previous,
                resource_version: rv,
                encoded: OnceLock::new(),
            },
            size,
        );
        object
    }

    /// Removes the object for good: DELETED carries the final state with the deletion's own
    /// resourceVersion (W7). Then whatever depended on it is collected (L4-L6).
    pub(crate) fn remove(
        &self,
        state: &mut State,
        rt: &ResourceType,
        namespace: &str,
        name: &str,
        mut object: Value,
    ) -> Value {
        let key = storage_key(rt);
        let removed = state
            .objects
            .get_mut(&key)
            .and_then(|objects| objects.remove(&(namespace.to_owned(), name.to_owned())));
        let size = removed.as_ref().map_or(0, StoredObject::len);
        let removed = removed.map(|removed| removed.decode());
        if removed.is_none() {
            // Already gone (removed by a step this one set in motion): a second DELETED would be a lie.
            return object;
        }
        state.owners.record(&key, namespace, name, removed.as_ref(), None);
        state.resource_version += 1;
        let rv = state.resource_version;
        let metadata = meta::metadata_mut(&mut object);
        metadata.insert("resourceVersion".into(), json!(rv.to_string()));
        meta::drop_empty_fields(metadata);
        self.publish(
            state,
            StoredEvent {
                event_type: EventType::Deleted,
                resource: key,
                namespace: namespace.to_owned(),
                object: object.clone(),
                previous: None,
                resource_version: rv,
                encoded: OnceLock::new(),
            },
            size,
        );
        emulated::after_remove(self, state, rt, namespace, &object);
        object
    }

    /// Deletes one object: marks it deleting while finalizers remain (L1), removes it otherwise.
    pub(crate) fn delete_locked(
        &self,
        state: &mut State,
        rt: &Arc<ResourceType>,
        namespace: &str,
        name: &str,
        propagation: Propagation,
    ) -> Result<Value> {
        let old = self
            .stored(state, rt, namespace, name)
            .ok_or_else(|| Error::NotFound(subject(rt, name)))?;
        emulated::check_deletable(rt, name)?;
        if let Some(teardown) = emulated::on_delete(self, state, rt, namespace, &old, propagation) {
            return Ok(teardown);
        }
        if meta::finalizers(&old).is_empty() {
            return Ok(self.remove(state, rt, namespace, name, old));
        }
        if meta::is_deleting(&old) {
            return Ok(old);
        }
        let mut next = old.clone();
        let metadata = meta::metadata_mut(&mut next);
        metadata.insert("deletionTimestamp".into(), json!(meta::now_rfc3339()));
        metadata.insert("deletionGracePeriodSeconds".into(), json!(0));
        lifecycle::set_generation(rt, &mut next, meta::generation(&old) + 1);
        Ok(self.put(state, rt, namespace, name, next, Some(old)))
    }

    fn require_active_namespace(
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
            Some(ns) if ns.is_deleting() => Err(Error::Forbidden(format!(
                "{} \"{name}\" is forbidden: unable to create new content in namespace {namespace} because it is being terminated",
                subject(rt, name).qualified_plural
            ))),
            Some(_) => Ok(()),
        }
    }

    /// Kind-specific steps on create (CRDs register, namespaces get their finalizer, Services an IP).
    fn on_create(&self, state: &mut State, rt: &ResourceType, object: &mut Value) -> Result<()> {
        emulated::on_admit(state, rt, None, object).map_err(|causes| invalid(rt, meta::name(object), causes))
    }

    fn on_update(&self, state: &mut State, rt: &ResourceType, old: &Value, object: &mut Value) -> Result<()> {
        emulated::on_admit(state, rt, Some(old), object)
            .map_err(|causes| invalid(rt, meta::name(object), causes))
    }

    /// Follow-up writes a real cluster's controllers would make (garbage collection, Deployment status).
    fn after_write(
        &self,
        state: &mut State,
        rt: &ResourceType,
        namespace: &str,
        name: &str,
        previous_references: &[Value],
        stored: &Value,
    ) {
        emulated::after_write(self, state, rt, namespace, name, previous_references, stored);
    }

    /// Keeps the `kubernetes` Service pointing at `port`, where the server now listens (B6).
    pub fn serve_on(&self, port: u16) {
        let mut state = self.lock();
        emulated::keep_kubernetes_service(self, &mut state, port);
    }

    /// Pre-creates the namespaces every cluster has (L3).
    pub(crate) fn create_default_namespaces(&self) {
        let mut state = self.lock();
        let Some(rt) = state.registry.resolve("", "v1", "namespaces") else {
            return;
        };
        for name in ["default", "kube-system", "kube-public", "kube-node-lease"] {
            let object = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}});
            // Creating a fresh, valid namespace in an empty store cannot fail.
            let _ = self.create_locked(&mut state, &rt, "", object, &WriteOptions::default());
        }
    }
}

/// How kube-apiserver begins the message of a body it cannot decode into the kind's Go type.
/// The duplicate and unknown fields of a write, as `fieldValidation` says: a 400 (Strict), the
/// `Warning` texts to send (Warn, the default) or nothing (Ignore).
fn field_problems(
    rt: &ResourceType,
    options: &WriteOptions,
    unknown: &[String],
    object: &Value,
) -> Result<Vec<String>> {
    let problems = apimachinery::decoding::field_problems(&options.duplicate_fields, unknown);
    match options.field_validation {
        FieldValidation::Strict if !problems.is_empty() => Err(undecodable(
            rt,
            format!("strict decoding error: {}", problems.join(", ")),
            object,
        )),
        FieldValidation::Strict | FieldValidation::Ignore => Ok(Vec::new()),
        FieldValidation::Warn => Ok(problems),
    }
}

fn undecodable(rt: &ResourceType, detail: String, object: &Value) -> Error {
    Error::Undecodable {
        kind: rt.kind.clone(),
        version: rt.version.clone(),
        detail,
        object: object.to_string(),
    }
}

fn unchanged(old: &Value, new: &Value) -> bool {
    let strip = |object: &Value| {
        let mut copy = object.clone();
        let metadata = meta::metadata_mut(&mut copy);
        metadata.remove("resourceVersion");
        metadata.remove("managedFields");
        copy
    };
    strip(old) == strip(new)
}

fn check_type_meta(rt: &ResourceType, object: &Value) -> Result<()> {
    if let Some(kind) = object.get("kind").and_then(Value::as_str) {
        let api_version = object
            .get("apiVersion")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let events_alias = rt.plural == "events" && kind == "Event";
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

fn check_apply_identity(rt: &ResourceType, body: &Value) -> Result<()> {
    let kind = body.get("kind").and_then(Value::as_str);
    let api_version = body.get("apiVersion").and_then(Value::as_str);
    if kind.is_none() || api_version.is_none() {
        return Err(Error::BadRequest(
            "apiVersion and kind must be set in an apply request".into(),
        ));
    }
    check_type_meta(rt, body)
}

fn check_body_identity(rt: &ResourceType, namespace: &str, name: &str, object: &Value) -> Result<()> {
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

/// Five characters from the alphabet kube-apiserver uses for generateName (no vowels, no lookalikes).
fn random_suffix() -> String {
    use rand::Rng;
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    let mut rng = rand::rng();
    (0..5)
        .map(|_| ALPHABET[rng.random_range(0..ALPHABET.len())] as char)
        .collect()
}
