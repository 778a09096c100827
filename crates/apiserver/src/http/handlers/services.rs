//! `services/{name}/proxy`: kube-apiserver forwards it to one of the Service's endpoints. Nothing runs
//! behind this server, so it answers what kube-apiserver answers when there is nowhere to forward
//! to: a Service without endpoints is unavailable (503).

use axum::{http::Method, response::Response};
use serde_json::Value;

use super::{
    proxies::{ProxyTarget, check_method, unavailable},
    subresource::Subresource,
};
use crate::{
    error::{Error, Result},
    store::{Store, subject},
};

/// `services/proxy`.
pub const PROXY: Subresource = Subresource {
    group: "",
    plural: "services",
    names: &["proxy"],
    serve: |r| service(&r.shared.store, r.namespace, r.name, &r.call.method),
};

fn service(store: &Store, namespace: &str, id: &str, method: &Method) -> Result<Response> {
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
