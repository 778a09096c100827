//! The commit of a create or an update (main resource and `/status`), and what it sets in motion (the
//! hooks' follow-up writes). What a write asks is prepared before the lock (decoding, admission,
//! validation, the managedFields entry: the strategy's stages, above the store); the commit, under
//! the lock, checks it against the store, lets the hooks admit it and makes it one atomic step with
//! its own resourceVersion.

use std::sync::Arc;

use apimachinery::{meta, resource::ResourceType, stored_form};
use serde_json::Value;

use apimachinery::FieldCause;

use super::{Preparing, State, Store, StoredObject, WriteOptions, Written, subject};
use crate::error::{Error, Result};

/// A create ready to commit: the object as it will be stored, and the Warning texts of its request.
pub(crate) struct Create {
    pub namespace: String,
    pub name: String,
    pub object: Value,
    pub warnings: Vec<String>,
}

/// An update ready to commit: the object it replaces (as stored) and the one it stores.
pub(crate) struct Update {
    pub old: Value,
    pub next: Value,
    pub warnings: Vec<String>,
}

impl Store {
    /// The object as stored now, to prepare a write against (see [`Store::commit_update_if_unchanged`]).
    pub(crate) fn read(&self, rt: &ResourceType, namespace: &str, name: &str) -> Option<StoredObject> {
        Self::stored_object(&self.lock(), rt, namespace, name).cloned()
    }

    /// Whether `namespace` takes a create of `name` now. Asked before a create is prepared, as
    /// NamespaceLifecycle admits before validation does, and again when it is committed.
    pub(crate) fn admit_into_namespace(&self, rt: &ResourceType, namespace: &str, name: &str) -> Result<()> {
        self.admit_into_namespace_locked(&self.lock(), rt, namespace, name)
    }

    /// [`Store::admit_into_namespace`] under the lock the caller holds.
    pub(crate) fn admit_into_namespace_locked(
        &self,
        state: &State,
        rt: &ResourceType,
        namespace: &str,
        name: &str,
    ) -> Result<()> {
        if !rt.namespaced {
            return Ok(());
        }
        self.hooks
            .admission
            .admit_into_namespace(state, rt, namespace, name)
    }

    /// Commits a create under a lock of its own.
    pub(crate) fn commit_create_now(
        &self,
        rt: &Arc<ResourceType>,
        prepared: Create,
        options: &WriteOptions,
    ) -> Result<Written> {
        let mut state = self.write_lock();
        let result = self.commit_create(&mut state, rt, prepared, options);
        self.settle(state, result)
    }

    /// Commits an update prepared against `read`, under a lock of its own, unless another write
    /// changed the object since: then `None`, for the caller to prepare it again.
    pub(crate) fn commit_update_if_unchanged(
        &self,
        rt: &Arc<ResourceType>,
        namespace: &str,
        name: &str,
        read: &StoredObject,
        prepared: Update,
        options: &WriteOptions,
    ) -> Result<Option<Written>> {
        let mut state = self.write_lock();
        if !Self::stored_object(&state, rt, namespace, name).is_some_and(|now| now.is_same_version(read)) {
            return Ok(None);
        }
        let result = self.commit_update(&mut state, rt, namespace, name, prepared, options);
        self.settle(state, result).map(Some)
    }

    /// Commits a create: refused if the namespace does not take it or the name is taken.
    pub(crate) fn commit_create(
        &self,
        state: &mut State,
        rt: &Arc<ResourceType>,
        prepared: Create,
        options: &WriteOptions,
    ) -> Result<Written> {
        let Create {
            namespace,
            name,
            mut object,
            warnings,
        } = prepared;
        if rt.namespaced {
            self.hooks
                .admission
                .admit_into_namespace(state, rt, &namespace, &name)?;
        }
        if Self::stored_object(state, rt, &namespace, &name).is_some() {
            return Err(Error::AlreadyExists(subject(rt, &name)));
        }
        self.on_create(state, rt, &mut object)?;
        if options.dry_run {
            return Ok(Written {
                object: stored_form::present(rt, &object),
                warnings,
                created: true,
            });
        }
        let stored = self.put(state, rt, &namespace, &name, object, None);
        self.hooks
            .reactions
            .after_write(self, state, rt, &namespace, &name, &[], &stored);
        Ok(Written {
            object: stored_form::present(rt, &stored),
            warnings,
            created: true,
        })
    }

    /// Commits an update of the object the caller read under this same lock.
    pub(crate) fn commit_update(
        &self,
        state: &mut State,
        rt: &Arc<ResourceType>,
        namespace: &str,
        name: &str,
        prepared: Update,
        options: &WriteOptions,
    ) -> Result<Written> {
        let Update {
            old,
            mut next,
            warnings,
        } = prepared;
        self.on_update(state, rt, &old, &mut next, options.subresource)?;
        if unchanged(&old, &next) {
            // kube-apiserver skips no-op writes: no new resourceVersion, no event.
            return Ok(Written {
                object: stored_form::present(rt, &old),
                warnings,
                created: false,
            });
        }
        if options.dry_run {
            return Ok(Written {
                object: stored_form::present(rt, &next),
                warnings,
                created: false,
            });
        }
        if meta::is_deleting(&next)
            && meta::finalizers(&next).is_empty()
            && self.hooks.kind_rules.may_go(rt, &next)
        {
            let removed = self.remove(state, rt, namespace, name, next);
            return Ok(Written {
                object: stored_form::present(rt, &removed),
                warnings,
                created: false,
            });
        }
        let previous_references = meta::owner_references(&old);
        let stored = self.put(state, rt, namespace, name, next, Some(old));
        self.hooks
            .reactions
            .after_write(self, state, rt, namespace, name, &previous_references, &stored);
        Ok(Written {
            object: stored_form::present(rt, &stored),
            warnings,
            created: false,
        })
    }

    /// Lets the hooks set up what every cluster holds, on a store just opened.
    pub(super) fn populate(&self) {
        let _ = self.write_step(|state| {
            self.hooks.lifecycle.populate(self, state);
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

    /// Kind-specific steps on create (CRDs register, namespaces get their finalizer, Services an IP),
    /// then the admission plugins that see every create (quotas).
    fn on_create(&self, state: &mut State, rt: &ResourceType, object: &mut Value) -> Result<()> {
        self.hooks
            .kind_rules
            .prepare(Preparing {
                state,
                rt,
                old: None,
                object,
                subresource: None,
            })
            .map_err(|causes| refused(rt, object, true, Refusal::Invalid(causes)))?;
        self.hooks
            .admission
            .admit(state, rt, None, object, None)
            .map_err(|message| refused(rt, object, true, Refusal::Forbidden(message)))
    }

    fn on_update(
        &self,
        state: &mut State,
        rt: &ResourceType,
        old: &Value,
        object: &mut Value,
        subresource: Option<&str>,
    ) -> Result<()> {
        self.hooks
            .kind_rules
            .prepare(Preparing {
                state,
                rt,
                old: Some(old),
                object,
                subresource,
            })
            .map_err(|causes| refused(rt, object, false, Refusal::Invalid(causes)))?;
        self.hooks
            .admission
            .admit(state, rt, Some(old), object, subresource)
            .map_err(|message| refused(rt, object, false, Refusal::Forbidden(message)))
    }
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

/// Why a write was refused at the commit.
enum Refusal {
    /// The object breaks its kind's rules: 422 with these causes.
    Invalid(Vec<FieldCause>),
    /// A policy forbids it (a quota): 403 with this message.
    Forbidden(String),
}

/// The error of a write (a create when `created`) the hooks refused: an invalid object is named by
/// its name, as validation names it; a policy's refusal of a create by its generateName (see
/// [`admitted_name`]).
fn refused(rt: &ResourceType, object: &Value, created: bool, refusal: Refusal) -> Error {
    match refusal {
        Refusal::Invalid(causes) => Error::invalid(rt, meta::name(object), causes),
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
            .is_some_and(|suffix| suffix.len() == super::generated_name::SUFFIX_LEN)
    });
    generated_from.unwrap_or(name)
}
