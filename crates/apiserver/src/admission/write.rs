//! The orchestration of a write: a request's create, update, patch or delete through the strategy's
//! stages and admission's, in kube-apiserver's order, committed against the object it was prepared
//! from (every stage again when another write came first).

use std::sync::Arc;

use apimachinery::{meta, patch::PatchType, resource::ResourceType, stored_form};
use kube::core::admission::Operation;
use serde_json::Value;

use super::{
    Attributes, policies,
    review_options::{delete_options_object, write_options_object},
    stages::{mutate, validate},
};
use crate::{
    error::{Error, Result},
    store::{
        Create, DeleteOptions, Origin, Stage, Store, StoredObject, Update, WriteOptions, Written, subject,
    },
    strategy::{
        create,
        patch::{PatchRequest, Resolved},
        update,
    },
    webhooks::{Converter, conversion},
};

/// What a write asks for.
pub enum Change<'a> {
    Create(Value),
    Update {
        name: &'a str,
        object: Value,
    },
    Patch {
        name: &'a str,
        patch_type: PatchType,
        patch: &'a Value,
    },
}

impl<'a> Change<'a> {
    /// The name of the object the write changes; none for a create.
    fn name(&self) -> Option<&'a str> {
        match self {
            Change::Create(_) => None,
            Change::Update { name, .. } | Change::Patch { name, .. } => Some(name),
        }
    }
}

/// Where a write goes.
pub struct Target<'a> {
    pub store: &'a Arc<Store>,
    pub rt: &'a Arc<ResourceType>,
    pub namespace: &'a str,
    pub subresource: Option<&'a str>,
    pub status_only: bool,
}

/// The object an update changes: as read from the store (to commit against), and as the stages see
/// it (at the request's version).
struct Current {
    read: StoredObject,
    stored: Value,
    /// The stored object converted to the request's version, when that is not the storage version.
    converted: Option<Value>,
    /// What webhooks see as `oldObject`, when any is configured: the object at the request's version,
    /// as clients read it.
    seen: Option<Value>,
}

impl Current {
    /// What the request's changes apply to: the object at the request's version.
    fn base(&self) -> &Value {
        self.converted.as_ref().unwrap_or(&self.stored)
    }
}

/// A write between its stages.
enum Prepared {
    Create {
        create: Create,
        options: WriteOptions,
    },
    Update {
        current: Current,
        next: Value,
        warnings: Vec<String>,
        options: WriteOptions,
    },
}

impl Prepared {
    fn object(&self) -> &Value {
        match self {
            Prepared::Create { create, .. } => &create.object,
            Prepared::Update { next, .. } => next,
        }
    }

    fn object_mut(&mut self) -> &mut Value {
        match self {
            Prepared::Create { create, .. } => &mut create.object,
            Prepared::Update { next, .. } => next,
        }
    }
}

impl Target<'_> {
    /// Counts one run of `stage` of a request's write.
    pub(super) fn ran(&self, stage: Stage) {
        self.store.write_stages().ran(Origin::Request, stage);
    }

    /// The CRD's conversion webhook, if it has one: what reads go through.
    fn reader(&self) -> Option<Converter> {
        Converter::of(self.store, self.rt)
    }

    /// The conversion webhook writes go through: when the request's version is not the storage
    /// version.
    fn writer(&self, reader: &Option<Converter>) -> Option<Converter> {
        reader.clone().filter(|c| c.storage_version != self.rt.version)
    }

    /// The type objects are committed as: the storage version's when converting.
    fn storage_type(&self, converter: &Option<Converter>) -> Result<Arc<ResourceType>> {
        match converter {
            None => Ok(self.rt.clone()),
            Some(converter) => self
                .store
                .resolve(&self.rt.group, &converter.storage_version, &self.rt.plural)
                .ok_or(Error::UnknownResource),
        }
    }

    /// Whether any webhook is configured or any admission policy bound: then writes go through the
    /// admission stages.
    pub(super) fn has_webhooks(&self) -> bool {
        ["mutatingwebhookconfigurations", "validatingwebhookconfigurations"]
            .iter()
            .filter_map(|plural| self.store.resolve("admissionregistration.k8s.io", "v1", plural))
            .any(|rt| self.store.holds_any(&rt))
            || policies::any_bound(self.store)
    }

    /// The current object, or `None` when there is none.
    async fn current(
        &self,
        name: &str,
        reader: &Option<Converter>,
        converting: bool,
        admitting: bool,
    ) -> Result<Option<Current>> {
        let Some(read) = self.store.read(self.rt, self.namespace, name) else {
            return Ok(None);
        };
        let stored = read.decode();
        // Presented at the request's version only for what needs it: a write without webhooks or
        // conversion (most of them) applies its change to the stored object as it is.
        let at_request_version = match converting || admitting {
            true => conversion::read(self.store, self.rt, reader.as_ref(), vec![stored.clone()])
                .await?
                .pop(),
            false => None,
        };
        let (converted, seen) = match (converting, admitting) {
            (true, true) => (at_request_version.clone(), at_request_version),
            (true, false) => (at_request_version, None),
            (false, _) => (None, at_request_version),
        };
        Ok(Some(Current {
            read,
            stored,
            converted,
            seen,
        }))
    }

    /// The patch `change` asks for, if it is one.
    fn patch_request<'c>(
        &'c self,
        change: &'c Change<'_>,
        options: &'c WriteOptions,
    ) -> Option<PatchRequest<'c>> {
        match change {
            Change::Patch {
                name,
                patch_type,
                patch,
            } => Some(PatchRequest {
                rt: self.rt,
                namespace: self.namespace,
                name,
                patch_type: *patch_type,
                body: patch,
                options,
                status_only: self.status_only,
            }),
            _ => None,
        }
    }

    /// A write: its stages, again from the start while another write changes the object meanwhile.
    pub async fn write(&self, change: Change<'_>, options: &WriteOptions) -> Result<Written> {
        let reader = self.reader();
        let converter = self.writer(&reader);
        let admitting = self.has_webhooks();
        loop {
            let current = match change.name() {
                Some(name) => {
                    self.current(name, &reader, converter.is_some(), admitting)
                        .await?
                }
                None => None,
            };
            let attempt = self.attempt(&change, current, &converter, admitting, options);
            if let Some(written) = attempt.await? {
                return Ok(written);
            }
        }
    }

    /// One run of the stages over `current`: `None` when the commit found the object changed.
    async fn attempt(
        &self,
        change: &Change<'_>,
        current: Option<Current>,
        converter: &Option<Converter>,
        admitting: bool,
        options: &WriteOptions,
    ) -> Result<Option<Written>> {
        let patch = self.patch_request(change, options);
        // A patch's errors quote the patched object as kube-apiserver does.
        let base = patch
            .as_ref()
            .and(current.as_ref())
            .map(|current| current.base().clone());
        let quoted = |error: Error| match (&patch, &base) {
            (Some(patch), Some(base)) => error.for_patch(|object| patch.written(base, object)),
            _ => error,
        };
        let mut prepared = self
            .prepare(change, current, patch.as_ref(), options)
            .map_err(quoted)?;
        self.ran(Stage::Decode);
        let mut warnings = Vec::new();
        // What admission sees, built only when a webhook or policy will look at it.
        let mut attributes = admitting.then(|| self.attributes(&prepared, options));
        let mut mutated = false;
        if let Some(attributes) = &mut attributes {
            mutated = mutate(self.store, attributes, &mut warnings).await?;
            if mutated && let Some(object) = attributes.object.take() {
                *prepared.object_mut() = stored_form::to_storage(self.rt, object);
            }
            self.ran(Stage::MutatingAdmission);
        }
        match &mut prepared {
            Prepared::Create { create, .. } => create::finish(self.rt, create, mutated),
            Prepared::Update { current, next, .. } => {
                let name = meta::name(&current.stored).to_owned();
                update::finish(self.rt, &name, current.base(), next, mutated, self.status_only)
            }
        }
        .map_err(quoted)?;
        self.ran(Stage::Validate);
        if let Some(attributes) = &mut attributes {
            attributes.object = Some(stored_form::present(self.rt, prepared.object()));
            validate(self.store, attributes, &mut warnings).await?;
            self.ran(Stage::ValidatingAdmission);
        }
        let storage_type = self.storage_type(converter)?;
        if let Some(converter) = converter {
            let object = std::mem::take(prepared.object_mut());
            *prepared.object_mut() = converter
                .convert_one(self.store, object, &storage_type.api_version())
                .await?;
            self.ran(Stage::Conversion);
        }
        let committed = match prepared {
            Prepared::Create { create, options } => {
                match self.store.commit_create_now(&storage_type, create, &options) {
                    // Server-side apply created what another writer created meanwhile: applied to
                    // that object instead.
                    Err(Error::AlreadyExists(_)) if patch.is_some() => None,
                    other => Some(other?),
                }
            }
            Prepared::Update {
                current,
                next,
                warnings,
                options,
            } => {
                let name = meta::name(&current.stored).to_owned();
                let update = Update {
                    old: current.stored,
                    next,
                    warnings,
                };
                self.store
                    .commit_update_if_unchanged(
                        &storage_type,
                        self.namespace,
                        &name,
                        &current.read,
                        update,
                        &options,
                    )
                    .map_err(quoted)?
            }
        };
        self.ran(Stage::Commit);
        let Some(mut written) = committed else {
            return Ok(None);
        };
        if converter.is_some() {
            let stored = std::mem::take(&mut written.object);
            written.object = conversion::read(self.store, self.rt, converter.as_ref(), vec![stored])
                .await?
                .pop()
                .unwrap_or(Value::Null);
        }
        warnings.append(&mut written.warnings);
        written.warnings = warnings;
        Ok(Some(written))
    }

    /// The first stage: what the request makes of the current object (or of nothing, for a create).
    fn prepare(
        &self,
        change: &Change<'_>,
        current: Option<Current>,
        patch: Option<&PatchRequest<'_>>,
        options: &WriteOptions,
    ) -> Result<Prepared> {
        let (rt, namespace) = (self.rt, self.namespace);
        let (object, options) = match (change, patch) {
            (Change::Create(object), _) => (object.clone(), options.clone()),
            (Change::Update { name, object }, _) => {
                let current = current.ok_or_else(|| Error::NotFound(subject(rt, name)))?;
                update::check_request(rt, namespace, name, object)?;
                return self.prepare_update(current, object.clone(), options.clone());
            }
            (Change::Patch { .. }, Some(patch)) => {
                match patch.resolve(current.as_ref().map(Current::base))? {
                    Resolved::Create(object, options) => (object, options),
                    Resolved::Update(patched, options) => {
                        let current = current.ok_or_else(|| Error::NotFound(subject(rt, patch.name)))?;
                        return self.prepare_update(current, patched, options);
                    }
                }
            }
            (Change::Patch { name, .. }, None) => return Err(Error::NotFound(subject(rt, name))),
        };
        self.store
            .admit_into_namespace(rt, namespace, meta::name(&object))?;
        let create = create::prepare(rt, namespace, object, &options)?;
        Ok(Prepared::Create { create, options })
    }

    fn prepare_update(&self, current: Current, object: Value, options: WriteOptions) -> Result<Prepared> {
        let name = meta::name(&current.stored).to_owned();
        let (next, warnings) = update::prepare(
            self.rt,
            self.namespace,
            &name,
            current.base(),
            object,
            &options,
            self.status_only,
        )?;
        Ok(Prepared::Update {
            current,
            next,
            warnings,
            options,
        })
    }

    /// What admission sees of the write prepared so far: the object at the request's version, and for
    /// an update the current one as `oldObject`.
    fn attributes(&self, prepared: &Prepared, options: &WriteOptions) -> Attributes {
        let (operation, old) = match prepared {
            Prepared::Create { .. } => (Operation::Create, None),
            Prepared::Update { current, .. } => (Operation::Update, current.seen.clone()),
        };
        let object = stored_form::present(self.rt, prepared.object());
        Attributes {
            rt: self.rt.clone(),
            namespace: self.namespace.to_owned(),
            name: meta::name(&object).to_owned(),
            subresource: self.subresource.map(str::to_owned),
            options: write_options_object(operation == Operation::Create, options),
            operation,
            object: Some(object),
            old,
            dry_run: options.dry_run,
            kind: None,
        }
    }

    /// A delete: webhooks see the current object as `oldObject`.
    pub async fn delete(&self, name: &str, options: &DeleteOptions) -> Result<Value> {
        let reader = self.reader();
        let converter = self.writer(&reader);
        if converter.is_none() && !self.has_webhooks() {
            return self.store.delete(self.rt, self.namespace, name, options);
        }
        let current = self
            .current(name, &reader, false, true)
            .await?
            .and_then(|current| current.seen);
        if current.is_some() {
            let attributes = Attributes {
                rt: self.rt.clone(),
                namespace: self.namespace.to_owned(),
                name: name.to_owned(),
                subresource: None,
                operation: Operation::Delete,
                object: None,
                old: current,
                dry_run: options.dry_run,
                options: delete_options_object(options),
                kind: None,
            };
            let mut ignored = Vec::new();
            let mut attributes = attributes;
            mutate(self.store, &mut attributes, &mut ignored).await?;
            validate(self.store, &attributes, &mut ignored).await?;
        }
        let storage_type = self.storage_type(&converter)?;
        let deleted = self.store.delete(&storage_type, self.namespace, name, options)?;
        match converter {
            Some(converter) => Ok(
                conversion::read(self.store, self.rt, Some(&converter), vec![deleted])
                    .await?
                    .pop()
                    .unwrap_or(Value::Null),
            ),
            None => Ok(deleted),
        }
    }
}

impl Target<'_> {
    /// A deletecollection, as kube-apiserver does it: mutating webhooks are called once about the
    /// collection (no object, no name), then each selected object is deleted on its own, validating
    /// webhooks seeing it as `oldObject` (still without a name); the first refusal ends the request.
    /// The deleted objects are answered at the request's version.
    pub async fn delete_collection(
        &self,
        namespace: Option<&str>,
        selects: impl Fn(&Value) -> bool,
        options: &DeleteOptions,
    ) -> Result<Vec<Value>> {
        let reader = self.reader();
        if reader.is_none() && !self.has_webhooks() {
            return self.store.delete_collection(self.rt, namespace, selects, options);
        }
        let stored = self.store.list_stored(self.rt, namespace).0;
        let current = conversion::read(self.store, self.rt, reader.as_ref(), stored).await?;
        let mut collection = Attributes {
            rt: self.rt.clone(),
            namespace: namespace.unwrap_or_default().to_owned(),
            name: String::new(),
            subresource: None,
            operation: Operation::Delete,
            object: None,
            old: None,
            dry_run: options.dry_run,
            options: delete_options_object(options),
            kind: None,
        };
        let mut ignored = Vec::new();
        mutate(self.store, &mut collection, &mut ignored).await?;
        let storage_type = self.storage_type(&self.writer(&reader))?;
        let mut deleted = Vec::new();
        for object in current.into_iter().filter(|object| selects(object)) {
            let each = Attributes {
                namespace: meta::namespace(&object).to_owned(),
                old: Some(object.clone()),
                ..collection.clone()
            };
            validate(self.store, &each, &mut ignored).await?;
            match self.store.delete(
                &storage_type,
                meta::namespace(&object),
                meta::name(&object),
                options,
            ) {
                Ok(gone) => deleted.push(gone),
                // Deleted meanwhile by someone else: nothing left to answer for.
                Err(Error::NotFound(_)) => {}
                Err(error) => return Err(error),
            }
        }
        conversion::read(self.store, self.rt, reader.as_ref(), deleted).await
    }
}
