//! `services/{name}/proxy` and `nodes/{name}/proxy`: kube-apiserver forwards these to one of the
//! Service's endpoints or to the node's kubelet. Nothing runs behind this server, so each answers
//! what kube-apiserver answers when there is nowhere to forward to: a Service without endpoints is
//! unavailable (503), and a node without an address cannot be reached.

use apimachinery::meta;
use axum::{http::Method, response::Response};
use serde_json::Value;

use super::subresource::Subresource;
use crate::{
    error::{Error, Result},
    store::{Store, subject},
};

/// The target a proxy path names: `name`, `name:port` or `scheme:name:port`.
struct ProxyTarget<'a> {
    name: &'a str,
    port: &'a str,
}

impl<'a> ProxyTarget<'a> {
    fn parse(id: &'a str) -> Option<Self> {
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

fn check_method(method: &Method) -> Result<()> {
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

/// `services/proxy`.
pub const SERVICES: Subresource = Subresource {
    group: "",
    plural: "services",
    names: &["proxy"],
    serve: |r| service(&r.shared.store, r.namespace, r.name, &r.call.method),
};

/// `nodes/proxy`.
pub const NODES: Subresource = Subresource {
    group: "",
    plural: "nodes",
    names: &["proxy"],
    serve: |r| node(&r.shared.store, r.name, &r.call.method),
};

pub fn service(store: &Store, namespace: &str, id: &str, method: &Method) -> Result<Response> {
    check_method(method)?;
    let target =
        ProxyTarget::parse(id).ok_or_else(|| Error::BadRequest(format!("invalid service request {id:?}")))?;
    let services = store
        .resolve("", "v1", "services")
        .ok_or(Error::UnknownResource)?;
    if let Ok(number) = target.port.parse::<i64>() {
        let service = store.get(&services, namespace, target.name)?;
        let declared = service
            .pointer("/spec/ports")
            .and_then(Value::as_array)
            .is_some_and(|ports| ports.iter().any(|p| p["port"].as_i64() == Some(number)));
        if !declared {
            return Err(unavailable(format!(
                "no service port {number} found for service {:?}",
                target.name
            )));
        }
    }
    // The endpoints are what the proxy forwards to, whether or not the Service itself is there;
    // kube-apiserver names the Service when there are none.
    let endpoints = store
        .resolve("", "v1", "endpoints")
        .ok_or(Error::UnknownResource)?;
    let found = store
        .get(&endpoints, namespace, target.name)
        .map_err(|_| Error::NotFound(subject(&services, target.name)))?;
    let addressed = found
        .get("subsets")
        .and_then(Value::as_array)
        .is_some_and(|subsets| {
            subsets
                .iter()
                .any(|s| s["addresses"].as_array().is_some_and(|a| !a.is_empty()))
        });
    if !addressed {
        return Err(unavailable(format!(
            "no endpoints available for service {:?}",
            target.name
        )));
    }
    // An address someone wrote by hand: nothing this server could forward to listens there.
    Err(unavailable(format!(
        "error trying to reach service: the embedded server forwards to no endpoint of service {:?}",
        target.name
    )))
}

pub fn node(store: &Store, id: &str, method: &Method) -> Result<Response> {
    check_method(method)?;
    let target =
        ProxyTarget::parse(id).ok_or_else(|| Error::BadRequest(format!("invalid node request {id:?}")))?;
    let nodes = store.resolve("", "v1", "nodes").ok_or(Error::UnknownResource)?;
    let node = store.get(&nodes, "", target.name)?;
    Err(super::pods::kubelet::unreachable(&node, meta::name(&node)))
}

/// 503 ServiceUnavailable, as kube-apiserver words it.
fn unavailable(message: String) -> Error {
    Error::Refused {
        code: 503,
        reason: "ServiceUnavailable".into(),
        message,
    }
}
