//! Deletes, one object or a collection: preconditions, finalizers (marking an object deleting) and
//! the teardown the hooks start (namespaces, CRDs, dependents).

use std::sync::Arc;

use apimachinery::{meta, resource::ResourceType, stored_form};
use serde_json::{Value, json};

use super::{DeleteOptions, DeletePropagation as Propagation, State, Store, storage_key, subject};
use crate::error::{Error, Result, Subject};

impl Store {
    /// Deletes the object, as a DELETE request does: checks `options`' preconditions, then removes it,
    /// or, while finalizers remain (or under foreground propagation), only marks it deleting with a
    /// `deletionTimestamp`. Returns the object as removed or as marked (unchanged under dry run).
    pub fn delete(
        &self,
        rt: &Arc<ResourceType>,
        namespace: &str,
        name: &str,
        options: &DeleteOptions,
    ) -> Result<Value> {
        let mut state = self.write_lock();
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
            // The storage layer names the object by its kind here, not by its resource.
            return Err(Error::Conflict {
                subject: Subject {
                    qualified_plural: crate::error::kind_group(rt),
                    group: rt.group.clone(),
                    plural: rt.kind.clone(),
                    name: name.to_owned(),
                },
                reason: format!(
                    "the UID in the precondition ({uid}) does not match the UID in record ({}). The object might have been deleted and then recreated",
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
            return Ok(stored_form::present(rt, &old));
        }
        let result = self.delete_locked(state, rt, namespace, name, options.propagation);
        result.map(|object| stored_form::present(rt, &object))
    }

    /// Deletes every object of `rt` in `namespace` (or everywhere) that `keep` selects (C10).
    pub fn delete_collection(
        &self,
        rt: &Arc<ResourceType>,
        namespace: Option<&str>,
        selects: impl Fn(&Value) -> bool,
        options: &DeleteOptions,
    ) -> Result<Vec<Value>> {
        let mut state = self.write_lock();
        let targets: Vec<(String, String)> = state
            .objects
            .get(&storage_key(rt))
            .map(|objects| {
                objects
                    .iter()
                    .filter(|((ns, _), object)| {
                        namespace.is_none_or(|wanted| wanted == ns)
                            && selects(&stored_form::present_owned(rt, object.decode()))
                    })
                    .map(|(key, _)| key.clone())
                    .collect()
            })
            .unwrap_or_default();
        let mut deleted = Vec::new();
        for (ns, name) in targets {
            if options.dry_run {
                if let Some(object) = self.stored(&state, rt, &ns, &name) {
                    deleted.push(stored_form::present(rt, &object));
                }
                continue;
            }
            // One object at a time, as kube-apiserver deletes a collection: the lock may go between.
            state = self.keep_room(state);
            if let Ok(object) = self.delete_locked(&mut state, rt, &ns, &name, options.propagation) {
                deleted.push(stored_form::present(rt, &object));
            }
        }
        self.settle(state, Ok(deleted))
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
        self.hooks.kind_rules.check_deletable(rt, name)?;
        if let Some(teardown) = self
            .hooks
            .reactions
            .on_delete(self, state, rt, namespace, &old, propagation)
        {
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
        meta::bump_generation(&mut next);
        Ok(self.put(state, rt, namespace, name, next, Some(old)))
    }

    /// Stores `old` marked deleting as `marked` (the kind's deletion may add a finalizer, a phase, a
    /// condition; a deletion time is set if it has none): the step of a delete that keeps the object
    /// while finalizers remain, storage's own as kube-apiserver's registry marks it in its Delete,
    /// with no strategy and no admission. A teardown a controller took over
    /// ([`WriteReactions::on_delete`]) calls it.
    ///
    /// [`WriteReactions::on_delete`]: super::WriteReactions::on_delete
    pub(crate) fn mark_deleting(
        &self,
        state: &mut State,
        rt: &ResourceType,
        namespace: &str,
        old: &Value,
        mut marked: Value,
    ) -> Value {
        if !meta::is_deleting(&marked) {
            meta::metadata_mut(&mut marked).insert("deletionTimestamp".into(), json!(meta::now_rfc3339()));
        }
        let name = meta::name(old).to_owned();
        self.put(state, rt, namespace, &name, marked, Some(old.clone()))
    }

    /// Removes `object`, being deleted, once its teardown is over (a namespace emptied, a CRD's
    /// custom resources gone): storage's own step, as kube-apiserver's registry deletes it.
    pub(crate) fn remove_finished(
        &self,
        state: &mut State,
        rt: &ResourceType,
        namespace: &str,
        object: Value,
    ) -> Value {
        let name = meta::name(&object).to_owned();
        self.remove(state, rt, namespace, &name, object)
    }
}
