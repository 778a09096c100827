//! The verbs of a resource and its `/status`, one function each: get, create, update, patch, delete
//! and deletecollection (list and watch have modules of their own). Writes go through admission's
//! stages (`admission::Target`).

use std::sync::Arc;

use apimachinery::{patch::PatchType, resource::ResourceType};
use axum::response::Response;
use serde_json::Value;

use super::answers::{deleted, list_body, represent_one, represent_written};
use crate::http::{
    Shared,
    request::{
        Call, delete_options, invalid_option, parse_body, parse_patch, patch_type_of, selectors,
        write_options,
    },
    respond,
};
use crate::{
    admission::{self, Change},
    error::{Error, Result},
    store::Written,
    webhooks::Converter,
};

/// A request to one of the verbs of a resource.
pub struct Verb<'a> {
    pub shared: &'a Arc<Shared>,
    pub rt: &'a Arc<ResourceType>,
    /// The namespace of the path, if it names one.
    pub namespace: Option<&'a str>,
    pub call: &'a Call,
    /// Where its writes go.
    pub writes: admission::Target<'a>,
}

impl Verb<'_> {
    pub async fn get(&self, name: &str) -> Result<Response> {
        let store = &self.shared.store;
        let stored = store.get_stored(self.rt, self.namespace.unwrap_or_default(), name)?;
        let converter = Converter::of(store, self.rt);
        let object = admission::read(store, self.rt, converter.as_ref(), vec![stored])
            .await?
            .pop()
            .unwrap_or(Value::Null);
        represent_one(self.rt, object, self.call)
    }

    pub async fn create(&self) -> Result<Response> {
        if self.rt.namespaced && self.namespace.is_none() {
            return Err(Error::MethodNotAllowed(
                "POST on a namespaced resource needs a namespace".into(),
            ));
        }
        let (body, duplicates) = parse_body(self.call, self.rt)?;
        let options = write_options(self.call, duplicates)?;
        let written = self.writes.write(Change::Create(body), &options).await?;
        self.answer_written(201, written)
    }

    pub async fn update(&self, name: &str) -> Result<Response> {
        let (body, duplicates) = parse_body(self.call, self.rt)?;
        let options = write_options(self.call, duplicates)?;
        let written = self
            .writes
            .write(Change::Update { name, object: body }, &options)
            .await?;
        self.answer_written(200, written)
    }

    pub async fn patch(&self, name: &str) -> Result<Response> {
        let patch_type = patch_type_of(self.call)?;
        let (body, duplicates) = parse_patch(self.call, patch_type)?;
        let options = write_options(self.call, duplicates)?;
        let manager = self.call.query.get("fieldManager");
        if patch_type == PatchType::Apply && manager.is_none_or(String::is_empty) {
            return Err(invalid_option(
                "PatchOptions",
                "FieldValueRequired",
                "fieldManager",
                "Required value: is required for apply patch".into(),
            ));
        }
        let patch = Change::Patch {
            name,
            patch_type,
            patch: &body,
        };
        let written = self.writes.write(patch, &options).await?;
        // Server-side apply may create the object.
        let code = if written.created { 201 } else { 200 };
        self.answer_written(code, written)
    }

    pub async fn delete(&self, name: &str) -> Result<Response> {
        let options = delete_options(self.call, self.rt)?;
        let object = self.writes.delete(name, &options).await?;
        Ok(respond::json(200, &deleted(self.rt, name, object)))
    }

    pub async fn delete_collection(&self) -> Result<Response> {
        let (labels, fields) = selectors(self.rt, self.call)?;
        let deleted = self
            .writes
            .delete_collection(
                self.namespace,
                |o| labels.matches(o) && fields.matches(o),
                &delete_options(self.call, self.rt)?,
            )
            .await?;
        let rv = self.shared.store.current_resource_version().to_string();
        Ok(respond::json(200, &list_body(self.rt, deleted, &rv, None)))
    }

    fn answer_written(&self, code: u16, written: Written) -> Result<Response> {
        let response = represent_written(self.rt, code, &written.object, self.call)?;
        Ok(respond::with_warnings(response, &written.warnings))
    }
}
