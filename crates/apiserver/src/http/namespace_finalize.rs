//! `PUT namespaces/{name}/finalize`: the one write that changes a namespace's `spec.finalizers`, which
//! the namespace controller uses to say it has emptied the namespace. The body's metadata and spec
//! are written, the status stays as stored; a namespace being deleted whose finalizers are all gone
//! goes with the write.

use std::sync::Arc;

use apimachinery::resource::ResourceType;
use axum::{http::Method, response::Response};

use super::subresource::Subresource;
use super::{
    Shared,
    request::Call,
    request::{parse_body, write_options},
    respond,
};
use crate::{
    error::{Error, Result},
    store::WriteOptions,
};

/// `namespaces/finalize`.
pub const ENDPOINT: Subresource = Subresource {
    group: "",
    plural: "namespaces",
    names: &["finalize"],
    serve: |r| finalize(r.shared, r.rt, r.name, r.call),
};

pub fn finalize(shared: &Arc<Shared>, rt: &Arc<ResourceType>, name: &str, call: &Call) -> Result<Response> {
    if call.method != Method::PUT {
        return Err(Error::MethodNotAllowed(
            "the server does not allow this method on the requested resource".into(),
        ));
    }
    let (body, duplicates) = parse_body(call, rt)?;
    let options = WriteOptions {
        // The namespace admission keeps the stored finalizers on any other write.
        subresource: Some("finalize"),
        ..write_options(call, duplicates)?
    };
    let written = crate::strategy::writes::update(&shared.store, rt, "", name, body, &options, false)?;
    if !options.dry_run {
        crate::emulated::after_finalize(&shared.store, name)?;
    }
    Ok(respond::with_warnings(
        respond::json(200, &written.object),
        &written.warnings,
    ))
}
