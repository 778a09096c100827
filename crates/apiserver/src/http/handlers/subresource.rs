//! A subresource served by an endpoint of its own, as the module that serves it declares it beside its
//! handler (`resources::subresources` finds them by kind and name).

use std::sync::Arc;

use apimachinery::resource::ResourceType;
use axum::response::Response;

use crate::http::{Shared, request::Call};
use crate::{admission, error::Result};

/// A request to a subresource of one object.
pub struct Request<'a> {
    pub shared: &'a Arc<Shared>,
    /// The type of the object the subresource belongs to.
    pub rt: &'a Arc<ResourceType>,
    pub namespace: &'a str,
    pub name: &'a str,
    pub subresource: &'a str,
    pub call: &'a Call,
}

/// A subresource of a built-in kind, with the endpoint that serves it.
pub struct Subresource {
    pub group: &'static str,
    pub plural: &'static str,
    /// Its names (one endpoint serves the kubelet's several streams).
    pub names: &'static [&'static str],
    pub serve: fn(&Request<'_>) -> Result<Response>,
}

/// What an [`Admitted`] endpoint's handler returns.
pub type Served<'r> = futures::future::BoxFuture<'r, Result<Response>>;

/// A subresource that writes through admission, as kube-apiserver's do: webhooks and policies that
/// name it are called, so it is served asynchronously.
pub struct Admitted {
    pub group: &'static str,
    pub plural: &'static str,
    pub names: &'static [&'static str],
    pub serve: for<'r> fn(&'r Request<'r>) -> Served<'r>,
}

impl Request<'_> {
    /// Where the subresource's writes of its own object go: through admission, named as this
    /// subresource.
    pub fn target(&self) -> admission::Target<'_> {
        admission::Target {
            store: &self.shared.store,
            rt: self.rt,
            namespace: self.namespace,
            subresource: Some(self.subresource),
            status_only: false,
        }
    }
}
