//! What the proxy subresources share (`services/{name}/proxy` in [`super::services`],
//! `nodes/{name}/proxy` in [`super::nodes`]): the target a proxy path names, the methods a proxy
//! takes, and the 503 of a proxy with nowhere to forward to.

use axum::http::Method;

use crate::error::{Error, Result};

/// The target a proxy path names: `name`, `name:port` or `scheme:name:port`.
pub(super) struct ProxyTarget<'a> {
    pub name: &'a str,
    pub port: &'a str,
}

impl<'a> ProxyTarget<'a> {
    pub fn parse(id: &'a str) -> Option<Self> {
        let parts: Vec<&str> = id.split(':').collect();
        let (scheme, name, port) = match parts.as_slice() {
            [name] => ("", *name, ""),
            [name, port] => ("", *name, *port),
            [scheme, name, port] => (*scheme, *name, *port),
            _ => return None,
        };
        (matches!(scheme, "" | "http" | "https") && !name.is_empty()).then_some(Self { name, port })
    }
}

pub(super) fn check_method(method: &Method) -> Result<()> {
    if matches!(
        *method,
        Method::GET | Method::POST | Method::PUT | Method::PATCH | Method::DELETE
    ) {
        return Ok(());
    }
    Err(Error::MethodNotAllowed(
        "the server does not allow this method on the requested resource".into(),
    ))
}

/// 503 ServiceUnavailable, as kube-apiserver words it.
pub(super) fn unavailable(message: String) -> Error {
    Error::Refused {
        code: 503,
        reason: "ServiceUnavailable".into(),
        message,
    }
}
