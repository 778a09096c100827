//! The asynchronous stage of a write, around the store's synchronous one, for what needs a network
//! call: admission webhooks (A1-A9) and CRD conversion webhooks (X1-X4). Writes that need neither go
//! straight to the store, as before.
//!
//! The order is kube-apiserver's: the request is decoded, defaulted and validated at the version it
//! was sent at (a dry run of the store's own write, against the current object converted to that
//! version), then mutating webhooks patch it (validated again if they did), validating webhooks see
//! the result, and the store commits it, converted to the storage version, on the condition that the
//! current object has not changed meanwhile. If it has, and the request did not name a
//! resourceVersion, the whole stage runs again against the new current object, as the real server's
//! `GuaranteedUpdate` does.

mod attributes;
pub mod call;
pub mod matching;
mod policies;

use std::sync::Arc;

use apimachinery::{patch::PatchType, resource::ResourceType};
use kube::core::admission::Operation;
use serde_json::{Value, json};

use crate::{
    error::{Error, Result},
    store::{DeleteOptions, DeletePropagation, FieldValidation, Store, WriteOptions, Written, meta},
    webhooks::{Converter, conversion},
};
pub use attributes::{Attributes, operation_name};
use matching::Phase;

/// How often a write is tried again after another write changed its object meanwhile.
const RETRIES: usize = 8;

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

impl Change<'_> {
    /// Whether the request pins the resourceVersion it applies to; if not, a conflict with a
    /// concurrent write is retried rather than answered.
    fn pins_resource_version(&self) -> bool {
        match self {
            Change::Create(_) => true,
            Change::Update { object, .. } => meta::resource_version(object).is_some(),
            Change::Patch { patch, .. } => match patch.as_array() {
                Some(operations) => operations
                    .iter()
                    .any(|op| op.get("path").and_then(Value::as_str) == Some("/metadata/resourceVersion")),
                None => patch.pointer("/metadata/resourceVersion").is_some(),
            },
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

impl Target<'_> {
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
    /// admission stage.
    fn has_webhooks(&self) -> bool {
        ["mutatingwebhookconfigurations", "validatingwebhookconfigurations"]
            .iter()
            .filter_map(|plural| self.store.resolve("admissionregistration.k8s.io", "v1", plural))
            .any(|rt| self.store.holds_any(&rt))
            || policies::any_bound(self.store)
    }

    /// The current object at the request's version, or `None` when there is none.
    async fn current(&self, name: &str, reader: &Option<Converter>) -> Result<Option<Value>> {
        let stored = match self.store.get_stored(self.rt, self.namespace, name) {
            Ok(stored) => stored,
            Err(Error::NotFound(_)) => return Ok(None),
            Err(error) => return Err(error),
        };
        Ok(
            conversion::read(self.store, self.rt, reader.as_ref(), vec![stored])
                .await?
                .pop(),
        )
    }

    /// A write: straight to the store when nothing asynchronous applies, through the stage otherwise.
    pub async fn write(&self, change: Change<'_>, options: &WriteOptions) -> Result<Written> {
        let reader = self.reader();
        let converter = self.writer(&reader);
        if converter.is_none() && !self.has_webhooks() {
            return self.store_write(self.rt, &change, options);
        }
        let mut attempt = 0;
        loop {
            attempt += 1;
            let name = match &change {
                Change::Create(_) => None,
                Change::Update { name, .. } | Change::Patch { name, .. } => Some(*name),
            };
            let current = match name {
                Some(name) => self.current(name, &reader).await?,
                None => None,
            };
            let result = self.admit_and_commit(&change, current, &converter, options).await;
            match result {
                Err(Error::Conflict { .. }) if !change.pins_resource_version() && attempt < RETRIES => {
                    continue;
                }
                other => return other,
            }
        }
    }

    async fn admit_and_commit(
        &self,
        change: &Change<'_>,
        current: Option<Value>,
        converter: &Option<Converter>,
        options: &WriteOptions,
    ) -> Result<Written> {
        let trial = WriteOptions {
            dry_run: true,
            current: converter.as_ref().and(current.clone()),
            before_mutation: true,
            ..options.clone()
        };
        let candidate = self.store_write(self.rt, change, &trial)?;
        let mut warnings = candidate.warnings;
        let created = candidate.created;
        let mut object = candidate.object;
        if created {
            // Mutating webhooks see a new object before the server gives it an identity.
            let metadata = meta::metadata_mut(&mut object);
            for field in ["uid", "creationTimestamp", "generation", "resourceVersion"] {
                metadata.remove(field);
            }
        }
        let name = meta::name(&object).to_owned();
        let mut attributes = Attributes {
            rt: self.rt.clone(),
            namespace: self.namespace.to_owned(),
            name: name.clone(),
            subresource: self.subresource.map(str::to_owned),
            operation: if created {
                Operation::Create
            } else {
                Operation::Update
            },
            object: Some(object),
            old: if created { None } else { current },
            dry_run: options.dry_run,
            options: write_options_object(created, options),
        };
        mutate(self.store, &mut attributes, &mut warnings).await?;
        let recorded = WriteOptions {
            field_manager: None,
            field_validation: FieldValidation::Ignore,
            duplicate_fields: Vec::new(),
            before_mutation: false,
            ..trial.clone()
        };
        if let Some(object) = attributes.object.take() {
            // Validation comes after mutating admission, as in kube-apiserver: what the webhooks
            // made (or the request, when none changed it) is validated before validating webhooks.
            let again = match created {
                true => Change::Create(object),
                false => Change::Update { name: &name, object },
            };
            attributes.object = Some(self.store_write(self.rt, &again, &recorded)?.object);
        }
        validate(self.store, &attributes, &mut warnings).await?;
        let object = attributes.object.unwrap_or(Value::Null);
        let storage_type = self.storage_type(converter)?;
        let object = match converter {
            Some(converter) => {
                converter
                    .convert_one(self.store, object, &storage_type.api_version())
                    .await?
            }
            None => object,
        };
        let commit_options = WriteOptions {
            dry_run: options.dry_run,
            current: None,
            ..recorded
        };
        let committed = match created {
            true => Change::Create(object),
            false => Change::Update { name: &name, object },
        };
        let mut written = self.store_write(&storage_type, &committed, &commit_options)?;
        if converter.is_some() {
            let stored = std::mem::take(&mut written.object);
            written.object = conversion::read(self.store, self.rt, converter.as_ref(), vec![stored])
                .await?
                .pop()
                .unwrap_or(Value::Null);
        }
        warnings.append(&mut written.warnings);
        written.warnings = warnings;
        Ok(written)
    }

    fn store_write(
        &self,
        rt: &Arc<ResourceType>,
        change: &Change<'_>,
        options: &WriteOptions,
    ) -> Result<Written> {
        match change {
            Change::Create(object) => self.store.create(rt, self.namespace, object.clone(), options),
            Change::Update { name, object } => self.store.update(
                rt,
                self.namespace,
                name,
                object.clone(),
                options,
                self.status_only,
            ),
            Change::Patch {
                name,
                patch_type,
                patch,
            } => self.store.patch(
                rt,
                self.namespace,
                name,
                *patch_type,
                patch,
                options,
                self.status_only,
            ),
        }
    }

    /// A delete: webhooks see the current object as `oldObject`.
    pub async fn delete(&self, name: &str, options: &DeleteOptions) -> Result<Value> {
        let reader = self.reader();
        let converter = self.writer(&reader);
        if converter.is_none() && !self.has_webhooks() {
            return self.store.delete(self.rt, self.namespace, name, options);
        }
        let current = self.current(name, &reader).await?;
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

/// `CreateOptions` or `UpdateOptions`, as a review's `options` carries them.
fn write_options_object(created: bool, options: &WriteOptions) -> Value {
    let kind = if created { "CreateOptions" } else { "UpdateOptions" };
    let mut object = json!({"kind": kind, "apiVersion": "meta.k8s.io/v1"});
    if let Some(manager) = options
        .field_manager
        .as_ref()
        .filter(|_| options.field_manager_named)
    {
        object["fieldManager"] = json!(manager);
    }
    if options.dry_run {
        object["dryRun"] = json!(["All"]);
    }
    object
}

/// `DeleteOptions`, as a review's `options` carries them: what the request said.
fn delete_options_object(options: &DeleteOptions) -> Value {
    let mut object = json!({"kind": "DeleteOptions", "apiVersion": "meta.k8s.io/v1"});
    if options.dry_run {
        object["dryRun"] = json!(["All"]);
    }
    if options.propagation_named {
        let policy = match options.propagation {
            DeletePropagation::Background => "Background",
            DeletePropagation::Foreground => "Foreground",
            DeletePropagation::Orphan => "Orphan",
        };
        object["propagationPolicy"] = json!(policy);
    }
    let preconditions = [
        ("uid", &options.precondition_uid),
        ("resourceVersion", &options.precondition_resource_version),
    ];
    for (key, value) in preconditions {
        if let Some(value) = value {
            object["preconditions"][key] = json!(value);
        }
    }
    object
}

/// Runs the mutating webhooks in order, each patch applied before the next call, then once more
/// those with `reinvocationPolicy: IfNeeded` that ran before a later webhook changed the object (A8).
/// Returns whether the object changed.
async fn mutate(store: &Store, attributes: &mut Attributes, warnings: &mut Vec<String>) -> Result<bool> {
    let webhooks = matching::webhooks(store, Phase::Mutating, attributes);
    let mut changed_by: Option<usize> = None;
    for (index, webhook) in webhooks.iter().enumerate() {
        if apply(store, webhook, attributes, warnings).await? {
            changed_by = Some(index);
        }
    }
    let Some(last_change) = changed_by else {
        return Ok(false);
    };
    for webhook in webhooks[..last_change].iter().filter(|w| w.reinvoked_if_needed()) {
        apply(store, webhook, attributes, warnings).await?;
    }
    Ok(true)
}

/// One mutating call; whether it changed the object.
async fn apply(
    store: &Store,
    webhook: &matching::Matched,
    attributes: &mut Attributes,
    warnings: &mut Vec<String>,
) -> Result<bool> {
    let mut allowed = call::call(store, webhook, attributes).await?;
    warnings.append(&mut allowed.warnings);
    match allowed.patched {
        Some(patched) if attributes.object.as_ref() != Some(&patched) => {
            attributes.object = Some(patched);
            Ok(true)
        }
        _ => Ok(false),
    }
}

/// Evaluates the bound admission policies, then runs the validating webhooks concurrently, as the
/// real server does; the first refusal in their order is the answer.
async fn validate(store: &Store, attributes: &Attributes, warnings: &mut Vec<String>) -> Result<()> {
    policies::validate(store, attributes, warnings)?;
    let webhooks = matching::webhooks(store, Phase::Validating, attributes);
    let verdicts = futures::future::join_all(
        webhooks
            .iter()
            .map(|webhook| call::call(store, webhook, attributes)),
    )
    .await;
    for verdict in verdicts {
        warnings.append(&mut verdict?.warnings);
    }
    Ok(())
}

/// Stored objects presented as `rt`, for reads (re-exported for the HTTP layer).
pub use conversion::read;
