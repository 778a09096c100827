//! The pod endpoints a kubelet serves (`log`, `exec`, `attach`, `portforward`, `proxy`) (B8). No
//! kubelet runs beside this server, so each answers what kube-apiserver answers when it cannot reach
//! one: the pod must exist, a pod without a node has no logs (204) and nothing to connect to (400),
//! and a pod on a node is refused for the node's want of an address.

use apimachinery::meta;
use axum::{body::Body, http::Method, response::Response};
use serde_json::Value;

use crate::http::handlers::subresource::Subresource;
use crate::{
    error::{Error, Result},
    store::{Store, subject},
};

pub const SUBRESOURCES: &[&str] = &["log", "exec", "attach", "portforward", "proxy"];

/// A pod's streams, which the kubelet serves.
pub const ENDPOINT: Subresource = Subresource {
    group: "",
    plural: "pods",
    names: SUBRESOURCES,
    serve: |r| {
        answer(
            &r.shared.store,
            r.namespace,
            r.name,
            r.subresource,
            &r.call.method,
        )
    },
};

pub fn answer(
    store: &Store,
    namespace: &str,
    name: &str,
    subresource: &str,
    method: &Method,
) -> Result<Response> {
    let allowed = match subresource {
        "log" => method == Method::GET,
        "proxy" => matches!(
            *method,
            Method::GET | Method::POST | Method::PUT | Method::PATCH | Method::DELETE
        ),
        _ => matches!(*method, Method::GET | Method::POST),
    };
    if !allowed {
        return Err(Error::MethodNotAllowed(
            "the server does not allow this method on the requested resource".into(),
        ));
    }
    let pods = store.resolve("", "v1", "pods").ok_or(Error::UnknownResource)?;
    let pod = store.get(&pods, namespace, name)?;
    if subresource == "proxy" {
        // The proxy goes to the pod's IP, which only a kubelet would report.
        return Err(Error::BadRequest("address not allowed".into()));
    }
    let node_name = meta::str_at(&pod, "/spec/nodeName").unwrap_or_default();
    if node_name.is_empty() {
        if subresource == "log" {
            let mut empty = Response::new(Body::empty());
            *empty.status_mut() = axum::http::StatusCode::NO_CONTENT;
            return Ok(empty);
        }
        return Err(Error::BadRequest(format!(
            "pod {name} does not have a host assigned"
        )));
    }
    let nodes = store.resolve("", "v1", "nodes").ok_or(Error::UnknownResource)?;
    // kube-apiserver names a missing node as a pod in this message; clients see its words.
    let node = store
        .get(&nodes, "", node_name)
        .map_err(|_| Error::NotFound(subject(&pods, node_name)))?;
    Err(unreachable(&node, node_name))
}

/// Why the kubelet of `node` cannot be reached: no address it reports, or none this server forwards to.
pub(in crate::http::handlers) fn unreachable(node: &Value, node_name: &str) -> Error {
    let known: Vec<String> = node
        .pointer("/status/addresses")
        .and_then(Value::as_array)
        .map(|addresses| {
            addresses
                .iter()
                .map(|a| {
                    format!(
                        "{{{} {}}}",
                        a["type"].as_str().unwrap_or_default(),
                        a["address"].as_str().unwrap_or_default()
                    )
                })
                .collect()
        })
        .unwrap_or_default();
    if known.is_empty() {
        return Error::Unclassified("no preferred addresses found; known addresses: []".into());
    }
    Error::Unclassified(format!(
        "no kubelet is reachable at node {node_name:?}: the embedded server runs none; known addresses: [{}]",
        known.join(" ")
    ))
}
