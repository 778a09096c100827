//! `PUT namespaces/{name}/finalize`: the one write that changes a namespace's `spec.finalizers`, which
//! the namespace controller uses to say it has emptied the namespace. The body's metadata and spec
//! are written, the status stays as stored; a namespace being deleted whose finalizers are all gone
//! goes with the write.

use axum::{http::Method, response::Response};

use crate::http::handlers::subresource::{Admitted, Request};
use crate::http::{
    request::{parse_body, write_options},
    respond,
};
use crate::{
    admission::Change,
    error::{Error, Result},
    store::WriteOptions,
};

/// `namespaces/finalize`.
pub const ENDPOINT: Admitted = Admitted {
    group: "",
    plural: "namespaces",
    names: &["finalize"],
    serve: |r| Box::pin(finalize(r)),
};

/// Writes the namespace, through admission as an UPDATE made through `finalize`.
pub async fn finalize(r: &Request<'_>) -> Result<Response> {
    let (shared, rt, name, call) = (r.shared, r.rt, r.name, r.call);
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
    let written = r
        .target()
        .write(Change::Update { name, object: body }, &options)
        .await?;
    if !options.dry_run {
        crate::emulated::after_finalize(&shared.store, name)?;
    }
    Ok(respond::with_warnings(
        respond::json(200, &written.object),
        &written.warnings,
    ))
}
