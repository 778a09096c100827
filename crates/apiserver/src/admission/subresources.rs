//! Writes through a subresource whose object is not the stored one: admission sees what the client
//! wrote (a Scale, an Eviction, a Binding), as kube-apiserver's subresource storages hand the
//! request's admission to their write.
//!
//! - [`Target::write_view`]: an update of the stored object through a view of it of another kind
//!   (`scale`). Mutating admission sees the view the request asks for, validating admission the view
//!   of the object about to be stored, both as an UPDATE with the current view as `oldObject`; between
//!   them the strategy's stages run on the stored object, as for any update.
//! - [`Target::admit_create`]: an object that is only ever created and never stored (`eviction`,
//!   `binding`, a service account's `token`), seen by admission as a CREATE. What it sets in motion
//!   (a pod deleted, a node assigned, a token issued) is then the endpoint's to do without
//!   admission, as kube-apiserver's pod storage writes it straight to storage.

use kube::core::admission::Operation;
use serde_json::Value;

use super::{
    Attributes, Kind, Target,
    review_options::write_options_object,
    stages::{mutate, validate},
};
use crate::{
    error::{Error, Result},
    store::{Stage, Update, WriteOptions, Written, subject},
    strategy::update,
};

/// An object seen through a subresource of another kind.
pub trait View: Sync {
    /// The kind admission sees.
    fn kind(&self) -> Kind;

    /// What admission sees of `object` (as stored).
    fn of(&self, object: &Value) -> Value;

    /// The object to store when the view is written as `viewed` over `current` (as stored): refused
    /// as the subresource's own validation refuses the view. The object carries the resourceVersion
    /// it was made against.
    fn apply(&self, current: &Value, viewed: &Value) -> Result<Value>;
}

impl Target<'_> {
    /// An update of `name` through `view`: `wanted` makes the view the request asks for of the current
    /// one (a PUT's body, or a patch applied to it). Made again from the start while another write
    /// changes the object meanwhile, unless the view named the resourceVersion it replaces.
    pub async fn write_view(
        &self,
        name: &str,
        view: &dyn View,
        wanted: &(dyn Fn(&Value) -> Result<Value> + Sync),
        options: &WriteOptions,
    ) -> Result<Written> {
        let admitting = self.has_webhooks();
        loop {
            let read = self
                .store
                .read(self.rt, self.namespace, name)
                .ok_or_else(|| Error::NotFound(subject(self.rt, name)))?;
            let current = read.decode();
            let old_view = view.of(&current);
            let mut viewed = wanted(&old_view)?;
            let mut warnings = Vec::new();
            let mut attributes = admitting.then(|| Attributes {
                rt: self.rt.clone(),
                namespace: self.namespace.to_owned(),
                name: name.to_owned(),
                subresource: self.subresource.map(str::to_owned),
                operation: Operation::Update,
                object: Some(viewed.clone()),
                old: Some(old_view),
                dry_run: options.dry_run,
                options: write_options_object(false, options),
                kind: Some(view.kind()),
            });
            if let Some(attributes) = &mut attributes {
                if mutate(self.store, attributes, &mut warnings).await?
                    && let Some(mutated) = attributes.object.clone()
                {
                    viewed = mutated;
                }
                self.ran(Stage::MutatingAdmission);
            }
            let object = view.apply(&current, &viewed)?;
            let (mut next, decoded_warnings) = update::prepare(
                self.rt,
                self.namespace,
                name,
                &current,
                object,
                options,
                self.status_only,
            )?;
            self.ran(Stage::Decode);
            update::finish(self.rt, name, &current, &mut next, false, self.status_only)?;
            self.ran(Stage::Validate);
            if let Some(attributes) = &mut attributes {
                attributes.object = Some(view.of(&next));
                validate(self.store, attributes, &mut warnings).await?;
                self.ran(Stage::ValidatingAdmission);
            }
            let update = Update {
                old: current,
                next,
                warnings: decoded_warnings,
            };
            let committed = self.store.commit_update_if_unchanged(
                self.rt,
                self.namespace,
                name,
                &read,
                update,
                options,
            )?;
            self.ran(Stage::Commit);
            if let Some(mut written) = committed {
                warnings.append(&mut written.warnings);
                written.warnings = warnings;
                return Ok(written);
            }
        }
    }

    /// A CREATE of `object` of `kind` through the subresource of `name`, never stored: the object as
    /// mutating admission leaves it, once `check` (the subresource's own validation, which runs
    /// between the two phases as kube-apiserver's does) and validating admission let it through; and
    /// the warnings admission gave.
    pub async fn admit_create(
        &self,
        name: &str,
        kind: Kind,
        object: Value,
        options: &WriteOptions,
        check: impl FnOnce(&Value) -> Result<()>,
    ) -> Result<(Value, Vec<String>)> {
        let checked = |object: Value| check(&object).map(|()| object);
        self.admit_completed_create(name, kind, object, options, checked)
            .await
    }

    /// [`Target::admit_create`] of an object the subresource's storage completes between the two
    /// phases: `complete` fills in what the storage sets (a TokenRequest's audiences and creation
    /// time) and validates it, and validating admission sees the completed object, which is returned.
    pub async fn admit_completed_create(
        &self,
        name: &str,
        kind: Kind,
        object: Value,
        options: &WriteOptions,
        complete: impl FnOnce(Value) -> Result<Value>,
    ) -> Result<(Value, Vec<String>)> {
        let mut warnings = Vec::new();
        if !self.has_webhooks() {
            return Ok((complete(object)?, warnings));
        }
        let mut attributes = Attributes {
            rt: self.rt.clone(),
            namespace: self.namespace.to_owned(),
            name: name.to_owned(),
            subresource: self.subresource.map(str::to_owned),
            operation: Operation::Create,
            object: Some(object),
            old: None,
            dry_run: options.dry_run,
            options: write_options_object(true, options),
            kind: Some(kind),
        };
        mutate(self.store, &mut attributes, &mut warnings).await?;
        self.ran(Stage::MutatingAdmission);
        let object = complete(attributes.object.take().unwrap_or(Value::Null))?;
        attributes.object = Some(object);
        validate(self.store, &attributes, &mut warnings).await?;
        self.ran(Stage::ValidatingAdmission);
        Ok((attributes.object.unwrap_or(Value::Null), warnings))
    }
}
