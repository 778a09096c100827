//! `nodes/{name}/proxy`: kube-apiserver forwards it to the node's kubelet. No kubelet runs beside
//! this server, so a node without an address cannot be reached.

use apimachinery::meta;
use axum::{http::Method, response::Response};

use super::{
    proxies::{ProxyTarget, check_method},
    subresource::Subresource,
};
use crate::{
    error::{Error, Result},
    store::Store,
};

/// `nodes/proxy`.
pub const PROXY: Subresource = Subresource {
    group: "",
    plural: "nodes",
    names: &["proxy"],
    serve: |r| node(&r.shared.store, r.name, &r.call.method),
};

fn node(store: &Store, id: &str, method: &Method) -> Result<Response> {
    check_method(method)?;
    let target =
        ProxyTarget::parse(id).ok_or_else(|| Error::BadRequest(format!("invalid node request {id:?}")))?;
    let nodes = store.resolve("", "v1", "nodes").ok_or(Error::UnknownResource)?;
    let node = store.get(&nodes, "", target.name)?;
    Err(super::pods::kubelet::unreachable(&node, meta::name(&node)))
}
